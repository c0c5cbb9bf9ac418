/**
 * The crash probe's child process (decision 41), seen from the worker: one child at a
 * time (gpu-worker/probe-main.ts), started on first need (or warmed after a takeover from
 * a dead owner), loaded with the same processor as the worker, and tried one frame at a
 * time so that a death names its frame. A child that dies, or holds a frame past
 * `tryTimeoutMs`, is gone; the next try starts a fresh one. An idle child is stopped after
 * `idleStopMs`, so its model's memory (a second CUDA context on a GPU) is held only while
 * isolated videos run.
 *
 * The child leaves when this process does: it exits when its IPC channel closes (this
 * process died, even by SIGKILL), and the local launcher signals the whole process group.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { DecodedPixels, FrameInput, LogSink } from '../../../core/ports.ts';
import type { FrameProbe, ProbeResult } from './frame-probe.ts';

/** Messages between the worker and its probe child (advanced serialization: bytes travel as they are). */
export type ProbeRequest = { readonly type: 'try'; readonly id: number; readonly videoId: string; readonly frame: number; readonly key?: string; readonly image: Uint8Array; readonly pixels?: DecodedPixels };
export type ProbeReply =
  | { readonly type: 'ready'; readonly description: string }
  | { readonly type: 'start-failed'; readonly error: string }
  | { readonly type: 'tried'; readonly id: number };

/** A model load can take minutes (a TensorRT engine build); past this the probe is unavailable. */
const START_TIMEOUT_MS = 180_000;
/** One frame's decode and detection, batch 1: milliseconds on a GPU, well under a second on a CPU. A child holding it this long is hung on it. */
const TRY_TIMEOUT_MS = 30_000;
/** An idle child is stopped after this long: isolation lasts about one visibility timeout plus the frames known then. */
const IDLE_STOP_MS = 60_000;
/** Children that failed to start before the probe gives up for this process's life (each failure costs a model load). */
const MAX_FAILED_STARTS = 2;

export interface ProcessProbeOptions {
  /** The child's entry script (gpu-worker/probe-main.ts). */
  readonly entry: string;
  /** The child's environment: the worker's, so it builds the same processor. */
  readonly env: NodeJS.ProcessEnv;
  readonly log: LogSink;
  readonly startTimeoutMs?: number;
  readonly tryTimeoutMs?: number;
  readonly idleStopMs?: number;
}

interface Child {
  readonly proc: ChildProcess;
  readonly ready: Promise<{ ok: true } | { ok: false; reason: string }>;
  pending?: { readonly id: number; readonly resolve: (r: ProbeResult) => void; readonly timer: NodeJS.Timeout };
  exited: boolean;
}

export class ProcessProbe implements FrameProbe {
  private readonly o: Required<ProcessProbeOptions>;
  private child: Child | undefined;
  private stopped = false;
  private failedStarts = 0;
  private lastStartFailure = '';
  private nextId = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /** Children started, and deaths while holding a frame (for tests and logs). */
  started = 0;
  deaths = 0;

  /** The child's process id, while one is up (for benches: its memory). */
  get pid(): number | undefined {
    return this.child?.proc.pid;
  }

  /** Whether a child is up (or starting). */
  get running(): boolean {
    return this.child !== undefined;
  }

  constructor(options: ProcessProbeOptions) {
    this.o = { startTimeoutMs: START_TIMEOUT_MS, tryTimeoutMs: TRY_TIMEOUT_MS, idleStopMs: IDLE_STOP_MS, ...options };
  }

  warm(): void {
    if (this.stopped || this.child || this.failedStarts >= MAX_FAILED_STARTS) return;
    this.spawn();
    this.armIdleStop();
  }

