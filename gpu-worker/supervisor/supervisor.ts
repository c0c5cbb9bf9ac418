/**
 * The supervisor of a worker task with a hot spare (decision 75): it runs the primary
 * worker process, which holds the slot, and a spare, started beside it with its model
 * loaded and waiting; it alone reaps them, so it alone knows for certain that one died.
 *
 * When the primary dies (kill -9, a native crash, an uncaught error, a broken processor):
 * 1. the slot lease of the dead worker's claim is ended, fenced by that claim (owner and
 *    epoch; `DeadOwnerRelease.endDeadOwner`): a successor's lease is never touched, and the
 *    owner stays, so the successor's claim reads as a takeover from a dead owner and the
 *    crash-loop breaker isolates its videos as it would after any death (decision 29);
 * 2. the messages the dead worker held are handed back (visibility 0: held-handles.ts), so
 *    its FIFO groups are not blocked for a visibility timeout;
 * 3. the spare is promoted: it claims the slot (at once, the lease having been ended) and
 *    adopts the slot's videos from their checkpoints, bumping their tokens;
 * 4. a new spare is started.
 * A primary frozen past its own lease (SIGSTOP, a wedged native call) is killed first
 * (hot-spare.ts `frozenPrimary`), which makes its death certain.
 *
 * Why it is safe with the fencing the store already has: every durable write of the dead
 * worker that was still on its way carries its slot epoch and its videos' tokens and
 * checkpoint sequence numbers; the spare's claim bumps the epoch and its adoptions bump
 * the tokens, each a conditional write on the same items, so such a write either lands
 * before them (and the successor adopts the checkpoint it wrote) or is rejected. Nothing
 * here writes anything the worker would not: the release is conditional on the dead claim,
 * and a hand-back only makes a message visible again, a redelivery decided by its record.
 *
 * Process-agnostic: the process entry (supervisor-main.ts) gives it forked children over
 * IPC, the simulation (lab/sim/world.ts) workers in process.
 */
import type { LogSink, MetricSink } from '../../core/ports.ts';
import type { DeadOwnerRelease, SlotFence } from '../../core/leases/port.ts';
import type { SlotQueue } from '../../core/ingest/port.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import { deathsWithin, exitVerdict, frozenPrimary, type ChildRole, type ExitVerdict } from '../../core/fleet/hot-spare.ts';
import { errorText } from '../../core/errors.ts';
import { HeldHandles, type HandleSink } from './held-handles.ts';

/** A worker process under the supervisor. */
export interface SupervisedChild {
  readonly id: string;
  /** SIGKILL (a frozen primary, or the spare at shutdown). */
  kill(): void;
  /** SIGTERM: drain (the primary) or leave without claiming (a spare). */
  stop(): void;
  /** Tells a spare to claim the slot now. */
  promote(): void;
}

export interface SupervisorDeps {
  readonly leases: DeadOwnerRelease;
  readonly queues: Pick<SlotQueue, 'extendVisibility'>;
  /** Starts a worker process; `id` is its worker id. A spare waits for {@link SupervisedChild.promote}. */
  readonly spawn: (role: ChildRole, id: string) => SupervisedChild;
  /** A fresh worker id per process (a worker id names one claim history). */
  readonly newWorkerId: (role: ChildRole) => string;
  /** Called once, when the task should end, with its exit code. */
  readonly onTaskExit: (code: number) => void;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  readonly now: () => number;
}

interface Child {
  readonly handle: SupervisedChild;
  role: ChildRole;
  fence?: SlotFence;
  lastExpiryMs?: number;
  readonly handles: HeldHandles;
  exited: boolean;
}

export class Supervisor {
  private readonly d: SupervisorDeps;
  private readonly children = new Map<string, Child>();
  private readonly primaryDeaths: number[] = [];
  private readonly spareDeaths: number[] = [];
  private withoutSpare = false;
  private ending = false;
  private exitCode: number | undefined;
  /** Failovers done, for the bench and tests. */
  failovers = 0;

  constructor(deps: SupervisorDeps) {
    this.d = deps;
  }

  /** Starts the primary and its spare. */
  start(): void {
    this.startChild('primary');
    this.startChild('spare');
  }

  get primary(): SupervisedChild | undefined {
    return this.find('primary')?.handle;
  }

  get spare(): SupervisedChild | undefined {
    return this.find('spare')?.handle;
  }

  get ended(): number | undefined {
    return this.exitCode;
  }

  /** Where child `id` reports its receipt handles. */
  sinkFor(id: string): HandleSink {
    const c = () => this.children.get(id);
    return {
      held: (slot, handles) => c()?.handles.held(slot, handles),
      released: (slot, handles) => c()?.handles.released(slot, handles),
    };
  }

  /** Child `id` claimed the slot under `fence`, its lease confirmed to `expiresAtMs`. */
  claimed(id: string, fence: SlotFence, expiresAtMs: number): void {
    const c = this.children.get(id);
    if (!c) return;
    c.fence = fence;
    c.lastExpiryMs = expiresAtMs;
  }

  /** Child `id` confirmed a heartbeat: its lease runs to `expiresAtMs`. */
  heartbeat(id: string, expiresAtMs: number): void {
    const c = this.children.get(id);
    if (c) c.lastExpiryMs = expiresAtMs;
  }

