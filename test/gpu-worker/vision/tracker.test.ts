import { describe, expect, it } from 'vitest';
import { assign } from '../../../gpu-worker/vision/assignment.ts';
import type { Box } from '../../../gpu-worker/vision/postprocess.ts';
import { ByteTracker, readTrackerSnapshot, type TrackerInput } from '../../../gpu-worker/vision/tracker.ts';
import { binarySnapshotBytes } from '../../../core/commit/binary-snapshot.ts';

const det = (box: Box, score = 0.9, label = 'red'): TrackerInput => ({ box, score, label });
const moving = (x: number, y = 20, size = 20): Box => [x, y, x + size, y + size];

describe('assign', () => {
  it('finds the optimal assignment, not the greedy one', () => {
    // Greedy would take (0,0)=1 and then (1,1)=10; optimal is (0,1)+(1,0) = 2+2.
    const result = assign(
      [
        [1, 2],
        [2, 10],
      ],
      100,
    );
    expect(result.matches).toEqual([
      [0, 1],
      [1, 0],
    ]);
  });

  it('leaves pairs above the cost limit unmatched', () => {
    const result = assign([[0.1, 0.95], [0.9, 0.99]], 0.8);
    expect(result).toEqual({ matches: [[0, 0]], unmatchedRows: [1], unmatchedCols: [1] });
  });

  it('reports every column unmatched when there are no rows', () => {
    expect(assign([], 0.8, 3)).toEqual({ matches: [], unmatchedRows: [], unmatchedCols: [0, 1, 2] });
  });
});

describe('ByteTracker', () => {
  it('keeps one id for an object moving at constant speed', () => {
    const tracker = new ByteTracker();
    const ids = new Set<number>();
    for (let f = 0; f < 20; f++) for (const t of tracker.update(f, [det(moving(10 + 4 * f))])) ids.add(t.trackId);
    expect([...ids]).toEqual([1]);
  });

  it('confirms tracks at once on the first frame and after one more match later', () => {
    const tracker = new ByteTracker();
    expect(tracker.update(0, [det(moving(10))]).map((t) => t.trackId)).toEqual([1]);
    // A newcomer on frame 1 is unconfirmed: not reported until it matches again.
    expect(tracker.update(1, [det(moving(12)), det(moving(200))]).map((t) => t.trackId)).toEqual([1]);
    expect(tracker.update(2, [det(moving(14)), det(moving(202))]).map((t) => t.trackId)).toEqual([1, 2]);
  });

  it('uses low-score detections to keep a tracked object (second association)', () => {
    // Prepare: a track established with high scores.
    const tracker = new ByteTracker();
    for (let f = 0; f < 3; f++) tracker.update(f, [det(moving(10 + 2 * f))]);
    // Act: the object drops to a low score (0.3 < 0.5 high threshold).
    const out = tracker.update(3, [det(moving(16), 0.3)]);
    // Assess
    expect(out).toEqual([{ trackId: 1, detectionIndex: 0, box: moving(16), score: 0.3, label: 'red' }]);
  });

  it('never starts a track from a low-score detection', () => {
    const tracker = new ByteTracker();
    expect(tracker.update(0, [det(moving(10), 0.4)])).toEqual([]);
    expect(tracker.trackCount).toBe(0);
  });

  it('does not associate across labels', () => {
    const tracker = new ByteTracker();
    tracker.update(0, [det(moving(10), 0.9, 'red')]);
    tracker.update(1, [det(moving(12), 0.9, 'blue')]);
    const out = tracker.update(2, [det(moving(14), 0.9, 'blue')]);
    expect(out.map((t) => t.trackId)).toEqual([2]);
  });

  it('predicts across skipped frames so a fast object keeps its id after a gap', () => {
    // Prepare: 10 px/frame, 20 px boxes. After 5 missing frames the object moved
    // 60 px: without multi-frame prediction its old box would not overlap.
    const tracker = new ByteTracker();
    for (let f = 0; f < 6; f++) tracker.update(f, [det(moving(10 + 10 * f))]);
    // Act
    const out = tracker.update(11, [det(moving(10 + 10 * 11))]);
    // Assess
    expect(out.map((t) => t.trackId)).toEqual([1]);
  });

  it('re-finds a lost track and drops it after maxLostFrames', () => {
    const tracker = new ByteTracker({ maxLostFrames: 5 });
    for (let f = 0; f < 3; f++) tracker.update(f, [det(moving(10))]);
    tracker.update(3, []);
    expect(tracker.update(4, [det(moving(10))]).map((t) => t.trackId)).toEqual([1]);
    tracker.update(5, []);
    tracker.update(11, []);
    expect(tracker.trackCount).toBe(0);
    expect(tracker.update(12, [det(moving(10))])).toEqual([]);
  });

  it('rejects frames that are not after the last one', () => {
    const tracker = new ByteTracker();
    tracker.update(5, []);
    expect(() => tracker.update(5, [])).toThrow(RangeError);
  });

  it('restore-then-continue gives output identical to an uninterrupted run', () => {
    // Prepare: three objects, crossing paths, a skipped frame, varying scores.
    const frames = Array.from({ length: 30 }, (_, f) => f).filter((f) => f !== 13);
    const detsAt = (f: number): TrackerInput[] => [
      det(moving(5 + 3.3 * f, 40), 0.9 - (f % 4) * 0.15),
      det(moving(200 - 2.7 * f, 44), 0.8),
      det(moving(100, 10 + 1.9 * f, 24), f % 7 === 0 ? 0.3 : 0.95, 'green'),
    ];
    const reference = new ByteTracker();
    const expected = frames.map((f) => reference.update(f, detsAt(f)));
    // Act: checkpoint mid-way (twice), restore into fresh trackers.
    let tracker = new ByteTracker();
    const actual = [];
    for (const [i, f] of frames.entries()) {
      if (i === 9 || i === 20) tracker = ByteTracker.restore(tracker.serialize());
      actual.push(tracker.update(f, detsAt(f)));
    }
    // Assess
    expect(actual).toEqual(expected);
    expect(tracker.serialize()).toBe(reference.serialize());
  });

  it('round-trips awkward floats exactly through the checkpoint', () => {
    const tracker = new ByteTracker();
    tracker.update(0, [det([0.1, 0.2, 1 / 3 + 20, Math.PI * 10], 0.7)]);
    tracker.update(1, [det([0.1 + 1e-13, 0.2, 1 / 3 + 20.5, Math.PI * 10], 0.7)]);
    const snap = tracker.serialize();
    expect(ByteTracker.restore(snap).serialize()).toBe(snap);
  });
});

