/**
 * The janitor: relaunches tasks for slots that have work and no live owner, checks
 * launches still starting (a grant whose task stopped before its first heartbeat is void),
 * repairs slot video counts from the pinned-slot index, and publishes fleet metrics.
 * Runs on a schedule over every slot, and on each ECS task-stopped event over that slot
 * alone. Launches go through task-launch.ts (shared with the router): a launch that did
 * not happen is counted with its Reason and its grant withdrawn, never held for
 * `taskStartGraceSeconds`. Its duties that are concepts of their own sit beside it and are
 * re-exported here: the standby seats (standby-seats.ts), the stopped-task report and its
 * lease (stopped-task.ts), the queue sweep's rotation (queue-sweep.ts) and the fleet
 * slot-DLQ gauge (slot-dlq-gauge.ts).
 *
 * Its cost per scheduled run is bounded, not one call per slot: one BatchGetItem per 100
 * slots, one Scan of the keys-only pinned-slot index (one request per MB of pins), at most
 * {@link QUEUE_SWEEP_SLOTS_PER_RUN} slot-queue depth reads, one DescribeTasks per 100
 * launches still starting, as many slot-DLQ depth reads plus one per recently owned slot,
 * and its launches, `janitorLaunchConcurrency` at a time within `maxProvisioningTasks`
 * (bench/janitor-calls.ts).
 */
import type { Tunables } from '../config.ts';
import { isSlotLapsed, isSlotLaunching, isSlotLive, isSlotSuspect, needsLaunch, type SlotRecord } from '../leases/lease-logic.ts';
import type { LeaseTable } from '../leases/port.ts';
import type { LaunchedTaskState, LogSink, MetricSink, TaskLauncher } from '../ports.ts';
import type { SlotQueue } from '../ingest/port.ts';
import { METRIC_NAMES } from '../metric-names.ts';
import { countLaunchFailure, failedLaunch, launchSlot, mapBounded, type SlotLaunchDeps } from './task-launch.ts';
import { QUEUE_SWEEP_SLOTS_PER_RUN, inQueueSweep } from './queue-sweep.ts';
import { slotDlqMessages } from './slot-dlq-gauge.ts';
import { ensureStandbys, isStandbySeat, standbySeats } from './standby-seats.ts';
import { expireStoppedOwner, stoppedTaskHeldSlot, type StoppedOwnerDeps, type StoppedTask } from './stopped-task.ts';

export type JanitorLog = LogSink;

/**
 * Single flight for scheduled runs (issue 35, item 1): `acquire` returns a token when no
 * other scheduled run holds the lock, `release` gives it back. Optional: without it (or
 * when it fails) runs overlap, which is safe, every write being conditional.
 */
export interface RunLock {
  acquire(nowMs: number): Promise<string | undefined>;
  release(token: string): Promise<void>;
}

/**
 * The janitor Lambda's timeout: a scheduled run never lasts longer, so its run lock holds
 * at most this long (or one janitor period, if shorter) when the run cannot give it back.
 */
export const JANITOR_TIMEOUT_SECONDS = 60;

export interface JanitorDeps {
  readonly tunables: Tunables;
  /** Single flight of scheduled runs; task-stopped runs (one slot each) never wait for it. @default none */
  readonly runLock?: RunLock;
  readonly leases: LeaseTable;
  readonly queues: Pick<SlotQueue, 'depth' | 'dlqDepth'>;
  readonly launcher: () => TaskLauncher | undefined;
  readonly metrics: MetricSink;
  readonly log: JanitorLog;
  readonly now?: () => number;
}

/**
 * What triggered a run: the schedule, or a worker task that stopped (its slot, when, and
 * where the report says so, its worker id and its container's exit code).
 */
export type JanitorTrigger = { readonly kind: 'schedule' } | ({ readonly kind: 'task-stopped' } & StoppedTask);

/** Re-exported from stopped-task.ts, what a stopped-task report says and how its lease is ended. */
export { WORKER_EXITS_WITHOUT_LEASE, stoppedSlotOf, type StoppedTask } from './stopped-task.ts';

