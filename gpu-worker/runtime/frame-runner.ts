/**
 * Runs the frames of a batch: fetches them from S3 and hands each video's frames to the
 * processor as soon as they are in, so S3 GETs of one video overlap inference of
 * another (the processor's micro-batcher merges concurrent calls across videos).
 *
 * Faults are isolated per frame and per video:
 * - a frame that cannot be read for good (missing, archived, denied, undecodable) gets a
 *   `failed` outcome whose reason is the S3 error code;
 * - a transient error (throttling, 5xx, timeout) is retried with backoff, and if it
 *   persists the video alone fails this round ({@link VideoRun} `ok: false`, with the
 *   frames to blame) while the other videos of the batch go on;
 * - every video's work is awaited before the batch returns, so no processing abandoned
 *   by a failure can touch a video's state after the worker restores it.
 */
import { isServerError, isThrottlingError, isTransientError } from '@smithy/core/retry';
import type { Tunables } from '../../core/config.ts';
import { ObjectMissingError, type FrameSource } from '../../core/ingest/port.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import type { FrameInput, FrameOutcome, FrameProcessor, LateFrameInput, LogSink, MetricSink, NeighbourFrame } from '../../core/ports.ts';
import type { RecordReader } from '../../core/commit/port.ts';
import type { FrameRef, LateFrame, SequencedStep } from '../../core/ordering/sequencer.ts';
import type { FramePrefetch } from '../sources/ahead/frame-prefetch.ts';
import { SegmentReader } from '../sources/segment/segment-reader.ts';
import { errorText } from '../../core/errors.ts';
import { padWidthOf } from '../../core/ingest/keys.ts';
import { holdsInstead, parseSourceKey } from '../../core/ingest/segment-keys.ts';

/** Concurrent S3 GETs per round when `fetchConcurrency` is not given. */
const FETCH_CONCURRENCY = 8;
/** Retries of a transient S3 error (or a late frame's neighbour read) inside one round, on top of the SDK's own. */
const FETCH_RETRIES = 2;
const FETCH_RETRY_BASE_MS = 200;
/**
 * A video's frames from segments go to the processor this many at a time, in order: decoded
 * frames are far larger than encoded images, so a round never holds all of its
 * video's decoded frames at once (80 at 1080p would be 500 MB).
 */
const DECODED_FRAMES_PER_CALL = 16;
/** Truncated segments whose listing is remembered ({@link FrameRunner.heldElsewhere}). */
const TAIL_LISTINGS_KEPT = 64;
/** How long such a listing answers for the segment's other frames (one round's worth): a later round lists again. */
const TAIL_LISTING_FRESH_MS = 5_000;
/** How far a late frame looks for committed neighbours, frames. */
const NEIGHBOUR_DISTANCE_FRAMES = 30;

export interface VideoPlan {
  readonly videoId: string;
  readonly steps: readonly SequencedStep[];
  /** Frames given up on after repeated failures: recorded as failed with this reason, not fetched. */
  readonly parked: ReadonlyMap<number, string>;
}

export type VideoRun =
  | { readonly ok: true; readonly outcomes: Map<number, FrameOutcome> }
  /** The video failed this round; `blamed` are the frames at fault (all of its frames when unknown). */
  | {
      readonly ok: false;
      readonly reason: string;
      readonly detail: string;
      readonly blamed: readonly number[];
      /** The failure was an outage (throttling, 5xx, timeouts, no connection) that outlasted the retries, not the frames' fault. */
      readonly transient?: boolean;
    };

export interface FrameRunnerDeps {
  readonly frames: FrameSource;
  readonly processor: FrameProcessor;
  /** The video's records: a late frame's neighbours. */
  readonly records: Pick<RecordReader, 'nearestProcessed'>;
  readonly tunables: Pick<Tunables, 'maxFrameBytes'> & Partial<Pick<Tunables, 'fetchConcurrency' | 'maxSegmentBytes'>>;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  readonly now: () => number;
  /** Frames fetched ahead of their round; taken first when present. */
  readonly prefetch?: FramePrefetch;
  /** Decodes the frames of encoded segments (gpu-worker/sources/segment/segment-reader.ts); absent: a segment's frames fail as unsupported. */
  readonly segments?: Pick<SegmentReader, 'frame'>;
}

/** An error that fails one video's round, naming the frames at fault. */
class VideoRoundError extends Error {
  readonly reason: string;
  readonly blamed: readonly number[];
  readonly transient: boolean;

  constructor(reason: string, detail: string, blamed: readonly number[], transient: boolean) {
    super(detail);
    this.reason = reason;
    this.blamed = blamed;
    this.transient = transient;
  }
}

