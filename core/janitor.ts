/**
 * The janitor: relaunches tasks for slots that have work and no live owner, repairs
 * slot video counts from the pinned-slot index, and publishes fleet metrics.
 * Runs on a schedule, and at once when ECS reports a worker task stopped.
 *
 * Its cost per run is bounded, not one call per slot: one BatchGetItem per 100 slots, one
 * Scan of the keys-only pinned-slot index (one request per MB of pins), and at most
 * {@link QUEUE_SWEEP_SLOTS_PER_RUN} slot-queue depth reads and as many slot-DLQ depth
 * reads, plus one DLQ read per recently owned slot (bench/janitor-calls.ts).
 */
import { EXIT_LEASE_LOST, WORKER_ENV, type Tunables } from './config.ts';
import { isSlotLaunching, isSlotLive, isSlotSuspect, needsLaunch, type SlotRecord } from './lease-logic.ts';
import type { LeaseStore } from './aws/lease-store.ts';
import type { LogSink, MetricSink, TaskLauncher } from './ports.ts';
import type { SlotQueues } from './aws/slot-queues.ts';
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

/**
 * Whether a slot's last launch grant was never followed by a heartbeat. Asked of the slot
 * as read before a new grant succeeded (which needs the previous grant's
 * `taskStartGraceSeconds` to have run out, or a heartbeat since): true means the task
 * launched then did not come up within the grace, the signal of the task-start alarm.
 * A slot whose task ran and then stopped (a crash, an idle exit) heartbeated after its
 * grant, so replacing it is not a start timeout.
 */
export function startTimedOut(s: Pick<SlotRecord, 'launchRequestedAtMs' | 'heartbeatAtMs'>): boolean {
  return s.launchRequestedAtMs > 0 && s.launchRequestedAtMs > s.heartbeatAtMs;
}

export interface JanitorReport {
  readonly liveSlots: number;
  readonly slotsWithWorkNoOwner: number[];
  readonly pinnedVideos: number;
  readonly launched: number[];
  readonly countsRepaired: number[];
  /** Slots whose queue depth this run read. */
  readonly queuesChecked: number[];
}

/**
 * Most slot queues one run looks into among slots that have no live owner and no pinned
 * video. Such a slot has work only if its queue holds messages nobody pinned there (a
 * frame routed on a stale pin, or forwarded by a worker), which the video's own worker
 * also finds through its S3 listing; so these queues are swept in turns rather than all
 * at every run. Up to this many slots, every queue is read at every run, as before;
 * beyond it, each is read once every ceil(slotCount / this) runs (10 minutes at 1,000
 * slots with the default one-minute schedule).
 */
export const QUEUE_SWEEP_SLOTS_PER_RUN = 100;

/**
 * Whether an ownerless slot without pinned videos has its queue read in the run at
 * `nowMs`: slots are split into ceil(slotCount / perRun) groups (slot mod groups), and
 * each janitor period (`janitorIntervalSeconds`) takes the next group, so every slot's
 * turn comes once in that many periods without any state kept between runs.
 */
