import { describe, expect, it } from 'vitest';
import { emptyCheckpoint, stallAfterAdoption, withNewOwner, type StallEvidence } from '../../../../core/commit/checkpoint.ts';
import type { SequencedStep } from '../../../../core/ordering/sequencer.ts';
import { emptySequencerState } from '../../../../core/ordering/sequencer.ts';
import { buildCommit } from '../../../../gpu-worker/runtime/commit-builder.ts';
import { breakerVerdict, frameToTry, isolatedRoundFull, isolationOrder, isolationStep, handoverOf, markerStall, type BreakerVerdict, type Handover, type IsolationStep } from '../../../../gpu-worker/runtime/crash/crash-breaker.ts';

const ref = (frame: number) => ({ frame, bucket: 'b', key: `frames/v/${frame}.jpg`, sizeBytes: 10 });
const frame = (n: number): SequencedStep => ({ type: 'frame', ref: ref(n) });
const late = (n: number): SequencedStep => ({ type: 'late', ref: { ...ref(n), replacesGap: false } });
const gap = (n: number): SequencedStep => ({ type: 'gap', frame: n, reason: 'missing-frame' });

describe('breakerVerdict: what the adopted checkpoint says', () => {
  const cases: [string, StallEvidence | undefined, BreakerVerdict][] = [
    ['no evidence (the normal path)', undefined, 'normal'],
    ['first adoption since progress', { adoptions: 1 }, 'normal'],
    ['an owner adopted it and died without progress', { adoptions: 2 }, 'isolate'],
    ['many adoptions without progress', { adoptions: 7 }, 'isolate'],
    ['a marker, nobody died on it yet', { adoptions: 2, trying: 5 }, 'isolate'],
    ['a marker with tries 0', { adoptions: 2, trying: 5, tries: 0 }, 'isolate'],
    ['a process died running frame 5 alone once: tried alone again, not parked', { adoptions: 3, trying: 5, tries: 1 }, 'isolate'],
    ['processes died running frame 5 alone twice', { adoptions: 4, trying: 5, tries: 2 }, { park: 5 }],
    ['frame 0 is a frame like any other', { adoptions: 3, trying: 0, tries: 2 }, { park: 0 }],
  ];
  it.each(cases)('%s', (_why, stall, verdict) => {
    expect(breakerVerdict(stall)).toEqual(verdict);
  });

  // Decision 29: the first successor of an owner that died isolates what it took from it.
  const handovers: [string, StallEvidence | undefined, Handover, BreakerVerdict][] = [
    ['first adoption, taken from a dead owner', { adoptions: 1 }, 'dead-owner', 'isolate'],
    ['no evidence at all, taken from a dead owner', undefined, 'dead-owner', 'isolate'],
    ['a marker with one death, taken from a dead owner: tried alone again', { adoptions: 2, trying: 3, tries: 1 }, 'dead-owner', 'isolate'],
    ['two deaths on the frame: parked whatever the handover', { adoptions: 3, trying: 3, tries: 2 }, 'clean', { park: 3 }],
    ['clean handover (drain, idle exit)', { adoptions: 1 }, 'clean', 'normal'],
    ['clean handover of a video handed over before without progress', { adoptions: 3 }, 'clean', 'normal'],
    ['clean handover of a video with a death on its marker', { adoptions: 2, trying: 3, tries: 1 }, 'clean', 'isolate'],
    ['from nobody, adopted twice without progress (janitor unpinned it)', { adoptions: 2 }, 'unowned', 'isolate'],
    ['from nobody, first adoption', { adoptions: 1 }, 'unowned', 'normal'],
  ];
  it.each(handovers)('%s', (_why, stall, handover, verdict) => {
    expect(breakerVerdict(stall, handover)).toEqual(verdict);
  });
});

describe('handoverOf: the claim\'s answer and the adoption\'s read', () => {
  const cases: [string, boolean, string | undefined, Handover][] = [
    ['slot never released, video held by an owner', true, 'w1', 'dead-owner'],
    ['slot released (drain, idle exit), video held by the drained owner', false, 'w1', 'clean'],
    ['slot never released, video nobody held (new, or released idle)', true, undefined, 'unowned'],
    ['slot released, video nobody held', false, undefined, 'unowned'],
    ['video already ours', true, 'me', 'unowned'],
  ];
  it.each(cases)('%s', (_why, slotTakenOver, adoptedFrom, expected) => {
    expect(handoverOf({ slotTakenOver, adoptedFrom, self: 'me' })).toBe(expected);
  });
});

