import { describe, expect, it } from 'vitest';
import { emptyCheckpoint } from '../../../core/checkpoint.ts';
import type { CommitOutcome, VideoRecord } from '../../../core/aws/lease-store.ts';
import { commitActions, settleInDoubt } from '../../../gpu-worker/runtime/commit-pipeline.ts';
import type { RoundUnit } from '../../../gpu-worker/runtime/round-builder.ts';

const fence = { slot: 2, workerId: 'w1', epoch: 7 };

function unit(videoId: string, seq = 5, commitId?: string): RoundUnit {
  const checkpoint = { ...emptyCheckpoint(0), seq: seq + 1, ...(commitId ? { commitId } : {}) };
  return { session: { videoId } as RoundUnit['session'], plan: {} as RoundUnit['plan'], parked: 0, unit: { videoId, token: 3, expectedSeq: seq, checkpoint, results: [], summary: {} as never } };
}

describe('commitActions', () => {
  const units = [unit('a'), unit('b'), unit('c')];
  const fates = (o: CommitOutcome | 'threw') => commitActions(o, units).fates.map((f) => [f.unit.unit.videoId, f.fate.kind === 'conflict' ? `conflict ${f.fate.frame}` : f.fate.kind]);
  it.each<[string, CommitOutcome | 'threw', string[][]]>([
    ['all committed: every unit landed', { kind: 'committed', ambiguousRetries: 0 }, [['a', 'landed'], ['b', 'landed'], ['c', 'landed']]],
    ['the call threw: every unit in doubt, none rolled back', 'threw', [['a', 'in-doubt'], ['b', 'in-doubt'], ['c', 'in-doubt']]],
    [
      'some fenced, a conflict, the rest landed',
      { kind: 'videos-fenced', videoIds: ['b'], committedVideoIds: ['a'], conflicts: [{ videoId: 'c', frame: 4 }] },
      [['a', 'landed'], ['b', 'fenced'], ['c', 'conflict 4']],
    ],
    ['a unit the answer does not name is in doubt, never landed', { kind: 'videos-fenced', videoIds: ['b'], committedVideoIds: ['a'] }, [['a', 'landed'], ['b', 'fenced'], ['c', 'in-doubt']]],
  ])('%s', (_name, outcome, expected) => {
    expect(fates(outcome)).toEqual(expected);
  });

  it('a lost slot applies nothing', () => {
    expect(commitActions({ kind: 'slot-lost' }, units)).toEqual({ slotLost: true, fates: [] });
  });
});

describe('settleInDoubt', () => {
  const stored = (over: Partial<VideoRecord> & { seq: number; commitId?: string }): VideoRecord => {
    const { seq, commitId, ...rest } = over;
    return {
      videoId: 'a',
      pinnedSlot: 2,
      token: 3,
      owner: 'w1',
      ownerEpoch: 7,
      state: 'pinned',
      checkpoint: { ...emptyCheckpoint(0), seq, ...(commitId ? { commitId } : {}) } as VideoRecord['checkpoint'],
      ...rest,
    };
  };
  it.each<[string, VideoRecord, RoundUnit, ReturnType<typeof settleInDoubt>]>([
    ['the stored checkpoint is this unit\'s (by commit id): landed', stored({ seq: 6, commitId: 'c-mine' }), unit('a', 5, 'c-mine'), 'landed'],
    ['ABA: the same seq under another commit id is not this unit', stored({ seq: 6, commitId: 'c-other' }), unit('a', 5, 'c-mine'), 'fenced'],
    ['still at the previous checkpoint, lease ours: did not land', stored({ seq: 5, commitId: 'c-prev' }), unit('a', 5, 'c-mine'), 'not-landed'],
    ['landed, then the lease moved on (adopted by a successor)', stored({ seq: 6, commitId: 'c-mine', token: 4, owner: 'w2' }), unit('a', 5, 'c-mine'), 'landed-moved'],
    ['at the previous checkpoint but the token moved: fenced', stored({ seq: 5, token: 4 }), unit('a', 5, 'c-mine'), 'fenced'],
    ['at the previous checkpoint but our slot epoch moved: fenced', stored({ seq: 5, ownerEpoch: 8 }), unit('a', 5, 'c-mine'), 'fenced'],
    ['a checkpoint without ids (older release): seq decides, only while ours', stored({ seq: 6 }), unit('a', 5), 'landed'],
    ['without ids and not ours: never landed by a bare counter', stored({ seq: 6, owner: 'w2', token: 4 }), unit('a', 5), 'fenced'],
  ])('%s', (_name, record, u, expected) => {
    expect(settleInDoubt(record, u, fence)).toBe(expected);
  });
});
