import { describe, expect, it } from 'vitest';
import { coveredThrough } from '../../../core/ordering/listing-coverage.ts';
import { QUIET_WAITS, STRAY_QUIET_WAITS, VideoSequencer, emptySequencerState, upgradeSequencerState, type FrameRef, type SequencedStep } from '../../../core/ordering/sequencer.ts';

const WAIT = 1000;
const explicit = { reorderWaitMs: WAIT, reorderBufferFrames: 8, firstFrameNumber: 0 };
const auto = { ...explicit, firstFrameNumber: -1 };
const ref = (frame: number): FrameRef => ({ frame, bucket: 'b', key: `frames/v/${frame}.jpg`, sizeBytes: 10 });
const show = (steps: SequencedStep[]) =>
  steps.map((s) => (s.type === 'frame' ? s.ref.frame : s.type === 'gap' ? `gap${s.frame}` : s.type === 'late' ? `late${s.ref.frame}` : `rej${s.ref.frame}`));

/** Answers the sequencer's listing requests from a set of frames that "exist in S3". */
function listFor(seq: VideoSequencer, inS3: readonly number[], now: number): boolean {
  const want = seq.listingNeeded(now);
  if (!want) return false;
  seq.learnListing(want.fromFrame, inS3.filter((f) => f >= want.fromFrame).map(ref), true, now);
  return true;
}

describe('VideoSequencer: order', () => {
  it('emits shuffled frames in order once the head arrives', () => {
    // Prepare
    const seq = new VideoSequencer(explicit);
    // Act
    for (const f of [2, 0, 3]) seq.offer(ref(f), 0);
    const first = seq.take(0);
    seq.offer(ref(1), 10);
    const second = seq.take(10);
    // Assess
    expect(show(first)).toEqual([0]);
    expect(show(second)).toEqual([1, 2, 3]);
    expect(seq.nextFrame).toBe(4);
  });

  it.each([
    ['earlier object first', ['frames/v/000000.mp4', 'frames/v/000003.mp4']],
    ['later object first', ['frames/v/000003.mp4', 'frames/v/000000.mp4']],
  ])('takes a frame two objects cover from the one that starts nearer below it, whichever was offered first (%s)', (_order, keys) => {
    // Prepare: two segments both cover frame 3 (0 declared 4 frames or more; 3 starts there)
    const seq = new VideoSequencer(explicit);
    const at = (key: string, frame: number): FrameRef => ({ frame, bucket: 'b', key, sizeBytes: 10 });
    // Act
    const offered = keys.map((k) => seq.offer(at(k, 3), 0));
    for (const f of [0, 1, 2]) seq.offer(at('frames/v/000000.mp4', f), 0);
    const steps = seq.take(0);
    // Assess: one step for frame 3, from segment 3; the second offer was a duplicate only when it lost
    expect(steps.map((s) => (s.type === 'frame' ? `${s.ref.frame}@${s.ref.key.slice(-10)}` : s.type))).toEqual(['0@000000.mp4', '1@000000.mp4', '2@000000.mp4', '3@000003.mp4']);
    expect(offered).toEqual(keys[0] === 'frames/v/000000.mp4' ? ['accepted', 'accepted'] : ['accepted', 'duplicate']);
  });

  it('calls a redelivered buffered frame a duplicate and keeps one copy', () => {
    const seq = new VideoSequencer(explicit);
    seq.offer(ref(0), 0);
    expect(seq.offer(ref(3), 0)).toBe('accepted');
    expect(seq.offer(ref(3), 5)).toBe('duplicate');
    expect(show(seq.take(0))).toEqual([0]);
    expect(seq.bufferedCount).toBe(1);
  });

  it('rejects frames beyond the end marker, within the step budget, and completes', () => {
    const seq = new VideoSequencer(explicit);
    for (let f = 0; f < 12; f++) seq.offer(ref(f), 0);
    seq.setEnd(2);
    const first = seq.take(0, 5);
    const rest = seq.take(0, 100);
    expect(first).toHaveLength(5);
    expect(first.every((s) => s.type === 'reject')).toBe(true);
    expect(show(rest)).toEqual(['rej8', 'rej9', 'rej10', 'rej11', 0, 1, 2]);
    expect(seq.isComplete()).toBe(true);
    expect(seq.offer(ref(3), 0)).toBe('after-end');
  });
});