/** Re-exported from task-launch.ts, where the router and the janitor share it. */
export { startTimedOut } from './task-launch.ts';
/** Re-exported from queue-sweep.ts, the rotation of the queue reads (infra sizes an alarm from it). */
export { QUEUE_SWEEP_SLOTS_PER_RUN, inQueueSweep, queueSweepRuns } from './queue-sweep.ts';

export interface JanitorReport {
  readonly liveSlots: number;
  readonly slotsWithWorkNoOwner: number[];
  readonly pinnedVideos: number;
  readonly launched: number[];
  readonly countsRepaired: number[];
  /** Slots whose queue depth this run read. */
  readonly queuesChecked: number[];
  /** Slots whose launch did not happen this run (counted in TaskLaunchFailures; grant withdrawn). */
  readonly launchFailed: number[];
  /** Slots whose granted launch was found void (task stopped before its first heartbeat, or never recorded) and withdrawn. */
  readonly grantsVoided: number[];
  /** Slots that needed a launch but were left for a later run by the PROVISIONING budget (`maxProvisioningTasks`). */
  readonly launchesDeferred: number[];
  /** Standby seats (`slotCount + i`) a standby task was launched for (decision 75). */
  readonly standbysLaunched?: number[];
  /** A scheduled run that did nothing because another one held the run lock. */
  readonly skipped?: true;
}

/** A slot with work that the run considers launching for. */
interface Candidate {
  s: SlotRecord;
  /** The task reported stopped held this slot: launch even though the lease may look live. */
  readonly stoppedHere: boolean;
}

export class Janitor {
  private readonly d: JanitorDeps;
  private readonly now: () => number;

  constructor(deps: JanitorDeps) {
    this.d = deps;
    this.now = deps.now ?? Date.now;
  }

  /**
   * One run. On the schedule: every slot (the fleet gauges come from here). On a
   * task-stopped event: only the stopped slot (one read of it, one Query of its pins, at
   * most one queue depth), so a fleet exiting at once costs one small run per task, not
   * one fleet sweep per task.
   */
  async run(trigger: JanitorTrigger = { kind: 'schedule' }): Promise<JanitorReport> {
    return trigger.kind === 'task-stopped' ? this.runStopped(trigger) : this.runScheduleOnce();
  }

  /**
   * A scheduled run under the run lock, when there is one: a run that finds it held skips
   * (the holder is doing the same sweep; the next period runs anyway). A lock that cannot
   * be read or written does not stop the run: overlapping runs are safe, only the
   * PROVISIONING budget is then per run rather than shared.
   */
  private async runScheduleOnce(): Promise<JanitorReport> {
    const lock = this.d.runLock;
    if (!lock) return this.runSchedule();
    let token: string | undefined;
    try {
      token = await lock.acquire(this.now());
    } catch (e) {
      this.d.log.warn('could not take the janitor run lock; running without it', { error: String(e) });
      return this.runSchedule();
    }
    if (token === undefined) {
      this.d.log.info('another scheduled janitor run holds the run lock; this one is skipped');
      return { liveSlots: 0, slotsWithWorkNoOwner: [], pinnedVideos: 0, launched: [], countsRepaired: [], queuesChecked: [], launchFailed: [], grantsVoided: [], launchesDeferred: [], skipped: true };
    }
    try {
      return await this.runSchedule();
    } finally {
      await lock.release(token).catch((e: unknown) => this.d.log.warn('could not give the janitor run lock back; it expires on its own', { error: String(e) }));
    }
  }

