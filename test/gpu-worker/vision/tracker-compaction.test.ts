/**
 * Bounded tracker checkpoints: with a byte budget the tracker evicts what matters least
 * (lost tracks, oldest lost first; then unconfirmed; confirmed tracked ones last, lowest
 * score first), in memory as well as in the snapshot, and never moves its ID counter back.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { binarySnapshotBytes, binarySnapshotLength } from '../../../core/commit/binary-snapshot.ts';
import { createVisionProcessor } from '../../../gpu-worker/vision/index.ts';
import type { Box } from '../../../gpu-worker/vision/postprocess.ts';
import { ByteTracker, readTrackerSnapshot, type TrackerInput } from '../../../gpu-worker/vision/tracker.ts';

/**
 * A budget well under the crowd's full state (about 125,000 bytes in the binary snapshot
 * of issue 44; over 400,000 as JSON before it).
 */
const BUDGET = 60_000;

/** One decoded track of a snapshot: [id, state, activated, label, score, startFrame, lastSeenFrame, ...kf]. */
interface Row {
  readonly id: number;
  readonly state: number;
  readonly activated: boolean;
  readonly score: number;
  readonly lastSeenFrame: number;
  /** The row's decoded content, for exact comparisons. */
  readonly json: string;
  /** Bytes of the row in the binary snapshot (version 2). */
  readonly rowBytes: number;
}
const varintBytes = (x: number) => (x < 0x80 ? 1 : x < 0x4000 ? 2 : x < 0x200000 ? 3 : 4);
const zigzag = (x: number) => (x >= 0 ? 2 * x : -2 * x - 1);
const TRACKED = 0;
const LOST = 1;

function parse(snapshot: string): { n: number; f: number | null; rows: Row[]; rawBytes: number } {
  const snap = readTrackerSnapshot(snapshot);
  const labels = [...new Set(snap.t.map((r) => r[3] as string))];
  const rows = snap.t.map((r) => ({
    id: r[0] as number,
    state: r[1] as number,
    activated: r[2] === 1,
    score: r[4] as number,
    lastSeenFrame: r[6] as number,
    json: JSON.stringify(r),
    // id, flags, label index, score, two frame offsets, 14 filter numbers (shared covariances), 12 when the size is at rest.
    rowBytes: varintBytes(r[0] as number) + 1 + varintBytes(labels.indexOf(r[3] as string)) + 4 + varintBytes(zigzag(snap.f! - (r[5] as number))) + varintBytes(zigzag(snap.f! - (r[6] as number))) + (r[7 + 11] === 0 && r[7 + 16] === 0 ? 12 : 14) * 4,
  }));
  return { n: snap.n, f: snap.f, rows, rawBytes: binarySnapshotBytes(snapshot)!.length };
}

const bytes = (s: string) => Buffer.byteLength(s);
const LABELS = ['person', 'car', 'bicycle'];
const CROWD = 1500;
const NEWCOMERS = 20;

/** Detector-like boxes: fractional source pixels on a grid that never overlaps, drifting a little per frame. */
function boxOf(i: number, frame: number): Box {
  const x = (i % 50) * 40 + ((i * 0.61803398875) % 1) + 0.25 * frame;
  const y = Math.floor(i / 50) * 40 + ((i * 0.41421356237) % 1) + 0.15 * frame;
  return [x, y, x + 24.5 + (i % 7) * 0.13, y + 30.25 - (i % 5) * 0.11];
}
const detOf = (i: number, frame: number): TrackerInput => ({ box: boxOf(i, frame), score: 0.6 + (i % 40) / 100, label: LABELS[i % 3] });
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);

/**
 * 1,500 objects on frame 0 (all confirmed, IDs 1..1500 for objects 0..1499). Objects
 * 0..499 vanish on frame 1 (lost since frame 0: group A), 500..999 on frame 2 (lost
 * since frame 1: group B); 1000..1499 stay tracked (group C). Frame 2 also brings 20
 * newcomers far away (unconfirmed, IDs 1501..1520).
 */
