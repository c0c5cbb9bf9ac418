/** What a worker is built from (worker.ts), and why its run loop ends. */
import type { Tunables } from '../../core/config.ts';
import type { FrameProcessor, LogSink, MetricSink } from '../../core/ports.ts';
import type { LeaseTable, SlotFence } from '../../core/leases/port.ts';
import type { RecordReader } from '../../core/commit/port.ts';
import type { ReplayDeletes } from '../../core/commit/operations/replay.ts';
import type { FrameSource, SlotQueue } from '../../core/ingest/port.ts';
import type { RulesSource } from '../../core/analytics/port.ts';
import type { FrameProbe } from './crash/frame-probe.ts';
import type { FrameSourcesDeps } from '../sources/frame-sources.ts';

export type WorkerLog = LogSink;

export interface WorkerDeps {
  readonly workerId: string;
  /** The slot to claim; undefined = the first free one. */
  readonly slot?: number;
  readonly tunables: Tunables;
  readonly leases: LeaseTable;
  readonly queues: SlotQueue;
  readonly frames: FrameSource;
  /** The frame bucket, listed to confirm gaps and find where a video starts. */
  readonly bucket: string;
  /** The videos' records (the results table): a frame's record tells a late frame from a duplicate. */
  readonly records: RecordReader;
  /**
   * Deletes in the results and events tables: a video adopted while an operator's replay is
   * in progress gets the replay's deletes finished first (core/commit/operations/replay.ts
   * `finishReplayDeletes`).
   */
  readonly replayDeletes: ReplayDeletes;
  readonly processor: FrameProcessor;
  /**
   * The crash probe (decision 41): isolated videos' frames are tried in a child process
   * before they reach `processor`, when `crashProbeDeaths` > 0. Absent: they run here
   * unprobed (decision 29's markers alone stop a crash loop).
   */
  readonly probe?: FrameProbe;
  /** Videos' rules documents (issue 22); absent: the rules in each checkpoint stay in effect, never re-read. */
  readonly rules?: RulesSource;
  /** The CUDA device and decoder factory segments decode with; node-av's by default (a test simulates a GPU). */
  readonly decodeDevice?: FrameSourcesDeps['decodeDevice'];
  readonly metrics: MetricSink;
  readonly log: WorkerLog;
  readonly now?: () => number;
  /** Counts and decodes segments; absent: FFmpeg (node-av). The simulation's is thread-free (lab/sim/). */
  readonly segmentCodec?: FrameSourcesDeps['segmentCodec'];
  /** Called on every confirmed heartbeat (health file for the container health check; the supervisor's watchdog) with the lease's confirmed expiry. */
  readonly onHeartbeat?: (expiresAtMs: number) => void;
  /**
   * A hot spare or a standby (decision 75): awaited once the processor has started (model
   * loaded), before any claim. It resolves when the worker is needed, with the slot to claim
   * (absent: `slot`, or the first free one), or `'stop'` to exit without claiming.
   */
  readonly standBy?: () => Promise<{ readonly slot?: number } | 'stop'>;
  /** Called once the slot is claimed, with the fence its writes carry (the supervisor fences its release with it). */
  readonly onClaimed?: (fence: SlotFence, expiresAtMs: number) => void;
  /** Called the moment the slot lease is lost or cannot be confirmed; the run loop ends within one poll. */
  readonly onLeaseLost?: (reason: string) => void;
}

/** Why the run loop ended; main.ts maps it to an exit code. */
export type ExitReason = 'drained' | 'idle' | 'lease-lost' | 'no-slot';