export function inQueueSweep(
  slot: number,
  nowMs: number,
  t: Pick<Tunables, 'slotCount' | 'janitorIntervalSeconds'>,
  perRun: number = QUEUE_SWEEP_SLOTS_PER_RUN,
): boolean {
  const groups = Math.ceil(t.slotCount / perRun);
  if (groups <= 1) return true;
  return slot % groups === Math.floor(nowMs / (t.janitorIntervalSeconds * 1000)) % groups;
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
    // One Scan of the pinned-slot index for every slot, not one Query per slot.
    const pinnedBySlot = await this.d.leases.listPinnedBySlot();
    const launched: number[] = [];
    const withWorkNoOwner: number[] = [];
    const countsRepaired: number[] = [];
    const queuesChecked: number[] = [];
    let pinnedVideos = 0;
    for (const s of slots) {
      const pinned = pinnedBySlot.get(s.slot) ?? [];
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
      // Pinned videos are work whatever the queue holds. Without them, the queue decides:
      // read at once for a slot whose task stopped or missed heartbeats, in turn for the
      // rest (see QUEUE_SWEEP_SLOTS_PER_RUN).
      let hasWork = pinned.length > 0;
      if (!hasWork && (live || stoppedHere || inQueueSweep(s.slot, now, t))) {
        const depth = await this.d.queues.depth(s.slot);
        queuesChecked.push(s.slot);
        hasWork = depth.visible + depth.inFlight > 0;
      }
      if (!hasWork) continue;
      // A slot whose launch is still inside its grace is starting (from cold: capacity
      // provider, GPU boot, image pull), not ownerless: counting it would alarm on every
      // cold start. A start that overruns the grace is counted (TaskStartTimeouts) when relaunched.
      if ((!live || stoppedHere) && !isSlotLaunching(s, now, t)) withWorkNoOwner.push(s.slot);
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
    this.d.metrics.count(METRIC_NAMES.janitor.slotDlqMessages, await this.slotDlqMessages(slots, now));
    const report = { liveSlots, slotsWithWorkNoOwner: withWorkNoOwner, pinnedVideos, launched, countsRepaired, queuesChecked };
    if (launched.length > 0 || countsRepaired.length > 0) {
      const { queuesChecked: _checked, ...acted } = report;
      this.d.log.info('janitor acted', { ...acted, queuesChecked: queuesChecked.length, trigger: trigger.kind });
    }
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

  /**
   * Messages visible in the slot DLQs read this run: those of slots owned within the last
   * two janitor periods plus a lease TTL (a slot DLQ gains messages only while a worker
   * receives from its slot, or parks a malformed message, so every arrival is seen at
   * once), and those of the slots in this run's queue sweep ({@link inQueueSweep}), so a
   * message left in the DLQ of a slot that went idle keeps being counted: at every run up
   * to {@link QUEUE_SWEEP_SLOTS_PER_RUN} slots (every DLQ is read each run, the gauge never
   * clears while a message is there), once every ceil(slotCount / 100) runs beyond (an
   * alarm on the gauge's Maximum over that many periods stays up). One gauge for the fleet,
   * so one alarm covers every slot DLQ; its way back is `affinity redrive`. At most
   * {@link QUEUE_SWEEP_SLOTS_PER_RUN} reads per run besides the recently owned slots'.
   * A failed read counts as 0 for this run.
   */
  private async slotDlqMessages(slots: readonly SlotRecord[], nowMs: number): Promise<number> {
    const t = this.d.tunables;
    const lookbackMs = (2 * t.janitorIntervalSeconds + t.slotLeaseTtlSeconds) * 1000;
    const toRead = slots.filter((s) => (s.heartbeatAtMs > 0 && nowMs - s.heartbeatAtMs <= lookbackMs) || inQueueSweep(s.slot, nowMs, t));
    const depths = await Promise.all(
      toRead.map(async (s) => {
        try {
          return await this.d.queues.dlqDepth(s.slot);
        } catch (e) {
          this.d.log.warn('could not read a slot DLQ depth', { slot: s.slot, error: String(e) });
          return 0;
        }
      }),
    );
    return depths.reduce((sum, n) => sum + n, 0);
  }

  private async launch(s: SlotRecord, mode: 'if-dead' | 'force', reason: string): Promise<boolean> {
    const launcher = this.d.launcher();
    if (!launcher) {
      this.d.log.warn('slot needs a task but no launcher is configured', { slot: s.slot });
      return false;
    }
    const launchSeq = await this.d.leases.requestLaunch(s.slot, this.now(), this.d.tunables, mode);
    if (launchSeq === undefined) return false;
    if (startTimedOut(s)) {
      this.d.metrics.count(METRIC_NAMES.janitor.taskStartTimeouts);
      this.d.log.warn('previous task for the slot never heartbeated within the start grace', { slot: s.slot, launchSeq, graceSeconds: this.d.tunables.taskStartGraceSeconds });
    }
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