  /** The watchdog (run every second or so): kills a primary frozen past its own lease; its exit then fails over. */
  checkFrozen(): void {
    const p = this.find('primary');
    if (!p || this.ending || !frozenPrimary(p.lastExpiryMs, this.d.now())) return;
    this.d.log.error('supervisor: primary worker frozen past its lease; killing it to fail over', { workerId: p.handle.id, leaseExpiredAtMs: p.lastExpiryMs });
    this.d.metrics.count(METRIC_NAMES.worker.supervisorEvents, 1, { Why: 'frozen-killed' });
    p.lastExpiryMs = undefined;
    p.handle.kill();
  }

  /** SIGTERM to the task: the primary drains, the spare leaves; the task ends with the primary's exit. */
  stop(): void {
    this.ending = true;
    for (const c of this.children.values()) if (!c.exited) c.handle.stop();
  }

  /** Child `id` exited (reaped): decides and acts. Resolves once the failover's writes are done. */
  async exited(id: string, code: number | null, signal: string | null): Promise<ExitVerdict | undefined> {
    const c = this.children.get(id);
    if (!c || c.exited) return undefined;
    c.exited = true;
    this.children.delete(id);
    const now = this.d.now();
    const deaths = c.role === 'primary' ? this.primaryDeaths : this.spareDeaths;
    const crashed = signal !== null || (code !== 0 && code !== 3);
    if (crashed) deaths.push(now);
    const spare = this.find('spare');
    if (this.ending) {
      if (c.role === 'primary') {
        spare?.handle.kill();
        this.endTask(code ?? 1);
      }
      return undefined;
    }
    const verdict = exitVerdict({ role: c.role, code, signal }, deathsWithin(deaths, now), spare !== undefined);
    this.d.log[verdict.kind === 'failover' || verdict.kind === 'replace-spare' ? 'warn' : 'info']('supervisor: worker process exited', { workerId: id, role: c.role, code, signal, verdict: verdict.kind });
    switch (verdict.kind) {
      case 'replace-spare':
        this.startChild('spare');
        break;
      case 'run-without-spare':
        this.withoutSpare = true;
        this.d.log.error('supervisor: the spare keeps dying; the primary runs without one', { deaths: deathsWithin(deaths, now) });
        break;
      case 'exit':
      case 'give-up':
        if (verdict.kind === 'give-up') this.d.log.error('supervisor: giving up, the task ends as crashed', { deaths: deathsWithin(deaths, now), code: verdict.code });
        spare?.handle.kill();
        this.endTask(verdict.code);
        break;
      case 'failover':
        await this.failover(c, spare!, now);
        break;
    }
    return verdict;
  }

  private async failover(dead: Child, spare: Child, stoppedAtMs: number): Promise<void> {
    this.failovers++;
    this.d.metrics.count(METRIC_NAMES.worker.supervisorEvents, 1, { Why: 'failover' });
    const handBack = this.handBack(dead);
    if (dead.fence) await this.endLease(dead.fence, stoppedAtMs);
    spare.role = 'primary';
    spare.handle.promote();
    this.d.log.info('supervisor: spare promoted', { workerId: spare.handle.id, after: dead.handle.id });
    if (!this.withoutSpare) this.startChild('spare');
    await handBack;
  }

  /** Ends the dead worker's lease, fenced by its claim; a few tries, then the lease runs out by itself (the spare's claim waits for it). */
  private async endLease(fence: SlotFence, stoppedAtMs: number): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const r = await this.d.leases.endDeadOwner(fence, stoppedAtMs, this.d.now());
        if (r === 'not-held') this.d.log.info('supervisor: the dead worker\'s slot lease was no longer its own', { slot: fence.slot, workerId: fence.workerId, epoch: fence.epoch });
        return;
      } catch (e) {
        this.d.log.warn('supervisor: ending the dead worker\'s lease failed; retrying', { error: errorText(e), attempt });
      }
    }
    this.d.log.warn('supervisor: could not end the dead worker\'s lease; the spare claims once it runs out', { slot: fence.slot });
  }

  private async handBack(dead: Child): Promise<void> {
    for (const [slot, handles] of dead.handles.take()) {
      try {
        const refused = await this.d.queues.extendVisibility(slot, handles, 0);
        this.d.metrics.count(METRIC_NAMES.worker.supervisorEvents, handles.length - refused.length, { Why: 'handed-back' });
      } catch (e) {
        // They come back when their visibility runs out, as without a supervisor.
        this.d.log.warn('supervisor: handing back the dead worker\'s messages failed; they return after their visibility timeout', { slot, messages: handles.length, error: errorText(e) });
      }
    }
  }

  private startChild(role: ChildRole): void {
    const id = this.d.newWorkerId(role);
    const child: Child = { handle: undefined as unknown as SupervisedChild, role, handles: new HeldHandles(), exited: false };
    this.children.set(id, child);
    (child as { handle: SupervisedChild }).handle = this.d.spawn(role, id);
  }

  private find(role: ChildRole): Child | undefined {
    for (const c of this.children.values()) if (c.role === role && !c.exited) return c;
    return undefined;
  }

  private endTask(code: number): void {
    if (this.exitCode !== undefined) return;
    this.exitCode = code;
    this.ending = true;
    this.d.onTaskExit(code);
  }
}
