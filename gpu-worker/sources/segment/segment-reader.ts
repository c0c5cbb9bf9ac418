/**
 * The worker's side of encoded segments (core/ingest/segment-keys.ts): how many frames a
 * segment covers, and each of its frames, decoded, when its round runs.
 *
 * - **{@link SegmentReader.describe}** decides `k` when a segment's message (or a
 *   listing) brings it in: a HEAD reads the uploader's declared count
 *   (`x-amz-meta-frames`, which the CLI and the edge segmenter always set); without one
 *   the object is fetched and its frames counted by the demuxer, without decoding. An
 *   object that is gone, over `maxSegmentBytes`, or not a readable video covers one frame
 *   unless declared otherwise (`unknown`), until a listing says where the next object
 *   starts: then it covers its span up to there, and each of those frames fails as its
 *   first frame does, with the same reason (decision 59).
 * - **{@link SegmentReader.frame}** yields frame `n + i` of the segment. One decoder per
 *   segment stays open between calls, so a segment's frames, asked for in order across
 *   rounds, are decoded once each; a frame asked for below the decoder's position (a
 *   round re-run after a rollback) reopens it. Decoding runs {@link DECODE_AHEAD_FRAMES}
 *   frames ahead of the caller ({@link readAhead}), so it overlaps the model, and goes on
 *   after a round's last frame: the next round's first frames decode while the round
 *   commits (the GPU's idle time). Memory is bounded by that depth per open segment and by
 *   {@link SegmentReaderDeps.maxOpenSegments}.
 * - **Failures are records, never stalls.** A frame the decoder cannot yield (corrupt,
 *   truncated, another codec) gets `failed` with the decoder's reason, and the frames
 *   after a damaged one in the same segment still decode (decodeSegment's `lost` items); an S3 error is
 *   thrown to the caller, which retries or fails the round as for an image.
 * - **{@link SegmentReader.readAhead}** fetches a video's next segments while its current
 *   one decodes (decision 51): given the video's upcoming frames in order (a round's plan,
 *   then the frames its held messages brought), the GETs of the first segments without an
 *   open decoder start, up to `segmentsAhead` past the first of them, within the worker's
 *   byte budget, into the worker's prefetch (gpu-worker/sources/ahead/frame-prefetch.ts).
 *   Opening a segment's decoder takes those bytes when they are there, and GETs as before
 *   otherwise: a GET that failed ahead is forgotten, and the reader's own GET fails (or
 *   not) as it always has, so faults keep their meaning. When a segment's last frame has
 *   been decoded, the next one of its video's window, if its bytes were read ahead, opens
 *   and starts decoding at once (the first frames of the next round, decoded during the
 *   commit).
 * - **A re-upload** (other bytes under the same key) changes no count: `k` stays what the
 *   first look decided, the frames not yet recorded decode from the bytes there now, and
 *   the change is logged with the replay command that re-runs the recorded ones. A
 *   segment read ahead is fetched under the ETag its HEAD gave, so its bytes are the
 *   version described; one re-uploaded before that GET is fetched again when it opens.
 */
import { ObjectMissingError, type FrameSource } from '../../../core/ingest/port.ts';
import { declaredFrameCount, parseSourceKey, type FrameCountSource, type SourceContainer } from '../../../core/ingest/segment-keys.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import type { DecodedPixels, FrameOutcome, LogSink, MetricSink } from '../../../core/ports.ts';
import type { FrameRef } from '../../../core/ordering/sequencer.ts';
import type { FramePrefetch } from '../ahead/frame-prefetch.ts';
import {
  countSegmentFrames,
  DECODER_PLACEMENTS,
  decodeSegment,
  readAhead,
  type DecodeDevice,
  type DecodedFrame,
  type DecoderPlacement,
  type FrameSize,
  type HardwarePreference,
  type SegmentEnd,
  type SegmentItem,
} from '../../video/segment-decoder.ts';

/**
 * Frames decoded ahead of the caller per open segment: one call of the frame runner's
 * (DECODED_FRAMES_PER_CALL in gpu-worker/runtime/frame-runner.ts), so a round's first call
 * finds its frames decoded during the previous round's commit. At a 640-px letterbox,
 * 16 decoded 1080p frames are about 11 MB per video decoding.
 */
