/**
 * The local stand-in for ECS RunTask: spawns GPU-worker processes with the same
 * environment the ECS task definition gives the container.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { WORKER_ENV, tunablesToEnv, wiringToEnv, type Tunables, type Wiring } from '../core/config.ts';
import type { LaunchedTaskState, LaunchRequest, LaunchResult, TaskLauncher } from '../core/ports.ts';
import type { OrphanGuard } from './orphan-guard.ts';
import type { LocalEndpoints } from '../core/stack-file.ts';

/**
 * The worker the local stack starts: the product's (gpu-worker/main.ts) with the lab added
 * (`FRAME_PROCESSOR=stats`, WORKER_CRASH_ON_KEY, AWS_FAULT_INJECTION, ...), through
 * lab/worker-main.ts. Relative to the repository root.
 */
export const LOCAL_WORKER_ENTRY = 'lab/worker-main.ts';

export type { LocalEndpoints } from '../core/stack-file.ts';

/**
 * Environment variables that point an AWS SDK v3 client (and the AWS CLI) at the local
 * emulators: service-specific endpoint URLs, credentials, region, path-style S3.
 */
export function localAwsEnv(
  endpoints: LocalEndpoints,
  region: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
): Record<string, string> {
  return {
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_ENDPOINT_URL_S3: endpoints.s3,
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    // Read by the project's client factory: fauxqs needs path-style S3 (no *.localhost DNS here).
    S3_FORCE_PATH_STYLE: 'true',
    // A stray profile or session token from the user's shell must not leak into signing.
    AWS_PROFILE: '',
    AWS_SESSION_TOKEN: '',
  };
}

export interface WorkerInfo {
  readonly slot: number;
  readonly pid: number;
  readonly workerId: string;
  readonly launchSeq: number;
  /** Not yet exited (a SIGSTOPped worker is alive). */
  readonly alive: boolean;
  /** Stopped with SIGSTOP through {@link LocalTaskLauncher.kill} and not continued. */
  readonly paused: boolean;
  readonly exitCode: number | null;
  readonly exitSignal: NodeJS.Signals | null;
  /** When the process was spawned (epoch ms). */
  readonly startedAtMs: number;
  /** When the process exited (epoch ms); null while it runs. */
  readonly exitedAtMs: number | null;
}

export interface LocalTaskLauncherOptions {
  readonly wiring: Wiring;
  readonly tunables: Tunables;
  readonly endpoints: LocalEndpoints;
  readonly credentials: { accessKeyId: string; secretAccessKey: string };
  /** Worker entry module, relative to `cwd`. @default {@link LOCAL_WORKER_ENTRY} */
  readonly entry?: string;
  readonly cwd?: string;
  /** Extra environment for workers (wins over everything else). */
  readonly env?: Record<string, string>;
  /** Directory for per-slot log files; none when absent. */
  readonly logDir?: string;
  /** Do not echo worker output to this process's stdout. */
  readonly quiet?: boolean;
  /** How a worker line (without its `[slot-N pid]` prefix) is echoed, undefined = not at all; wins over `quiet` (npm start: local/echo-filter.ts). */
  readonly echo?: (line: string) => string | undefined;
  /** Receives every worker output line, already prefixed. */
  readonly onLine?: (line: string, worker: WorkerInfo) => void;
  /** Registers children so they die with this process even on SIGKILL. */
  readonly guard?: OrphanGuard;
  /** Called after a worker starts or exits. */
  readonly onChange?: () => void;
  /** Called once a worker has exited (as ECS emits a task-stopped event). */
  readonly onExit?: (worker: WorkerInfo) => void;
}

interface Tracked {
  info: {
    slot: number;
    pid: number;
    workerId: string;
    launchSeq: number;
    paused: boolean;
    exitCode: number | null;
    exitSignal: NodeJS.Signals | null;
    startedAtMs: number;
    exitedAtMs: number | null;
  };
  child: ChildProcess;
  exited: Promise<void>;
  hasExited: boolean;
}