export class FrameRunner {
  private readonly d: FrameRunnerDeps;
  /** Per truncated segment, the objects listed after its first frame ({@link heldElsewhere}). */
  private readonly tailListings = new Map<string, { readonly atMs: number; readonly frames: Promise<FrameRef[]> }>();

  constructor(deps: FrameRunnerDeps) {
    this.d = deps;
  }

  /** Runs every plan; one entry per plan, whatever happened to the others. */
  async run(plans: readonly VideoPlan[]): Promise<Map<string, VideoRun>> {
    const fetchSlots = new Semaphore(this.d.tunables.fetchConcurrency ?? FETCH_CONCURRENCY);
    const settled = await Promise.allSettled(plans.map((p) => this.runVideo(p, fetchSlots)));
    const out = new Map<string, VideoRun>();
    settled.forEach((s, i) => {
      const plan = plans[i]!;
      if (s.status === 'fulfilled') {
        out.set(plan.videoId, { ok: true, outcomes: s.value });
        return;
      }
      const e = s.reason;
      const all = plan.steps.flatMap((st) => (st.type === 'frame' || st.type === 'late' ? [st.ref.frame] : []));
      if (e instanceof VideoRoundError) out.set(plan.videoId, { ok: false, reason: e.reason, detail: e.message, blamed: e.blamed, transient: e.transient });
      else out.set(plan.videoId, { ok: false, reason: 'processing-error', detail: errorText(e), blamed: all });
    });
    return out;
  }

  private async runVideo(plan: VideoPlan, fetchSlots: Semaphore): Promise<Map<number, FrameOutcome>> {
    const outcomes = new Map<number, FrameOutcome>();
    const inOrder: FrameRef[] = [];
    const late: LateFrame[] = [];
    for (const s of plan.steps) {
      if (s.type !== 'frame' && s.type !== 'late') continue;
      const parkedReason = plan.parked.get(s.ref.frame);
      const screened = parkedReason ? { status: 'failed' as const, reason: parkedReason, detail: 'given up after repeated errors; retry with `affinity replay`' } : this.screen(s.ref);
      if (screened) outcomes.set(s.ref.frame, screened);
      else if (s.type === 'late') late.push(s.ref);
      else inOrder.push(s.ref);
    }
    /** Frames read from another object than their step's (decision 59): their records name it. */
    const movedTo = new Map<number, string>();
    const fetched = async (ref: FrameRef): Promise<FrameInput | undefined> => {
      const got = await this.fetch(plan.videoId, ref, fetchSlots);
      if ('failed' in got) {
        outcomes.set(ref.frame, got.failed);
        return undefined;
      }
      if (got.input.key !== undefined && got.input.key !== ref.key) movedTo.set(ref.frame, got.input.key);
      return got.input;
    };
    const named = () => {
      for (const [frame, key] of movedTo) {
        const o = outcomes.get(frame);
        if (o?.status === 'ok') outcomes.set(frame, { ...o, sourceKey: key });
      }
      return outcomes;
    };
    const lateInput = async (ref: LateFrame): Promise<LateFrameInput | undefined> => {
      const [input, neighbours] = await Promise.all([fetched(ref), this.neighbours(plan.videoId, ref.frame)]);
      return input ? { ...input, ...neighbours } : undefined;
    };
    if (inOrder.some((r) => SegmentReader.isSegment(r.key)) || late.some((r) => SegmentReader.isSegment(r.key))) {
      // Decoded frames are large: a few at a time (DECODED_FRAMES_PER_CALL), the next few
      // decoding while these run; in order first, then the late ones.
      await inChunks(inOrder, (chunk) => settleAll(chunk.map(fetched)), (inputs) => this.processInOrder(inputs, outcomes));
      await inChunks(late, (chunk) => settleAll(chunk.map(lateInput)), (inputs) => this.processLateFrames(inputs, outcomes));
      return named();
    }
    const [inputs, lateInputs] = await Promise.all([
      settleAll(inOrder.map(fetched)),
      settleAll(late.map(lateInput)),
    ]);
    const present = inputs.filter((i): i is FrameInput => i !== undefined);
    const presentLate = lateInputs.filter((i): i is LateFrameInput => i !== undefined);
    const started = this.d.now();
    const [results, lateResults] = await settleAll([
      present.length > 0 ? this.d.processor.process(present) : Promise.resolve([]),
      presentLate.length > 0 ? this.d.processor.processLate(presentLate) : Promise.resolve([]),
    ]);
    const processed = present.length + presentLate.length;
    if (processed > 0) this.d.metrics.milliseconds(METRIC_NAMES.worker.inferenceLatencyMs, (this.d.now() - started) / processed);
    present.forEach((input, i) => outcomes.set(input.frame, withStreamTime(results[i]!, input)));
    presentLate.forEach((input, i) => outcomes.set(input.frame, withStreamTime(lateResults[i]!, input)));
    return named();
  }