function crowd(): ByteTracker {
  const tracker = new ByteTracker();
  const first = tracker.update(0, range(0, CROWD).map((i) => detOf(i, 0)));
  // The scenario relies on ID = object index + 1.
  expect(first.map((t) => t.trackId)).toEqual(range(1, CROWD + 1));
  tracker.update(1, range(500, CROWD).map((i) => detOf(i, 1)));
  tracker.update(2, [...range(1000, CROWD), ...range(CROWD, CROWD + NEWCOMERS)].map((i) => detOf(i, 2)));
  expect(tracker.trackCount).toBe(CROWD + NEWCOMERS);
  return tracker;
}

const groupOf = (id: number) => (id <= 500 ? 'A' : id <= 1000 ? 'B' : id <= CROWD ? 'C' : 'new');

afterEach(() => vi.restoreAllMocks());

describe('ByteTracker compaction under a byte budget', () => {
  it('serialises 1,500 tracks above the budget in full and within it with the budget, evicting no more than needed', () => {
    // Prepare
    const tracker = crowd();
    const full = tracker.serialize();
    // Act
    const compacted = tracker.serialize(BUDGET);
    // Assess: over the budget without it, under it with it.
    expect(bytes(full)).toBeGreaterThan(2 * BUDGET);
    expect(bytes(compacted)).toBeLessThanOrEqual(BUDGET);
    // Minimal: keeping the last evicted track back would have overshot the budget.
    const before = parse(full).rows;
    const after = new Set(parse(compacted).rows.map((r) => r.id));
    const evicted = before.filter((r) => !after.has(r.id));
    expect(evicted.length).toBeGreaterThan(0);
    const lastEvicted = evicted.reduce((a, b) => (b.lastSeenFrame > a.lastSeenFrame || (b.lastSeenFrame === a.lastSeenFrame && b.id > a.id) ? b : a));
    expect(binarySnapshotLength(parse(compacted).rawBytes + lastEvicted.rowBytes)).toBeGreaterThan(BUDGET);
    // The live tracker was compacted too: memory and snapshot describe the same state.
    expect(tracker.serialize()).toBe(compacted);
    expect(tracker.trackCount).toBe(after.size);
  });

  it('keeps every confirmed tracked track (same IDs and state) and drops lost tracks oldest lost first', () => {
    // Prepare
    const tracker = crowd();
    const full = tracker.serialize();
    const original = parse(full).rows;
    // Act
    const restored = ByteTracker.restore(tracker.serialize(BUDGET));
    // Assess: every confirmed tracked track and every newcomer is there, row for row (ID, box, filter state).
    const kept = parse(restored.serialize()).rows;
    const keptById = new Map(kept.map((r) => [r.id, r]));
    const confirmed = original.filter((r) => r.state === TRACKED && r.activated);
    expect(confirmed.map((r) => groupOf(r.id))).toEqual(Array(500).fill('C'));
    for (const r of confirmed) expect(keptById.get(r.id)?.json).toBe(r.json);
    for (const r of original.filter((r) => !r.activated)) expect(keptById.get(r.id)?.json).toBe(r.json);
    // Only lost tracks went, all of group A (lost longest) before any of group B, lowest ID first on a tie.
    const evicted = original.filter((r) => !keptById.has(r.id));
    expect(evicted.every((r) => r.state === LOST)).toBe(true);
    const evictedIds = evicted.map((r) => r.id);
    expect(evictedIds).toEqual(range(1, evictedIds.length + 1));
    expect(evictedIds.length).toBeGreaterThan(500);
    expect(evictedIds.length).toBeLessThan(1000);
    const keptLost = kept.filter((r) => r.state === LOST);
    expect(keptLost.length).toBe(1000 - evictedIds.length);
    expect(Math.min(...keptLost.map((r) => r.lastSeenFrame))).toBeGreaterThanOrEqual(Math.max(...evicted.map((r) => r.lastSeenFrame)));
    // Kept tracks keep their order, so association later is the same as with the full state.
    expect(kept.map((r) => r.id)).toEqual(original.map((r) => r.id).filter((id) => keptById.has(id)));

    // Behaviour on the next frame, when every object is back: confirmed tracks and kept
    // lost ones continue with their IDs and boxes exactly as in the uncompacted tracker;
    // evicted ones are gone (they restart as new, unconfirmed tracks).
    const reference = ByteTracker.restore(full);
    const back = [...range(0, CROWD), ...range(CROWD, CROWD + NEWCOMERS)].map((i) => detOf(i, 3));
    const expected = reference.update(3, back);
    const actual = restored.update(3, back);
    const evictedSet = new Set(evictedIds);
    expect(actual).toEqual(expected.filter((t) => !evictedSet.has(t.trackId)));
    expect(actual.filter((t) => groupOf(t.trackId) === 'C')).toHaveLength(500);
    expect(actual.filter((t) => groupOf(t.trackId) === 'B')).toHaveLength(1000 - evictedIds.length);
    expect(actual.some((t) => evictedSet.has(t.trackId))).toBe(false);
  });

  it('never moves the ID counter back, even when the newest tracks are evicted', () => {
    // Prepare: a budget so tight that lost, unconfirmed and most confirmed tracks must go.
    const tracker = crowd();
    const original = parse(tracker.serialize());
    expect(original.n).toBe(CROWD + NEWCOMERS + 1);
    // Act
    const compaction = tracker.compact(6_000);
    const restored = ByteTracker.restore(compaction.snapshot);
    // Assess: the counter survives although the highest IDs (the newcomers) were evicted.
    const kept = parse(compaction.snapshot);
    expect(kept.n).toBe(original.n);
    expect(kept.f).toBe(2);
    expect(bytes(compaction.snapshot)).toBeLessThanOrEqual(6_000);
    expect(compaction.bytes).toBe(bytes(compaction.snapshot));
    expect(compaction.fits).toBe(true);
    expect(compaction.evicted).toEqual({ lost: 1000, unconfirmed: NEWCOMERS, tracked: 500 - kept.rows.length });
    expect(Math.max(...kept.rows.map((r) => r.id))).toBeLessThanOrEqual(CROWD);
    // Last resort: the confirmed tracks that stay are the most confident ones.
    const keptIds = new Set(kept.rows.map((r) => r.id));
    const droppedTracked = original.rows.filter((r) => r.state === TRACKED && r.activated && !keptIds.has(r.id));
    expect(kept.rows.every((r) => r.state === TRACKED && r.activated)).toBe(true);
    expect(Math.min(...kept.rows.map((r) => r.score))).toBeGreaterThanOrEqual(Math.max(...droppedTracked.map((r) => r.score)));
    // A new object after restore gets an ID above every ID handed out before.
    const stranger: TrackerInput = { box: [5000.5, 5000.25, 5030.75, 5040], score: 0.95, label: 'person' };
    expect(restored.update(3, [stranger])).toEqual([]); // unconfirmed on its first frame
    const [confirmed] = restored.update(4, [{ ...stranger, box: [5001, 5000.5, 5031.25, 5040.25] }]);
    expect(confirmed.trackId).toBe(CROWD + NEWCOMERS + 1);
    // The live tracker, compacted the same way, hands out the same ID.
    tracker.update(3, [stranger]);
    expect(tracker.update(4, [{ ...stranger, box: [5001, 5000.5, 5031.25, 5040.25] }])[0].trackId).toBe(CROWD + NEWCOMERS + 1);
  });

  it('keeps the counter and frame when even an empty tracker exceeds the budget', () => {
    const tracker = crowd();
    const compaction = tracker.compact(5);
    expect(compaction.fits).toBe(false);
    expect(tracker.trackCount).toBe(0);
    expect(readTrackerSnapshot(compaction.snapshot)).toEqual({ v: 1, n: CROWD + NEWCOMERS + 1, f: 2, t: [] });
  });

  it('changes nothing when the budget is already met, and evicts exactly the oldest lost track one byte under it', () => {
    // Prepare
    const tracker = crowd();
    const full = tracker.serialize();
    // Act + Assess: at the exact size, and with no limit, the output is byte-identical.
    expect(tracker.serialize(bytes(full))).toBe(full);
    expect(tracker.serialize(Number.POSITIVE_INFINITY)).toBe(full);
    const met = tracker.compact(bytes(full) + 1);
    expect(met.snapshot).toBe(full);
    expect(met.evictedIds).toEqual([]);
    expect(met.fullBytes).toBe(bytes(full));
    expect(tracker.serialize()).toBe(full);
    expect(tracker.trackCount).toBe(CROWD + NEWCOMERS);
    // One byte less: only the track lost longest, lowest ID on a tie, goes.
    const oneLess = tracker.compact(bytes(full) - 1);
    expect(oneLess.evictedIds).toEqual([1]);
    expect(oneLess.evicted).toEqual({ lost: 1, unconfirmed: 0, tracked: 0 });
    expect(parse(oneLess.snapshot).rows.map((r) => r.id)).toEqual(parse(full).rows.map((r) => r.id).slice(1));
    // A budget hit exactly after one eviction takes no second one; one byte less takes the next oldest.
    const exact = bytes(oneLess.snapshot);
    expect(exact).toBe(binarySnapshotLength(parse(full).rawBytes - parse(full).rows[0].rowBytes));
    expect(ByteTracker.restore(full).compact(exact).evictedIds).toEqual([1]);
    expect(ByteTracker.restore(full).compact(exact - 1).evictedIds).toEqual([1, 2]);
  });

  it('restore-then-continue after compaction equals the compacted live tracker', () => {
    // Prepare
    const live = crowd();
    const restored = ByteTracker.restore(live.serialize(BUDGET));
    // Act: a few more frames, some objects coming back, some vanishing.
    for (let f = 3; f < 7; f++) {
      const dets = range(0, CROWD + NEWCOMERS)
        .filter((i) => (i + f) % 4 !== 0)
        .map((i) => detOf(i, f));
      // Assess
      expect(restored.update(f, dets)).toEqual(live.update(f, dets));
    }
    expect(restored.serialize()).toBe(live.serialize());
  });
});

