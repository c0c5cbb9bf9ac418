/**
 * What a round's commit means for each of its videos, decided from the store's answer
 * alone, in the one vocabulary of a commit's outcome ({@link UnitOutcome}): landed (delete what its checkpoint covers, release it if complete), a conflict
 * on an existing record (roll back, leave that frame out), fenced (forget the video,
 * hand its messages back), or in doubt (the answer was lost: keep everything held and
 * re-read the video before deciding; never roll back a unit that may have landed).
 *
 * Pure: the worker carries the actions out.
 */
import { decideStoredOutcome } from '../../core/commit/commit-outcome.ts';
import type { CommitOutcome, SlotFence, UnitOutcome, VideoRecord } from '../../core/leases/port.ts';
import type { RoundUnit } from './round-builder.ts';

export interface CommitActions {
  /** The slot lease is gone: the worker stops at once. Units known to have landed are still applied. */
  readonly slotLost: boolean;
  /**
   * Each unit's outcome, in the one vocabulary of core/commit/commit-outcome.ts
   * ({@link UnitOutcome}): `unknown` is a unit in doubt (hold everything, re-read before
   * deciding), and `stale` is carried out as `fenced` (the checkpoint moved under us).
   */
  readonly outcomes: readonly { readonly unit: RoundUnit; readonly outcome: UnitOutcome }[];
}

/**
 * Each unit's outcome from the store's answer; `threw` when the commit call itself failed
 * (every unit is then in doubt: some may have landed), and a unit the answer does not
 * name is in doubt too.
 */
export function commitActions(answer: CommitOutcome | 'threw', units: readonly RoundUnit[]): CommitActions {
  const outcomes = units.map((unit) => ({ unit, outcome: answer === 'threw' ? ('unknown' as const) : (answer.outcomes.get(unit.unit.videoId) ?? 'unknown') }));
  if (answer !== 'threw' && answer.kind === 'slot-lost') {
    // Only what landed is applied; the rest is left alone (no rollback, no delete) for the successor.
    return { slotLost: true, outcomes: outcomes.filter((o) => o.outcome === 'landed') };
  }
  return { slotLost: false, outcomes };
}

/**
 * Settles a unit in doubt from a fresh read of its video's lease (core/commit/commit-outcome.ts
 * decides, in its vocabulary): it landed only if the stored checkpoint carries that unit's
 * own commit id. A lease still ours at the unit's previous checkpoint means it did not land
 * (roll back and retry); anything else means the lease moved (`fenced`). `leaseMoved`: it
 * landed, and the lease has moved on since (delete what it covers, then forget the video).
 */
export function settleInDoubt(stored: VideoRecord, unit: RoundUnit, fence: SlotFence): { readonly outcome: 'landed' | 'not-landed' | 'fenced'; readonly leaseMoved: boolean } {
  const decided = decideStoredOutcome(stored, unit.unit, fence);
  const ours = stored.owner === fence.workerId && stored.ownerEpoch === fence.epoch && stored.token === unit.unit.token && stored.pinnedSlot === fence.slot;
  if (decided === 'landed') return { outcome: 'landed', leaseMoved: !ours };
  return { outcome: decided === 'not-landed' && ours ? 'not-landed' : 'fenced', leaseMoved: !ours };
}
