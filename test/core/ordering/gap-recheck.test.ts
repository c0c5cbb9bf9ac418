/**
 * Gaps are re-checked against S3 (docs/decisions.md): the sequencer remembers the frames it
 * recorded as gap, asks for one listing before the video completes (and when the worker
 * releases it idle), and turns a listed frame recorded as gap into a late step.
 */
import { describe, expect, it } from 'vitest';
import { addGap, gapKind, MAX_GAP_RANGES, removeGap, type GapRange } from '../../../core/ordering/gap-ranges.ts';
import { upgradeSequencerState, VideoSequencer, type FrameRef, type SequencedStep } from '../../../core/ordering/sequencer.ts';

const WAIT = 1000;
const options = { reorderWaitMs: WAIT, reorderBufferFrames: 8, firstFrameNumber: 0 };
const ref = (frame: number): FrameRef => ({ frame, bucket: 'b', key: `frames/v/${String(frame).padStart(6, '0')}.jpg`, sizeBytes: 10 });
const show = (steps: SequencedStep[]) =>
  steps.map((s) => (s.type === 'frame' ? s.ref.frame : s.type === 'gap' ? `gap${s.frame}` : s.type === 'late' ? `late${s.ref.frame}${s.ref.replacesGap ? '*' : ''}` : `rej${s.ref.frame}`));

/** Answers whatever listing the sequencer asks for from the frames that "exist in S3" (a listing that covers everything). */
function answer(seq: VideoSequencer, inS3: readonly number[], now: number): string | undefined {
  const want = seq.listingNeeded(now);
  if (!want) return undefined;
  seq.learnListing(want.fromFrame, inS3.filter((f) => f >= want.fromFrame).map(ref), Number.MAX_SAFE_INTEGER, now);
  return want.why;
}

/** A video 0..end whose frames `missing` never come by notification; returns the sequencer once every gap is recorded. */
function streamWithGaps(end: number, missing: readonly number[], withEnd = true): { seq: VideoSequencer; at: number } {
  const seq = new VideoSequencer(options);
  let at = 0;
  for (let f = 0; f <= end; f++) if (!missing.includes(f)) seq.offer(ref(f), at);
  if (withEnd) seq.setEnd(end);
  const present = Array.from({ length: end + 1 }, (_, f) => f).filter((f) => !missing.includes(f));
  for (let round = 0; round < 20 && seq.nextFrame <= Math.max(...missing); round++) {
    at += 3 * WAIT;
    answer(seq, present, at);
    seq.take(at);
  }
  return { seq, at };
}

describe('gap ranges', () => {
  const cases: { name: string; add: number[]; remove?: number[]; want: GapRange[] }[] = [
    { name: 'a run of frames is one range', add: [5, 6, 7], want: [[5, 7]] },
    { name: 'a frame between two ranges joins them', add: [1, 3, 2], want: [[1, 3]] },
    { name: 'separate frames stay apart, sorted', add: [9, 2, 5], want: [[2, 2], [5, 5], [9, 9]] },
    { name: 'adding twice changes nothing', add: [4, 4], want: [[4, 4]] },
    { name: 'removing inside splits', add: [1, 2, 3, 4], remove: [2], want: [[1, 1], [3, 4]] },
    { name: 'removing the edges shrinks, the last removal empties', add: [1, 2], remove: [1, 2], want: [] },
    { name: 'removing a frame that is no gap changes nothing', add: [1], remove: [7], want: [[1, 1]] },
  ];
  it.each(cases)('$name', ({ add, remove, want }) => {
    const gaps: GapRange[] = [];
    for (const f of add) addGap(gaps, f);
    for (const f of remove ?? []) removeGap(gaps, f);
    expect(gaps).toEqual(want);
  });

  it(`never holds more than ${MAX_GAP_RANGES} ranges: the closest ones merge into a mixed range that keeps every gap`, () => {
    // Prepare: every other frame a gap, so every gap is its own range.
    const gaps: GapRange[] = [];
    const recorded = Array.from({ length: MAX_GAP_RANGES + 40 }, (_, i) => 1_000_000_000_000 + 2 * i);
    // Act
    for (const f of recorded) addGap(gaps, f);
    // Assess
    expect(gaps.length).toBe(MAX_GAP_RANGES);
    for (const f of recorded) expect(gapKind(gaps, f)).not.toBeUndefined();
    expect(gaps.some((g) => g.length === 3)).toBe(true);
    // A frame between two merged gaps is only a candidate, never taken for a gap.
    const merged = gaps.find((g) => g.length === 3)!;
    expect(gapKind(gaps, merged[0] + 1)).toBe('mixed');
    expect(gapKind(gaps, recorded.at(-1)!)).toBe('exact');
    expect(JSON.stringify(gaps).length).toBeLessThan(5_000);
  });
});