/**
 * Spawns `node <entry>` per slot.
 *
 * Behaves as ECS RunTask with a client token derived from `launchSeq` does: a repeated
 * request (same slot, same launchSeq) while that launch's worker lives returns it
 * instead of spawning; a NEW launchSeq always spawns, whatever older worker of the slot
 * is still alive. A live old process is no reason to refuse: the router and janitor
 * grant a launch only when that worker's lease ran out or its heartbeats stopped (a
 * SIGSTOP, a GC pause, a hang — which this launcher cannot see from outside), slot
 * fencing keeps the two apart, and the stale one exits on its first heartbeat.
 */
export class LocalTaskLauncher implements TaskLauncher {
  readonly #o: LocalTaskLauncherOptions;
  readonly #workers: Tracked[] = [];
  readonly #logs = new Map<number, WriteStream>();
  #closed = false;

  constructor(options: LocalTaskLauncherOptions) {
    this.#o = options;
  }

  async launch(request: LaunchRequest): Promise<LaunchResult> {
    if (this.#closed) return { launched: false, reason: 'refused', detail: 'local stack is stopping' };
    const served = this.#workers.find((w) => w.info.slot === request.slot && w.info.launchSeq === request.launchSeq && !w.hasExited);
    if (served) return { launched: true, taskId: String(served.info.pid), detail: `launchSeq ${request.launchSeq} already served` };
    const tracked = this.#spawn(request);
    return { launched: true, taskId: String(tracked.info.pid), detail: request.reason };
  }

  /**
   * The janitor's check of starting tasks: a tracked process that has not exited is
   * `coming` (paused or not), one that exited is `gone`, and a pid this launcher never
   * started (a previous run of the stack, whose children died with it) is `gone` too.
   */
  async describe(taskIds: readonly string[]): Promise<ReadonlyMap<string, LaunchedTaskState>> {
    const out = new Map<string, LaunchedTaskState>();
    for (const id of taskIds) {
      const w = this.#workers.find((x) => String(x.info.pid) === id);
      if (!w) out.set(id, { state: 'gone', detail: 'not a worker of this stack' });
      else if (w.hasExited) out.set(id, { state: 'gone', detail: `exited (code ${w.info.exitCode}, signal ${w.info.exitSignal})` });
      else out.set(id, { state: 'coming', detail: w.info.paused ? 'paused' : 'running' });
    }
    return out;
  }

  /** Every worker started so far, live or exited, oldest first. */
  workers(): WorkerInfo[] {
    return this.#workers.map((w) => ({ ...w.info, alive: !w.hasExited }));
  }

  /**
   * Sends a signal to a worker (its whole process group). Tracks SIGSTOP/SIGCONT so
   * {@link WorkerInfo.paused} tells tests which workers are frozen.
   * Returns false when no live worker matched.
   */
  kill(target: { slot: number } | { pid: number }, signal: NodeJS.Signals = 'SIGTERM'): boolean {
    const matches = this.#workers.filter(
      (w) => !w.hasExited && ('pid' in target ? w.info.pid === target.pid : w.info.slot === target.slot),
    );
    for (const w of matches) {
      signalGroup(w.info.pid, signal);
      if (signal === 'SIGSTOP') w.info.paused = true;
      if (signal === 'SIGCONT') w.info.paused = false;
    }
    return matches.length > 0;
  }

  /** Resolves when the worker with this pid has exited. */
  async waitForExit(pid: number): Promise<WorkerInfo | undefined> {
    const w = this.#workers.find((x) => x.info.pid === pid);
    if (!w) return undefined;
    await w.exited;
    return { ...w.info, alive: false };
  }