  private async runSchedule(): Promise<JanitorReport> {
    const t = this.d.tunables;
    const now = this.now();
    const slots = await this.d.leases.getSlots(t.slotCount);
    // One Scan of the pinned-slot index for every slot, not one Query per slot.
    const pinnedBySlot = await this.d.leases.listPinnedBySlot();
    const countsRepaired: number[] = [];
    const queuesChecked: number[] = [];
    const candidates: Candidate[] = [];
    let pinnedVideos = 0;
    for (const s of slots) {
      const pinned = pinnedBySlot.get(s.slot) ?? [];
      pinnedVideos += pinned.length;
      if (pinned.length !== s.videoCount) {
        await this.d.leases.setVideoCount(s.slot, s.videoCount, pinned.length);
        countsRepaired.push(s.slot);
      }
      if (await this.hasWorkToLaunchFor(s, pinned.length, now, false, queuesChecked)) candidates.push({ s, stoppedHere: false });
    }
    const acted = await this.act(candidates, slots, now);
    const standbysLaunched = await this.ensureStandbys(standbySeats(this.d.tunables), now);
    const liveSlots = slots.filter((s) => isSlotLive(s, now)).length;
    this.d.metrics.count(METRIC_NAMES.janitor.liveSlots, liveSlots);
    this.d.metrics.count(METRIC_NAMES.janitor.slotsWithWorkNoOwner, acted.slotsWithWorkNoOwner.length);
    this.d.metrics.count(METRIC_NAMES.janitor.pinnedVideos, pinnedVideos);
    this.d.metrics.count(METRIC_NAMES.janitor.tasksRelaunched, acted.launched.length);
    this.d.metrics.count(METRIC_NAMES.janitor.launchesDeferred, acted.launchesDeferred.length);
    this.d.metrics.count(METRIC_NAMES.janitor.slotDlqMessages, await slotDlqMessages(this.d, slots, now));
    return this.logged({ liveSlots, pinnedVideos, countsRepaired, queuesChecked, ...acted, ...(standbysLaunched.length ? { standbysLaunched } : {}) }, 'schedule');
  }

  /** Keeps the standby seats filled (standby-seats.ts); nothing to do without seats or a launcher. */
  private async ensureStandbys(seats: readonly number[], now: number, stopped = false): Promise<number[]> {
    const launcher = this.d.launcher();
    if (seats.length === 0 || !launcher) return [];
    return ensureStandbys({ ...this.launchDeps(launcher), leases: this.d.leases }, seats, now, stopped);
  }

  /** A standby's task stopped: its seat's lease is ended, and another standby launched. */
  private async runStoppedSeat(trigger: StoppedTask): Promise<JanitorReport> {
    const expiry = await expireStoppedOwner(this.stoppedOwnerDeps(), trigger);
    const standbysLaunched = await this.ensureStandbys([trigger.slot], this.now(), expiry === 'expired');
    return this.logged({ liveSlots: 0, pinnedVideos: 0, countsRepaired: [], queuesChecked: [], slotsWithWorkNoOwner: [], launched: [], launchFailed: [], grantsVoided: [], launchesDeferred: [], standbysLaunched }, 'task-stopped');
  }

  private async runStopped(trigger: StoppedTask): Promise<JanitorReport> {
    if (isStandbySeat(trigger.slot, this.d.tunables)) return this.runStoppedSeat(trigger);
    // A stopped task cannot renew its lease: end it now so the replacement launched below
    // claims at once instead of waiting for the TTL.
    const expiry = await expireStoppedOwner(this.stoppedOwnerDeps(), trigger);
    const now = this.now();
    const s = await this.d.leases.getSlot(trigger.slot);
    const pinned = await this.d.leases.listPinned(trigger.slot);
    const countsRepaired: number[] = [];
    if (pinned.length !== s.videoCount) {
      await this.d.leases.setVideoCount(s.slot, s.videoCount, pinned.length);
      countsRepaired.push(s.slot);
    }
    const stoppedHere = stoppedTaskHeldSlot(s, now, expiry, trigger.stoppedAtMs);
    const queuesChecked: number[] = [];
    const candidates = (await this.hasWorkToLaunchFor(s, pinned.length, now, stoppedHere, queuesChecked)) ? [{ s, stoppedHere }] : [];
    const acted = await this.act(candidates, undefined, now);
    this.d.metrics.count(METRIC_NAMES.janitor.tasksRelaunched, acted.launched.length);
    return this.logged({ liveSlots: isSlotLive(s, now) ? 1 : 0, pinnedVideos: pinned.length, countsRepaired, queuesChecked, ...acted }, 'task-stopped');
  }

