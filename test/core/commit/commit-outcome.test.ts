/**
 * The commit outcome decisions (core/commit/commit-outcome.ts), row by row: a unit landed iff the
 * stored checkpoint carries its own commit id; a cancellation is never landed by itself.
 */
import { describe, expect, it } from 'vitest';
import { decideCancellation, decideStoredOutcome, storedCommitState, type CancellationReason, type ItemOwner, type StoredCommitState } from '../../../core/commit/commit-outcome.ts';
import { legacyCommitId } from '../../../core/commit/checkpoint.ts';

const fence = { slot: 3, workerId: 'W' };
/** The unit: built on commit "prev" (seq 4), writes commit "mine" (seq 5) under token 7. */
const unit = { videoId: 'v', token: 7, expectedCommitId: 'prev', checkpoint: { commitId: 'mine' } };
const stored = (over: Partial<StoredCommitState> & { commitId?: string; seq?: number } = {}): StoredCommitState => ({
  token: over.token ?? 7,
  ...(over.owner !== undefined ? { owner: over.owner } : { owner: 'W' }),
  ...(over.pinnedSlot !== undefined ? { pinnedSlot: over.pinnedSlot } : { pinnedSlot: 3 }),
  checkpoint: { commitId: over.commitId ?? 'prev', seq: over.seq ?? 4 },
});

describe('decideStoredOutcome (a re-read after an unknown outcome)', () => {
  it.each([
    { row: 'stored checkpoint carries the unit id', item: stored({ commitId: 'mine', seq: 5 }), expected: 'landed' },
    { row: 'landed, then another owner took over (new token, new id)', item: stored({ commitId: 'adoption', seq: 6, token: 8, owner: 'X' }), expected: 'fenced' },
    { row: 'landed, and the lease moved since without a new checkpoint id', item: stored({ commitId: 'mine', seq: 5, token: 8, owner: 'X' }), expected: 'landed' },
    { row: 'still the expected previous commit, lease ours', item: stored(), expected: 'not-landed' },
    { row: 'ABA: stored seq equals the unit seq, another commit id', item: stored({ commitId: 'rolled-back-twin', seq: 5 }), expected: 'stale' },
    { row: 'lease ours, checkpoint moved to an unknown commit', item: stored({ commitId: 'other', seq: 9 }), expected: 'stale' },
    { row: 'token moved', item: stored({ token: 8 }), expected: 'fenced' },
    { row: 'owner moved', item: stored({ owner: 'X' }), expected: 'fenced' },
    { row: 'pin moved to another slot', item: stored({ pinnedSlot: 4 }), expected: 'fenced' },
    { row: 'no item at all', item: undefined, expected: 'fenced' },
  ])('$row: $expected', ({ item, expected }) => {
    expect(decideStoredOutcome(item, unit, fence)).toBe(expected);
  });
});

describe('decideCancellation (a TransactionCanceledException: this attempt wrote nothing)', () => {
  const owners: ItemOwner[] = [{ role: 'slot' }, { role: 'video', videoId: 'v' }, { role: 'result', videoId: 'v', frame: 11 }, { role: 'summary', videoId: 'v' }, { role: 'video', videoId: 'w' }];
  const other = { videoId: 'w', token: 2, expectedCommitId: 'w-prev', checkpoint: { commitId: 'w-mine' } };
  const none: CancellationReason = { Code: 'None' };
  const failed = (s?: StoredCommitState): CancellationReason => ({ Code: 'ConditionalCheckFailed', ...(s ? { stored: s } : {}) });
  const decide = (reasons: CancellationReason[]) => {
    const d = decideCancellation(reasons, owners, [unit, other], fence);
    return d.kind === 'slot-lost' ? { kind: d.kind } : { kind: d.kind, settled: Object.fromEntries(d.settled), backoff: d.backoff };
  };

  it.each([
    { row: 'slot condition', reasons: [failed(), none, none, none, none], expected: { kind: 'slot-lost' } },
    { row: 'slot condition with a video condition too', reasons: [failed(), failed(stored({ token: 8 })), none, none, none], expected: { kind: 'slot-lost' } },
    { row: 'video condition, token moved', reasons: [none, failed(stored({ token: 8 })), none, none, none], expected: { kind: 'videos', settled: { v: 'fenced' }, backoff: false } },
    {
      row: 'video condition, ABA (same seq, another id): stale, never landed',
      reasons: [none, failed(stored({ commitId: 'twin', seq: 5 })), none, none, none],
      expected: { kind: 'videos', settled: { v: 'stale' }, backoff: false },
    },
    {
      row: 'video condition, stored is still the expected commit (inconsistent item): stale',
      reasons: [none, failed(stored()), none, none, none],
      expected: { kind: 'videos', settled: { v: 'stale' }, backoff: false },
    },
    {
      row: 'video condition, stored carries this unit id (an earlier attempt applied): landed',
      reasons: [none, failed(stored({ commitId: 'mine', seq: 5 })), none, none, none],
      expected: { kind: 'videos', settled: { v: 'landed' }, backoff: false },
    },
    { row: 'video condition without the stored item', reasons: [none, failed(), none, none, none], expected: { kind: 'videos', settled: { v: 'fenced' }, backoff: false } },
    { row: 'result condition: conflict naming the frame', reasons: [none, none, failed(), none, none], expected: { kind: 'videos', settled: { v: { conflict: 11 } }, backoff: false } },
    { row: 'summary condition (newer token): fenced', reasons: [none, none, none, failed(), none], expected: { kind: 'videos', settled: { v: 'fenced' }, backoff: false } },
    { row: 'transaction conflict only: retry after a pause', reasons: [none, { Code: 'TransactionConflict' }, none, none, none], expected: { kind: 'videos', settled: {}, backoff: true } },
    { row: 'throttled item: retry after a pause', reasons: [none, none, none, none, { Code: 'ThrottlingError' }], expected: { kind: 'videos', settled: {}, backoff: true } },
    {
      row: 'one video fenced, the other untouched (retried)',
      reasons: [none, none, none, none, failed(stored({ token: 3, owner: 'W', commitId: 'w-prev' }))],
      expected: { kind: 'videos', settled: { w: 'fenced' }, backoff: false },
    },
  ])('$row', ({ reasons, expected }) => {
    expect(decide(reasons)).toEqual(expected);
  });
});

describe('storedCommitState', () => {
  it('reads an item with a commit id, and derives the legacy id from ckSeq for an item without one', () => {
    expect(storedCommitState({ token: 7, owner: 'W', pinnedSlot: 3, ckSeq: 5, checkpoint: { seq: 5, commitId: 'mine' } })).toEqual(stored({ commitId: 'mine', seq: 5 }));
    expect(storedCommitState({ token: 7, owner: 'W', pinnedSlot: 3, ckSeq: 4, checkpoint: { seq: 4 } })?.checkpoint).toEqual({ seq: 4, commitId: legacyCommitId(4) });
    expect(storedCommitState(undefined)).toBeUndefined();
  });
});
