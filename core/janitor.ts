/**
 * The janitor: relaunches tasks for slots that have work and no live owner, repairs
 * slot video counts from the pinned-slot index, and publishes fleet metrics.
 * Runs on a schedule, and at once when ECS reports a worker task stopped.
 */
import type { Tunables } from './config.ts';
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

/** What triggered a run: the schedule, or a worker task that stopped (its slot, and when). */
export type JanitorTrigger = { readonly kind: 'schedule' } | { readonly kind: 'task-stopped'; readonly slot: number; readonly stoppedAtMs: number };

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
      const stoppedHere = trigger.kind === 'task-stopped' && trigger.slot === s.slot && !(live && s.heartbeatAtMs > trigger.stoppedAtMs);
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

/** Reads the slot of an ECS "Task State Change" event for a stopped worker task (startedBy = slot-N). */
export function stoppedSlotOf(event: unknown): { slot: number; stoppedAtMs: number } | undefined {
  const e = event as { 'detail-type'?: string; detail?: { lastStatus?: string; startedBy?: string; stoppedAt?: string }; time?: string };
  if (e?.['detail-type'] !== 'ECS Task State Change' || e.detail?.lastStatus !== 'STOPPED') return undefined;
  const m = /^slot-(\d+)$/.exec(e.detail.startedBy ?? '');
  if (!m) return undefined;
  const at = Date.parse(e.detail.stoppedAt ?? e.time ?? '');
  return { slot: Number(m[1]), stoppedAtMs: Number.isFinite(at) ? at : Date.now() };
}