export const DECODE_AHEAD_FRAMES = 16;
/** A video's upcoming segments remembered (in run order) for reading ahead as its decoder moves on. */
const ORDER_KEPT = 32;
/** Videos whose upcoming segments are remembered (the least recently told is forgotten beyond). */
const ORDERS_KEPT = 1_024;
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
  /** The CUDA device and decoder factory (segment-decoder.ts's `nodeAvDevice` by default; a test simulates a GPU). */
  readonly device?: DecodeDevice;
  /** The size to decode each frame to (the model's letterbox), from the stream's; undefined keeps the stream's size. */
  readonly resizeFor?: (sourceWidth: number, sourceHeight: number) => FrameSize | undefined;
  /** Segments with an open decoder at once; the least recently used is closed beyond. @default 32 */
  readonly maxOpenSegments?: number;
  /**
   * Where segments read ahead are held (the worker's prefetch); absent: nothing is read
   * ahead, and each segment is fetched when its decoder opens.
   */
  readonly ahead?: Pick<FramePrefetch, 'prefetchSegments' | 'take' | 'holds'>;
  /** `segmentReadAheadSegments`: segments past the first one without a decoder read ahead per video; 0: none. @default 0 */
  readonly segmentsAhead?: number;
  /** `segmentReadAheadBytes`: most bytes of segments read ahead held at once (all videos). @default 0 */
  readonly aheadBudgetBytes?: number;
  /**
   * What counts and decodes a segment's bytes. @default FFmpeg through node-av
   * ({@link FFMPEG_SEGMENT_CODEC}); the deterministic simulation (lab/sim/) gives one
   * that runs without threads, so that a seed replays event for event.
   */
  readonly codec?: SegmentCodec;
}

/** Counts and decodes a segment's bytes (segment-decoder.ts's contract). */
export interface SegmentCodec {
  readonly decode: typeof decodeSegment;
  readonly count: typeof countSegmentFrames;
}

/** The product's codec: FFmpeg, through node-av. */
export const FFMPEG_SEGMENT_CODEC: SegmentCodec = { decode: decodeSegment, count: countSegmentFrames };

