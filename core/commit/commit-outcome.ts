/**
 * Pure decisions about a fenced commit's outcome, per video (no AWS client here; the store
 * in lease-store.ts feeds them what DynamoDB answered or what a re-read found).
 *
 * The one rule: a unit landed iff the stored checkpoint carries that unit's own commit id
 * (`unit.checkpoint.commitId`). Never by comparing `seq`: after an applied commit whose
 * answer was lost, a rolled-back retry builds another unit with the same seq, and a seq
 * match would call the wrong one landed (an ABA on a counter). A cancellation of the
 * transaction proves that attempt wrote nothing; it is never by itself "landed".
 */
import { legacyCommitId } from './checkpoint.ts';
import type { CommitUnit } from './commit-packing.ts';

/**
 * What became of one video's unit in a commit:
 * - `landed`: the stored checkpoint carries the unit's commit id. Apply it as committed.
 * - `not-landed`: known not written, and the lease is still ours at the expected checkpoint
 *   (retries ran out, e.g. on transaction conflicts). Restore from the last committed
 *   checkpoint and retry later.
 * - `fenced`: not written; the video's token, owner or pin moved (or the slot did). Drop the
 *   video; a later message re-adopts it from the stored checkpoint.
 * - `stale`: not written; still our token, but the stored checkpoint is neither ours nor
 *   the expected one (it moved under us). Drop and re-adopt, as for `fenced`.
 * - `{ conflict: frame, alsoRecorded? }`: not written; a result it carried met an existing
 *   record for `frame` (and for the frames of `alsoRecorded`, when a read before the write
 *   found several: decision 56). Those frames are settled; retry without them.
 * - `unknown`: the answer was lost and the re-read failed too. It may have landed: never
 *   roll it back before a later re-read ({@link decideStoredOutcome}) says it did not.
 * - `{ invalid: reason }`: not written, and never will be as it is: the unit names one item
 *   twice (DynamoDB rejects that as a ValidationException, where DynamoDB Local reports a
 *   condition failure), or DynamoDB refused it as malformed. A bug, not an outage: it is
 *   not retried as is; the other units of the transaction are committed without it.
 */
export type UnitOutcome = 'landed' | 'not-landed' | 'fenced' | 'stale' | 'unknown' | { readonly conflict: number; readonly alsoRecorded?: readonly number[] } | { readonly invalid: string };

/** What a consistent read of a video's lease item says, as far as commit outcomes go. */
export interface StoredCommitState {
  readonly token: number;
  readonly owner?: string;
  readonly pinnedSlot?: number;
  /** The stored checkpoint's commit id and seq. */
  readonly checkpoint: { readonly commitId: string; readonly seq: number };
}

/**
 * What a stored item says about a unit, in the same words ({@link UnitOutcome}): `landed`,
 * `not-landed` (the stored checkpoint is the one the unit replaces and the lease is ours:
 * retry as is), `fenced` or `stale`. A read decides nothing else.
 */
export type StoredDecision = Extract<UnitOutcome, 'landed' | 'not-landed' | 'fenced' | 'stale'>;

/** The parts of a unit the decision needs. */
export type UnitIdentity = Pick<CommitUnit, 'videoId' | 'token' | 'expectedCommitId'> & { readonly checkpoint: { readonly commitId: string } };

/** The parts of the slot fence the decision needs. */
export interface FenceIdentity {
  readonly slot: number;
  readonly workerId: string;
}

/**
 * Decides a unit's outcome from the stored video item (undefined: no item). Landed only by
 * the unit's own commit id, whoever holds the lease now; otherwise `not-landed` when the
 * lease is still ours (owner, token, pin) and the stored checkpoint is the one the unit
 * replaces, `stale` when it is still ours but the checkpoint is another, `fenced` when the
 * lease moved.
 */
export function decideStoredOutcome(stored: StoredCommitState | undefined, unit: UnitIdentity, fence: FenceIdentity): StoredDecision {
  if (stored && stored.checkpoint.commitId === unit.checkpoint.commitId) return 'landed';
  if (!stored || stored.owner !== fence.workerId || stored.token !== unit.token || stored.pinnedSlot !== fence.slot) return 'fenced';
  return stored.checkpoint.commitId === unit.expectedCommitId ? 'not-landed' : 'stale';
}

/** One entry of a TransactionCanceledException's CancellationReasons, its Item unmarshalled. */
export interface CancellationReason {
  readonly Code?: string;
  /** The item as stored, when the transaction asked for ALL_OLD on a failed condition. */
  readonly stored?: StoredCommitState;
}