describe('isolationOrder: least suspect first', () => {
  const v = (id: string, suspicion: StallEvidence | undefined) => ({ id, suspicion });
  const cases: [string, ReturnType<typeof v>[], string[]][] = [
    ['ties keep the given order', [v('a', { adoptions: 1 }), v('b', { adoptions: 1 }), v('c', undefined)], ['c', 'a', 'b']],
    ['a video a process died on alone goes last', [v('p', { adoptions: 2, trying: 4, tries: 1 }), v('a', { adoptions: 1 }), v('b', { adoptions: 1 })], ['a', 'b', 'p']],
    ['more adoptions without progress later', [v('x', { adoptions: 3 }), v('y', { adoptions: 1 })], ['y', 'x']],
    ['a marker nobody died on counts no death', [v('m', { adoptions: 1, trying: 2 }), v('n', { adoptions: 2 })], ['m', 'n']],
  ];
  it.each(cases)('%s', (_why, videos, expected) => {
    expect(isolationOrder(videos).map((x) => x.id)).toEqual(expected);
  });
});

describe('stallAfterAdoption: the adoption write counts', () => {
  const cases: [StallEvidence | undefined, StallEvidence][] = [
    [undefined, { adoptions: 1 }],
    [{ adoptions: 1 }, { adoptions: 2 }],
    [{ adoptions: 2, trying: 9 }, { adoptions: 3, trying: 9, tries: 1 }],
    [{ adoptions: 3, trying: 9, tries: 1 }, { adoptions: 4, trying: 9, tries: 2 }],
  ];
  it.each(cases)('%j -> %j', (before, after) => {
    expect(stallAfterAdoption(before)).toEqual(after);
  });

  // [why, stored evidence, the dead tenure's token, after the adoption]
  const byWriter: [string, StallEvidence, number | undefined, StallEvidence][] = [
    ['the tenure that wrote the marker died: a try', { adoptions: 2, trying: 28, tryingToken: 2 }, 2, { adoptions: 3, trying: 28, tries: 1, tryingToken: 2 }],
    ['its successor died before writing its own marker: no try (seed 1402)', { adoptions: 3, trying: 28, tries: 1, tryingToken: 2 }, 3, { adoptions: 4, trying: 28, tries: 1, tryingToken: 2 }],
    ['the successor wrote its marker, then died: the second try', { adoptions: 3, trying: 28, tries: 1, tryingToken: 3 }, 3, { adoptions: 4, trying: 28, tries: 2, tryingToken: 3 }],
    ['no try yet and the dead tenure never ran it: still none', { adoptions: 2, trying: 28, tryingToken: 2 }, 5, { adoptions: 3, trying: 28, tryingToken: 2 }],
    ['a marker written before writers were kept: every adoption counts, as before', { adoptions: 2, trying: 28 }, 7, { adoptions: 3, trying: 28, tries: 1 }],
    ['the previous token unknown: counted', { adoptions: 2, trying: 28, tryingToken: 2 }, undefined, { adoptions: 3, trying: 28, tries: 1, tryingToken: 2 }],
  ];
  it.each(byWriter)('%s', (_why, before, previousToken, after) => {
    expect(stallAfterAdoption(before, previousToken)).toEqual(after);
  });

  it('two kills, the second before the successor ran the frame, do not park it; two deaths running it do', () => {
    // Token 2 writes the marker for frame 28 and dies running it; token 3 adopts and dies
    // before its own marker (its adoption's answer was lost); token 4 adopts.
    const marked = { ...emptyCheckpoint(0), stall: markerStall({ adoptions: 2 }, 28, 2) };
    const third = withNewOwner(marked, { worker: 'c', token: 3, sinceMs: 1 }, true, 2);
    const fourth = withNewOwner(third, { worker: 'd', token: 4, sinceMs: 2 }, true, 3);
    expect(breakerVerdict(fourth.stall, 'dead-owner')).toBe('isolate');
    // Had token 3 written its marker and died running the frame, the frame is the poison.
    const rerun = { ...third, stall: markerStall(third.stall, 28, 3) };
    const afterRerun = withNewOwner(rerun, { worker: 'd', token: 4, sinceMs: 2 }, true, 3);
    expect(breakerVerdict(afterRerun.stall, 'dead-owner')).toEqual({ park: 28 });
  });

  it('withNewOwner (the adoption the lease store writes) carries it', () => {
    const once = withNewOwner(emptyCheckpoint(0), { worker: 'a', token: 1, sinceMs: 0 });
    const twice = withNewOwner(once, { worker: 'b', token: 2, sinceMs: 1 });
    expect(twice.stall).toEqual({ adoptions: 2 });
    expect(breakerVerdict(twice.stall)).toBe('isolate');
    // A clean handover is not counted (decision 29)
    const handedOver = withNewOwner(once, { worker: 'b', token: 2, sinceMs: 1 }, false);
    expect(handedOver.stall).toEqual({ adoptions: 1 });
    expect(handedOver.owners.map((o) => o.worker)).toEqual(['a', 'b']);
  });
});