describe('ByteTracker snapshot version 2 (binary, float32; issue 44, decision 76)', () => {
  const scene = (f: number): TrackerInput[] => [
    det(moving(5 + 3.3 * f, 40), 0.9 - (f % 4) * 0.15),
    det(moving(200 - 2.7 * f, 44), 0.8),
    det(moving(100, 10 + 1.9 * f, 24), f % 7 === 0 ? 0.3 : 0.95, 'green'),
  ];

  it('checkpointing at every frame, restored each time, equals an uninterrupted run: the live state is float32 after every update', () => {
    // Prepare
    const reference = new ByteTracker();
    const frames = Array.from({ length: 40 }, (_, f) => f).filter((f) => f !== 17 && f !== 18);
    const expected = frames.map((f) => reference.update(f, scene(f)));
    // Act: a checkpoint and a restore after every frame (wherever a commit falls, the state is the same).
    let tracker = new ByteTracker();
    const actual = frames.map((f) => {
      const out = tracker.update(f, scene(f));
      tracker = ByteTracker.restore(tracker.serialize());
      return out;
    });
    // Assess
    expect(actual).toEqual(expected);
    expect(tracker.serialize()).toBe(reference.serialize());
    const snap = readTrackerSnapshot(reference.serialize());
    for (const row of snap.t) for (const x of row.slice(4)) if (typeof x === 'number') expect(Math.fround(x)).toBe(x);
  });

  it('is binary, about a quarter of version 1 JSON, and keeps ids, states, labels and frames', () => {
    const tracker = new ByteTracker();
    for (let f = 0; f < 12; f++) tracker.update(f, f < 10 ? scene(f) : scene(f).slice(1));
    const snap = tracker.serialize();
    const bytes = binarySnapshotBytes(snap);
    expect(bytes).toBeDefined();
    const content = readTrackerSnapshot(snap);
    const v1 = JSON.stringify(content);
    expect(bytes!.length).toBeLessThan(v1.length / 3);
    expect(content.n).toBe(4);
    expect(content.f).toBe(11);
    // Track 1 went unseen on frames 10 and 11: lost, last seen on 9; the others tracked.
    expect(content.t.map((r) => r.slice(0, 4))).toEqual([
      [1, 1, 1, 'red'],
      [2, 0, 1, 'red'],
      [3, 0, 1, 'green'],
    ]);
    // The green object's frame-0 detection is low-score: its track starts on frame 1.
    expect(content.t.map((r) => [r[5], r[6]])).toEqual([[0, 9], [0, 11], [1, 11]]);
  });

  it('still reads a version 1 (JSON) snapshot, rounded to float32, and continues from it', () => {
    // Prepare: a version 1 snapshot as the previous release wrote it (doubles, here a hair off float32).
    const tracker = new ByteTracker();
    for (let f = 0; f < 5; f++) tracker.update(f, scene(f));
    const content = readTrackerSnapshot(tracker.serialize());
    const v1 = JSON.stringify({ v: 1, n: content.n, f: content.f, t: content.t.map((r) => r.map((x) => (typeof x === 'number' && !Number.isInteger(x) ? x * (1 + 1e-12) : x))) });
    // Act
    const restored = ByteTracker.restore(v1);
    // Assess: the same tracks, each number the nearest float32, and tracking goes on with the same ids.
    expect(restored.serialize()).toBe(tracker.serialize());
    expect(restored.update(5, scene(5))).toEqual(tracker.update(5, scene(5)));
  });

  it('keeps all 20 filter numbers of a track whose covariances are not shared, and rejects a truncated snapshot', () => {
    const tracker = new ByteTracker();
    tracker.update(0, [det(moving(10), 0.9)]);
    const content = readTrackerSnapshot(tracker.serialize());
    const row = [...content.t[0]!];
    row[7 + 12] = 3.5; // w's P00 no longer equals cx's
    const restored = ByteTracker.restore(JSON.stringify({ v: 1, n: content.n, f: content.f, t: [row] }));
    const again = readTrackerSnapshot(restored.serialize());
    expect(again.t[0]).toEqual(row);
    const snap = restored.serialize();
    expect(() => ByteTracker.restore(snap.slice(0, -8))).toThrow(/truncated/);
  });
});