describe('VideoSequencer: the watermark decides gaps per frame', () => {
  it('gaps a really missing frame reorderWaitMs after the frames after it started arriving, once a listing confirms it', () => {
    // Prepare: a steady stream 0..9, 11..14; frame 10 is never uploaded.
    const seq = new VideoSequencer(explicit);
    const inS3 = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14];
    for (let f = 0; f <= 9; f++) seq.offer(ref(f), f * 100);
    expect(seq.take(900)).toHaveLength(10);
    seq.offer(ref(11), 1100);
    seq.offer(ref(12), 1200);
    // Act + Assess: nothing before the deadline (seen(11) + wait), not even a listing.
    expect(seq.listingNeeded(2099)).toBeUndefined();
    expect(seq.take(2099)).toEqual([]);
    // Frames still arriving do not postpone the decision.
    seq.offer(ref(13), 2000);
    expect(seq.nextDeadlineMs()).toBe(2100);
    expect(seq.take(2100)).toEqual([]); // no listing yet: no gap
    expect(listFor(seq, inS3, 2100)).toBe(true);
    expect(show(seq.take(2100))).toEqual(['gap10', 11, 12, 13]); // 14 exists too, but its own notification will bring it
  });

  it('does not let one stray frame far ahead gap the frames coming at the uploader\'s pace', () => {
    const seq = new VideoSequencer(explicit);
    const emitted: (string | number)[] = [];
    seq.offer(ref(41), 0); // the stray
    for (let f = 0; f <= 40; f++) {
      const now = 300 + f * 400; // one frame every 0.4 reorder waits
      expect(seq.listingNeeded(now)).toBeUndefined();
      emitted.push(...show(seq.take(now)));
      seq.offer(ref(f), now);
      emitted.push(...show(seq.take(now)));
    }
    expect(emitted).toEqual(Array.from({ length: 42 }, (_, f) => f));
  });

  it('waits out a pause of the uploader below a lone stray far ahead, and settles the stray only after a long quiet', () => {
    // Prepare: frames 0..10 in order, the stray 41 early; then the uploader pauses.
    const seq = new VideoSequencer(explicit);
    seq.offer(ref(41), 0);
    for (let f = 0; f <= 10; f++) {
      seq.offer(ref(f), 100 + f * 100);
      seq.take(100 + f * 100);
    }
    const lastArrival = 1100;
    // Act / Assess: an ordinary quiet (2 waits) is not enough evidence against 11..40.
    expect(seq.listingNeeded(lastArrival + QUIET_WAITS * WAIT + 1)).toBeUndefined();
    expect(show(seq.take(lastArrival + QUIET_WAITS * WAIT + 1))).toEqual([]);
    // The stream resumes 5 waits later, at its own pace: every frame in order, no gap.
    const emitted: (string | number)[] = [];
    for (let f = 11; f <= 40; f++) {
      const now = lastArrival + 5 * WAIT + f * 100;
      expect(seq.listingNeeded(now)).toBeUndefined();
      seq.offer(ref(f), now);
      emitted.push(...show(seq.take(now)));
    }
    expect(emitted).toEqual([...Array.from({ length: 30 }, (_, i) => i + 11), 41]);
  });

  it('settles a lone stray with nothing after it once the video has been quiet for the long wait', () => {
    const seq = new VideoSequencer(explicit);
    seq.offer(ref(0), 0);
    seq.take(0);
    seq.offer(ref(20), 100);
    expect(seq.listingNeeded(100 + STRAY_QUIET_WAITS * WAIT - 1)).toBeUndefined();
    const at = 100 + STRAY_QUIET_WAITS * WAIT;
    expect(listFor(seq, [0, 20], at)).toBe(true);
    expect(show(seq.take(at))).toEqual([...Array.from({ length: 19 }, (_, i) => `gap${i + 1}`), 20]);
  });

  it('gaps a whole outage once the stream has resumed, one record per frame', () => {
    const seq = new VideoSequencer(explicit);
    seq.offer(ref(0), 0);
    seq.take(0);
    seq.offer(ref(5), 100);
    seq.offer(ref(6), 200);
    expect(listFor(seq, [0, 5, 6], 1100)).toBe(true);
    expect(show(seq.take(1100))).toEqual(['gap1', 'gap2', 'gap3', 'gap4', 5, 6]);
  });

  it('processes a frame the listing finds although its notification has not come', () => {
    const seq = new VideoSequencer(explicit);
    seq.offer(ref(0), 0);
    seq.take(0);
    seq.offer(ref(2), 100);
    seq.offer(ref(3), 100);
    expect(listFor(seq, [0, 1, 2, 3], 1100)).toBe(true);
    expect(show(seq.take(1100))).toEqual([1, 2, 3]);
    // The notification comes later: it is below nextFrame, and its record says ok (caller's check).
    expect(seq.offer(ref(1), 5000)).toBe('below');
  });

  it('ignores a listing made before the deadline', () => {
    const seq = new VideoSequencer(explicit);
    seq.offer(ref(0), 0);
    seq.take(0);
    seq.offer(ref(2), 100);
    seq.offer(ref(3), 100);
    seq.learnListing(1, [ref(2), ref(3)], true, 50); // early listing, before the watermark passed 1
    expect(seq.take(1100)).toEqual([]);
    expect(seq.listingNeeded(1100)).toEqual({ fromFrame: 1, why: 'overdue' });
  });

  it('gaps missing tail frames before the end marker once the video has been quiet', () => {
    const seq = new VideoSequencer(explicit);
    for (const f of [0, 1, 2]) seq.offer(ref(f), 0);
    seq.setEnd(4);
    expect(show(seq.take(0))).toEqual([0, 1, 2]);
    const quietAt = QUIET_WAITS * WAIT;
    expect(seq.listingNeeded(quietAt - 1)).toBeUndefined();
    expect(listFor(seq, [0, 1, 2], quietAt)).toBe(true);
    // The completing step waits for the re-check of gap 3 (gaps are re-checked before completion).
    expect(show(seq.take(quietAt))).toEqual(['gap3']);
    expect(seq.isComplete()).toBe(false);
    expect(seq.listingNeeded(quietAt)).toEqual({ fromFrame: 3, why: 'recheck', throughFrame: 3 });
    expect(listFor(seq, [0, 1, 2], quietAt)).toBe(true);
    expect(show(seq.take(quietAt))).toEqual(['gap4']);
    expect(seq.isComplete()).toBe(true);
  });

  it('a full buffer makes the missing frame overdue, still confirmed by a listing', () => {
    const seq = new VideoSequencer({ ...explicit, reorderBufferFrames: 3 });
    seq.offer(ref(0), 0);
    seq.take(0);
    // Far apart frames give no support; the buffer filling up at t=30 does.
    for (const [f, t] of [[20, 10], [40, 20], [60, 30]] as const) seq.offer(ref(f), t);
    expect(seq.listingNeeded(30)).toEqual({ fromFrame: 1, why: 'overdue' });
    seq.learnListing(1, [ref(20), ref(40), ref(60)], true, 30);
    const steps = seq.take(30);
    expect(steps.filter((s) => s.type === 'gap')).toHaveLength(19);
    expect(show(steps).at(-1)).toBe(20);
  });

  it('rate-limits listings', () => {
    const seq = new VideoSequencer(explicit);
    seq.offer(ref(0), 0);
    seq.take(0);
    seq.offer(ref(2), 0);
    seq.offer(ref(3), 0);
    seq.learnListing(1, [ref(1), ref(2), ref(3)].filter((r) => r.frame !== 1), false, 999);
    expect(seq.listingNeeded(1000)).toBeUndefined();
  });
});

