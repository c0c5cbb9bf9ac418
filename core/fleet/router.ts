/**
 * The routing core behind the router Lambda: resolves each video's pin (creating one
 * for a new video, first come first served), sends frames to the pinned slot's FIFO
 * queue in batches, and asks for a task where a slot has no live owner.
 *
 * Caching: a video's pin is cached for `routerPinCacheSeconds`. That is safe because a
 * worker that receives a frame of a video pinned elsewhere forwards it, and one that
 * receives a frame of a released video takes it. Slots (liveness, load) are cached for
 * `routerSlotCacheSeconds`. At steady state the router therefore makes far fewer than one
 * DynamoDB request per batch.
 */
import { mapBounded } from '../async.ts';
import type { Tunables } from '../config.ts';
import { chooseSlot, isSlotLaunching, needsLaunch, type SlotRecord } from '../leases/lease-logic.ts';
import type { LeaseTable } from '../leases/port.ts';
import type { SlotMessage } from '../ingest/messages.ts';
import type { LogSink, MetricSink, TaskLauncher } from '../ports.ts';
import { parseIngestBody } from '../ingest/s3-events.ts';
import type { SendOutcome, SlotQueue } from '../ingest/port.ts';
import { METRIC_NAMES } from '../metric-names.ts';
import { countLaunchFailure, launchSlot, type SlotLaunchDeps } from './task-launch.ts';

export interface RejectedEvent {
  readonly body: string;
  readonly reason: string;
  readonly detail: string;
}

export type RouterLog = LogSink;

export interface RouterDeps {
  readonly bucket: string;
  readonly tunables: Tunables;
  readonly leases: LeaseTable;
  readonly queues: Pick<SlotQueue, 'send'>;
  /**
   * Parks rejected events (with their reason) in the ingest DLQ; returns one outcome per
   * event (an ok flag, or a send outcome whose `cause` tells an outage from a refusal).
   */
  readonly deadLetter: (events: readonly RejectedEvent[]) => Promise<(boolean | SendOutcome)[]>;
  readonly launcher: () => TaskLauncher | undefined;
  readonly metrics: MetricSink;
  readonly log: RouterLog;
  readonly now?: () => number;
}

export interface IngestRecord {
  readonly id: string;
  readonly body: string;
  /**
   * From the ingest message attribute `replayTag`: an operator's deliberate re-send,
   * which needs fresh FIFO deduplication ids.
   */
  readonly replayTag?: string;
}

/** Per-record outcome: undefined = done, Error = report as a batch item failure (retry). */
export type RecordOutcomes = Map<string, Error | undefined>;

export class FrameRouter {
  private readonly d: RouterDeps;
  private readonly now: () => number;
  private readonly pinCache = new Map<string, { slot: number; untilMs: number }>();
  /** Every slot, for admission (new videos): read whole, at most every `routerSlotCacheSeconds`. */
  private slotCache: { slots: SlotRecord[]; untilMs: number } | undefined;
  /**
   * Single slots, for the launch check of the slots a batch goes to: read one by one (in
   * one BatchGetItem), so routing pinned videos costs the same at 4 slots or 1,000.
   */
  private readonly slotRecords = new Map<number, { record: SlotRecord; untilMs: number }>();

  constructor(deps: RouterDeps) {
    this.d = deps;
    this.now = deps.now ?? Date.now;
  }