  /**
   * Whether slot `s` has work and no owner that counts as alive (lapsed beyond the skew
   * tolerance, suspect, or known stopped). Pinned videos are work whatever the queue
   * holds. Without them, the queue decides: read at once for a slot whose task stopped or
   * missed heartbeats, in turn for the rest (see QUEUE_SWEEP_SLOTS_PER_RUN).
   */
  private async hasWorkToLaunchFor(s: SlotRecord, pinned: number, now: number, stoppedHere: boolean, queuesChecked: number[]): Promise<boolean> {
    const t = this.d.tunables;
    const suspect = isSlotSuspect(s, now, t);
    if (!isSlotLapsed(s, now, t) && !suspect && !stoppedHere) return false;
    if (pinned > 0) return true;
    if (!(suspect || stoppedHere || inQueueSweep(s.slot, now, t))) return false;
    const depth = await this.d.queues.depth(s.slot);
    queuesChecked.push(s.slot);
    return depth.visible + depth.inFlight > 0;
  }

  /**
   * Checks the grants still in grace, then launches where needed. A grant whose task the
   * launcher reports stopped (or that recorded no task within one janitor period) is void:
   * withdrawn and counted, never waited out for `taskStartGraceSeconds`. Launches run
   * `janitorLaunchConcurrency` at a time, at most `maxProvisioningTasks` minus the
   * launches still starting (`fleet`, when the run read every slot).
   */
  private async act(candidates: Candidate[], fleet: readonly SlotRecord[] | undefined, now: number) {
    const t = this.d.tunables;
    const launcher = this.d.launcher();
    const grantsVoided = launcher ? await this.voidDeadGrants(launcher, candidates, now) : [];
    const slotsWithWorkNoOwner = candidates.filter((c) => (isSlotLapsed(c.s, now, t) || c.stoppedHere) && !isSlotLaunching(c.s, now, t)).map((c) => c.s.slot);
    const due = candidates
      .filter((c) => c.stoppedHere || needsLaunch(c.s, now, t))
      .sort((a, b) => Number(b.stoppedHere) - Number(a.stoppedHere) || a.s.slot - b.s.slot);
    const launched: number[] = [];
    const launchFailed: number[] = [];
    if (due.length > 0 && !launcher) {
      this.d.log.warn('slots need a task but no launcher is configured', { slots: due.map((c) => c.s.slot) });
      return { slotsWithWorkNoOwner, launched, launchFailed, grantsVoided, launchesDeferred: [] as number[] };
    }
    const voided = new Set(grantsVoided);
    const starting = fleet ? fleet.filter((s) => !voided.has(s.slot) && isSlotLaunching(s, now, t)).length : 0;
    const budget = Math.max(0, t.maxProvisioningTasks - starting);
    const launchesDeferred = due.slice(budget).map((c) => c.s.slot);
    const refusedForQuota: number[] = [];
    if (launchesDeferred.length > 0) {
      this.d.log.warn('launches deferred: PROVISIONING budget reached', { starting, maxProvisioningTasks: t.maxProvisioningTasks, deferred: launchesDeferred.length });
    }
    const deps = this.launchDeps(launcher!);
    await mapBounded(due.slice(0, budget), t.janitorLaunchConcurrency, async (c) => {
      const reason = c.stoppedHere ? 'worker task stopped' : isSlotLapsed(c.s, now, t) ? 'slot has work and no live owner' : 'owner missed heartbeats';
      try {
        const r = await launchSlot(deps, c.s, c.stoppedHere ? 'force' : 'if-dead', reason);
        if (r.kind === 'launched') launched.push(c.s.slot);
        if (r.kind === 'failed') launchFailed.push(c.s.slot);
        if (r.kind === 'deferred') refusedForQuota.push(c.s.slot);
      } catch (e) {
        // The grant could not be written: nothing was launched, the next run retries.
        this.d.log.error('task launch failed', { slot: c.s.slot, error: String(e) });
        countLaunchFailure(this.d.metrics, METRIC_NAMES.janitor.taskLaunchFailures, 'error');
        launchFailed.push(c.s.slot);
      }
    });
    const bySlot = (a: number, b: number) => a - b;
    if (refusedForQuota.length > 0) this.d.log.warn('launches deferred: ECS refused for its PROVISIONING quota', { deferred: refusedForQuota.length });
    return { slotsWithWorkNoOwner, launched: launched.sort(bySlot), launchFailed: launchFailed.sort(bySlot), grantsVoided, launchesDeferred: [...launchesDeferred, ...refusedForQuota].sort(bySlot) };
  }

