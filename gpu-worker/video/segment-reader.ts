/**
 * The worker's side of encoded segments (core/ingest/segment-keys.ts): how many frames a
 * segment covers, and each of its frames, decoded, when its round runs.
 *
 * - **{@link SegmentReader.describe}** decides `k` when a segment's message (or a
 *   listing) brings it in: a HEAD reads the uploader's declared count
 *   (`x-amz-meta-frames`, which the CLI and the edge segmenter always set); without one
 *   the object is fetched and its frames counted by the demuxer, without decoding. An
 *   object that is gone, over `maxSegmentBytes`, or not a readable video covers one frame
 *   unless declared otherwise: that frame's record says why, and the frames up to the next
 *   object are missing frames (gaps, after the S3 listing says so).
 * - **{@link SegmentReader.frame}** yields frame `n + i` of the segment. One decoder per
 *   segment stays open between calls, so a segment's frames, asked for in order across
 *   rounds, are decoded once each; a frame asked for below the decoder's position (a
 *   round re-run after a rollback) reopens it. Decoding runs a few frames ahead of the
 *   caller ({@link readAhead}), so it overlaps the model; memory is bounded by that depth
 *   per open segment and by {@link SegmentReaderDeps.maxOpenSegments}.
 * - **Failures are records, never stalls.** A frame the decoder cannot yield (corrupt,
 *   truncated, another codec) gets `failed` with the decoder's reason; an S3 error is
 *   thrown to the caller, which retries or fails the round as for an image.
 * - **A re-upload** (other bytes under the same key) changes no count: `k` stays what the
 *   first look decided, the frames not yet recorded decode from the bytes there now, and
 *   the change is logged with the replay command that re-runs the recorded ones.
 */
import { ObjectMissingError, type FrameSource } from '../../core/ingest/port.ts';
import { declaredFrameCount, parseSourceKey, type FrameCountSource, type SourceContainer } from '../../core/ingest/segment-keys.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import type { DecodedPixels, FrameOutcome, LogSink, MetricSink } from '../../core/ports.ts';
import type { FrameRef } from '../../core/ordering/sequencer.ts';
import { countSegmentFrames, decodeSegment, readAhead, type DecodedFrame, type FrameSize, type HardwarePreference, type SegmentEnd, type SegmentItem } from './segment-decoder.ts';

/** Frames decoded ahead of the caller per open segment. */
const DECODE_AHEAD_FRAMES = 4;
/** Segment descriptions remembered (a listing or a redelivery of one needs no HEAD). */
const DESCRIPTIONS_KEPT = 4_096;

/** How many frames a segment covers, and how that was decided. */
export interface SegmentDescription {
  /** `k`: the segment covers frames `[n, n + k)`. */
  readonly frameCount: number;
  /** Where `k` came from; `unknown` when nothing could say (the object is gone or unreadable): then 1. */
  readonly source: FrameCountSource | 'unknown';
  readonly sizeBytes: number;
  readonly eTag: string | undefined;
}

export interface SegmentReaderDeps {
  readonly frames: Pick<FrameSource, 'head' | 'getVersion'>;
  readonly log: LogSink;
  readonly metrics: MetricSink;
  readonly maxSegmentBytes: number;
  readonly hardware: HardwarePreference;
  /** The size to decode each frame to (the model's letterbox), from the stream's; undefined keeps the stream's size. */
  readonly resizeFor?: (sourceWidth: number, sourceHeight: number) => FrameSize | undefined;
  /** Segments with an open decoder at once; the least recently used is closed beyond. @default 32 */
  readonly maxOpenSegments?: number;
}

/** One open segment: its decoder, positioned at frame index `position`. */
interface Cursor {
  readonly eTag: string | undefined;
  readonly items: AsyncGenerator<SegmentItem, void, undefined>;
  /** Index of the next frame `items` yields. */
  position: number;
  /** The end item, once reached. */
  end?: SegmentEnd;
}

/** A frame of a segment, decoded, or the record it gets instead. */
export type SegmentFrame = { readonly pixels: DecodedPixels } | { readonly failed: FrameOutcome };

export class SegmentReader {
  private readonly d: SegmentReaderDeps;
  private readonly described = new Map<string, SegmentDescription>();
  private readonly open = new Map<string, Cursor>();
  /** The last call in line per segment key. */
  private readonly turns = new Map<string, Promise<unknown>>();
  private lastDecoder: string | undefined;