  /**
   * Stops every worker: SIGCONT (a frozen process cannot handle SIGTERM), SIGTERM so
   * it drains and hands its videos off, then SIGKILL after `graceMs`.
   */
  async stopAll(graceMs = 10_000): Promise<void> {
    this.#closed = true;
    const live = this.#workers.filter((w) => !w.hasExited);
    for (const w of live) {
      signalGroup(w.info.pid, 'SIGCONT');
      signalGroup(w.info.pid, 'SIGTERM');
    }
    const timer = setTimeout(() => {
      for (const w of live) if (!w.hasExited) signalGroup(w.info.pid, 'SIGKILL');
    }, graceMs);
    await Promise.all(live.map((w) => w.exited));
    clearTimeout(timer);
    // Children that the worker itself spawned in its group.
    for (const w of live) signalGroup(w.info.pid, 'SIGKILL');
    await Promise.all([...this.#logs.values()].map((s) => new Promise((r) => s.end(r))));
    this.#logs.clear();
  }

  /** Synchronous last resort for a process `exit` handler. */
  killAllNow(): void {
    for (const w of this.#workers) if (!w.hasExited) signalGroup(w.info.pid, 'SIGKILL');
  }

  #spawn(request: LaunchRequest): Tracked {
    const o = this.#o;
    const workerId = `local-slot${request.slot}-seq${request.launchSeq}-${randomBytes(3).toString('hex')}`;
    const env: Record<string, string> = {
      ...stringEnv(process.env),
      ...wiringToEnv(o.wiring),
      ...tunablesToEnv(o.tunables),
      ...localAwsEnv(o.endpoints, o.wiring.region, o.credentials),
      [WORKER_ENV.slotId]: String(request.slot),
      [WORKER_ENV.workerId]: workerId,
      LAUNCH_SEQ: String(request.launchSeq),
      // The worker's EMF lines go to stdout locally; no CloudWatch agent to send them.
      AWS_EMF_ENVIRONMENT: 'Local',
      ...o.env,
    };
    for (const k of ['AWS_PROFILE', 'AWS_SESSION_TOKEN']) if (env[k] === '') delete env[k];
    const startedAtMs = Date.now();
    const child = spawn(process.execPath, [o.entry ?? LOCAL_WORKER_ENTRY], {
      cwd: o.cwd ?? process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Own process group: the terminal's Ctrl-C does not hit workers directly, so the
      // stack can SIGTERM them in order and wait for their hand-off.
      detached: true,
    });
    if (child.pid === undefined) throw new Error(`could not spawn worker for slot ${request.slot}`);
    const pid = child.pid;
    o.guard?.watch(pid, { group: true });
    let markExited = () => {};
    const exited = new Promise<void>((resolve) => (markExited = resolve));
    const tracked: Tracked = {
      info: { slot: request.slot, pid, workerId, launchSeq: request.launchSeq, paused: false, exitCode: null, exitSignal: null, startedAtMs, exitedAtMs: null },
      child,
      exited,
      hasExited: false,
    };
    this.#workers.push(tracked);
    const prefix = `[slot-${request.slot} ${pid}]`;
    const log = this.#logFor(request.slot);
    const emit = (line: string) => {
      const text = `${prefix} ${line}`;
      const shown = o.echo ? o.echo(line) : o.quiet ? undefined : line;
      if (shown !== undefined) process.stdout.write(`${prefix} ${shown}\n`);
      log?.write(`${text}\n`);
      o.onLine?.(text, { ...tracked.info, alive: !tracked.hasExited });
    };
    const streams = [child.stdout!, child.stderr!].map((s) => {
      const rl = createInterface({ input: s, crlfDelay: Infinity });
      rl.on('line', emit);
      return new Promise<void>((r) => rl.once('close', () => r()));
    });
    child.once('exit', (code, signal) => {
      tracked.info.exitCode = code;
      tracked.info.exitSignal = signal;
      tracked.info.exitedAtMs = Date.now();
    });
    child.once('error', (err) => emit(`spawn error: ${err.message}`));
    // 'close' fires after the output is drained, so no line is lost after exit.
    child.once('close', () => {
      void Promise.all(streams).then(() => {
        tracked.hasExited = true;
        emit(`exited (code ${tracked.info.exitCode}, signal ${tracked.info.exitSignal})`);
        markExited();
        o.onChange?.();
        o.onExit?.({ ...tracked.info, alive: false } as WorkerInfo);
      });
    });
    emit(`started worker ${workerId} (launchSeq ${request.launchSeq}: ${request.reason})`);
    o.onChange?.();
    return tracked;
  }

  #logFor(slot: number): WriteStream | undefined {
    if (!this.#o.logDir) return undefined;
    let s = this.#logs.get(slot);
    if (!s) {
      mkdirSync(this.#o.logDir, { recursive: true });
      s = createWriteStream(join(this.#o.logDir, `slot-${slot}.log`), { flags: 'a' });
      this.#logs.set(slot, s);
    }
    return s;
  }
}

/** Signals the process group a worker leads (workers are spawned detached, so each leads one). */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is gone; never fall back to the bare pid, which may have been recycled.
  }
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}
