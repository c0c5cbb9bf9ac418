/**
 * One worker of the worker harness (harness/worker-harness.ts, which re-exports it),
 * run in the background, with the log lines and metrics it produced kept for assertions.
 */
import type { Tunables } from '../core/config.ts';
import type { FrameStore } from '../core/ingest/s3/frame-store.ts';
import type { LogSink, MetricSink } from '../core/ports.ts';
import type { ExitReason, Worker } from '../gpu-worker/runtime/worker.ts';
import type { ProcessGate } from './process-gate.ts';
import { waitFor } from './wait.ts';

export interface HarnessLogEntry {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: Record<string, unknown>;
  readonly atMs: number;
}

export interface HarnessMetric {
  readonly name: string;
  readonly value: number;
  readonly unit: 'count' | 'ms';
  readonly dimensions: Record<string, string>;
}

/** One worker run in the background. */
export class HarnessWorker {
  readonly worker: Worker;
  readonly workerId: string;
  readonly slot: number;
  readonly tunables: Tunables;
  readonly logs: HarnessLogEntry[];
  readonly metrics: HarnessMetric[];
  /** The FrameStore the worker uses (a `FaultyFrameStore` when `frameFault` was given). */
  readonly frames: FrameStore;
  /** The gate its AWS calls pass, when it can be killed or paused from outside (process-gate.ts). */
  readonly gate: ProcessGate | undefined;
  /** Why the slot lease was lost, if it was. */
  leaseLost: string | undefined;
  private running: Promise<ExitReason> | undefined;
  private failure: unknown;

  constructor(init: { worker: Worker; workerId: string; slot: number; tunables: Tunables; logs: HarnessLogEntry[]; metrics: HarnessMetric[]; frames: FrameStore; gate?: ProcessGate }) {
    this.gate = init.gate;
    this.worker = init.worker;
    this.workerId = init.workerId;
    this.slot = init.slot;
    this.tunables = init.tunables;
    this.logs = init.logs;
    this.metrics = init.metrics;
    this.frames = init.frames;
  }

  /** Starts `worker.run()` in the background. */
  start(): this {
    if (this.running) throw new Error(`worker ${this.workerId} already started`);
    this.running = this.worker.run();
    this.running.catch((e: unknown) => {
      this.failure = e;
    });
    return this;
  }

  get started(): boolean {
    return this.running !== undefined;
  }

  /** Resolves with the run's exit reason (rejects if run() threw). */
  get done(): Promise<ExitReason> {
    if (!this.running) throw new Error(`worker ${this.workerId} was not started`);
    return this.running;
  }

  /** The error run() threw, if it threw. */
  get crashed(): unknown {
    return this.failure;
  }

  /** Asks the worker to drain and waits for run() to end. */
  async stop(): Promise<ExitReason> {
    this.worker.requestStop();
    return this.done;
  }

  /** Sum of a metric's values (optionally only those with the given dimensions). */
  metricTotal(name: string, dimensions: Record<string, string> = {}): number {
    return this.metrics
      .filter((m) => m.name === name && Object.entries(dimensions).every(([k, v]) => m.dimensions[k] === v))
      .reduce((n, m) => n + m.value, 0);
  }

  /**
   * A metric's total once it has reached `atLeast` (or the timeout passed). A metric of a
   * commit is counted after the commit's answer comes back, so a test that has just seen
   * the records in DynamoDB can read the total before the worker has counted them.
   */
  async metricTotalReaching(name: string, atLeast: number, dimensions: Record<string, string> = {}, timeoutMs = 10_000): Promise<number> {
    await waitFor(`${name} to reach ${atLeast}`, () => this.metricTotal(name, dimensions) >= atLeast, timeoutMs, 20).catch(() => undefined);
    return this.metricTotal(name, dimensions);
  }

  /** Log entries at a level or above whose message matches. */
  logsMatching(pattern: RegExp, levels: readonly HarnessLogEntry['level'][] = ['debug', 'info', 'warn', 'error']): HarnessLogEntry[] {
    return this.logs.filter((l) => levels.includes(l.level) && pattern.test(l.message));
  }
}

/**
 * The log and metric sinks of one harness worker: they keep every line and metric (for
 * {@link HarnessWorker.logs} and {@link HarnessWorker.metrics}) and, with `print`, echo
 * log lines to stderr tagged with the worker id.
 */
export function recordingSinks(workerId: string, print: boolean): { logs: HarnessLogEntry[]; metrics: HarnessMetric[]; log: LogSink; metricSink: MetricSink } {
  const logs: HarnessLogEntry[] = [];
  const metrics: HarnessMetric[] = [];
  const logAt =
    (level: HarnessLogEntry['level']) =>
    (message: string, ...extra: Record<string, unknown>[]) => {
      const fields = Object.assign({}, ...extra) as Record<string, unknown>;
      logs.push({ level, message, fields, atMs: Date.now() });
      if (print) process.stderr.write(`${new Date().toISOString().slice(11, 23)} [${workerId}] ${level} ${message} ${JSON.stringify(fields)}\n`);
    };
  const log: LogSink = { debug: logAt('debug'), info: logAt('info'), warn: logAt('warn'), error: logAt('error') };
  const metricSink: MetricSink = {
    count: (name, value = 1, dimensions = {}) => void metrics.push({ name, value, unit: 'count', dimensions }),
    milliseconds: (name, value, dimensions = {}) => void metrics.push({ name, value, unit: 'ms', dimensions }),
  };
  return { logs, metrics, log, metricSink };
}