  constructor(deps: SegmentReaderDeps) {
    this.d = deps;
  }

  /** Whether a key names an encoded segment (not an image). */
  static isSegment(key: string): boolean {
    const p = parseSourceKey(key);
    return p.kind === 'source' && p.container !== 'image';
  }

  /**
   * How many frames the segment at `key` covers. Remembered per key: `eTag` (from the
   * message) that differs from the remembered one is a re-upload, logged and counted,
   * and the count stands. Throws only on an S3 error other than a missing object.
   */
  async describe(bucket: string, key: string, eTag?: string): Promise<SegmentDescription> {
    const known = this.described.get(key);
    if (known) {
      if (eTag !== undefined && known.eTag !== undefined && eTag !== known.eTag) this.reuploaded(key, known);
      return known;
    }
    const d = await this.look(bucket, key);
    this.described.set(key, d);
    if (this.described.size > DESCRIPTIONS_KEPT) this.described.delete(this.described.keys().next().value!);
    this.d.metrics.count(METRIC_NAMES.worker.segmentsDescribed, 1, { Source: d.source });
    return d;
  }

  private async look(bucket: string, key: string): Promise<SegmentDescription> {
    let head;
    try {
      head = await this.d.frames.head(bucket, key);
    } catch (e) {
      if (e instanceof ObjectMissingError) return { frameCount: 1, source: 'unknown', sizeBytes: 0, eTag: undefined };
      throw e;
    }
    const declared = declaredFrameCount(head.metadata);
    if (declared !== undefined) return { frameCount: declared, source: 'declared', sizeBytes: head.sizeBytes, eTag: head.eTag };
    if (head.sizeBytes > this.d.maxSegmentBytes || head.sizeBytes === 0) return { frameCount: 1, source: 'unknown', sizeBytes: head.sizeBytes, eTag: head.eTag };
    let bytes: Uint8Array;
    try {
      bytes = (await this.d.frames.getVersion(bucket, key)).bytes;
    } catch (e) {
      if (e instanceof ObjectMissingError) return { frameCount: 1, source: 'unknown', sizeBytes: 0, eTag: undefined };
      throw e;
    }
    const counted = await countSegmentFrames(bytes);
    if (counted === undefined) return { frameCount: 1, source: 'unknown', sizeBytes: head.sizeBytes, eTag: head.eTag };
    // MP4 states its count (the sample table); MPEG-TS and Matroska are counted packet by packet.
    return { frameCount: counted, source: containerOf(key) === 'mp4' ? 'container' : 'decoded', sizeBytes: head.sizeBytes, eTag: head.eTag };
  }

  private reuploaded(key: string, known: SegmentDescription): void {
    const p = parseSourceKey(key);
    const from = p.kind === 'source' ? p.firstFrame : 0;
    this.d.metrics.count(METRIC_NAMES.worker.segmentsReuploaded, 1);
    this.d.log.warn('segment re-uploaded with other bytes: its frame count stands, recorded frames keep their records', {
      key,
      frameCount: known.frameCount,
      command: `affinity replay <video> --from ${from}`,
    });
  }

  /**
   * Frame `ref.frame` of the segment `ref.key`, decoded. `failed` when the decoder cannot
   * yield it (with its reason) or the object is gone (`object-missing`); throws on other S3
   * errors, for the caller's retry.
   */
  frame(ref: FrameRef): Promise<SegmentFrame> {
    // One segment's frames are asked for concurrently by a round: one at a time, in call order.
    const prev = this.turns.get(ref.key) ?? Promise.resolve();
    const run = prev.then(() => this.frameInTurn(ref));
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.turns.set(ref.key, tail);
    void tail.then(() => {
      if (this.turns.get(ref.key) === tail) this.turns.delete(ref.key);
    });
    return run;
  }