  async route(records: readonly IngestRecord[]): Promise<RecordOutcomes> {
    const outcomes: RecordOutcomes = new Map(records.map((r) => [r.id, undefined]));
    const fail = (id: string, e: Error) => {
      if (!outcomes.get(id)) outcomes.set(id, e);
    };
    const rejects: { recordId: string; event: RejectedEvent }[] = [];
    const routable: { recordId: string; message: SlotMessage; replayTag?: string }[] = [];
    for (const r of records) {
      for (const item of parseIngestBody(r.body, this.d.bucket)) {
        if (item.kind === 'reject' && item.reason === 's3-test-event') {
          // S3 sends one when the bucket notification is created or changed: proof that the
          // wiring works, not bad input. Dead-lettering it would put the ingest-DLQ alarm in
          // ALARM on every fresh deploy, so it is acknowledged (deleted) and counted.
          this.d.metrics.count(METRIC_NAMES.router.s3TestEvents);
          this.d.log.info('s3 test event acknowledged', { messageId: r.id });
          continue;
        }
        if (item.kind === 'reject') {
          rejects.push({ recordId: r.id, event: { body: r.body, reason: item.reason, detail: item.detail } });
          this.d.metrics.count(METRIC_NAMES.router.eventsRejected, 1, { Reason: item.reason });
          this.d.log.warn('event rejected', { reason: item.reason, detail: item.detail, key: item.key, messageId: r.id });
        } else {
          routable.push({ recordId: r.id, message: item.message, ...(r.replayTag ? { replayTag: r.replayTag } : {}) });
        }
      }
    }
    if (rejects.length > 0) {
      const ok = await this.d.deadLetter(rejects.map((r) => r.event));
      ok.forEach((o, i) => {
        const good = typeof o === 'boolean' ? o : o.ok;
        const cause = typeof o === 'boolean' || o.ok ? undefined : o.cause;
        if (!good) fail(rejects[i]!.recordId, new Error('could not dead-letter rejected event', { cause }));
      });
    }
    if (routable.length === 0) return outcomes;

    let pins: Map<string, number>;
    try {
      pins = await this.resolvePins([...new Set(routable.map((r) => r.message.videoId))]);
    } catch (e) {
      this.d.log.error('lease resolution failed; batch will be retried', { error: String(e) });
      for (const r of routable) fail(r.recordId, e as Error);
      return outcomes;
    }

    const bySlot = new Map<number, { recordId: string; message: SlotMessage; replayTag?: string }[]>();
    for (const r of routable) {
      const slot = pins.get(r.message.videoId);
      if (slot === undefined) {
        fail(r.recordId, new Error(`no slot for video ${r.message.videoId}`));
        continue;
      }
      const list = bySlot.get(slot);
      if (list) list.push(r);
      else bySlot.set(slot, [r]);
    }
    // Each slot queue gets its frames in the order the router got them (one queue's
    // SendMessageBatch calls run one after another); different queues run in parallel,
    // at most routerSendConcurrency calls at once. A failed entry or call fails exactly
    // the records it carried, so partial batch failures name the right itemIdentifiers.
    const queues = [...bySlot];
    const lanes = Math.max(1, Math.min(this.d.tunables.routerSendConcurrency, queues.length));
    const results = await mapBounded(queues, lanes, async ([slot, entries]) => {
      try {
        return await this.d.queues.send(slot, entries.map((e) => ({ message: e.message, ...(e.replayTag ? { replayTag: e.replayTag } : {}) })));
      } catch (e) {
        // SlotQueue.send reports failures per entry; a throw here is a bug or a rejected
        // promise of the transport, and fails this queue's records only.
        return entries.map(() => ({ ok: false as const, error: e instanceof Error ? e.message : String(e), cause: e }));
      }
    });
    let routed = 0;
    queues.forEach(([slot, entries], q) => {
      results[q]!.forEach((s, i) => {
        if (s.ok) routed++;
        else {
          fail(entries[i]!.recordId, new Error(s.error, { cause: s.cause }));
          this.d.log.error('send to slot queue failed', { slot, error: s.error, recordId: entries[i]!.recordId });
        }
      });
    });
    if (routed > 0) this.d.metrics.count(METRIC_NAMES.router.framesRouted, routed);
    await this.launchWhereNeeded([...bySlot.keys()]);
    return outcomes;
  }

  /** video -> slot for every video, pinning new ones in arrival order. */
  private async resolvePins(videoIds: readonly string[]): Promise<Map<string, number>> {
    const now = this.now();
    const out = new Map<string, number>();
    const unknown: string[] = [];
    for (const id of videoIds) {
      const c = this.pinCache.get(id);
      if (c && c.untilMs > now) out.set(id, c.slot);
      else unknown.push(id);
    }
    if (unknown.length === 0) return out;
    const stored = await this.d.leases.getPins(unknown);
    const unpinned: string[] = [];
    for (const id of unknown) {
      const slot = stored.get(id)?.pinnedSlot;
      if (slot !== undefined) this.remember(out, id, slot, now);
      else unpinned.push(id);
    }
    for (const [id, slot] of await this.admitAll(unpinned)) this.remember(out, id, slot, now);
    return out;
  }

