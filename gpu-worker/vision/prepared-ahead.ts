/**
 * Frames decoded and letterboxed ahead of their round, keyed by their bytes.
 *
 * The worker fetches the next round's frames while this round infers (frame-prefetch.ts);
 * decoding them there too means the next round's first batch is ready the moment the
 * model is free, rather than after a batch's worth of decodes (8 frames, tens of ms on a
 * CPU core). The key is the byte array itself: the prefetch hands the very same object to
 * the round's `FrameInput`, so no name has to match, and a frame whose bytes were fetched
 * afresh simply finds nothing here and is decoded as usual.
 *
 * A hint, like the prefetch: bounded by count (a prepared 640x640 frame is 4.9 MB of
 * float32 on the fallback path, 1.2 MB of uint8 on the default one, far more than its
 * JPEG), oldest dropped first, and a decode failure is kept
 * for the frame's own processing to report, never reported here. Memory is bounded three ways:
 * - at most `maxFrames` decodes are held;
 * - at most `maxFrames` decodes run at once, counting those already dropped (a dropped
 *   decode runs on until it ends); a hint past that is ignored and the frame decodes in
 *   its round;
 * - each decode is the processor's own `prepareFrame`, held to the model's pixel limit
 *   (preprocess.ts `sourcePixelLimit`): a frame that declares more pixels is refused from
 *   its header, so nothing over the limit is ever decoded ahead, a bomb included.
 */
import type { PreparedFrame } from './preprocess.ts';

/** One receive's worth of frames (SQS hands out at most 10 messages per receive): at 640x640 about 12 MB of uint8 (49 MB on the float fallback path). */
export const PREPARED_AHEAD_MAX_FRAMES = 10;

export class PreparedAhead<T = PreparedFrame> {
  private readonly maxFrames: number;
  /** Insertion order is age order. */
  private readonly entries = new Map<Uint8Array, Promise<T>>();
  /** Decodes started ahead, and of those, taken by a frame's processing (for tests and the benchmark). */
  started = 0;
  used = 0;
  /** Hints ignored because `maxFrames` decodes were already running. */
  skipped = 0;
  /** Decodes still running, held or dropped. */
  private running = 0;

  constructor(maxFrames = PREPARED_AHEAD_MAX_FRAMES) {
    this.maxFrames = maxFrames;
  }

  /** Starts `prepare(image)` unless that image is already held or `maxFrames` decodes are running. */
  start(image: Uint8Array, prepare: (image: Uint8Array) => Promise<T>): void {
    if (this.maxFrames <= 0 || this.entries.has(image)) return;
    if (this.running >= this.maxFrames) {
      this.skipped++;
      return;
    }
    while (this.entries.size >= this.maxFrames) this.entries.delete(this.entries.keys().next().value!);
    this.running++;
    const prepared = prepare(image);
    // A corrupt image rejects here; the frame's processing awaits this same promise and reports it.
    prepared.catch(() => undefined).finally(() => this.running--);
    this.entries.set(image, prepared);
    this.started++;
  }

  /** The decode started ahead for exactly these bytes, if one is held; it is used up. */
  take(image: Uint8Array): Promise<T> | undefined {
    const prepared = this.entries.get(image);
    if (!prepared) return undefined;
    this.entries.delete(image);
    this.used++;
    return prepared;
  }

  /** Entries held now. */
  get size(): number {
    return this.entries.size;
  }

  /** Drops everything held (the model is going away). */
  clear(): void {
    this.entries.clear();
  }
}
