/**
 * The automatic start's pure decisions (core/ordering/sequencer-start.ts, decision 4): which listing
 * is due, and which start a listing decides. The sequencer's behaviour around them is in
 * test/core/ordering/sequencer.test.ts ("the start of a video, decided at first sight").
 */
import { describe, expect, it } from 'vitest';
import { startFromListing, startListing, startListingFailed } from '../../../core/ordering/sequencer-start.ts';
import { emptySequencerState, type SequencerState } from '../../../core/ordering/sequencer-state.ts';

const WAIT = 5_000;
const options = { reorderWaitMs: WAIT, reorderBufferFrames: 64, firstFrameNumber: -1 };

/** An undecided video whose known frames are `known`, first seen at 0, last listed at `listedAtMs`. */
function state(known: readonly number[], listedAtMs: number | null = null): SequencerState {
  return {
    ...emptySequencerState(-1),
    firstSeenAtMs: known.length > 0 ? 0 : null,
    listedAtMs,
    buffered: known.map((frame) => ({ frame, bucket: 'b', key: `frames/v/${frame}.jpg`, sizeBytes: 1, seenAtMs: 0 })),
  };
}

describe('startListing: which start listing is due', () => {
  const cases = [
    { name: 'nothing known yet', known: [], listedAtMs: null, now: 0, want: undefined },
    { name: 'frame 0 known: none, the start is decided without one', known: [0, 1], listedAtMs: null, now: 0, want: undefined },
    { name: 'first sight: at once, bounded below the lowest known frame', known: [1, 3], listedAtMs: null, now: 0, want: { fromFrame: 0, why: 'start', throughFrame: 0 } },
    { name: 'the first listing could not decide: none until the wait is over', known: [5], listedAtMs: 10, now: WAIT - 1, want: undefined },
    { name: 'the wait is over: the fallback listing, unbounded', known: [5], listedAtMs: 10, now: WAIT, want: { fromFrame: 0, why: 'start' } },
    { name: 'a listing made after the wait already decided: none', known: [5], listedAtMs: WAIT, now: WAIT + 1, want: undefined },
  ];
  it.each(cases)('$name', ({ known, listedAtMs, now, want }) => {
    expect(startListing(state(known, listedAtMs), options, now)).toEqual(want);
  });

  it('a failed first listing gives up deciding early; a later failure changes nothing', () => {
    const s = state([5]);
    startListingFailed(s, 20);
    expect(s.listedAtMs).toBe(20);
    expect(startListing(s, options, 21)).toBeUndefined();
    startListingFailed(s, WAIT + 1);
    expect(s.listedAtMs).toBe(20);
    expect(startListing(s, options, WAIT + 1)).toEqual({ fromFrame: 0, why: 'start' });
  });
});

describe('startFromListing: which start a listing decides', () => {
  const cases = [
    { name: 'covered below the lowest known frame: it is the start', known: [3], fromFrame: 0, lowestListed: 3, covered: 2, now: 10, want: 3 },
    { name: 'a lower frame listed (its notification not come yet) is the start', known: [3], fromFrame: 0, lowestListed: 1, covered: 0, now: 10, want: 1 },
    { name: 'covered too little before the wait: undecided', known: [3], fromFrame: 0, lowestListed: 3, covered: 1, now: 10, want: null },
    { name: 'covered too little once the wait is over: the lowest found, as before', known: [3], fromFrame: 0, lowestListed: 3, covered: 1, now: WAIT, want: 3 },
    { name: 'a listing not from 0 proves nothing below before the wait', known: [3], fromFrame: 2, lowestListed: 3, covered: 1_000, now: 10, want: null },
    { name: 'nothing listed nor known: undecided', known: [], fromFrame: 0, lowestListed: undefined, covered: 1_000, now: WAIT, want: null },
  ];
  it.each(cases)('$name', ({ known, fromFrame, lowestListed, covered, now, want }) => {
    expect(startFromListing(state(known), options, fromFrame, lowestListed, covered, now)).toBe(want);
  });
});