  /** Runs in-order frames already fetched, in one call, and notes their outcomes. */
  private async processInOrder(inputs: readonly (FrameInput | undefined)[], outcomes: Map<number, FrameOutcome>): Promise<void> {
    const present = inputs.filter((i): i is FrameInput => i !== undefined);
    if (present.length === 0) return;
    const started = this.d.now();
    const results = await this.d.processor.process(present);
    this.d.metrics.milliseconds(METRIC_NAMES.worker.inferenceLatencyMs, (this.d.now() - started) / present.length);
    present.forEach((input, i) => outcomes.set(input.frame, withStreamTime(results[i]!, input)));
  }

  /** Runs late frames already fetched, in one call, and notes their outcomes. */
  private async processLateFrames(inputs: readonly (LateFrameInput | undefined)[], outcomes: Map<number, FrameOutcome>): Promise<void> {
    const present = inputs.filter((i): i is LateFrameInput => i !== undefined);
    if (present.length === 0) return;
    const started = this.d.now();
    const results = await this.d.processor.processLate(present);
    this.d.metrics.milliseconds(METRIC_NAMES.worker.inferenceLatencyMs, (this.d.now() - started) / present.length);
    present.forEach((input, i) => outcomes.set(input.frame, withStreamTime(results[i]!, input)));
  }

  /** Frames that need no fetch to know they are unusable. */
  private screen(ref: FrameRef): FrameOutcome | undefined {
    if (ref.sizeBytes === 0) return { status: 'failed', reason: 'empty-object', detail: 'zero-byte object' };
    const segment = SegmentReader.isSegment(ref.key);
    const limit = segment ? (this.d.tunables.maxSegmentBytes ?? Infinity) : this.d.tunables.maxFrameBytes;
    if (ref.sizeBytes > limit) {
      return { status: 'failed', reason: 'oversized', detail: `${ref.sizeBytes} bytes > ${segment ? 'maxSegmentBytes' : 'maxFrameBytes'} ${limit}` };
    }
    return undefined;
  }

