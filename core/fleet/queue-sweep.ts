/**
 * The janitor's queue sweep, pure: which ownerless, unpinned slots have their queue (and
 * DLQ) read in a given run. A rotation computed from the clock alone, with no state kept
 * between runs; the infrastructure sizes the slot-DLQ alarm's window from it
 * ({@link queueSweepRuns}), so it is its own unit rather than a detail of one janitor run.
 */
import type { Tunables } from '../config.ts';

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
 * Janitor runs one full queue sweep takes: every slot's queue (and DLQ) is read once in
 * this many runs ({@link inQueueSweep}). 1 up to {@link QUEUE_SWEEP_SLOTS_PER_RUN} slots.
 * An alarm on a gauge fed by the sweep must look at this many periods (plus one for the
 * runs' jitter against the metric periods), or it clears between two reads of the same
 * DLQ (issue 35, item 3).
 */
export function queueSweepRuns(slotCount: number, perRun: number = QUEUE_SWEEP_SLOTS_PER_RUN): number {
  return Math.max(1, Math.ceil(slotCount / perRun));
}

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
  const groups = queueSweepRuns(t.slotCount, perRun);
  if (groups <= 1) return true;
  return slot % groups === Math.floor(nowMs / (t.janitorIntervalSeconds * 1000)) % groups;
}