describe('VideoSequencer: gaps are re-checked before completion', () => {
  it('a frame uploaded after its gap, whose notification was lost, is processed late before the video completes (chaos seed 424242)', () => {
    // Prepare: frame 3 is missing when its gap is decided; its object arrives later, with no notification.
    const { seq, at } = streamWithGaps(6, [3]);
    expect(seq.gaps).toEqual([[3, 3]]);
    // The completing step waits for the re-check.
    expect(seq.isComplete()).toBe(false);
    const now = at + 10;
    expect(seq.listingNeeded(now)).toEqual({ fromFrame: 3, why: 'recheck', throughFrame: 3 });
    // Act: the re-check lists frame 3, which now exists.
    expect(answer(seq, [0, 1, 2, 3, 4, 5, 6], now)).toBe('recheck');
    const steps = seq.take(now);
    // Assess: frame 3 late, replacing its gap; the rest in order; complete; gap forgotten.
    expect(show(steps)).toContain('late3*');
    expect(seq.gaps).toEqual([]);
    expect(seq.isComplete()).toBe(true);
    expect(seq.listingNeeded(now + 5 * WAIT)).toBeUndefined();
  });

  it('re-checks once: a listing that finds nothing completes the video and no further listing is asked for', () => {
    const { seq, at } = streamWithGaps(6, [2, 4]);
    const now = at + 10;
    expect(answer(seq, [0, 1, 3, 5, 6], now)).toBe('recheck');
    seq.take(now);
    expect(seq.isComplete()).toBe(true);
    expect(seq.gaps).toEqual([[2, 2], [4, 4]]);
    for (const later of [now + 1, now + WAIT, now + 100 * WAIT]) expect(seq.listingNeeded(later)).toBeUndefined();
    expect(seq.nextDeadlineMs()).toBeUndefined();
  });

  it('a video without gaps completes with no re-check', () => {
    const seq = new VideoSequencer(options);
    for (let f = 0; f <= 4; f++) seq.offer(ref(f), 0);
    seq.setEnd(4);
    expect(seq.listingNeeded(0)).toBeUndefined();
    expect(show(seq.take(0))).toEqual([0, 1, 2, 3, 4]);
    expect(seq.isComplete()).toBe(true);
  });

  it('asks for the re-check as soon as the end is in reach, so the round that completes commits it', () => {
    // Frames 0..6 with a gap at 2; the end marker comes after every frame was processed.
    const { seq, at } = streamWithGaps(6, [2], false);
    seq.take(at);
    expect(seq.nextFrame).toBe(7);
    expect(seq.listingNeeded(at)).toBeUndefined(); // no end known: nothing to complete
    seq.setEnd(6);
    // The first listing of a re-check is not rate-limited by the listing just made.
    expect(seq.listingNeeded(at)).toEqual({ fromFrame: 2, why: 'recheck', throughFrame: 2 });
    expect(seq.nextDeadlineMs()).toBe(0);
  });

  it('a re-check the listing covers only in part goes on from where it stopped, rate-limited', () => {
    const { seq, at } = streamWithGaps(12, [2, 9]);
    const now = at + 10;
    const want = seq.listingNeeded(now)!;
    expect(want).toEqual({ fromFrame: 2, why: 'recheck', throughFrame: 9 });
    // Act: a listing that proves only frames up to 5.
    const lesson = seq.learnRecheck(want.fromFrame, [ref(3), ref(4), ref(5)], 5, now);
    // Assess
    expect(lesson).toEqual({ lateFrames: 0, verify: [], recheckDone: false });
    expect(seq.gapsToRecheck()).toEqual({ fromFrame: 9, toFrame: 9, frames: 1 });
    expect(seq.listingNeeded(now + 1)).toBeUndefined();
    expect(seq.listingNeeded(now + WAIT)).toEqual({ fromFrame: 9, why: 'recheck', throughFrame: 9 });
    expect(seq.learnRecheck(9, [ref(9)], 12, now + WAIT)).toEqual({ lateFrames: 1, verify: [], recheckDone: true });
  });

  it('a re-check listing that proves nothing still moves on, so the completing step is never held for ever', () => {
    const { seq, at } = streamWithGaps(12, [2, 9]);
    // A listing that covered nothing (it saw no key at or after frame 2).
    seq.learnRecheck(2, [], 1, at);
    expect(seq.gapsToRecheck()).toEqual({ fromFrame: 9, toFrame: 9, frames: 1 });
    seq.learnRecheck(9, [], 8, at + WAIT);
    expect(seq.gapsToRecheck()).toBeUndefined();
    seq.take(at + WAIT);
    expect(seq.isComplete()).toBe(true);
  });
});

