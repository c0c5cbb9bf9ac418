/**
 * What a round's commit means for each of its videos, decided from the store's answer
 * alone: landed (delete what its checkpoint covers, release it if complete), a conflict
 * on an existing record (roll back, leave that frame out), fenced (forget the video,
 * hand its messages back), or in doubt (the answer was lost: keep everything held and
 * re-read the video before deciding; never roll back a unit that may have landed).
 *
 * Pure: the worker carries the actions out.
 */
import type { CommitOutcome, VideoRecord } from '../../core/aws/lease-store.ts';
import type { SlotFence } from '../../core/aws/lease-store.ts';
import type { RoundUnit } from './round-builder.ts';

/** One unit's fate. */
export type UnitFate = { readonly kind: 'landed' } | { readonly kind: 'fenced' } | { readonly kind: 'in-doubt' } | { readonly kind: 'conflict'; readonly frame: number };

export interface CommitActions {
  /** The slot lease is gone: the worker stops at once, and no unit is applied. */
  readonly slotLost: boolean;
  readonly fates: readonly { readonly unit: RoundUnit; readonly fate: UnitFate }[];
}

/**
 * Each unit's fate from the store's answer; `threw` when the commit call itself failed
 * (every unit is then in doubt: some may have landed).
 */
export function commitActions(outcome: CommitOutcome | 'threw', units: readonly RoundUnit[]): CommitActions {
  if (outcome !== 'threw' && outcome.kind === 'slot-lost') return { slotLost: true, fates: [] };
  const fates = units.map((unit) => ({ unit, fate: fateOf(outcome, unit.unit.videoId) }));
  return { slotLost: false, fates };
}

function fateOf(outcome: Exclude<CommitOutcome, { kind: 'slot-lost' }> | 'threw', videoId: string): UnitFate {
  if (outcome === 'threw') return { kind: 'in-doubt' };
  if (outcome.kind === 'committed') return { kind: 'landed' };
  const conflict = outcome.conflicts?.find((c) => c.videoId === videoId);
  if (conflict) return { kind: 'conflict', frame: conflict.frame };
  if (outcome.videoIds.includes(videoId)) return { kind: 'fenced' };
  if (outcome.committedVideoIds.includes(videoId)) return { kind: 'landed' };
  return { kind: 'in-doubt' };
}

/**
 * Settles a unit in doubt from a fresh read of its video's lease. It landed only if the
 * stored checkpoint is that unit's own (its commit id; a bare sequence number can be
 * matched by another commit, so it decides only for checkpoints from before commit ids).
 * A lease still ours at the unit's previous checkpoint means it did not land (roll back
 * and retry); anything else means the lease moved (fenced). `landed-moved`: it landed,
 * and the lease has moved on since (delete what it covers, then forget the video).
 */
export function settleInDoubt(stored: VideoRecord, unit: RoundUnit, fence: SlotFence): 'landed' | 'landed-moved' | 'not-landed' | 'fenced' {
  const u = unit.unit;
  const ck = stored.checkpoint as { readonly seq: number; readonly commitId?: string };
  const mine = u.checkpoint as { readonly commitId?: string };
  const ours = stored.owner === fence.workerId && stored.ownerEpoch === fence.epoch && stored.token === u.token && stored.pinnedSlot === fence.slot;
  const landed = mine.commitId !== undefined ? ck.commitId === mine.commitId : ours && ck.seq === u.checkpoint.seq;
  if (landed) return ours ? 'landed' : 'landed-moved';
  if (ours && ck.seq === u.expectedSeq) return 'not-landed';
  return 'fenced';
}
