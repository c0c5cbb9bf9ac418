/**
 * Where a replay starts and what it keeps (core/commit/operations/replay.ts `replayStart`,
 * pure): a stored run straddling the frame asked for moves the start to the run's first
 * frame; a frame below it without a record (still in the reorder buffer, late, never
 * uploaded) moves the start down to it, since a frame re-run silently gets no record
 * (issue 40, defect 3); records a replay in progress is deleting do not count as kept.
 */
import { describe, expect, it } from 'vitest';
import { replayStart } from '../../../../core/commit/operations/replay.ts';
import type { FrameResultItem } from '../../../../core/commit/results.ts';

const item = (frame: number, over: Partial<FrameResultItem> = {}): FrameResultItem => ({ videoId: 'v', frame, status: 'ok', detections: [], token: 1, worker: 'w1', committedAtMs: 1_000 + frame, ...over });
const okRun = (from: number, to: number, over: Partial<FrameResultItem> = {}) => Array.from({ length: to - from + 1 }, (_, i) => item(from + i, over));
const below = (items: readonly FrameResultItem[], f: number) => items.filter((r) => r.frame < f);

describe('replayStart', () => {
  it('counts what a replay keeps and widens it to the start of a straddling gap run', () => {
    // Prepare
    const items = [item(0), item(1, { status: 'failed', reason: 'corrupt-image' }), item(2, { status: 'gap', throughFrame: 5 }), item(6)];
    // Act
    const at6 = replayStart(below(items, 6), 6, null);
    const at4 = replayStart(below(items, 4), 4, null);
    // Assess
    expect(at6).toEqual({ from: 6, widened: [], kept: { framesOk: 1, framesFailed: 1, framesGap: 4, firstFrame: 0, lastFrame: 5 } });
    expect(at4).toEqual({ from: 2, widened: [{ why: 'inside-run', from: 2 }], kept: { framesOk: 1, framesFailed: 1, framesGap: 0, firstFrame: 0, lastFrame: 1 } });
  });

  it("widens a replay to the start of a segment's packed records that straddle its frame", () => {
    // Prepare: frames 0-1 one item each, 2-5 one segment's packed records (as the reader gives them), 6 a JPEG
    const packed = { first: 2, count: 4 };
    const items = [item(0), item(1), item(2, { packed }), item(3, { packed }), item(4, { packed, status: 'failed', reason: 'decode-error' }), item(5, { packed }), item(6)];
    // Act
    const at4 = replayStart(below(items, 4), 4, 0);
    const at2 = replayStart(below(items, 2), 2, 0);
    const at6 = replayStart(below(items, 6), 6, 0);
    // Assess
    expect(at4).toMatchObject({ from: 2, kept: { framesOk: 2, framesFailed: 0, framesGap: 0, firstFrame: 0, lastFrame: 1 } });
    expect(at2).toMatchObject({ from: 2, widened: [] });
    expect(at6).toEqual({ from: 6, widened: [], kept: { framesOk: 5, framesFailed: 1, framesGap: 0, firstFrame: 0, lastFrame: 5 } });
  });

  it.each([
    { name: 'every frame below recorded: starts where asked', records: okRun(0, 89), first: 0, asked: 90, from: 90, widened: [] },
    {
      name: 'a late segment (45-89) not yet recorded: starts at its first frame (defect 3)',
      records: okRun(0, 44),
      first: 0,
      asked: 90,
      from: 45,
      widened: [{ why: 'unrecorded', from: 45, through: 89 }],
    },
    { name: 'one frame never uploaded and not yet a gap', records: [...okRun(0, 6), ...okRun(8, 9)], first: 0, asked: 10, from: 7, widened: [{ why: 'unrecorded', from: 7, through: 7 }] },
    { name: 'a gap record is a record: it stays', records: [...okRun(0, 6), item(7, { status: 'gap', reason: 'missing-frame' }), ...okRun(8, 9)], first: 0, asked: 10, from: 10, widened: [] },
    { name: 'frames below the video\'s first frame are not due', records: okRun(5, 9), first: 5, asked: 10, from: 10, widened: [] },
    { name: 'a video not started yet: nothing below to check', records: [], first: null, asked: 10, from: 10, widened: [] },
    {
      name: 'several holes: starts at the lowest',
      records: [...okRun(0, 2), ...okRun(5, 6), ...okRun(8, 9)],
      first: 0,
      asked: 10,
      from: 3,
      widened: [{ why: 'unrecorded', from: 3, through: 7 }],
    },
  ])('$name', ({ records, first, asked, from, widened }) => {
    // Act
    const r = replayStart(below(records, asked), asked, first);
    // Assess
    expect(r.from).toBe(from);
    expect(r.widened).toEqual(widened);
    expect(r.kept.framesOk).toBe(records.filter((x) => x.frame < from && x.status === 'ok').length);
  });

  it('does not keep the records a replay in progress is deleting (its fenced token or older, from its start on)', () => {
    // Prepare: replay A (from 5, fenced token 3) has reset the lease but not yet deleted
    // frames 5-9 (token 3); frame 10 was committed since by the new owner (token 5).
    const records = [...okRun(0, 4, { token: 3 }), ...okRun(5, 9, { token: 3 }), item(10, { token: 5 })];
    // Act: replay B from 12
    const r = replayStart(below(records, 12), 12, 0, { silentBelow: 5, fencedToken: 3 });
    const withoutPending = replayStart(below(records, 12), 12, 0);
    // Assess: B redoes 5-9 (and 11, never recorded) itself
    expect(r.from).toBe(5);
    expect(r.widened).toEqual([{ why: 'unrecorded', from: 5, through: 11 }]);
    expect(r.kept).toMatchObject({ framesOk: 5, firstFrame: 0, lastFrame: 4 });
    expect(withoutPending.from).toBe(11);
  });
});