  tryFrame(input: FrameInput): Promise<ProbeResult> {
    // One frame at a time, whoever asks: a death must name its frame.
    const turn = this.queue.then(() => this.tryNow(input));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async tryNow(input: FrameInput): Promise<ProbeResult> {
    if (this.stopped) return { kind: 'unavailable', reason: 'the probe is stopping' };
    if (this.failedStarts >= MAX_FAILED_STARTS) return { kind: 'unavailable', reason: `${this.failedStarts} children failed to start; last: ${this.lastStartFailure}` };
    clearTimeout(this.idleTimer);
    const child = this.child ?? this.spawn();
    const ready = await child.ready;
    if (!ready.ok) return { kind: 'unavailable', reason: ready.reason };
    if (child.exited) return { kind: 'unavailable', reason: 'the child exited before the frame was sent' };
    const id = this.nextId++;
    const result = await new Promise<ProbeResult>((resolve) => {
      const timer = setTimeout(() => {
        // After this process was paused (SIGSTOP) the timer fires late: an answer that came
        // meanwhile is read in the poll phase, so look again after it before calling it hung.
        setImmediate(() => {
          if (child.pending?.id !== id) return;
          child.pending = undefined;
          resolve({ kind: 'died', detail: `no answer within ${this.o.tryTimeoutMs} ms (hung); child killed` });
          this.kill(child);
        });
      }, this.o.tryTimeoutMs);
      child.pending = { id, resolve, timer };
      const request: ProbeRequest = { type: 'try', id, videoId: input.videoId, frame: input.frame, ...(input.key !== undefined ? { key: input.key } : {}), image: input.image, ...(input.pixels ? { pixels: input.pixels } : {}) };
      child.proc.send(request, (err) => {
        // The channel closed under the send: the exit handler answers `died` if the child died.
        if (err && !child.exited) this.o.log.warn('crash probe: send failed', { error: err.message });
      });
    });
    if (result.kind === 'died') this.deaths++;
    this.armIdleStop();
    return result;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.idleTimer);
    const child = this.child;
    if (child) await this.end(child);
  }

  private spawn(): Child {
    this.started++;
    const proc = fork(this.o.entry, [], {
      env: this.o.env,
      execArgv: process.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let settleReady: (r: { ok: true } | { ok: false; reason: string }) => void = () => {};
    const child: Child = { proc, exited: false, ready: new Promise((r) => (settleReady = r)) };
    this.child = child;
    let isReady = false;
    let startSettled = false;
    const startFailed = (reason: string) => {
      if (startSettled) return;
      startSettled = true;
      this.failedStarts++;
      this.lastStartFailure = reason;
      this.o.log.warn('crash probe: the child process did not start', { reason, failedStarts: this.failedStarts });
      settleReady({ ok: false, reason });
      // The next try starts afresh, not on this child (it exits, or is made to).
      this.kill(child);
    };
    const startTimer = setTimeout(() => {
      startFailed(`not ready within ${this.o.startTimeoutMs} ms`);
      this.kill(child);
    }, this.o.startTimeoutMs);
    proc.on('message', (m: ProbeReply) => {
      if (m.type === 'ready') {
        clearTimeout(startTimer);
        isReady = true;
        startSettled = true;
        this.o.log.info('crash probe ready', { pid: proc.pid, processor: m.description });
        settleReady({ ok: true });
      } else if (m.type === 'start-failed') {
        clearTimeout(startTimer);
        startFailed(m.error);
      } else if (m.type === 'tried' && child.pending?.id === m.id) {
        const { resolve, timer } = child.pending;
        clearTimeout(timer);
        child.pending = undefined;
        resolve({ kind: 'survived' });
      }
    });
    proc.once('error', (e) => {
      if (!isReady) startFailed(`spawn: ${e.message}`);
    });
    proc.once('exit', (code, signal) => {
      child.exited = true;
      clearTimeout(startTimer);
      if (this.child === child) this.child = undefined;
      const how = signal ? `killed by ${signal}` : `exited with code ${code}`;
      if (!isReady) startFailed(`the child ${how} while starting`);
      const pending = child.pending;
      if (pending) {
        clearTimeout(pending.timer);
        child.pending = undefined;
        pending.resolve({ kind: 'died', detail: `the child ${how}` });
      }
    });
    return child;
  }

  private armIdleStop(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      const child = this.child;
      if (child && !child.pending) void this.end(child);
    }, this.o.idleStopMs);
    this.idleTimer.unref();
  }

  /** Ends a child: its IPC channel closes, so it exits by itself; SIGKILL if it does not within 5 s. */
  private async end(child: Child): Promise<void> {
    if (this.child === child) this.child = undefined;
    if (child.exited) return;
    const exited = new Promise<void>((r) => child.proc.once('exit', () => r()));
    if (child.proc.connected) child.proc.disconnect();
    const backstop = setTimeout(() => this.kill(child), 5_000);
    await exited;
    clearTimeout(backstop);
  }

  private kill(child: Child): void {
    if (this.child === child) this.child = undefined;
    if (!child.exited) child.proc.kill('SIGKILL');
  }
}