describe('VideoSequencer: late frames', () => {
  it('queues a late frame out of line, before in-order frames, without moving nextFrame', () => {
    const seq = new VideoSequencer(explicit);
    for (const f of [0, 2, 3]) seq.offer(ref(f), 0);
    seq.take(0);
    listFor(seq, [0, 2, 3], 1000);
    expect(show(seq.take(1000))).toEqual(['gap1', 2, 3]);
    // Act: frame 1 turns up after its gap.
    expect(seq.offer(ref(1), 5000)).toBe('below');
    seq.addLate(ref(1), true);
    expect(seq.offer(ref(1), 5001)).toBe('duplicate');
    seq.offer(ref(4), 5002);
    // Assess
    const steps = seq.take(5002);
    expect(show(steps)).toEqual(['late1', 4]);
    expect(steps[0]).toMatchObject({ type: 'late', ref: { frame: 1, replacesGap: true } });
    expect(seq.nextFrame).toBe(5);
  });

  it('a video with an end marker is complete only when its late frames are processed too', () => {
    const seq = new VideoSequencer(explicit);
    for (const f of [0, 1]) seq.offer(ref(f), 0);
    seq.setEnd(1);
    seq.take(0);
    expect(seq.isComplete()).toBe(true);
    seq.addLate(ref(0), false);
    expect(seq.isComplete()).toBe(false);
    seq.take(0);
    expect(seq.isComplete()).toBe(true);
  });
});