  /**
   * For candidates whose launch is still in grace: asks the launcher (one call for all)
   * about the tasks their grants started. `gone` voids the grant; so does a grant with no
   * task recorded after one janitor period (its launcher never answered: a caller that
   * died between grant and RunTask). Updates the candidates in place; returns the slots voided.
   */
  private async voidDeadGrants(launcher: TaskLauncher, candidates: Candidate[], now: number): Promise<number[]> {
    const t = this.d.tunables;
    const inGrace = candidates.filter((c) => isSlotLaunching(c.s, now, t));
    if (inGrace.length === 0) return [];
    const ids = inGrace.map((c) => c.s.launchTaskId).filter((id): id is string => id !== undefined);
    let states: ReadonlyMap<string, LaunchedTaskState> = new Map();
    if (ids.length > 0 && launcher.describe) {
      try {
        states = await launcher.describe(ids);
      } catch (e) {
        this.d.log.warn('could not ask the launcher about starting tasks; the grace rule decides', { error: String(e) });
      }
    }
    const deps = this.launchDeps(launcher);
    const voided: number[] = [];
    for (const c of inGrace) {
      const id = c.s.launchTaskId;
      const state = id !== undefined ? states.get(id) : undefined;
      const unrecorded = id === undefined && now - c.s.launchRequestedAtMs > t.janitorIntervalSeconds * 1000;
      if (state?.state !== 'gone' && !unrecorded) continue;
      const detail = unrecorded ? 'launch grant recorded no task within one janitor period' : `task ${id}: ${state!.detail ?? 'gone'}`;
      // The first void of a row relaunches in this same run; repeats (a task that keeps
      // failing to start) back off.
      const retryAtMs = c.s.launchFailures === 0 ? now : undefined;
      const r = await failedLaunch(deps, c.s, c.s.launchSeq, unrecorded ? 'no-task' : 'stopped-before-start', detail, retryAtMs);
      if (!r.withdrawn) continue;
      c.s = { ...c.s, launchRequestedAtMs: 0, launchRetryAtMs: r.retryAtMs, launchFailures: c.s.launchFailures + 1 };
      delete (c.s as { launchTaskId?: string }).launchTaskId;
      voided.push(c.s.slot);
    }
    return voided;
  }

  private launchDeps(launcher: TaskLauncher): SlotLaunchDeps {
    return {
      leases: this.d.leases,
      launcher,
      tunables: this.d.tunables,
      metrics: this.d.metrics,
      log: this.d.log,
      now: this.now,
      names: METRIC_NAMES.janitor,
    };
  }

  private stoppedOwnerDeps(): StoppedOwnerDeps {
    return { leases: this.d.leases, log: this.d.log, now: this.now };
  }

  private logged(report: JanitorReport, trigger: JanitorTrigger['kind']): JanitorReport {
    if (report.launched.length > 0 || (report.standbysLaunched?.length ?? 0) > 0 || report.countsRepaired.length > 0 || report.launchFailed.length > 0 || report.grantsVoided.length > 0) {
      const { queuesChecked, ...acted } = report;
      this.d.log.info('janitor acted', { ...acted, queuesChecked: queuesChecked.length, trigger });
    }
    return report;
  }
}
