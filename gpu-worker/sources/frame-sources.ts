/**
 * The worker's frame sources (sources/port.ts): images and encoded segments behind one
 * interface. Each key goes to the source of its kind, read here and nowhere in the
 * runtime ({@link FrameSourcesRouter.spans}). Built by {@link createFrameSources} from the
 * worker's store and tunables: the prefetch both kinds read ahead into (its frames and
 * segments each in their own budget), the hedged GET of a round's images, the segment
 * reader and its decoder.
 *
 * One repair needs both kinds, so it lives here: a frame its segment declared but could
 * not yield (`truncated`) is read from the object that holds it instead, if S3 has one
 * (decision 59, {@link FrameSourcesRouter.heldElsewhere}).
 */
import type { Tunables } from '../../core/config.ts';
import type { FrameSource } from '../../core/ingest/port.ts';
import type { FrameMessage } from '../../core/ingest/messages.ts';
import { padWidthOf } from '../../core/ingest/keys.ts';
import { holdsInstead, parseSourceKey } from '../../core/ingest/segment-keys.ts';
import type { FrameInput, FrameOutcome, LogSink, MetricSink } from '../../core/ports.ts';
import type { FrameRef } from '../../core/ordering/sequencer.ts';
import type { DecodeDevice, FrameSize, HardwarePreference } from '../video/segment-decoder.ts';
import { FramePrefetch, type FramePrefetchOptions } from './ahead/frame-prefetch.ts';
import { hedgedFrameStore } from './ahead/hedged-fetch.ts';
import { ImageSource } from './image/image-source.ts';
import type { BoundedGet, DecoderPlacement, FetchedAhead, FrameRead, FrameSources, HeldFrames, ObjectSource } from './port.ts';
import { isTransient } from './read-errors.ts';
import { SegmentReader, type SegmentCodec } from './segment/segment-reader.ts';
import { SegmentSource, type SegmentReading } from './segment/segment-source.ts';

/** Truncated segments whose listing is remembered ({@link FrameSourcesRouter.heldElsewhere}). */
const TAIL_LISTINGS_KEPT = 64;
/** How long such a listing answers for the segment's other frames (one round's worth): a later round lists again. */
const TAIL_LISTING_FRESH_MS = 5_000;

export interface FrameSourcesDeps {
  /** The store frames and segments are read from. */
  readonly frames: FrameSource;
  readonly tunables: Pick<Tunables, 'maxFrameBytes'> &
    Partial<Pick<Tunables, 'maxSegmentBytes' | 'maxOpenSegments' | 'videoDecoder' | 'segmentReadAheadSegments' | 'segmentReadAheadBytes' | 'fetchHedgeMs' | 'readAheadFrames'>>;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  /** @default Date.now */
  readonly now?: () => number;
  /** What the prefetch hands the processor ahead of a round (runtime/ahead/ahead-hints.ts). */
  readonly aheadHooks?: Pick<FramePrefetchOptions, 'onFetched' | 'onReadAhead'>;
  /** The CUDA device and decoder factory segments decode with; node-av's by default (a test simulates a GPU). */
  readonly decodeDevice?: DecodeDevice;
  /** Counts and decodes segments; absent: FFmpeg (node-av). The simulation's is thread-free (lab/sim/). */
  readonly segmentCodec?: SegmentCodec;
  /** The size to decode each segment frame to (the model's letterbox); undefined keeps the stream's. */
  readonly resizeFor?: (sourceWidth: number, sourceHeight: number) => FrameSize | undefined;
  /** Replaces the segment reader (a test that only describes segments). */
  readonly segmentReader?: SegmentReading;
}

/** The worker's frame sources over its store and tunables. */
export function createFrameSources(d: FrameSourcesDeps): FrameSources {
  const now = d.now ?? Date.now;
  const t = d.tunables;
  // Hedged GETs (decision 38): a round's own GETs, and a prefetch only once a round waits for it.
  const hedgeAfterMs = t.fetchHedgeMs ?? 0;
  const prefetch = new FramePrefetch(d.frames, { now, ...d.aheadHooks, hedgeAfterMs });
  const maxSegmentBytes = t.maxSegmentBytes ?? Infinity;
  const reader =
    d.segmentReader ??
    new SegmentReader({
      frames: d.frames,
      log: d.log,
      metrics: d.metrics,
      maxSegmentBytes,
      // Bounded with maxSegmentBytes by the container's memory limit (core/config/worker-memory.ts, checked at synth).
      ...(t.maxOpenSegments !== undefined ? { maxOpenSegments: t.maxOpenSegments } : {}),
      hardware: (t.videoDecoder ?? 'auto') as HardwarePreference,
      ...(d.decodeDevice ? { device: d.decodeDevice } : {}),
      // A video's next segments are fetched while its current one decodes (decision 51).
      ahead: prefetch,
      segmentsAhead: t.segmentReadAheadSegments ?? 0,
      aheadBudgetBytes: t.segmentReadAheadBytes ?? 0,
      ...(d.segmentCodec ? { codec: d.segmentCodec } : {}),
      ...(d.resizeFor ? { resizeFor: d.resizeFor } : {}),
    });
  const frames = hedgedFrameStore(d.frames, hedgeAfterMs);
  return new FrameSourcesRouter({
    frames,
    prefetch,
    images: new ImageSource({ frames, prefetch, maxFrameBytes: t.maxFrameBytes, readAheadFrames: t.readAheadFrames ?? 0 }),
    segments: new SegmentSource(reader, maxSegmentBytes),
    now,
  });
}

interface RouterDeps {
  /** The store a truncated segment's frame is looked for in (listed, and an image read whole). */
  readonly frames: Pick<FrameSource, 'listFrames'>;
  readonly prefetch: FramePrefetch;
  readonly images: ImageSource;
  readonly segments: SegmentSource;
  readonly now: () => number;
}

