/**
 * Encoded segments (core/ingest/segment-keys.ts) behind the frame-source seam
 * (sources/port.ts): an object holds `[n, n + k)`, `k` from its declared count, its
 * container or its packets (segment-reader.ts `describe`), and each frame is decoded on
 * read, one decoder per segment kept open across rounds (segment-reader.ts `frame`,
 * FFmpeg through node-av in gpu-worker/video/segment-decoder.ts). The next segments of a
 * video are fetched while its current one decodes (decision 51).
 */
import { parseSourceKey } from '../../../core/ingest/segment-keys.ts';
import type { FrameInput, FrameOutcome } from '../../../core/ports.ts';
import type { FrameRef } from '../../../core/ordering/sequencer.ts';
import type { DecoderPlacement, FrameRead, HeldFrames, ObjectSource } from '../port.ts';
import type { SegmentReader } from './segment-reader.ts';

/** What the source asks of the segment reader (a test may give `describe` alone). */
export type SegmentReading = Pick<SegmentReader, 'describe'> & Partial<Pick<SegmentReader, 'frame' | 'readAhead' | 'closeVideo' | 'closeAll' | 'decodersInUse'>>;

export class SegmentSource implements ObjectSource {
  readonly #reader: SegmentReading;
  /** `maxSegmentBytes`: a larger segment's frames are recorded `oversized`, never fetched. */
  readonly #maxSegmentBytes: number;

  constructor(reader: SegmentReading, maxSegmentBytes: number) {
    this.#reader = reader;
    this.#maxSegmentBytes = maxSegmentBytes;
  }

  /**
   * The frames a segment covers, as references (its key and size on each). An object
   * nothing could count (`unknown`: unreadable, gone, oversized, empty) covers its first
   * frame, and, once a listing says where the next object starts (`spanEnd`, exclusive),
   * every frame up to it: each fails with the object's reason (decision 59), never `gap`.
   */
  async framesOf(ref: FrameRef, o: { readonly eTag?: string; readonly spanEnd?: number } = {}): Promise<HeldFrames> {
    const { bucket, key, sizeBytes } = ref;
    const parsed = parseSourceKey(key);
    const first = parsed.kind === 'source' ? parsed.firstFrame : 0;
    const d = await this.#reader.describe(bucket, key, o.eTag);
    const count = d.source === 'unknown' && o.spanEnd !== undefined ? Math.max(d.frameCount, o.spanEnd - first) : d.frameCount;
    const size = sizeBytes > 0 ? sizeBytes : d.sizeBytes;
    return { refs: Array.from({ length: count }, (_, i) => ({ frame: first + i, bucket, key, sizeBytes: size })), countUnknown: d.source === 'unknown' };
  }

  /** The segment `key` as its first frame's reference, when it begins below `frame` and its description reaches `frame`. */
  async covering(bucket: string, key: string, frame: number): Promise<FrameRef | undefined> {
    const parsed = parseSourceKey(key);
    if (parsed.kind !== 'source' || parsed.firstFrame >= frame) return undefined;
    const d = await this.#reader.describe(bucket, key);
    // An object nothing could count reaches the next object (decision 59): the expansion decides how far.
    if (d.source !== 'unknown' && parsed.firstFrame + d.frameCount <= frame) return undefined;
    return { frame: parsed.firstFrame, bucket, key, sizeBytes: d.sizeBytes };
  }

  /**
   * The HEADs of a receive's new segments, side by side: each video then finds its segment
   * described (the reader remembers it per key). A failed HEAD here is forgotten: the
   * video's own describe tries again and reports it as before. One segment alone is left
   * to its video.
   */
  async learn(objects: readonly { readonly bucket: string; readonly key: string }[]): Promise<void> {
    if (objects.length < 2) return;
    await Promise.all(objects.map(({ bucket, key }) => this.#reader.describe(bucket, key).catch(() => undefined)));
  }

  screen(ref: FrameRef): FrameOutcome | undefined {
    const limit = this.#maxSegmentBytes;
    return ref.sizeBytes > limit ? { status: 'failed', reason: 'oversized', detail: `${ref.sizeBytes} bytes > maxSegmentBytes ${limit}` } : undefined;
  }

  /** A segment's frames are decoded when read; its bytes read ahead are the reader's. */
  async early(): Promise<FrameInput | undefined> {
    return undefined;
  }

  /** The frame, decoded (not within the round's GET bound: a segment's one GET is its decoder's). */
  async read(videoId: string, ref: FrameRef): Promise<FrameRead> {
    if (!this.#reader.frame) return { failed: { status: 'failed', reason: 'unsupported-source', detail: 'this worker decodes no segments' } };
    const got = await this.#reader.frame(ref);
    if ('failed' in got) return got;
    return { input: { videoId, frame: ref.frame, image: got.pixels.data, key: ref.key, pixels: got.pixels } };
  }

  readAhead(videoId: string, upcoming: Iterable<FrameRef>): void {
    this.#reader.readAhead?.(videoId, upcoming);
  }

  async closeVideo(videoId: string): Promise<void> {
    await this.#reader.closeVideo?.(videoId);
  }

  async closeAll(): Promise<void> {
    await this.#reader.closeAll?.();
  }

  get decodersInUse(): DecoderPlacement[] {
    return this.#reader.decodersInUse ?? [];
  }
}