  private async frameInTurn(ref: FrameRef): Promise<SegmentFrame> {
    const parsed = parseSourceKey(ref.key);
    if (parsed.kind !== 'source' || parsed.container === 'image') throw new Error(`${ref.key} is not a segment`);
    const index = ref.frame - parsed.firstFrame;
    const d = await this.describe(ref.bucket, ref.key);
    if (index < 0 || index >= d.frameCount) {
      return { failed: { status: 'failed', reason: 'outside-segment', detail: `frame ${ref.frame} is not in [${parsed.firstFrame}, ${parsed.firstFrame + d.frameCount})` } };
    }
    if (ref.sizeBytes > this.d.maxSegmentBytes) {
      return { failed: { status: 'failed', reason: 'oversized', detail: `segment of ${ref.sizeBytes} bytes > maxSegmentBytes ${this.d.maxSegmentBytes}` } };
    }
    let cursor = this.open.get(ref.key);
    if (cursor && cursor.position > index) {
      // Asked again for a frame already passed (a round re-run after a rollback): decode from the start.
      await this.close(ref.key);
      cursor = undefined;
    }
    if (cursor) {
      // Most recently used last, for the eviction order.
      this.open.delete(ref.key);
      this.open.set(ref.key, cursor);
    } else {
      cursor = await this.openCursor(ref.bucket, ref.key, parsed.firstFrame, parsed.container, d);
    }
    return this.advance(cursor, index, d.frameCount);
  }

  /** Closes every open decoder (the worker stops, or a test ends). */
  async closeAll(): Promise<void> {
    for (const key of [...this.open.keys()]) await this.close(key);
  }

  private async openCursor(bucket: string, key: string, firstFrame: number, container: Exclude<SourceContainer, 'image'>, d: SegmentDescription): Promise<Cursor> {
    const { bytes, eTag } = await this.d.frames.getVersion(bucket, key);
    if (d.eTag !== undefined && eTag !== undefined && eTag !== d.eTag) this.reuploaded(key, d);
    const items = readAhead(
      decodeSegment(bytes, {
        firstFrame,
        container,
        declaredFrames: d.frameCount,
        hardware: this.d.hardware,
        ...(this.d.resizeFor ? { resize: this.d.resizeFor } : {}),
      }),
      DECODE_AHEAD_FRAMES,
    );
    const cursor: Cursor = { eTag, items, position: 0 };
    this.open.set(key, cursor);
    // Close the least recently used beyond the bound, but never one a call is decoding from.
    const max = this.d.maxOpenSegments ?? 32;
    for (const other of [...this.open.keys()]) {
      if (this.open.size <= max) break;
      if (other !== key && !this.turns.has(other)) await this.close(other);
    }
    return cursor;
  }

  /** Moves the cursor to frame `index` and yields it, or the record it gets instead. */
  private async finish(c: Cursor): Promise<void> {
    const r = await c.items.next();
    if (!r.done && r.value.kind === 'end') this.ended(c, r.value);
  }

  private ended(c: Cursor, end: SegmentEnd): void {
    c.end = end;
    this.noteDecoder(end.decoder);
    if (end.decoded > 0) this.d.metrics.count(METRIC_NAMES.worker.segmentFramesDecoded, end.decoded, { Decoder: end.decoder });
  }

  private async advance(c: Cursor, index: number, frameCount: number): Promise<SegmentFrame> {
    while (!c.end && c.position <= index) {
      const r = await c.items.next();
      if (r.done) break;
      const item = r.value;
      if (item.kind === 'end') {
        this.ended(c, item);
        break;
      }
      c.position = item.index + 1;
      if (item.index === index) {
        // The segment's last frame: take its end item now (decoded ahead already), so the decoder closes and is reported.
        if (index === frameCount - 1) await this.finish(c);
        return { pixels: pixelsOf(item) };
      }
    }
    const end = c.end;
    const failure = end?.failure;
    if (failure) return { failed: { status: 'failed', reason: failure.reason, detail: failure.detail.slice(0, 300) } };
    return { failed: { status: 'failed', reason: 'truncated', detail: `the segment yielded ${end?.decoded ?? c.position} frames; frame index ${index} is not among them` } };
  }

  private noteDecoder(decoder: string): void {
    if (decoder === this.lastDecoder || decoder === 'none') return;
    this.lastDecoder = decoder;
    this.d.log.info('segment decoder in use', { decoder });
  }

  private async close(key: string): Promise<void> {
    const c = this.open.get(key);
    if (!c) return;
    this.open.delete(key);
    await c.items.return(undefined);
  }
}

function pixelsOf(f: DecodedFrame): DecodedPixels {
  return { data: f.data, width: f.width, height: f.height, sourceWidth: f.sourceWidth, sourceHeight: f.sourceHeight, ptsMs: f.ptsMs };
}

function containerOf(key: string): SourceContainer | undefined {
  const p = parseSourceKey(key);
  return p.kind === 'source' ? p.container : undefined;
}
