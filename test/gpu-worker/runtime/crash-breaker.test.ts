import { describe, expect, it } from 'vitest';
import { emptyCheckpoint, stallAfterAdoption, withNewOwner, type StallEvidence } from '../../../core/checkpoint.ts';
import type { SequencedStep } from '../../../core/sequencer.ts';
import { emptySequencerState } from '../../../core/sequencer.ts';
import { buildCommit } from '../../../gpu-worker/runtime/commit-builder.ts';
import { breakerVerdict, frameToTry, isolatedRoundFull, markerStall, mayLeaveIsolation, type BreakerVerdict } from '../../../gpu-worker/runtime/crash-breaker.ts';

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
    ['a process died running frame 5 alone', { adoptions: 3, trying: 5, tries: 1 }, { park: 5 }],
    ['frame 0 is a frame like any other', { adoptions: 3, trying: 0, tries: 2 }, { park: 0 }],
  ];
  it.each(cases)('%s', (_why, stall, verdict) => {
    expect(breakerVerdict(stall)).toEqual(verdict);
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

  it('withNewOwner (the adoption the lease store writes) carries it', () => {
    const once = withNewOwner(emptyCheckpoint(0), { worker: 'a', token: 1, sinceMs: 0 });
    const twice = withNewOwner(once, { worker: 'b', token: 2, sinceMs: 1 });
    expect(twice.stall).toEqual({ adoptions: 2 });
    expect(breakerVerdict(twice.stall)).toBe('isolate');
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
    const stall = markerStall({ adoptions: 2 }, 7);
    expect(stall).toEqual({ adoptions: 2, trying: 7 });
    const { unit } = buildCommit({ ...input, steps: [], stall });
    expect(unit.checkpoint.stall).toEqual({ adoptions: 2, trying: 7 });
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

describe('mayLeaveIsolation', () => {
  const cases: [string, { isolatedSinceMs: number; nowMs: number; redeliveryMs: number; pending: boolean }, boolean][] = [
    ['frames still waiting', { isolatedSinceMs: 0, nowMs: 60_000, redeliveryMs: 5_000, pending: true }, false],
    ['a predecessor frame may still reappear', { isolatedSinceMs: 0, nowMs: 4_999, redeliveryMs: 5_000, pending: false }, false],
    ['redelivery window over and nothing waiting', { isolatedSinceMs: 0, nowMs: 5_000, redeliveryMs: 5_000, pending: false }, true],
  ];
  it.each(cases)('%s', (_why, input, expected) => {
    expect(mayLeaveIsolation(input)).toBe(expected);
  });
});