describe('VisionProcessor.snapshot with a budget', () => {
  it('passes the budget to the tracker, compacts the live state and reports it', () => {
    // Prepare: the processor needs no model for openVideo / snapshot.
    const lines: unknown[] = [];
    const processor = createVisionProcessor({ batchSize: 1, maxBatchWaitMs: 0, scoreThreshold: 0.3, logger: (l) => lines.push(l) });
    const full = crowd().serialize();
    processor.openVideo('v', full);
    // Act + Assess: no budget, or one already met: the full state, nothing logged.
    expect(processor.snapshot('v')).toBe(full);
    expect(processor.snapshot('v', bytes(full))).toBe(full);
    expect(lines).toEqual([]);
    const compacted = processor.snapshot('v', BUDGET);
    expect(bytes(compacted)).toBeLessThanOrEqual(BUDGET);
    expect(compacted).toBe(ByteTracker.restore(full).serialize(BUDGET));
    // The video's state in memory is now the compacted one.
    expect(processor.snapshot('v')).toBe(compacted);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ videoId: 'v', maxBytes: BUDGET, fullBytes: bytes(full), bytes: bytes(compacted), fits: true });
    expect((lines[0] as { evicted: { lost: number } }).evicted.lost).toBeGreaterThan(500);
  });
});
