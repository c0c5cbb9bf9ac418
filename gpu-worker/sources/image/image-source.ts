/**
 * Images (`frames/{videoId}/{frame}.jpg|jpeg|png`) behind the frame-source seam
 * (sources/port.ts): one frame per object, read whole. Its bytes come from the prefetch
 * when a receive ahead or a read ahead by predicted key fetched them
 * (ahead/frame-prefetch.ts, ahead/read-ahead.ts), else from a GET within the round's
 * bound on concurrent GETs, hedged after `fetchHedgeMs` (ahead/hedged-fetch.ts).
 */
import type { FrameSource } from '../../../core/ingest/port.ts';
import type { FrameMessage } from '../../../core/ingest/messages.ts';
import type { FrameInput, FrameOutcome } from '../../../core/ports.ts';
import type { FrameRef } from '../../../core/ordering/sequencer.ts';
import type { FramePrefetch } from '../ahead/frame-prefetch.ts';
import { readAheadPlans } from '../ahead/read-ahead.ts';
import type { BoundedGet, FrameRead, HeldFrames, ObjectSource } from '../port.ts';

export interface ImageSourceDeps {
  /** Where frames are read (the worker's store, its GET hedged). */
  readonly frames: Pick<FrameSource, 'get'>;
  /** Frames fetched ahead, shared with the segments read ahead. */
  readonly prefetch: Pick<FramePrefetch, 'take' | 'confirm' | 'readAhead' | 'prefetch'>;
  /** `maxFrameBytes`: a larger image is recorded `oversized`, never fetched. */
  readonly maxFrameBytes: number;
  /** `readAheadFrames` (decision 39); 0: nothing read ahead by predicted key. */
  readonly readAheadFrames: number;
}

export class ImageSource implements ObjectSource {
  readonly #d: ImageSourceDeps;

  constructor(deps: ImageSourceDeps) {
    this.#d = deps;
  }

  /** An image holds its one frame. */
  async framesOf(ref: FrameRef): Promise<HeldFrames> {
    return { refs: [ref], countUnknown: false };
  }

  /** An image holds no frame but its own. */
  async covering(): Promise<FrameRef | undefined> {
    return undefined;
  }

  /** Nothing to learn: an image's key says what it holds. */
  async learn(): Promise<void> {}

  screen(ref: FrameRef): FrameOutcome | undefined {
    const limit = this.#d.maxFrameBytes;
    return ref.sizeBytes > limit ? { status: 'failed', reason: 'oversized', detail: `${ref.sizeBytes} bytes > maxFrameBytes ${limit}` } : undefined;
  }

  async early(videoId: string, ref: FrameRef): Promise<FrameInput | undefined> {
    const image = await this.#d.prefetch.take(ref.bucket, ref.key);
    return image ? { videoId, frame: ref.frame, image, key: ref.key } : undefined;
  }

  async read(videoId: string, ref: FrameRef, gets: BoundedGet): Promise<FrameRead> {
    const image = await gets(() => this.#d.frames.get(ref.bucket, ref.key));
    return { input: { videoId, frame: ref.frame, image, key: ref.key } };
  }

  /**
   * Confirms frames read ahead whose messages came (their bytes are used under the
   * message's ETag), and reads ahead the next frames of every video this receive brought
   * `fullReceive` consecutive frames of (read-ahead.ts, decision 39).
   */
  received(frames: readonly FrameMessage[], fullReceive: number): void {
    this.#d.prefetch.confirm(frames);
    // Only a message's ETag can vouch for bytes read ahead: without one, reading ahead is a GET for nothing.
    const vouched = frames.filter((f) => f.eTag !== undefined);
    for (const plan of readAheadPlans(vouched, fullReceive, this.#d.readAheadFrames)) {
      const last = vouched.findLast((f) => f.videoId === plan.videoId)!;
      if (last.sizeBytes > this.#d.maxFrameBytes) continue;
      this.#d.prefetch.readAhead(last.bucket, plan.frames.map((f) => f.key), last.sizeBytes);
    }
  }

  /** Starts the GETs of images received ahead of their round, those within `maxFrameBytes`. */
  prefetch(frames: readonly FrameMessage[]): void {
    this.#d.prefetch.prefetch(frames.filter((f) => f.sizeBytes <= this.#d.maxFrameBytes));
  }

  /** Images are read ahead when received (`received`, `prefetch`), not from a video's plan. */
  readAhead(): void {}

  async closeVideo(): Promise<void> {}

  async closeAll(): Promise<void> {}
}
