/**
 * What a round's commit means for each of its videos, decided from the store's answer
 * alone: landed (delete what its checkpoint covers, release it if complete), a conflict
 * on an existing record (roll back, leave that frame out), fenced (forget the video,
 * hand its messages back), or in doubt (the answer was lost: keep everything held and
 * re-read the video before deciding; never roll back a unit that may have landed).
 *
 * Pure: the worker carries the actions out.
 */
import { decideStoredOutcome } from '../../core/commit/commit-outcome.ts';
import type { CommitOutcome, SlotFence, UnitOutcome, VideoRecord } from '../../core/leases/port.ts';
import type { RoundUnit } from './round-builder.ts';

/** One unit's fate. */
export type UnitFate =
  | { readonly kind: 'landed' }
  /** Known not written while the lease is still ours: roll back and retry (not the frames' fault). */
  | { readonly kind: 'not-landed' }
  | { readonly kind: 'fenced' }
  | { readonly kind: 'in-doubt' }
  | { readonly kind: 'conflict'; readonly frame: number }
  /** Malformed (two operations on one item, a ValidationException): a bug; rolled back as a counted failure, never retried as is. */
  | { readonly kind: 'invalid'; readonly reason: string };

export interface CommitActions {
  /** The slot lease is gone: the worker stops at once. Units known to have landed are still applied. */
  readonly slotLost: boolean;
  readonly fates: readonly { readonly unit: RoundUnit; readonly fate: UnitFate }[];
}

/**
 * Each unit's fate from the store's answer; `threw` when the commit call itself failed
 * (every unit is then in doubt: some may have landed).
 */
export function commitActions(outcome: CommitOutcome | 'threw', units: readonly RoundUnit[]): CommitActions {
  const fates = units.map((unit) => ({ unit, fate: outcome === 'threw' ? ({ kind: 'in-doubt' } as const) : fateOf(outcome.outcomes.get(unit.unit.videoId)) }));
  if (outcome !== 'threw' && outcome.kind === 'slot-lost') {
    // Only what landed is applied; the rest is left alone (no rollback, no delete) for the successor.
    return { slotLost: true, fates: fates.filter((f) => f.fate.kind === 'landed') };
  }
  return { slotLost: false, fates };
}

function fateOf(o: UnitOutcome | undefined): UnitFate {
  if (o === undefined || o === 'unknown') return { kind: 'in-doubt' };
  if (o === 'landed' || o === 'not-landed' || o === 'fenced') return { kind: o };
  if (o === 'stale') return { kind: 'fenced' };
  if ('invalid' in o) return { kind: 'invalid', reason: o.invalid };
  return { kind: 'conflict', frame: o.conflict };
}

/**
 * Settles a unit in doubt from a fresh read of its video's lease (core/commit/commit-outcome.ts
 * decides): it landed only if the stored checkpoint carries that unit's own commit id. A
 * lease still ours at the unit's previous checkpoint means it did not land (roll back and
 * retry); anything else means the lease moved (fenced). `landed-moved`: it landed, and the
 * lease has moved on since (delete what it covers, then forget the video).
 */
export function settleInDoubt(stored: VideoRecord, unit: RoundUnit, fence: SlotFence): 'landed' | 'landed-moved' | 'not-landed' | 'fenced' {
  const decided = decideStoredOutcome(stored, unit.unit, fence);
  const ours = stored.owner === fence.workerId && stored.ownerEpoch === fence.epoch && stored.token === unit.unit.token && stored.pinnedSlot === fence.slot;
  if (decided === 'landed') return ours ? 'landed' : 'landed-moved';
  return decided === 'at-expected' && ours ? 'not-landed' : 'fenced';
}
