/** The live-source stall rule (core/ingest/source-watch.ts), table-driven. */
import { describe, expect, it } from 'vitest';
import { markStalled, MIN_STALL_INTERVAL_MS, noteSegment, stallDueAtMs, STALL_INTERVALS, type SourceWatch } from '../../../core/ingest/source-watch.ts';

const watch = (over: Partial<SourceWatch> = {}): SourceWatch => ({ lastSegmentAtMs: 10_000, intervalMs: 2_000, stalled: false, stalls: 0, ...over });

describe('source watch', () => {
  it.each([
    { name: 'the first segment starts the watch, no rhythm yet', before: undefined, at: 5_000, after: { lastSegmentAtMs: 5_000, intervalMs: null, stalled: false, stalls: 0 }, resumed: false },
    { name: 'the second learns the gap', before: watch({ intervalMs: null }), at: 12_000, after: watch({ lastSegmentAtMs: 12_000, intervalMs: 2_000 }), resumed: false },
    { name: 'later ones average it', before: watch(), at: 14_000, after: watch({ lastSegmentAtMs: 14_000, intervalMs: 3_000 }), resumed: false },
    { name: 'one after a stall resumes, the outage not learnt as rhythm', before: watch({ stalled: true, stalls: 1 }), at: 70_000, after: watch({ lastSegmentAtMs: 70_000, stalls: 1 }), resumed: true },
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
  ])('stall due: $name', ({ w, ended, due }) => {
    expect(stallDueAtMs(w, ended)).toBe(due);
  });

  it('a stall is counted, so each has its own events', () => {
    expect(markStalled(watch({ stalls: 2 }))).toEqual(watch({ stalled: true, stalls: 3 }));
  });
});
