import { describe, expect, it } from 'vitest';
import { emptyCheckpoint } from '../../../core/commit/checkpoint.ts';
import type { CommitOutcome, UnitOutcome, VideoRecord } from '../../../core/leases/dynamodb/lease-store.ts';
import { commitActions, settleInDoubt } from '../../../gpu-worker/runtime/commit-pipeline.ts';
import type { RoundUnit } from '../../../gpu-worker/runtime/round-builder.ts';

const fence = { slot: 2, workerId: 'w1', epoch: 7 };

function unit(videoId: string, seq = 5, commitId = `c-${videoId}-${seq + 1}`, expectedCommitId = `c-${videoId}-${seq}`): RoundUnit {
  const checkpoint = { ...emptyCheckpoint(0), seq: seq + 1, commitId };
  return {
    session: { videoId } as RoundUnit['session'],
    plan: {} as RoundUnit['plan'],
    parked: 0,
    unit: { videoId, token: 3, expectedSeq: seq, expectedCommitId, checkpoint, results: [], summary: {} as never },
  };
}

const settled = (kind: CommitOutcome['kind'], entries: [string, UnitOutcome][]): CommitOutcome => ({ kind, outcomes: new Map(entries), ambiguousRetries: 0 });

describe('commitActions', () => {
  const units = [unit('a'), unit('b'), unit('c'), unit('d'), unit('e')];
  const fates = (o: CommitOutcome | 'threw') => commitActions(o, units).outcomes.map((f) => [f.unit.unit.videoId, typeof f.outcome === 'string' ? f.outcome : 'conflict' in f.outcome ? `conflict ${f.outcome.conflict}` : 'invalid']);
  it.each<[string, CommitOutcome | 'threw', string[][]]>([
    [
      'every store outcome is the unit\'s outcome, in the same words (stale is carried out as fenced by the committer)',
      settled('settled', [
        ['a', 'landed'],
        ['b', 'fenced'],
        ['c', 'stale'],
        ['d', { conflict: 4 }],
        ['e', 'not-landed'],
      ]),
      [['a', 'landed'], ['b', 'fenced'], ['c', 'stale'], ['d', 'conflict 4'], ['e', 'not-landed']],
    ],
    [
      'a malformed unit is invalid (a bug to count and park), never in doubt nor retried as is',
      settled('settled', [
        ['a', { invalid: 'two results for frame 3' }],
        ['b', 'landed'],
        ['c', 'landed'],
        ['d', 'landed'],
        ['e', 'landed'],
      ]),
      [['a', 'invalid'], ['b', 'landed'], ['c', 'landed'], ['d', 'landed'], ['e', 'landed']],
    ],
    ['the call threw: every unit in doubt (unknown), none rolled back', 'threw', [['a', 'unknown'], ['b', 'unknown'], ['c', 'unknown'], ['d', 'unknown'], ['e', 'unknown']]],
    [
      'an unknown answer, or a unit the answer does not name, is in doubt, never landed nor rolled back',
      settled('settled', [
        ['a', 'unknown'],
        ['b', 'landed'],
      ]),
      [['a', 'unknown'], ['b', 'landed'], ['c', 'unknown'], ['d', 'unknown'], ['e', 'unknown']],
    ],
  ])('%s', (_name, outcome, expected) => {
    expect(fates(outcome)).toEqual(expected);
  });

  it('a lost slot applies only what landed, and leaves the rest alone', () => {
    const actions = commitActions(settled('slot-lost', [['a', 'landed'], ['b', 'unknown'], ['c', 'fenced']]), units);
    expect(actions.slotLost).toBe(true);
    expect(actions.outcomes.map((f) => [f.unit.unit.videoId, f.outcome])).toEqual([['a', 'landed']]);
  });
});

describe('settleInDoubt', () => {
  const stored = (over: Partial<VideoRecord> & { seq: number; commitId: string }): VideoRecord => {
    const { seq, commitId, ...rest } = over;
    return { videoId: 'a', pinnedSlot: 2, token: 3, owner: 'w1', ownerEpoch: 7, state: 'pinned', checkpoint: { ...emptyCheckpoint(0), seq, commitId }, ...rest };
  };
  it.each<[string, VideoRecord, string]>([
    ["the stored checkpoint is this unit's (by commit id): landed", stored({ seq: 6, commitId: 'c-a-6' }), 'landed'],
    ['ABA: the same seq under another commit id is not this unit', stored({ seq: 6, commitId: 'c-other' }), 'fenced'],
    ['still at the previous checkpoint, lease ours: did not land', stored({ seq: 5, commitId: 'c-a-5' }), 'not-landed'],
    ['landed, then the lease moved on (adopted by a successor)', stored({ seq: 6, commitId: 'c-a-6', token: 4, owner: 'w2' }), 'landed, lease moved'],
    ['at the previous checkpoint but the token moved: fenced', stored({ seq: 5, commitId: 'c-a-5', token: 4 }), 'fenced'],
    ['at the previous checkpoint but our slot epoch moved: fenced', stored({ seq: 5, commitId: 'c-a-5', ownerEpoch: 8 }), 'fenced'],
  ])('%s', (_name, record, expected) => {
    const { outcome, leaseMoved } = settleInDoubt(record, unit('a'), fence);
    expect(outcome === 'landed' && leaseMoved ? 'landed, lease moved' : outcome).toBe(expected);
  });
});
