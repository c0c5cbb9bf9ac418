/**
 * The standby seats of decision 75 (part 2): the fleet keeps `standbyWorkers` standby
 * tasks, each holding a *seat*, a lease item numbered past the slots (`slotCount + i`) with
 * no queue and no videos. The janitor keeps every seat filled: at each scheduled run it
 * launches a standby for each seat whose holder is gone, and when a standby's task is
 * reported stopped it replaces it at once. Which seats get a launch is a pure rule
 * ({@link standbyLaunchesDue}); the launches go through task-launch.ts's grants, like a
 * slot's, so a seat gets one launch per grace window. The standby's own behaviour (which
 * slot it takes) is hot-spare.ts's.
 */
import type { Tunables } from '../config.ts';
import { canClaimSlot, isSlotLaunching, type LivenessOptions, type SlotRecord } from '../leases/lease-logic.ts';
import type { LeaseTable } from '../leases/port.ts';
import { countLaunchFailure, launchSlot, type SlotLaunchDeps } from './task-launch.ts';

/** The standby seats the fleet keeps (decision 75): `slotCount` .. `slotCount + standbyWorkers - 1`. */
export function standbySeats(t: Pick<Tunables, 'slotCount' | 'standbyWorkers'>): number[] {
  return Array.from({ length: t.standbyWorkers }, (_, i) => t.slotCount + i);
}

/** Whether a lease item (a task's `slot-N`) is a standby seat rather than a slot. */
export function isStandbySeat(slot: number, t: Pick<Tunables, 'slotCount'>): boolean {
  return slot >= t.slotCount;
}

/** A standby launch the janitor owes a seat. */
export interface StandbyLaunch {
  readonly seat: SlotRecord;
  /** `force` after a stop report (the report ended the seat's lease), else `if-dead`. */
  readonly mode: 'force' | 'if-dead';
  readonly reason: string;
}

/**
 * The seats that get a standby launched: those whose holder is gone (its seat lease lapsed
 * or was ended by a stop report, or never held) and for which no launch is in grace. A
 * seat whose standby was reported stopped (`stopped`: its lease ended by the report) is
 * free at once.
 */
export function standbyLaunchesDue(seats: readonly SlotRecord[], nowMs: number, t: LivenessOptions, stopped: boolean): StandbyLaunch[] {
  return seats
    .filter((s) => canClaimSlot(s, nowMs, t) && !isSlotLaunching(s, nowMs, t))
    .map((seat) => ({ seat, mode: stopped ? 'force' : 'if-dead', reason: stopped ? 'standby task stopped' : 'standby seat empty' }));
}

/** What keeping the seats filled needs: the janitor's launch dependencies, whose lease table also reads seats. */
export interface StandbyDeps extends SlotLaunchDeps {
  readonly leases: SlotLaunchDeps['leases'] & Pick<LeaseTable, 'getSlotsNumbered'>;
}

/**
 * Launches a standby for every seat of `seats` that {@link standbyLaunchesDue} names, one
 * after another; returns the seats launched for. A launch that throws (its grant could not
 * be written) is logged and counted in TaskLaunchFailures (Reason `error`); the next run
 * retries.
 */
export async function ensureStandbys(d: StandbyDeps, seats: readonly number[], nowMs: number, stopped = false): Promise<number[]> {
  const launched: number[] = [];
  for (const due of standbyLaunchesDue(await d.leases.getSlotsNumbered(seats), nowMs, d.tunables, stopped)) {
    try {
      const r = await launchSlot(d, due.seat, due.mode, due.reason);
      if (r.kind === 'launched') launched.push(due.seat.slot);
    } catch (e) {
      d.log.error('standby launch failed', { seat: due.seat.slot, error: String(e) });
      countLaunchFailure(d.metrics, d.names.taskLaunchFailures, 'error');
    }
  }
  return launched;
}