  /**
   * Pins many new videos. Slots are chosen for all of them first, in arrival order, on one
   * view of the fleet (each choice counted on the view before the next, so first come is
   * first served); then the pins of different slots run in parallel while the pins of one
   * slot run one after another (they would only conflict on the slot's counter). A pin that
   * finds its slot full (another router filled it) or the video taken falls back to
   * {@link admit}, which re-reads and chooses again.
   */
  private async admitAll(videoIds: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (videoIds.length === 0) return out;
    if (videoIds.length === 1) {
      out.set(videoIds[0]!, await this.admit(videoIds[0]!));
      return out;
    }
    const now = this.now();
    let view = await this.slots();
    const plan = new Map<number, { videoId: string; overCapacity: boolean }[]>();
    for (const videoId of videoIds) {
      const decision = chooseSlot(view, now, this.d.tunables);
      view = view.map((s) => (s.slot === decision.slot ? { ...s, videoCount: s.videoCount + 1 } : s));
      const list = plan.get(decision.slot);
      if (list) list.push({ videoId, overCapacity: decision.overCapacity });
      else plan.set(decision.slot, [{ videoId, overCapacity: decision.overCapacity }]);
    }
    const groups = [...plan];
    await mapBounded(groups, this.d.tunables.routerSendConcurrency, async ([slot, videos]) => {
      for (const v of videos) out.set(v.videoId, await this.pinPlanned(v.videoId, slot, v.overCapacity));
    });
    return out;
  }

  /** One planned pin (see {@link admitAll}); falls back to {@link admit} when the plan was overtaken. */
  private async pinPlanned(videoId: string, slot: number, overCapacity: boolean): Promise<number> {
    const result = await this.d.leases.pinVideo(videoId, slot, this.now(), overCapacity ? undefined : this.d.tunables.videosPerSlot);
    if (result === 'pinned') {
      this.admitted(videoId, slot, overCapacity);
      return slot;
    }
    if (result === 'taken') {
      const pinned = (await this.d.leases.getPins([videoId])).get(videoId)?.pinnedSlot;
      if (pinned !== undefined) return pinned;
    } else {
      this.slotCache = undefined;
    }
    return this.admit(videoId);
  }

  /** Bookkeeping of a pin this router made: the cached slot view, metrics, the log. */
  private admitted(videoId: string, slot: number, overCapacity: boolean): void {
    this.slotCache = this.slotCache && {
      ...this.slotCache,
      slots: this.slotCache.slots.map((s) => (s.slot === slot ? { ...s, videoCount: s.videoCount + 1 } : s)),
    };
    this.d.metrics.count(METRIC_NAMES.router.leasesCreated);
    if (overCapacity) {
      this.d.metrics.count(METRIC_NAMES.router.admissionOverCapacity);
      this.d.log.warn('every slot is full: video admitted over capacity', { videoId, slot });
    }
    this.d.log.info('video pinned', { videoId, slot, overCapacity });
  }

  /**
   * Pins a new video. Capacity is enforced by a condition on the slot's count, so
   * concurrent routers cannot overfill a slot; on a lost race the slot view is
   * refreshed and the choice made again.
   */
  private async admit(videoId: string): Promise<number> {
    for (let attempt = 0; attempt < 2 * this.d.tunables.slotCount + 2; attempt++) {
      const now = this.now();
      const decision = chooseSlot(await this.slots(), now, this.d.tunables);
      const result = await this.d.leases.pinVideo(videoId, decision.slot, now, decision.overCapacity ? undefined : this.d.tunables.videosPerSlot);
      if (result === 'slot-full') {
        this.slotCache = undefined;
        continue;
      }
      if (result === 'taken') {
        // Someone else pinned it first: follow them.
        const slot = (await this.d.leases.getPins([videoId])).get(videoId)?.pinnedSlot;
        if (slot !== undefined) return slot;
        continue;
      }
      this.admitted(videoId, decision.slot, decision.overCapacity);
      return decision.slot;
    }
    // Contention, not bad input: named so the ingest retry decision backs it off as transient.
    throw Object.assign(new Error(`could not admit video ${videoId}: slots kept filling up`), { name: 'AdmissionContention' });
  }

