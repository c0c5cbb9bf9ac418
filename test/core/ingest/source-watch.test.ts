/** The live-source stall rule (core/ingest/source-watch.ts), table-driven. */
import { describe, expect, it } from 'vitest';
import { BURST_FRACTION, markStalled, MIN_STALL_INTERVAL_MS, noteSegment, stallDueAtMs, STALL_INTERVALS, type SourceWatch } from '../../../core/ingest/source-watch.ts';

const watch = (over: Partial<SourceWatch> = {}): SourceWatch => ({ lastSegmentAtMs: 10_000, intervalMs: 2_000, stalled: false, stalls: 0, ...over });

describe('source watch', () => {
  it.each([
    { name: 'the first segment starts the watch, no rhythm yet', before: undefined, at: 5_000, after: { lastSegmentAtMs: 5_000, intervalMs: null, stalled: false, stalls: 0 }, resumed: false },
    { name: 'the second learns the gap', before: watch({ intervalMs: null }), at: 12_000, after: watch({ lastSegmentAtMs: 12_000, intervalMs: 2_000 }), resumed: false },
    { name: 'later ones average it', before: watch(), at: 14_000, after: watch({ lastSegmentAtMs: 14_000, intervalMs: 3_000 }), resumed: false },
    { name: 'one after a stall resumes, the outage learnt only as long as the threshold', before: watch({ stalled: true, stalls: 1 }), at: 70_000, after: watch({ lastSegmentAtMs: 70_000, intervalMs: (STALL_INTERVALS * 2_000 + 2_000) / 2, stalls: 1 }), resumed: true },
    { name: 'a gap under a quarter of the rhythm is a burst: not learnt', before: watch(), at: 10_400, after: watch({ lastSegmentAtMs: 10_400 }), resumed: false },
    { name: 'a quarter of the rhythm is learnt', before: watch(), at: 10_000 + BURST_FRACTION * 2_000, after: watch({ lastSegmentAtMs: 10_500, intervalMs: 1_250 }), resumed: false },
    { name: 'a short resuming gap is learnt as it is', before: watch({ stalled: true, stalls: 1, intervalMs: 500 }), at: 12_500, after: watch({ lastSegmentAtMs: 12_500, intervalMs: 1_500, stalls: 1 }), resumed: true },
  ])('$name', ({ before, at, after, resumed }) => {
    expect(noteSegment(before, at)).toEqual({ watch: after, resumed });
  });

  it.each([
    { name: 'unwatched (images)', w: undefined, ended: false, due: undefined },
    { name: 'no rhythm yet', w: watch({ intervalMs: null }), ended: false, due: undefined },
    { name: 'ended by its marker', w: watch(), ended: true, due: undefined },
    { name: 'stalled already', w: watch({ stalled: true }), ended: false, due: undefined },
    { name: 'three intervals after the last segment', w: watch(), ended: false, due: 10_000 + STALL_INTERVALS * 2_000 },
    { name: 'never sooner than three times the least interval', w: watch({ intervalMs: 40 }), ended: false, due: 10_000 + STALL_INTERVALS * MIN_STALL_INTERVAL_MS },
    { name: 'a new owner counts silence from its tenure', w: watch(), ended: false, since: 50_000, due: 50_000 + STALL_INTERVALS * 2_000 },
    { name: 'a tenure older than the last segment changes nothing', w: watch(), ended: false, since: 5_000, due: 10_000 + STALL_INTERVALS * 2_000 },
  ])('stall due: $name', ({ w, ended, due, since }) => {
    expect(stallDueAtMs(w, ended, since)).toBe(due);
  });

  /**
   * Arrivals at the worker (ms) run through the rule as the worker runs it: housekeeping
   * every second raises a due stall, an arrival notes the segment. Returns the arrivals
   * that ended a stall. `owner`: the owner died at `diedAtMs` (nobody checks until the next
   * takes the video at `tenureStartMs`).
   */
  function resumedAt(arrivals: readonly number[], owner?: { diedAtMs: number; tenureStartMs: number; tenureCounts: boolean }): number[] {
    let w: SourceWatch | undefined;
    const resumed: number[] = [];
    let t = arrivals[0]!;
    for (const at of arrivals) {
      for (; t < at; t += 1_000) {
        if (owner && t >= owner.diedAtMs && t < owner.tenureStartMs) continue;
        const due = stallDueAtMs(w, false, owner?.tenureCounts && t >= owner.tenureStartMs ? owner.tenureStartMs : undefined);
        if (w && due !== undefined && t >= due) w = markStalled(w);
      }
      const r = noteSegment(w, at);
      w = r.watch;
      if (r.resumed) resumed.push(at);
    }
    return resumed;
  }
  const every = (fromMs: number, n: number, gapMs: number) => Array.from({ length: n }, (_, i) => fromMs + i * gapMs);

  it('a rhythm learnt too short (the first gaps a burst) corrects itself in a few stalls, then none', () => {
    // A 10-s source whose first segments came 50 ms apart (an edge's backlog at its start).
    const burst = every(0, 8, 50);
    const live = every(10_000, 40, 10_000);
    const resumed = resumedAt([...burst, ...live]);
    expect(resumed.length).toBeGreaterThan(0);
    expect(resumed.length).toBeLessThanOrEqual(3);
    // None after the first few live segments (the rule before decision 82 stalled on every one).
    expect(resumed.every((at) => at <= live[3]!)).toBe(true);
  });

  it('a takeover: the new owner, 60 s later, receives the queued segments at once, then the live ones: no stall', () => {
    // A 10-s source; its owner dies at 100 s; the successor takes the video at 160 s and
    // receives the 6 segments queued meanwhile half a second later, 50 ms apart, then one every 10 s.
    const before = every(0, 11, 10_000);
    const queued = every(160_500, 6, 50);
    const live = every(170_000, 20, 10_000);
    const arrivals = [...before, ...queued, ...live];
    expect(resumedAt(arrivals, { diedAtMs: 100_500, tenureStartMs: 160_000, tenureCounts: true })).toEqual([]);
    // Without the tenure's start, the new owner's silence is the dead owner's: a stall at once.
    expect(resumedAt(arrivals, { diedAtMs: 100_500, tenureStartMs: 160_000, tenureCounts: false })).toEqual([queued[0]]);
  });

  it('a backlog uploaded at once in the middle of a live rhythm: not learnt, no stall after it', () => {
    const before = every(0, 10, 10_000);
    const backlog = every(95_000, 10, 100);
    const live = every(105_000, 20, 10_000);
    expect(resumedAt([...before, ...backlog, ...live])).toEqual([]);
  });

  it('an outage is one stall, and the next outage is still seen within a bounded time', () => {
    const before = every(0, 20, 10_000);
    const after = every(before.at(-1)! + 300_000, 20, 10_000);
    const second = after.at(-1)! + 120_000;
    const resumed = resumedAt([...before, ...after, second]);
    // The 5-min outage and the 2-min one: one stall each, nothing in between.
    expect(resumed).toEqual([after[0], second]);
  });

  it('a source that slows down (10-s gaps to 60-s gaps) stops stalling once the rhythm is learnt', () => {
    const fast = every(0, 10, 10_000);
    const slow = every(fast.at(-1)! + 60_000, 20, 60_000);
    const resumed = resumedAt([...fast, ...slow]);
    expect(resumed.length).toBeLessThanOrEqual(3);
    expect(resumed.every((at) => at <= slow[3]!)).toBe(true);
  });

  it('a stall is counted, so each has its own events', () => {
    expect(markStalled(watch({ stalls: 2 }))).toEqual(watch({ stalled: true, stalls: 3 }));
  });
});
