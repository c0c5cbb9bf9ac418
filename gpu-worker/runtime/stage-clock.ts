/**
 * Per-stage accounting of the worker (receive, fetch, decode, infer, track, commit,
 * delete), cheap enough to leave on: a few additions per operation on a monotonic clock.
 * For each stage it keeps
 *  - `busyMs`: wall time during which at least one operation of the stage was running
 *    (the union of their intervals), so `busyMs / window` is how busy the stage was; for
 *    `infer` on a GPU, 1 minus that share is the GPU's idle share;
 *  - `opMs`: the sum of operation durations (`opMs / busyMs` = mean operations in flight
 *    while busy: the stage's concurrency);
 *  - `ops` and `items` (frames, messages);
 *  - `queuedMs`: time items waited before the stage took them, where the stage can tell
 *    (the inference batcher knows when a frame became ready and when its batch began).
 *
 * The stage with the highest busy share bounds throughput when it is (nearly) always
 * busy and runs one operation at a time (`infer` on one GPU); a stage with spare
 * concurrency bounds it only through the loop that waits on it ({@link boundingStage}).
 */

/** The stages, in pipeline order. */
export const STAGES = ['receive', 'fetch', 'decode', 'infer', 'track', 'commit', 'delete'] as const;
export type Stage = (typeof STAGES)[number];

/** One stage's totals. */
export interface StageTotals {
  readonly ops: number;
  readonly items: number;
  readonly busyMs: number;
  readonly opMs: number;
  readonly queuedMs: number;
}

/** A snapshot of every stage over a window. */
export interface StageReport {
  readonly windowMs: number;
  readonly stages: Record<Stage, StageTotals & { readonly busyShare: number; readonly concurrency: number }>;
}

interface Acc {
  ops: number;
  items: number;
  opMs: number;
  queuedMs: number;
  busyMs: number;
  inFlight: number;
  busySinceMs: number;
}

/** Counters per stage on a monotonic clock (`performance.now` unless given). */
export class StageClock {
  private readonly now: () => number;
  private readonly acc = new Map<Stage, Acc>();
  private startedMs: number;

  constructor(now: () => number = () => performance.now()) {
    this.now = now;
    this.startedMs = now();
    for (const s of STAGES) this.acc.set(s, { ops: 0, items: 0, opMs: 0, queuedMs: 0, busyMs: 0, inFlight: 0, busySinceMs: 0 });
  }

  /** Marks an operation of `stage` started; call the returned function when it ends, with the items it handled. */
  begin(stage: Stage): (items?: number) => void {
    const a = this.acc.get(stage)!;
    const t0 = this.now();
    if (a.inFlight++ === 0) a.busySinceMs = t0;
    let ended = false;
    return (items = 1) => {
      if (ended) return;
      ended = true;
      const t1 = this.now();
      a.ops++;
      a.items += items;
      a.opMs += t1 - t0;
      if (--a.inFlight === 0) a.busyMs += t1 - a.busySinceMs;
    };
  }

  /** Times a promise as one operation of `stage`; `items` counts what it handled from its result. */
  async time<T>(stage: Stage, fn: () => Promise<T>, items: (r: T) => number = () => 1): Promise<T> {
    const end = this.begin(stage);
    try {
      const r = await fn();
      end(items(r));
      return r;
    } catch (e) {
      end(0);
      throw e;
    }
  }

  /** Adds a synchronous span measured by the caller (e.g. tracking inside a batch). */
  add(stage: Stage, ms: number, items = 1): void {
    const a = this.acc.get(stage)!;
    a.ops++;
    a.items += items;
    a.opMs += ms;
    if (a.inFlight === 0) a.busyMs += ms;
  }

  /** Adds time items waited before `stage` took them. */
  queued(stage: Stage, ms: number): void {
    this.acc.get(stage)!.queuedMs += ms;
  }

  /** Totals since construction or the last {@link reset}; busy time of operations still running counts up to now. */
  report(): StageReport {
    const t = this.now();
    const windowMs = t - this.startedMs;
    const stages = {} as StageReport['stages'];
    for (const s of STAGES) {
      const a = this.acc.get(s)!;
      const busyMs = a.busyMs + (a.inFlight > 0 ? t - a.busySinceMs : 0);
      stages[s] = { ops: a.ops, items: a.items, busyMs, opMs: a.opMs, queuedMs: a.queuedMs, busyShare: windowMs > 0 ? busyMs / windowMs : 0, concurrency: busyMs > 0 ? a.opMs / busyMs : 0 };
    }
    return { windowMs, stages };
  }

  /** Starts a new window (operations in flight keep running and count from now). */
  reset(): void {
    const t = this.now();
    this.startedMs = t;
    for (const a of this.acc.values()) {
      a.ops = 0;
      a.items = 0;
      a.opMs = 0;
      a.queuedMs = 0;
      a.busyMs = 0;
      if (a.inFlight > 0) a.busySinceMs = t;
    }
  }
}

/**
 * Which stage bounds throughput, from a report: `infer` when the GPU is busy at least
 * `saturatedShare` of the window (the design's goal); otherwise the busiest other stage,
 * which the worker's loop waits on (a stage's busy share is wall time with any of its
 * calls in flight, so a stage the loop serialises shows a high share at low concurrency).
 */
export function boundingStage(report: StageReport, saturatedShare = 0.9): { stage: Stage; busyShare: number; why: string } {
  const infer = report.stages.infer;
  if (infer.busyShare >= saturatedShare) return { stage: 'infer', busyShare: infer.busyShare, why: 'the GPU is busy nearly all the time' };
  let best: Stage = 'receive';
  for (const s of STAGES) if (s !== 'infer' && report.stages[s].busyShare > report.stages[best].busyShare) best = s;
  return { stage: best, busyShare: report.stages[best].busyShare, why: `the GPU idles ${((1 - infer.busyShare) * 100).toFixed(0)}% while the loop waits on ${best}` };
}