/** Which unit (and which of its items) each transaction item belongs to. */
export type ItemOwner = { readonly role: 'slot' } | { readonly role: 'rules' } | { readonly role: 'video' | 'summary' | 'event'; readonly videoId: string } | { readonly role: 'result'; readonly videoId: string; readonly frame: number };

/** What a cancelled transaction means for the units it carried. */
export type CancellationDecision =
  /** The slot's condition failed: the slot lease is gone; nothing of this attempt was written. */
  | { readonly kind: 'slot-lost' }
  /**
   * Nothing of this attempt was written. `settled` are the videos whose outcome is now
   * known (fenced, stale, a result conflict, or landed by an earlier attempt of the same
   * unit, seen by its commit id in the stored item); every other unit may be retried.
   * `backoff` when the only reasons were transient (conflicts with other transactions,
   * throttling), so the retry should wait.
   */
  | { readonly kind: 'videos'; readonly settled: ReadonlyMap<string, Exclude<UnitOutcome, 'not-landed' | 'unknown' | { readonly invalid: string }>>; readonly backoff: boolean };

/**
 * Decides what a TransactionCanceledException means, from its reasons (index i belongs to
 * transaction item i, whose owner is `owners[i]`). A failed condition on the video's item
 * is fenced or stale, never landed; the one exception is a stored item that carries the
 * unit's own commit id, which an earlier (ambiguous) attempt of the same unit wrote.
 */
export function decideCancellation(
  reasons: readonly CancellationReason[],
  owners: readonly ItemOwner[],
  units: readonly UnitIdentity[],
  fence: FenceIdentity,
): CancellationDecision {
  const byVideo = new Map(units.map((u) => [u.videoId, u] as const));
  const settled = new Map<string, Exclude<UnitOutcome, 'not-landed' | 'unknown' | { readonly invalid: string }>>();
  let backoff = false;
  for (let i = 0; i < reasons.length; i++) {
    const code = reasons[i]?.Code;
    const owner = owners[i];
    if (!code || code === 'None' || !owner) continue;
    if (code !== 'ConditionalCheckFailed') {
      // TransactionConflict, ThrottlingError and the like say nothing about the item:
      // nothing was written, so the group is retried after a pause.
      backoff = true;
      continue;
    }
    if (owner.role === 'slot') return { kind: 'slot-lost' };
    // Outbox items and rules documents are unconditional Puts (their keys are deterministic): no condition of theirs can fail.
    if (owner.role === 'event' || owner.role === 'rules') continue;
    const unit = byVideo.get(owner.videoId);
    if (!unit || settled.has(owner.videoId)) continue;
    if (owner.role === 'result') {
      settled.set(owner.videoId, { conflict: owner.frame });
    } else if (owner.role === 'summary') {
      // The summary holds a newer token: another owner has written since.
      settled.set(owner.videoId, 'fenced');
    } else {
      const stored = reasons[i]?.stored;
      if (!stored) {
        settled.set(owner.videoId, 'fenced');
        continue;
      }
      const d = decideStoredOutcome(stored, unit, fence);
      // `not-landed` cannot fail the condition; an item that looks so anyway (e.g. one whose
      // ckSeq and checkpoint disagree) is treated as moved: drop and re-adopt is always safe.
      settled.set(owner.videoId, d === 'not-landed' ? 'stale' : d);
    }
  }
  return { kind: 'videos', settled, backoff };
}

/** A stored video item (as the document client returns it) reduced to {@link StoredCommitState}; undefined for no item. */
export function storedCommitState(item: Record<string, unknown> | undefined): StoredCommitState | undefined {
  if (!item) return undefined;
  const ck = item.checkpoint as { commitId?: unknown; seq?: unknown } | undefined;
  const seq = Number(item.ckSeq ?? ck?.seq ?? 0);
  return {
    token: Number(item.token ?? 0),
    ...(typeof item.owner === 'string' ? { owner: item.owner } : {}),
    ...(item.pinnedSlot !== undefined ? { pinnedSlot: Number(item.pinnedSlot) } : {}),
    // Same derivation as upgradeCheckpoint's for checkpoints without an id.
    checkpoint: { seq, commitId: typeof ck?.commitId === 'string' && ck.commitId.length > 0 ? ck.commitId : legacyCommitId(seq) },
  };
}