/** One open segment: its decoder, positioned at frame index `position`. */
interface Cursor {
  readonly key: string;
  readonly eTag: string | undefined;
  readonly items: AsyncGenerator<SegmentItem, void, undefined>;
  /** Index of the next frame `items` yields. */
  position: number;
  /** Opened ahead: `items`' first item, asked for already so that decoding has begun. */
  primed?: Promise<IteratorResult<SegmentItem, void>>;
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
  /** Per video, where its last segment's frames were decoded; forgotten when the worker lets the video go. */
  private readonly placements = new Map<string, DecoderPlacement>();
  /** The placements in use last logged and counted (`nvdec`, `nvdec,cpu-fallback`); '' before any. */
  private inUse = '';
  /** Per video, the segments it runs next, in order (from the last {@link readAhead}). */
  private readonly orders = new Map<string, readonly { readonly bucket: string; readonly key: string }[]>();

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
    const counted = await (this.d.codec ?? FFMPEG_SEGMENT_CODEC).count(bytes);
    if (counted === undefined) return { frameCount: 1, source: 'unknown', sizeBytes: head.sizeBytes, eTag: head.eTag };
    // MP4 states its count (the sample table); MPEG-TS and Matroska are counted packet by packet.
    return { frameCount: counted, source: containerOf(key) === 'mp4' ? 'container' : 'decoded', sizeBytes: head.sizeBytes, eTag: head.eTag };
  }

  private reuploaded(key: string, known: SegmentDescription): void {
    const p = parseSourceKey(key);
    const from = p.kind === 'source' ? p.firstFrame : 0;
    const videoId = p.kind === 'source' ? p.videoId : '<video>';
    this.d.metrics.count(METRIC_NAMES.worker.segmentsReuploaded, 1);
    this.d.log.warn('segment re-uploaded with other bytes: its frame count stands, recorded frames keep their records', {
      key,
      frameCount: known.frameCount,
      command: `affinity replay ${videoId} --from ${from}`,
    });
  }

  /**
   * Frame `ref.frame` of the segment `ref.key`, decoded. `failed` when the decoder cannot
   * yield it (with its reason) or the object is gone (`object-missing`); throws on other S3
   * errors, for the caller's retry.
   */
  frame(ref: FrameRef): Promise<SegmentFrame> {
    return this.inTurn(ref.key, () => this.frameInTurn(ref));
  }

  /** Runs `fn` once every call on segment `key` before it has settled: one segment's calls one at a time, in call order. */
  private inTurn<T>(key: string, fn: () => Promise<T>): Promise<T> {
    // One segment's frames are asked for concurrently by a round: one at a time, in call order.
    const prev = this.turns.get(key) ?? Promise.resolve();
    const run = prev.then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.turns.set(key, tail);
    void tail.then(() => {
      if (this.turns.get(key) === tail) this.turns.delete(key);
    });
    return run;
  }

  private async frameInTurn(ref: FrameRef): Promise<SegmentFrame> {
    const parsed = parseSourceKey(ref.key);
    if (parsed.kind !== 'source' || parsed.container === 'image') throw new Error(`${ref.key} is not a segment`);
    const index = ref.frame - parsed.firstFrame;
    const d = await this.describe(ref.bucket, ref.key);
    if (d.source === 'unknown' && index >= 1) {
      // An object nothing could count covers its span up to the next object (decision 59):
      // each of those frames fails as its first frame does, with the same reason.
      const first = await this.frameInTurn({ ...ref, frame: parsed.firstFrame });
      if ('failed' in first && first.failed.status === 'failed') {
        const { reason, detail } = first.failed;
        return { failed: { status: 'failed', reason, detail: `frame ${ref.frame} of an object whose frame count is unknown: ${detail ?? reason}`.slice(0, 300) } };
      }
    }
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

  /**
   * Reads ahead the segments of a video's `upcoming` frames (in the order they will run:
   * a round's plan, then its buffered frames): the first of them (the one decoding now, or
   * next) and up to `segmentsAhead` after it, those without an open decoder, each once,
   * within the byte budget. The order is remembered: each time a decoder opens on one of
   * them, the window moves on with it (so the video keeps `segmentsAhead` segments past
   * the one decoding), and the next one opens ahead when it ends ({@link openNext}). Only
   * segments already described (their HEAD gave the version to fetch) and within
   * `maxSegmentBytes`. Returns the GETs started.
   */
  readAhead(videoId: string, upcoming: Iterable<FrameRef>): number {
    if (!this.d.ahead || (this.d.segmentsAhead ?? 0) <= 0) return 0;
    const order: { bucket: string; key: string }[] = [];
    const seen = new Set<string>();
    for (const ref of upcoming) {
      if (seen.has(ref.key) || !SegmentReader.isSegment(ref.key)) continue;
      if (order.length >= ORDER_KEPT) break;
      seen.add(ref.key);
      order.push({ bucket: ref.bucket, key: ref.key });
    }
    this.orders.delete(videoId);
    this.orders.set(videoId, order);
    if (this.orders.size > ORDERS_KEPT) this.orders.delete(this.orders.keys().next().value!);
    return this.fetchWindow(videoId, order, 0);
  }

  /** Starts the GETs of `order[from]` and the `segmentsAhead` after it that are not open or held. */
  private fetchWindow(videoId: string, order: readonly { readonly bucket: string; readonly key: string }[], from: number): number {
    const ahead = this.d.ahead;
    if (!ahead) return 0;
    const wanted: { bucket: string; key: string; sizeBytes: number; eTag: string; videoId: string }[] = [];
    for (const { bucket, key } of order.slice(from, from + (this.d.segmentsAhead ?? 0) + 1)) {
      // Open: its bytes are in its decoder already.
      if (this.open.has(key) || ahead.holds(bucket, key)) continue;
      const d = this.described.get(key);
      if (!d || d.eTag === undefined || d.sizeBytes <= 0 || d.sizeBytes > this.d.maxSegmentBytes) continue;
      wanted.push({ bucket, key, sizeBytes: d.sizeBytes, eTag: d.eTag, videoId });
    }
    return wanted.length > 0 ? ahead.prefetchSegments(wanted, this.d.aheadBudgetBytes ?? 0) : 0;
  }

  /** A decoder opened on `key`: its video's window moves on to it. */
  private movedTo(key: string): void {
    const p = parseSourceKey(key);
    if (p.kind !== 'source') return;
    const order = this.orders.get(p.videoId);
    const at = order?.findIndex((o) => o.key === key) ?? -1;
    if (order && at >= 0) this.fetchWindow(p.videoId, order, at);
  }

  /**
   * Opens the segment that follows `key` in its video's order, if its bytes were read
   * ahead, and starts decoding it: its first frames are decoded by the time they are
   * asked for (the next round's, during this one's commit). Nothing else: without bytes
   * held (not read ahead, failed, dropped) it stays closed, and its frames open it as
   * they always have.
   */
  private openNext(key: string): void {
    const p = parseSourceKey(key);
    if (p.kind !== 'source') return;
    const order = this.orders.get(p.videoId);
    const at = order?.findIndex((o) => o.key === key) ?? -1;
    const next = order && at >= 0 ? order[at + 1] : undefined;
    if (!next || this.open.has(next.key) || !this.d.ahead?.holds(next.bucket, next.key)) return;
    void this.inTurn(next.key, async () => {
      const parsed = parseSourceKey(next.key);
      const d = this.described.get(next.key);
      if (this.open.has(next.key) || !d || parsed.kind !== 'source' || parsed.container === 'image') return;
      const cursor = await this.openCursor(next.bucket, next.key, parsed.firstFrame, parsed.container, d);
      cursor.primed = cursor.items.next();
      // Consumed (or closed) later; a failure here is the frame's to report when it is asked for.
      cursor.primed.catch(() => undefined);
    }).catch(() => undefined);
  }

  /**
   * Closes the decoders of a video the worker let go (its lease moved, or it was
   * released), except one a call is decoding from, and forgets its order: its decoded
   * frames are no one's now.
   */
  async closeVideo(videoId: string): Promise<void> {
    this.orders.delete(videoId);
    if (this.placements.delete(videoId)) this.reportInUse();
    for (const key of [...this.open.keys()]) {
      const p = parseSourceKey(key);
      if (p.kind === 'source' && p.videoId === videoId && !this.turns.has(key)) await this.close(key);
    }
  }

  /** Closes every open decoder (the worker stops, or a test ends). */
  async closeAll(): Promise<void> {
    for (const key of [...this.open.keys()]) await this.close(key);
  }

  private async openCursor(bucket: string, key: string, firstFrame: number, container: Exclude<SourceContainer, 'image'>, d: SegmentDescription): Promise<Cursor> {
    // Read ahead (under the described ETag, so the version described), else fetched now.
    const early = await this.d.ahead?.take(bucket, key);
    const { bytes, eTag } = early ? { bytes: early, eTag: d.eTag } : await this.d.frames.getVersion(bucket, key);
    if (d.eTag !== undefined && eTag !== undefined && eTag !== d.eTag) this.reuploaded(key, d);
    const items = readAhead(
      (this.d.codec ?? FFMPEG_SEGMENT_CODEC).decode(bytes, {
        firstFrame,
        container,
        declaredFrames: d.frameCount,
        hardware: this.d.hardware,
        ...(this.d.device ? { device: this.d.device } : {}),
        ...(this.d.resizeFor ? { resize: this.d.resizeFor } : {}),
      }),
      DECODE_AHEAD_FRAMES,
    );
    const cursor: Cursor = { key, eTag, items, position: 0 };
    this.open.set(key, cursor);
    this.movedTo(key);
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
    const r = await this.nextItem(c);
    if (!r.done && r.value.kind === 'end') this.ended(c, r.value);
  }

  private ended(c: Cursor, end: SegmentEnd): void {
    c.end = end;
    this.noteDecoder(c.key, end);
    if (end.lost || end.concealed) {
      // Damage cost only these frames (the `lost` ones have failed records with the decoder's reason).
      this.d.log.warn('segment decoded past damage', { key: c.key, framesLost: end.lost ?? 0, framesConcealed: end.concealed ?? 0, decoded: end.decoded });
    }
    if (end.decoded > 0 && end.placement !== 'none') this.d.metrics.count(METRIC_NAMES.worker.segmentFramesDecoded, end.decoded, { Decoder: end.placement });
  }

  private async advance(c: Cursor, index: number, frameCount: number): Promise<SegmentFrame> {
    while (!c.end && c.position <= index) {
      const r = await this.nextItem(c);
      if (r.done) break;
      const item = r.value;
      if (item.kind === 'end') {
        this.ended(c, item);
        break;
      }
      c.position = item.index + 1;
      if (item.index === index) {
        // The segment's last frame: take its end item now (decoded ahead already), so the decoder closes and is reported,
        // and start decoding the video's next segment.
        if (index === frameCount - 1) {
          await this.finish(c);
          this.openNext(c.key);
        }
        // A frame the decoder could not produce inside the segment: its own record, the frames after it go on.
        if (item.kind === 'lost') return { failed: { status: 'failed', reason: item.reason, detail: item.detail.slice(0, 300) } };
        return { pixels: pixelsOf(item) };
      }
    }
    const end = c.end;
    const failure = end?.failure;
    if (failure) return { failed: { status: 'failed', reason: failure.reason, detail: failure.detail.slice(0, 300) } };
    return { failed: { status: 'failed', reason: 'truncated', detail: `the segment yielded ${end?.decoded ?? c.position} frames; frame index ${index} is not among them` } };
  }

  /** The cursor's next item: the one asked for when it was opened ahead, then its decoder's. */
  private nextItem(c: Cursor): Promise<IteratorResult<SegmentItem, void>> {
    const primed = c.primed;
    if (!primed) return c.items.next();
    c.primed = undefined;
    return primed;
  }

  /**
   * Where the worker's segments decode now: the placements of the videos it holds (their
   * last segments), in a fixed order; empty before any segment decoded. The GPU sampler
   * counts them once a minute (`SegmentDecoderInUse`, the `WorkerDecodingOnCpu` alarm).
   */
  get decodersInUse(): DecoderPlacement[] {
    const seen = new Set(this.placements.values());
    return DECODER_PLACEMENTS.filter((p) => seen.has(p));
  }

  /**
   * A segment's placement, per video: a video that starts decoding on the CPU although
   * NVDEC was asked for is said once (with the reason: its stream's format, no device, a
   * failure), and again only when its placement changes; the worker's set of placements
   * is logged and counted whenever it changes.
   */
  private noteDecoder(key: string, end: SegmentEnd): void {
    if (end.placement === 'none') return;
    const p = parseSourceKey(key);
    if (p.kind !== 'source') return;
    const before = this.placements.get(p.videoId);
    // Most recently decoded last: the oldest is forgotten beyond the bound (closeVideo forgets the rest).
    this.placements.delete(p.videoId);
    this.placements.set(p.videoId, end.placement);
    if (this.placements.size > ORDERS_KEPT) this.placements.delete(this.placements.keys().next().value!);
    if (before !== end.placement && end.placement === 'cpu-fallback') {
      this.d.log.warn('video decoded on the CPU: NVDEC not used', { videoId: p.videoId, codec: end.codec, reason: end.fallbackReason, decoder: end.decoder });
    } else if (before === 'cpu-fallback') {
      this.d.log.info('video decoded by NVDEC again', { videoId: p.videoId, codec: end.codec, decoder: end.decoder });
    }
    this.reportInUse(end.decoder);
  }

  private reportInUse(detail?: string): void {
    const now = this.decodersInUse;
    const text = now.join(',');
    // No video decoding (all let go) is no change: the next segment that decodes as before is not news.
    if (text === this.inUse || now.length === 0) return;
    this.inUse = text;
    this.d.log.info('segment decoder in use', { decoder: text, ...(detail !== undefined ? { detail } : {}) });
    for (const placement of now) this.d.metrics.count(METRIC_NAMES.worker.segmentDecoderInUse, 1, { Decoder: placement });
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
