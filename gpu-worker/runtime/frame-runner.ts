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
import type { Tunables } from '../../core/config.ts';
import { ObjectMissingError } from '../../core/ingest/port.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import type { FrameInput, FrameOutcome, FrameProcessor, LateFrameInput, LogSink, MetricSink, NeighbourFrame } from '../../core/ports.ts';
import type { RecordReader } from '../../core/commit/port.ts';
import type { FrameRef, LateFrame, SequencedStep } from '../../core/ordering/sequencer.ts';
import type { FrameSources } from '../sources/port.ts';
import { errorCode, isTransient } from '../sources/read-errors.ts';
import { errorText } from '../../core/errors.ts';

/** Concurrent S3 GETs per round when `fetchConcurrency` is not given. */
const FETCH_CONCURRENCY = 8;
/** Retries of a transient S3 error (or a late frame's neighbour read) inside one round, on top of the SDK's own. */
const FETCH_RETRIES = 2;
const FETCH_RETRY_BASE_MS = 200;
/**
 * A video's frames from objects that span frames (segments, decoded on read) go to the
 * processor this many at a time, in order: decoded frames are far larger than encoded
 * images, so a round never holds all of its video's decoded frames at once (80 at 1080p
 * would be 500 MB).
 */
const DECODED_FRAMES_PER_CALL = 16;
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
  /** Each frame's pixels, whatever object holds it (gpu-worker/sources/). */
  readonly sources: Pick<FrameSources, 'spans' | 'screen' | 'early' | 'read'>;
  readonly processor: FrameProcessor;
  /** The video's records: a late frame's neighbours. */
  readonly records: Pick<RecordReader, 'nearestProcessed'>;
  readonly tunables: Partial<Pick<Tunables, 'fetchConcurrency'>>;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  readonly now: () => number;
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
    if (inOrder.some((r) => this.d.sources.spans(r.key)) || late.some((r) => this.d.sources.spans(r.key))) {
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

  /** Frames that need no fetch to know they are unusable (empty, over their size limit). */
  private screen(ref: FrameRef): FrameOutcome | undefined {
    return this.d.sources.screen(ref);
  }

  private async fetch(videoId: string, ref: FrameRef, fetchSlots: Semaphore): Promise<{ input: FrameInput } | { failed: FrameOutcome }> {
    const early = await this.d.sources.early(videoId, ref);
    if (early) return { input: early };
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.d.sources.read(videoId, ref, (get) => fetchSlots.run(get));
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