  private async fetch(videoId: string, ref: FrameRef, fetchSlots: Semaphore): Promise<{ input: FrameInput } | { failed: FrameOutcome }> {
    const segment = SegmentReader.isSegment(ref.key);
    const early = segment ? undefined : await this.d.prefetch?.take(ref.bucket, ref.key);
    if (early) return { input: { videoId, frame: ref.frame, image: early, key: ref.key } };
    for (let attempt = 0; ; attempt++) {
      try {
        if (segment) {
          if (!this.d.segments) return { failed: { status: 'failed', reason: 'unsupported-source', detail: 'this worker decodes no segments' } };
          const got = await this.d.segments.frame(ref);
          if ('failed' in got) return (got.failed.status === 'failed' && got.failed.reason === 'truncated' && (await this.heldElsewhere(videoId, ref))) || got;
          return { input: { videoId, frame: ref.frame, image: got.pixels.data, key: ref.key, pixels: got.pixels } };
        }
        const image = await fetchSlots.run(() => this.d.frames.get(ref.bucket, ref.key));
        return { input: { videoId, frame: ref.frame, image, key: ref.key } };
      } catch (e) {
        if (e instanceof ObjectMissingError) return { failed: { status: 'failed', reason: 'object-missing', detail: e.message } };
        const code = errorCode(e);
        if (!isTransient(e)) {
          // For good: an archived object (InvalidObjectState), SSE-C, a denied KMS key...
          this.d.log.warn('frame cannot be read', { videoId, frame: ref.frame, key: ref.key, code, error: errorText(e) });
          return { failed: { status: 'failed', reason: code, detail: errorText(e).slice(0, 300) } };
        }
        if (attempt >= FETCH_RETRIES) throw new VideoRoundError(code, `s3://${ref.bucket}/${ref.key}: ${errorText(e)}`, [ref.frame], true);
        await new Promise((r) => setTimeout(r, FETCH_RETRY_BASE_MS * 4 ** attempt * (0.5 + Math.random())));
      }
    }
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
    const now = this.d.now();
    const kept = this.tailListings.get(ref.key);
    let listed = kept && now - kept.atMs < TAIL_LISTING_FRESH_MS ? kept.frames : undefined;
    if (!listed) {
      listed = this.d.frames.listFrames(ref.bucket, videoId, parsed.firstFrame + 1, padWidthOf(ref.key), 1, ref.frame).then((l) => l.frames);
      this.tailListings.delete(ref.key);
      this.tailListings.set(ref.key, { atMs: now, frames: listed });
      listed.catch(() => this.tailListings.delete(ref.key));
      if (this.tailListings.size > TAIL_LISTINGS_KEPT) this.tailListings.delete(this.tailListings.keys().next().value!);
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
    if (SegmentReader.isSegment(holder.key)) {
      const got = await this.d.segments!.frame({ frame: ref.frame, bucket: holder.bucket, key: holder.key, sizeBytes: holder.sizeBytes });
      if ('failed' in got) return undefined;
      return { input: { videoId, frame: ref.frame, image: got.pixels.data, key: holder.key, pixels: got.pixels } };
    }
    if (holder.frame !== ref.frame) return undefined;
    const image = await this.d.frames.get(holder.bucket, holder.key);
    return { input: { videoId, frame: ref.frame, image, key: holder.key } };
  }

  /**
   * A late frame's committed neighbours: two reads per late frame. A transient error is
   * retried here as an S3 fetch is ({@link FETCH_RETRIES}): failing the round on the first
   * throttle made a round of many late frames (a replay's re-sent frames reaching a worker
   * already past them) fail almost every time at a few per cent of throttles, retried for
   * good, so it never reached its commit, whose fencing would have handed the video to its
   * replayed checkpoint.
   */
  private async neighbours(videoId: string, frame: number): Promise<{ before?: NeighbourFrame; after?: NeighbourFrame }> {
    for (let attempt = 0; ; attempt++) {
      try {
        const [before, after] = await Promise.all([
          this.d.records.nearestProcessed(videoId, frame, 'before', NEIGHBOUR_DISTANCE_FRAMES),
          this.d.records.nearestProcessed(videoId, frame, 'after', NEIGHBOUR_DISTANCE_FRAMES),
        ]);
        return {
          ...(before ? { before: { frame: before.frame, detections: before.detections } } : {}),
          ...(after ? { after: { frame: after.frame, detections: after.detections } } : {}),
        };
      } catch (e) {
        const transient = isTransient(e);
        if (!transient || attempt >= FETCH_RETRIES) throw new VideoRoundError(errorCode(e), `neighbours of late frame ${frame}: ${errorText(e)}`, [frame], transient);
        await new Promise((r) => setTimeout(r, FETCH_RETRY_BASE_MS * 4 ** attempt * (0.5 + Math.random())));
      }
    }
  }
}

/** An ok outcome carries its frame's stream time, when the frame came decoded from a segment that has one. */
function withStreamTime(outcome: FrameOutcome, input: FrameInput): FrameOutcome {
  const pts = input.pixels?.ptsMs;
  return outcome.status === 'ok' && pts !== undefined && pts !== null ? { ...outcome, ptsMs: pts } : outcome;
}

/** Whether an AWS SDK error is worth retrying (throttling, 5xx, timeouts, dropped connections). */
export function isTransient(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  const err = e as Parameters<typeof isTransientError>[0];
  if (isThrottlingError(err) || isTransientError(err) || isServerError(err)) return true;
  // A timeout or a network error carries no HTTP response at all.
  return (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === undefined && !('$fault' in e && (e as { $fault?: string }).$fault === 'client');
}

/** The service's error code (e.g. `InvalidObjectState`), or the error's name. */
export function errorCode(e: unknown): string {
  if (e instanceof Error) return (e as { Code?: string }).Code ?? e.name ?? 'Error';
  return 'Error';
}

/**
 * Runs `items` {@link DECODED_FRAMES_PER_CALL} at a time: `fetch` of the next chunk runs
 * while `run` of this one does, so decoding overlaps the model; at most two chunks are
 * held. Every fetch started is awaited before this returns, whatever failed.
 */
async function inChunks<T, I>(items: readonly T[], fetch: (chunk: readonly T[]) => Promise<I>, run: (fetched: I) => Promise<void>): Promise<void> {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += DECODED_FRAMES_PER_CALL) chunks.push(items.slice(i, i + DECODED_FRAMES_PER_CALL));
  let next = chunks.length > 0 ? fetch(chunks[0]!) : undefined;
  try {
    for (let c = 0; c < chunks.length; c++) {
      const fetched = await next!;
      next = c + 1 < chunks.length ? fetch(chunks[c + 1]!) : undefined;
      await run(fetched);
    }
  } finally {
    await next?.catch(() => undefined);
  }
}

/** Awaits every promise (so none is left running), then rethrows the first failure. */
async function settleAll<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/** Bounds concurrent S3 GETs across the videos of a batch. */
class Semaphore {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}