describe('VideoSequencer: the start of a video, decided at first sight', () => {
  /** The first listing: what it found and how far it proved absence, or that it failed. */
  type FirstListing = { readonly found: readonly number[]; readonly coveredThrough: number } | 'failed';
  const everything = Number.MAX_SAFE_INTEGER;
  const cases: {
    name: string;
    arrivals: number[];
    first: FirstListing | 'none-asked';
    /** Steps at first sight (as soon as the first frame is known). */
    atOnce: (number | string)[];
    /** What exists when the fallback listing is made, after reorderWaitMs (when the first could not decide). */
    inS3AfterWait?: number[];
    afterWait?: (number | string)[];
  }[] = [
    { name: 'numbered from 1 (ffmpeg): starts at 1 at once, no gap at 0', arrivals: [2, 1, 3], first: { found: [1, 2, 3], coveredThrough: everything }, atOnce: [1, 2, 3] },
    {
      name: 'starts at the lowest frame listed, whose notification has not come',
      arrivals: [3],
      first: { found: [1, 2, 3], coveredThrough: everything },
      atOnce: [1, 2, 3],
    },
    { name: 'a listed frame 0 is the start', arrivals: [1, 2], first: { found: [0, 1, 2], coveredThrough: everything }, atOnce: [0, 1, 2] },
    { name: 'frame 0 known: starts at once, no listing', arrivals: [1, 0], first: 'none-asked', atOnce: [0, 1] },
    { name: 'a listing covering exactly up to the frame below the lowest decides', arrivals: [5], first: { found: [5], coveredThrough: 4 }, atOnce: [5] },
    {
      // %06d: one page from the start ends at 000999.jpg and proves 0..999.
      // Frame 8, listed above every known frame, is left to its own notification.
      name: 'padded keys: one page from 0 proves what lies below',
      arrivals: [7],
      first: { found: [7, 8], coveredThrough: coveredThrough({ fromFrame: 0, padWidth: 6, lastName: '000999.jpg' }) },
      atOnce: [7],
    },
    {
      // Unpadded: a page ending at 1899.jpg covers only 0..1 (2.jpg..4.jpg sort after it).
      name: 'covered too little (unpadded keys): falls back to the wait',
      arrivals: [5],
      first: { found: [5], coveredThrough: coveredThrough({ fromFrame: 0, lastName: '1899.jpg' }) },
      atOnce: [],
      inS3AfterWait: [3, 4, 5],
      afterWait: [3, 4, 5],
    },
    { name: 'a failed listing: falls back to the wait', arrivals: [2, 3], first: 'failed', atOnce: [], inS3AfterWait: [1, 2, 3], afterWait: [1, 2, 3] },
  ];

  it.each(cases)('$name', ({ arrivals, first, atOnce, inS3AfterWait, afterWait }) => {
    // Prepare
    const seq = new VideoSequencer(auto);
    const sight = 0;
    for (const f of arrivals) seq.offer(ref(f), sight);
    // Act: the listing asked for at first sight, answered (or failed).
    const want = seq.listingNeeded(sight);
    if (first === 'none-asked') expect(want).toBeUndefined();
    else {
      expect(want).toEqual({ fromFrame: 0, why: 'start', throughFrame: Math.min(...arrivals) - 1 });
      if (first === 'failed') seq.listingFailed(sight);
      else seq.learnListing(0, first.found.map(ref), first.coveredThrough, sight);
    }
    const steps = seq.take(sight);
    // Assess
    expect(show(steps)).toEqual(atOnce);
    if (afterWait === undefined) {
      expect(seq.firstFrame).toBe(atOnce[0]);
      return;
    }
    // One listing per new video until the wait is over; then the fallback listing decides.
    expect(seq.firstFrame).toBeNull();
    expect(seq.nextDeadlineMs()).toBe(WAIT);
    expect(seq.listingNeeded(WAIT - 1)).toBeUndefined();
    expect(seq.listingNeeded(WAIT)).toEqual({ fromFrame: 0, why: 'start' });
    expect(listFor(seq, inS3AfterWait!, WAIT)).toBe(true);
    expect(show(seq.take(WAIT))).toEqual(afterWait);
  });

  it('asks for the first listing at once, and for no other once the start is decided', () => {
    const seq = new VideoSequencer(auto);
    seq.offer(ref(4), 100);
    expect(seq.nextDeadlineMs()).toBe(100);
    expect(listFor(seq, [4], 100)).toBe(true);
    expect(show(seq.take(100))).toEqual([4]);
    for (const at of [101, 100 + WAIT, 100 + 10 * WAIT]) expect(seq.listingNeeded(at)).toBeUndefined();
  });

  it('processes a lower frame that shows up after the start as late, out of line', () => {
    // Prepare: frame 1 was still uploading when the listing was made.
    const seq = new VideoSequencer(auto);
    seq.offer(ref(2), 0);
    listFor(seq, [2], 10);
    expect(show(seq.take(10))).toEqual([2]);
    // Act
    const offered = seq.offer(ref(1), 50);
    seq.addLate(ref(1), false);
    seq.offer(ref(3), 60);
    // Assess
    expect(offered).toBe('below');
    const steps = seq.take(60);
    expect(show(steps)).toEqual(['late1', 3]);
    expect(steps[0]).toMatchObject({ type: 'late', ref: { frame: 1, replacesGap: false } });
    expect(seq.firstFrame).toBe(2);
  });

  it('a frame seen while the first listing was in flight lowers the start (the listing covered below it)', () => {
    const seq = new VideoSequencer(auto);
    seq.offer(ref(3), 0);
    const want = seq.listingNeeded(0)!;
    seq.offer(ref(2), 5);
    seq.learnListing(want.fromFrame, [ref(3)], 2, 8);
    expect(show(seq.take(8))).toEqual([2, 3]);
  });

  it('keeps an explicit firstFrameNumber: no start listing at first sight', () => {
    const seq = new VideoSequencer({ ...explicit, firstFrameNumber: 1 });
    seq.offer(ref(2), 0);
    expect(seq.listingNeeded(10)).toBeUndefined();
    expect(seq.take(10)).toEqual([]);
  });

  it('rejects frames below an explicit firstFrameNumber, and gaps a missing explicit first frame', () => {
    const seq = new VideoSequencer({ ...explicit, firstFrameNumber: 1 });
    expect(seq.offer(ref(0), 0)).toBe('before-first');
    seq.offer(ref(2), 0);
    seq.offer(ref(3), 0);
    expect(seq.take(0)).toEqual([]);
    listFor(seq, [0, 2, 3], WAIT);
    expect(show(seq.take(WAIT))).toEqual(['gap1', 2, 3]);
  });
});

describe('VideoSequencer: state', () => {
  it('restores exactly from its snapshot', () => {
    const seq = new VideoSequencer(explicit);
    for (const f of [0, 3, 5]) seq.offer(ref(f), 7);
    seq.take(7);
    seq.setEnd(9);
    const copy = new VideoSequencer(explicit, seq.snapshot());
    expect(copy.snapshot()).toEqual(seq.snapshot());
    expect(copy.nextDeadlineMs()).toBe(seq.nextDeadlineMs());
  });

  it('reads a checkpoint written before watermarks existed', () => {
    const old = { firstFrame: 0, nextFrame: 4, waitingSinceMs: null, buffered: [ref(6)], endFrame: null } as unknown as Parameters<typeof upgradeSequencerState>[0];
    const state = upgradeSequencerState(old);
    expect(state).toMatchObject({ firstFrame: 0, nextFrame: 4, late: [], absent: null, buffered: [{ frame: 6, seenAtMs: 0 }] });
    expect(emptySequencerState(-1).firstFrame).toBeNull();
    expect(emptySequencerState(1)).toMatchObject({ firstFrame: 1, nextFrame: 1 });
  });
});
