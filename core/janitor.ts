/**
 * The janitor: relaunches tasks for slots that have work and no live owner, repairs
 * slot video counts from the pinned-slot index, and publishes fleet metrics.
 * Runs on a schedule, and at once when ECS reports a worker task stopped.
 */
import { EXIT_LEASE_LOST, WORKER_ENV, type Tunables } from './config.ts';
import { isSlotLive, isSlotSuspect, needsLaunch, type SlotRecord } from './lease-logic.ts';
import type { LeaseStore } from './lease-store.ts';
import type { LogSink, MetricSink, TaskLauncher } from './ports.ts';
import type { SlotQueues } from './slot-queues.ts';
import { METRIC_NAMES } from './metric-names.ts';

export type JanitorLog = LogSink;

export interface JanitorDeps {
  readonly tunables: Tunables;
  readonly leases: LeaseStore;
  readonly queues: SlotQueues;
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

export interface StoppedTask {
  readonly slot: number;
  readonly stoppedAtMs: number;
  /** The stopped task's worker id (its `WORKER_ID`), when the report carries it. */
  readonly workerId?: string;
  /** The worker container's exit code, when known. */
  readonly exitCode?: number;
}

/**
 * Exit codes of a worker that was not holding its slot when it stopped: 0 (drained and
 * released the slot, or never claimed one) and 3 (lease lost; gpu-worker/main.ts's
 * EXIT_LEASE_LOST). Their stop says nothing about the slot's current owner.
 */
export const WORKER_EXITS_WITHOUT_LEASE: readonly number[] = [0, EXIT_LEASE_LOST];

export interface JanitorReport {
  readonly liveSlots: number;
  readonly slotsWithWorkNoOwner: number[];
  readonly pinnedVideos: number;
  readonly launched: number[];
  readonly countsRepaired: number[];
}

export class Janitor {
  private readonly d: JanitorDeps;
  private readonly now: () => number;

  constructor(deps: JanitorDeps) {
    this.d = deps;
    this.now = deps.now ?? Date.now;
  }

  async run(trigger: JanitorTrigger = { kind: 'schedule' }): Promise<JanitorReport> {
    const t = this.d.tunables;
    // A stopped task cannot renew its lease: end it now so the replacement launched below
    // claims at once instead of waiting for the TTL.
    const expiry = trigger.kind === 'task-stopped' ? await this.expireStoppedOwner(trigger) : undefined;
    const now = this.now();
    const slots = await this.d.leases.getSlots(t.slotCount);
    const launched: number[] = [];
    const withWorkNoOwner: number[] = [];
    const countsRepaired: number[] = [];
    let pinnedVideos = 0;
    for (const s of slots) {
      const pinned = await this.d.leases.listPinned(s.slot);
      pinnedVideos += pinned.length;
      if (pinned.length !== s.videoCount) {
        await this.d.leases.setVideoCount(s.slot, s.videoCount, pinned.length);
        countsRepaired.push(s.slot);
      }
      const live = isSlotLive(s, now);
      const suspect = isSlotSuspect(s, now, t);
      // The stopped task held this slot: its lease is expired now (or, if that write
      // failed, its owner has not heartbeated since the stop). A slot still live after a
      // refused expiry has another owner: nothing to replace.
      const stoppedHere =
        trigger.kind === 'task-stopped' &&
        trigger.slot === s.slot &&
        (!live || (expiry === 'failed' && !(s.heartbeatAtMs > trigger.stoppedAtMs)));
      if (live && !suspect && !stoppedHere) continue;
      const depth = await this.d.queues.depth(s.slot);
      const hasWork = depth.visible + depth.inFlight > 0 || pinned.length > 0;
      if (!hasWork) continue;
      if (!live || stoppedHere) withWorkNoOwner.push(s.slot);
      if (stoppedHere || needsLaunch(s, now, t)) {
        if (await this.launch(s, stoppedHere ? 'force' : 'if-dead', stoppedHere ? 'worker task stopped' : live ? 'owner missed heartbeats' : 'slot has work and no live owner')) {
          launched.push(s.slot);
        }
      }
    }
    const liveSlots = slots.filter((s) => isSlotLive(s, now)).length;
    this.d.metrics.count(METRIC_NAMES.janitor.liveSlots, liveSlots);
    this.d.metrics.count(METRIC_NAMES.janitor.slotsWithWorkNoOwner, withWorkNoOwner.length);
    this.d.metrics.count(METRIC_NAMES.janitor.pinnedVideos, pinnedVideos);
    this.d.metrics.count(METRIC_NAMES.janitor.tasksRelaunched, launched.length);
    const report = { liveSlots, slotsWithWorkNoOwner: withWorkNoOwner, pinnedVideos, launched, countsRepaired };
    if (launched.length > 0 || countsRepaired.length > 0) this.d.log.info('janitor acted', { ...report, trigger: trigger.kind });
    return report;
  }