/** Routes each key to the source of its kind; see the file's comment. */
export class FrameSourcesRouter implements FrameSources {
  readonly #d: RouterDeps;
  /** Per truncated segment, the objects listed after its first frame ({@link heldElsewhere}). */
  readonly #tailListings = new Map<string, { readonly atMs: number; readonly frames: Promise<FrameRef[]> }>();

  constructor(deps: RouterDeps) {
    this.#d = deps;
  }

  /** Whether a key names an encoded segment (not an image): the one place a key's kind is read. */
  spans(key: string): boolean {
    return SegmentReader.isSegment(key);
  }

  #of(key: string): ObjectSource {
    return this.spans(key) ? this.#d.segments : this.#d.images;
  }

  framesOf(ref: FrameRef, o?: { readonly eTag?: string; readonly spanEnd?: number }): Promise<HeldFrames> {
    return this.#of(ref.key).framesOf(ref, o);
  }

  covering(bucket: string, key: string, frame: number): Promise<FrameRef | undefined> {
    return this.#of(key).covering(bucket, key, frame);
  }

  learn(objects: readonly { readonly bucket: string; readonly key: string }[]): Promise<void> {
    return this.#d.segments.learn(objects.filter((o) => this.spans(o.key)));
  }

  screen(ref: FrameRef): FrameOutcome | undefined {
    if (ref.sizeBytes === 0) return { status: 'failed', reason: 'empty-object', detail: 'zero-byte object' };
    return this.#of(ref.key).screen(ref);
  }

  early(videoId: string, ref: FrameRef): Promise<FrameInput | undefined> {
    return this.#of(ref.key).early(videoId, ref);
  }

  async read(videoId: string, ref: FrameRef, gets: BoundedGet): Promise<FrameRead> {
    const got = await this.#of(ref.key).read(videoId, ref, gets);
    if ('failed' in got && got.failed.status === 'failed' && got.failed.reason === 'truncated') return (await this.heldElsewhere(videoId, ref)) ?? got;
    return got;
  }

  /**
   * A frame its segment declared but could not yield (`truncated`), read from the object
   * that holds it instead, if S3 has one (decision 59): the object whose first frame is the
   * nearest above the segment's and not above the frame (a next segment that starts at the
   * true frame after an over-declared count). One listing per segment, remembered for its
   * other frames. Undefined when none holds it or it cannot yield it either: the frame keeps
   * its `truncated` record. A transient listing error fails the round (retried); any other
   * leaves the frame to its record.
   */
  private async heldElsewhere(videoId: string, ref: FrameRef): Promise<{ input: FrameInput } | undefined> {
    const parsed = parseSourceKey(ref.key);
    if (parsed.kind !== 'source') return undefined;
    const now = this.#d.now();
    const kept = this.#tailListings.get(ref.key);
    let listed = kept && now - kept.atMs < TAIL_LISTING_FRESH_MS ? kept.frames : undefined;
    if (!listed) {
      listed = this.#d.frames.listFrames(ref.bucket, videoId, parsed.firstFrame + 1, padWidthOf(ref.key), 1, ref.frame).then((l) => l.frames);
      this.#tailListings.delete(ref.key);
      this.#tailListings.set(ref.key, { atMs: now, frames: listed });
      listed.catch(() => this.#tailListings.delete(ref.key));
      if (this.#tailListings.size > TAIL_LISTINGS_KEPT) this.#tailListings.delete(this.#tailListings.keys().next().value!);
    }
    let frames: FrameRef[];
    try {
      frames = await listed;
    } catch (e) {
      if (isTransient(e)) throw e;
      return undefined;
    }
    const holder = frames.filter((r) => r.frame > parsed.firstFrame && r.frame <= ref.frame && holdsInstead(r.key, ref.key)).at(-1);
    if (!holder) return undefined;
    const holderRef = { frame: ref.frame, bucket: holder.bucket, key: holder.key, sizeBytes: holder.sizeBytes };
    // An image holds only its own frame; outside the round's GET bound, as the repair always read it.
    if (!this.spans(holder.key) && holder.frame !== ref.frame) return undefined;
    const got = await this.#of(holder.key).read(videoId, holderRef, (get) => get());
    return 'failed' in got ? undefined : got;
  }

  received(frames: readonly FrameMessage[], fullReceive: number): void {
    this.#d.images.received(frames, fullReceive);
  }

  prefetch(frames: readonly FrameMessage[]): void {
    // Images only: segments are read ahead by the segment reader once their HEAD has described them (decision 51).
    this.#d.images.prefetch(frames.filter((f) => !this.spans(f.key)));
  }

  readAhead(videoId: string, upcoming: Iterable<FrameRef>): void {
    this.#d.segments.readAhead(videoId, upcoming);
  }

  /** What was fetched or decoded ahead for a video let go is dropped (decision 51). */
  closeVideo(videoId: string): Promise<void> {
    this.#d.prefetch.dropVideo(videoId);
    return this.#d.segments.closeVideo(videoId);
  }

  closeAll(): Promise<void> {
    return this.#d.segments.closeAll();
  }

  get decodersInUse(): DecoderPlacement[] {
    return this.#d.segments.decodersInUse;
  }

  get fetchedAhead(): FetchedAhead {
    const p = this.#d.prefetch;
    return {
      started: p.started,
      used: p.used,
      readAhead: { started: p.readAheadStarted, used: p.readAheadUsed, missed: p.readAheadMissed },
      segments: { started: p.segmentsStarted, used: p.segmentsUsed, failed: p.segmentsFailed, dropped: p.segmentsDropped },
    };
  }
}