describe('VideoSequencer: gaps re-checked at idle release', () => {
  const cases: { name: string; listed: number[]; coveredThrough: number; late: string[]; done: boolean }[] = [
    { name: 'nothing new: done', listed: [], coveredThrough: Number.MAX_SAFE_INTEGER, late: [], done: true },
    { name: 'one gap object arrived: late, replacing it', listed: [5], coveredThrough: Number.MAX_SAFE_INTEGER, late: ['late5*'], done: true },
    { name: 'both arrived', listed: [2, 5], coveredThrough: Number.MAX_SAFE_INTEGER, late: ['late2*', 'late5*'], done: true },
    { name: 'a frame listed beyond what the listing proves is still taken (it exists)', listed: [5], coveredThrough: 3, late: ['late5*'], done: true },
    { name: 'a listing that covers part of the gaps leaves the rest due', listed: [], coveredThrough: 3, late: [], done: false },
    { name: 'frames that are no gaps are left alone', listed: [1, 3, 4], coveredThrough: Number.MAX_SAFE_INTEGER, late: [], done: true },
  ];
  it.each(cases)('$name', ({ listed, coveredThrough, late, done }) => {
    // Prepare: no end marker; gaps at 2 and 5; the stream went on to 8.
    const { seq, at } = streamWithGaps(8, [2, 5], false);
    seq.take(at);
    const want = seq.gapsToRecheck();
    expect(want).toEqual({ fromFrame: 2, toFrame: 5, frames: 2 });
    // Act
    const lesson = seq.learnRecheck(want!.fromFrame, listed.map(ref), coveredThrough, at);
    // Assess
    expect(show(seq.take(at))).toEqual(late);
    expect(lesson.lateFrames).toBe(late.length);
    expect(lesson.recheckDone).toBe(done);
    expect(seq.gapsToRecheck() === undefined).toBe(done);
  });

  it('is due again once frames arrive after a re-check, and not before', () => {
    const { seq, at } = streamWithGaps(8, [2], false);
    seq.take(at);
    seq.learnRecheck(2, [], Number.MAX_SAFE_INTEGER, at);
    expect(seq.gapsToRecheck()).toBeUndefined();
    seq.offer(ref(9), at + 1);
    expect(seq.gapsToRecheck()).toEqual({ fromFrame: 2, toFrame: 2, frames: 1 });
  });

  it('a listed frame in a mixed range is handed back to check against its record', () => {
    const seq = new VideoSequencer(options, upgradeSequencerState({ nextFrame: 100, firstFrame: 0, gaps: [[10, 20, 1]], recheck: { fromFrame: 0, atMs: null } }));
    const lesson = seq.learnRecheck(10, [ref(12), ref(30)], Number.MAX_SAFE_INTEGER, 0);
    expect(lesson.verify.map((r) => r.frame)).toEqual([12]);
    expect(lesson.lateFrames).toBe(0);
    seq.forgetGap(12);
    expect(seq.gaps).toEqual([[10, 11, 1], [13, 20, 1]]);
  });
});

describe('VideoSequencer: a listing proves absence only as far as it covered', () => {
  const cases: { name: string; next: number; listed: number[]; coverage: number | boolean; gapsNow: number }[] = [
    // %06d past a million: the seek from 999998 covers width 6 only; 1000000 exists but sorts before StartAfter.
    { name: 'wider than the pad: no gap beyond the width the listing covered', next: 999_998, listed: [], coverage: 999_999, gapsNow: 2 },
    { name: 'a listing that proves nothing gaps nothing', next: 500, listed: [], coverage: 499, gapsNow: 0 },
    { name: 'gaps stop before the first listed frame', next: 500, listed: [503], coverage: Number.MAX_SAFE_INTEGER, gapsNow: 3 },
    { name: 'the older boolean: true covers everything', next: 500, listed: [], coverage: true, gapsNow: 8 },
  ];
  it.each(cases)('$name', ({ next, listed, coverage, gapsNow }) => {
    // Prepare: only the last frame (next+8) came; the video has been quiet, so next..next+7 are overdue.
    const seq = new VideoSequencer({ ...options, firstFrameNumber: next });
    seq.setEnd(next + 8);
    seq.offer(ref(next + 8), 0);
    const now = 10 * WAIT;
    // Act
    seq.learnListing(next, listed.map(ref), coverage, now);
    const gaps = seq.take(now).filter((s) => s.type === 'gap');
    // Assess
    expect(gaps).toHaveLength(gapsNow);
  });
});

describe('VideoSequencer state: gaps in checkpoints', () => {
  it('a checkpoint written before gaps were tracked loads with none and no re-check due', () => {
    const s = upgradeSequencerState({ nextFrame: 12, firstFrame: 0, endFrame: 20 });
    expect(s.gaps).toEqual([]);
    expect(s.recheck).toBeNull();
    expect(new VideoSequencer(options, s).gapsToRecheck()).toBeUndefined();
  });

  it('gaps and the re-check survive a snapshot', () => {
    const { seq } = streamWithGaps(12, [2, 9]);
    const copy = new VideoSequencer(options, JSON.parse(JSON.stringify(seq.snapshot())));
    expect(copy.gaps).toEqual([[2, 2], [9, 9]]);
    expect(copy.gapsToRecheck()).toEqual(seq.gapsToRecheck());
  });
});