describe('a commit of frames clears the evidence; a marker sets trying', () => {
  const suspect = { ...emptyCheckpoint(0), stall: { adoptions: 3, trying: 4, tries: 1 } };
  const input = { videoId: 'v', token: 2, workerId: 'w', slot: 0, committed: suspect, outcomes: new Map(), sequencer: emptySequencerState(0), complete: false, processor: undefined, nowMs: 0 };
  it('a unit of frames (progress) writes no stall', () => {
    const { unit } = buildCommit({ ...input, steps: [gap(0)] });
    expect(unit.checkpoint.stall).toBeUndefined();
    expect('stall' in unit.checkpoint).toBe(false);
  });
  it('a marker writes the stored adoptions with the frame to try and no deaths', () => {
    const stall = markerStall({ adoptions: 2 }, 7, 2);
    expect(stall).toEqual({ adoptions: 2, trying: 7, tryingToken: 2 });
    // Deaths counted on the same frame stay, so the next death reaches the parking count.
    expect(markerStall({ adoptions: 2, trying: 7, tries: 1, tryingToken: 1 }, 7, 2)).toEqual({ adoptions: 2, trying: 7, tries: 1, tryingToken: 2 });
    expect(markerStall({ adoptions: 2, trying: 6, tries: 1 }, 7, 2)).toEqual({ adoptions: 2, trying: 7, tryingToken: 2 });
    const { unit } = buildCommit({ ...input, steps: [], stall });
    expect(unit.checkpoint.stall).toEqual({ adoptions: 2, trying: 7, tryingToken: 2 });
    expect(unit.results).toEqual([]);
  });
});

describe('isolated rounds run at most one frame', () => {
  const cases: [string, SequencedStep[], boolean][] = [
    ['nothing taken', [], false],
    ['gaps only', [gap(1), gap(2)], false],
    ['a frame', [gap(1), frame(2)], true],
    ['a late frame', [late(0)], true],
  ];
  it.each(cases)('full after %s: %s', (_why, steps, full) => {
    expect(isolatedRoundFull(steps)).toBe(full);
  });

  const tries: [string, SequencedStep[], number[], number | undefined][] = [
    ['gaps run nothing: no marker', [gap(1)], [], undefined],
    ['the frame to run', [gap(1), frame(2)], [], 2],
    ['a late frame', [late(0)], [], 0],
    ['a parked frame runs nothing: no marker', [frame(3)], [3], undefined],
  ];
  it.each(tries)('frameToTry: %s', (_why, steps, parked, expected) => {
    expect(frameToTry(steps, new Map(parked.map((f) => [f, 'crashed-worker'])))).toBe(expected);
  });
});

describe('isolationStep', () => {
  const at = (nowMs: number, through: number | undefined, lowestPending: number | undefined, highestPending: number | undefined) => ({
    isolatedSinceMs: 0,
    nowMs,
    redeliveryMs: 5_000,
    through,
    lowestPending,
    highestPending,
  });
  const cases: [string, ReturnType<typeof at>, IsolationStep][] = [
    ['a predecessor frame may still reappear', at(4_999, undefined, undefined, undefined), 'stay'],
    ['window over and nothing waiting', at(5_000, undefined, undefined, undefined), 'leave'],
    ['window over with frames waiting: they are run alone first', at(5_000, undefined, 7, 9), { through: 9 }],
    ['frames at or below the watermark still wait', at(60_000, 9, 9, 30), 'stay'],
    ['a late frame below the watermark still waits', at(60_000, 9, 3, 30), 'stay'],
    ['only frames that came after the window wait: leave (a streaming video)', at(60_000, 9, 10, 30), 'leave'],
    ['watermark passed and nothing waiting', at(60_000, 9, undefined, undefined), 'leave'],
  ];
  it.each(cases)('%s', (_why, input, expected) => {
    expect(isolationStep(input)).toEqual(expected);
  });
});