  private remember(out: Map<string, number>, videoId: string, slot: number, now: number): void {
    out.set(videoId, slot);
    this.pinCache.set(videoId, { slot, untilMs: now + this.d.tunables.routerPinCacheSeconds * 1000 });
    if (this.pinCache.size > 10_000) this.pinCache.delete(this.pinCache.keys().next().value as string);
  }

  private async slots(): Promise<SlotRecord[]> {
    const now = this.now();
    if (this.slotCache && this.slotCache.untilMs > now) return this.slotCache.slots;
    const slots = await this.d.leases.getSlots(this.d.tunables.slotCount);
    const untilMs = now + this.d.tunables.routerSlotCacheSeconds * 1000;
    this.slotCache = { slots, untilMs };
    for (const record of slots) this.slotRecords.set(record.slot, { record, untilMs });
    return slots;
  }

  /** The records of `targets`, reading only those whose cached record is stale. */
  private async targetSlots(targets: readonly number[]): Promise<Map<number, SlotRecord>> {
    const now = this.now();
    const stale = targets.filter((t) => !((this.slotRecords.get(t)?.untilMs ?? 0) > now));
    if (stale.length > 0) {
      const untilMs = now + this.d.tunables.routerSlotCacheSeconds * 1000;
      for (const record of await this.d.leases.getSlotsNumbered(stale)) this.slotRecords.set(record.slot, { record, untilMs });
    }
    return new Map(targets.map((t) => [t, this.slotRecords.get(t)!.record]));
  }

  /**
   * Launches a task for each target slot that needs one (task-launch.ts's launchSlot: a
   * failed launch is counted with its Reason and its grant withdrawn, so the next batch or
   * janitor run retries after a short jittered backoff), within the ECS PROVISIONING quota
   * (`maxProvisioningTasks`): the launches still starting in the router's view of the fleet
   * count against it, and the slots beyond it are left to the janitor (`LaunchesDeferred`),
   * which launches them within the same budget as earlier tasks leave PROVISIONING. Routers
   * running side by side may still overshoot from stale views; ECS then refuses, and that
   * refusal is queued too (task-launch.ts `deferred`), never counted as a failure.
   */
  private async launchWhereNeeded(targetSlots: readonly number[]): Promise<void> {
    const launcher = this.d.launcher();
    if (!launcher) return;
    try {
      const now = this.now();
      const slots = await this.targetSlots(targetSlots);
      const due = targetSlots.filter((slot) => {
        const s = slots.get(slot);
        return s !== undefined && needsLaunch(s, now, this.d.tunables);
      });
      if (due.length === 0) return;
      // The fleet as this router last read it (at most routerSlotCacheSeconds old; read now if not cached).
      const starting = (await this.slots()).filter((s) => isSlotLaunching(s, now, this.d.tunables)).length;
      const budget = Math.max(0, this.d.tunables.maxProvisioningTasks - starting);
      const deferred = due.slice(budget);
      if (deferred.length > 0) {
        this.d.metrics.count(METRIC_NAMES.router.launchesDeferred, deferred.length);
        this.d.log.info('launches left to the janitor: PROVISIONING budget reached', { starting, maxProvisioningTasks: this.d.tunables.maxProvisioningTasks, deferred: deferred.length });
      }
      const deps: SlotLaunchDeps = {
        leases: this.d.leases,
        launcher,
        tunables: this.d.tunables,
        metrics: this.d.metrics,
        log: this.d.log,
        now: this.now,
        names: METRIC_NAMES.router,
      };
      for (const slot of due.slice(0, budget)) {
        const r = await launchSlot(deps, slots.get(slot)!, 'if-dead', 'frames routed to a slot without a live owner');
        // Whatever happened, our view of this slot is stale now.
        this.slotCache = undefined;
        this.slotRecords.delete(slot);
        if (r.kind !== 'not-granted') this.d.metrics.count(METRIC_NAMES.router.taskLaunchRequested);
        if (r.kind === 'deferred') this.d.metrics.count(METRIC_NAMES.router.launchesDeferred);
      }
    } catch (e) {
      // A grant could not be written. Frames are safely queued; the janitor retries
      // launches, so do not fail the batch.
      this.d.log.error('task launch failed', { error: String(e) });
      countLaunchFailure(this.d.metrics, METRIC_NAMES.router.taskLaunchFailures, 'error');
    }
  }
}