  /**
   * Expires the slot lease of a task reported stopped, if that task still held it: the
   * owner must have claimed before the stop (and be the stopped worker, when the report
   * names it). A task that exited without its lease (drained, or lease lost) is skipped.
   */
  private async expireStoppedOwner(stopped: StoppedTask): Promise<'expired' | 'not-held' | 'failed'> {
    if (stopped.exitCode !== undefined && WORKER_EXITS_WITHOUT_LEASE.includes(stopped.exitCode)) return 'not-held';
    try {
      const expired = await this.d.leases.expireStoppedOwner(stopped.slot, stopped.stoppedAtMs, this.now(), stopped.workerId);
      if (expired) this.d.log.info('slot lease of stopped task expired', { slot: stopped.slot, stoppedAtMs: stopped.stoppedAtMs, workerId: stopped.workerId });
      return expired ? 'expired' : 'not-held';
    } catch (e) {
      // The TTL still ends the lease: failover is slower, not wrong.
      this.d.log.warn('could not expire the slot lease of a stopped task', { slot: stopped.slot, error: String(e) });
      return 'failed';
    }
  }

  private async launch(s: SlotRecord, mode: 'if-dead' | 'force', reason: string): Promise<boolean> {
    const launcher = this.d.launcher();
    if (!launcher) {
      this.d.log.warn('slot needs a task but no launcher is configured', { slot: s.slot });
      return false;
    }
    const launchSeq = await this.d.leases.requestLaunch(s.slot, this.now(), this.d.tunables, mode);
    if (launchSeq === undefined) return false;
    try {
      const r = await launcher.launch({ slot: s.slot, launchSeq, reason });
      this.d.log.info('task launch requested', { slot: s.slot, launchSeq, reason, launched: r.launched, taskId: r.taskId, detail: r.detail });
      return r.launched;
    } catch (e) {
      this.d.log.error('task launch failed', { slot: s.slot, error: String(e) });
      this.d.metrics.count(METRIC_NAMES.janitor.taskLaunchFailures);
      return false;
    }
  }
}

interface EcsTaskStateChange {
  'detail-type'?: string;
  time?: string;
  detail?: {
    lastStatus?: string;
    startedBy?: string;
    stoppedAt?: string;
    executionStoppedAt?: string;
    containers?: { exitCode?: number }[];
    overrides?: { containerOverrides?: { environment?: { name?: string; value?: string }[] }[] };
  };
}

/**
 * Reads an ECS "Task State Change" event for a stopped worker task (startedBy = slot-N):
 * its slot; when it stopped (`executionStoppedAt`, when the container stopped, else
 * `stoppedAt`, else the event time); and, where present, the worker's exit code and its
 * `WORKER_ID` from the container overrides.
 */
export function stoppedSlotOf(event: unknown): StoppedTask | undefined {
  const e = event as EcsTaskStateChange;
  if (e?.['detail-type'] !== 'ECS Task State Change' || e.detail?.lastStatus !== 'STOPPED') return undefined;
  const m = /^slot-(\d+)$/.exec(e.detail.startedBy ?? '');
  if (!m) return undefined;
  const times = [e.detail.executionStoppedAt, e.detail.stoppedAt, e.time].map((x) => Date.parse(x ?? '')).filter(Number.isFinite);
  const exitCodes = (e.detail.containers ?? []).map((c) => c.exitCode).filter((c): c is number => typeof c === 'number');
  const workerIds = (e.detail.overrides?.containerOverrides ?? []).flatMap((c) => c.environment ?? []).filter((v) => v.name === WORKER_ENV.workerId && v.value);
  return {
    slot: Number(m[1]),
    stoppedAtMs: times[0] ?? Date.now(),
    ...(exitCodes.length === 1 ? { exitCode: exitCodes[0]! } : {}),
    ...(workerIds.length === 1 ? { workerId: workerIds[0]!.value! } : {}),
  };
}
