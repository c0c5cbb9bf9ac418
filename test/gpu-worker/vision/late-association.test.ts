import { describe, expect, it } from 'vitest';
import type { Detection, NeighbourFrame } from '../../../core/ports.ts';
import { associateLateFrame, DEFAULT_LATE_MIN_IOU, predictTracks, type LateDetectionInput } from '../../../gpu-worker/vision/late-association.ts';

type Box = [number, number, number, number];
/** A size x size square with its left edge at x (and top edge at y). */
const sq = (x: number, y = 0, size = 20): Box => [x, y, x + size, y + size];
const det = (box: Box, label = 'red', score = 0.9): LateDetectionInput => ({ box, label, score });
const tracked = (trackId: number, box: Box, label = 'red'): Detection => ({ trackId, box, label, score: 0.9 });
const neighbour = (frame: number, detections: Detection[]): NeighbourFrame => ({ frame, detections });
const ids = (out: readonly Detection[]) => out.map((d) => d.trackId);

describe('predictTracks', () => {
  it('interpolates a track seen on both sides, weighted by frame distance', () => {
    // Frame 7 of 0..10 is 70% of the way: x 0 -> 100 gives 70.
    const [p] = predictTracks(7, neighbour(0, [tracked(4, sq(0, 0))]), neighbour(10, [tracked(4, sq(100, 50))]));
    expect(p.trackId).toBe(4);
    expect(p.source).toBe('both');
    expect(p.box.map((v) => Math.round(v * 1e9) / 1e9)).toEqual(sq(70, 35));
  });

  it('keeps a one-sided track where that neighbour saw it, without extrapolating', () => {
    const before = neighbour(3, [tracked(1, sq(10))]);
    const after = neighbour(9, [tracked(2, sq(200))]);
    expect(predictTracks(5, before, after)).toEqual([
      { trackId: 1, label: 'red', box: sq(10), source: 'before' },
      { trackId: 2, label: 'red', box: sq(200), source: 'after' },
    ]);
  });

  it('ignores unassociated neighbour detections (trackId 0)', () => {
    expect(predictTracks(5, neighbour(4, [tracked(0, sq(10))]), undefined)).toEqual([]);
  });
});

describe('associateLateFrame', () => {
  it('takes the ID of the track interpolated between both neighbours', () => {
    // Prepare: track 4 moves 0 -> 100 px over frames 0..10; track 9 stands still far away.
    // At frame 7 the object is at 70: its box overlaps neither neighbour box nor the
    // unweighted midpoint (50), only the distance-weighted interpolation.
    const before = neighbour(0, [tracked(4, sq(0)), tracked(9, sq(0, 150))]);
    const after = neighbour(10, [tracked(4, sq(100)), tracked(9, sq(0, 150))]);
    // Act
    const out = associateLateFrame(7, [det(sq(0, 150)), det(sq(70))], before, after);
    // Assess
    expect(ids(out)).toEqual([9, 4]);
    expect(out[1]).toEqual({ trackId: 4, label: 'red', score: 0.9, box: sq(70) });
  });

  it('resolves crossing tracks of one label by interpolation', () => {
    // Tracks 1 and 2 (same label) swap places between frames 10 and 14. At frame 13
    // track 1 has come 3/4 of the way (x 75) and track 2 is at 25. Each detection
    // overlaps the *other* track's box in `before` better than its own, and an
    // unweighted midpoint would put both tracks at 50.
    const before = neighbour(10, [tracked(1, sq(0, 0, 40)), tracked(2, sq(100, 0, 40))]);
    const after = neighbour(14, [tracked(1, sq(100, 0, 40)), tracked(2, sq(0, 0, 40))]);
    const out = associateLateFrame(13, [det(sq(25, 0, 40)), det(sq(75, 0, 40))], before, after);
    expect(ids(out)).toEqual([2, 1]);
  });

  it('matches against the only neighbour there is, on either side', () => {
    // Below the video's start: only `after`. After the last frame: only `before`.
    const after = neighbour(5, [tracked(3, sq(40))]);
    expect(ids(associateLateFrame(4, [det(sq(42)), det(sq(150))], undefined, after))).toEqual([3, 0]);
    const before = neighbour(5, [tracked(6, sq(40))]);
    expect(ids(associateLateFrame(6, [det(sq(150)), det(sq(38))], before, undefined))).toEqual([0, 6]);
  });

  it('mixes interpolated and one-sided tracks in one frame', () => {
    // Track 1 in both (0 -> 40 over 0..4), track 2 only before (left the image?), track 3 only after (entered).
    const before = neighbour(0, [tracked(1, sq(0)), tracked(2, sq(200, 100))]);
    const after = neighbour(4, [tracked(1, sq(40)), tracked(3, sq(100, 200))]);
    const out = associateLateFrame(2, [det(sq(101, 199)), det(sq(20)), det(sq(199, 101))], before, after);
    expect(ids(out)).toEqual([3, 1, 2]);
  });

  it('never matches across labels', () => {
    // A blue detection exactly on a red track stays unmatched; with a blue track also
    // present nearby, the blue detection takes the blue track, not the better-overlapping red one.
    const before = neighbour(1, [tracked(1, sq(50), 'red')]);
    expect(ids(associateLateFrame(2, [det(sq(50), 'blue')], before, undefined))).toEqual([0]);
    const both = neighbour(1, [tracked(1, sq(50), 'red'), tracked(2, sq(58), 'blue')]);
    expect(ids(associateLateFrame(2, [det(sq(50), 'blue')], both, undefined))).toEqual([2]);
  });

  it('gives every detection 0 when there are no neighbours, or no tracks in them', () => {
    const detections = [det(sq(0)), det(sq(50), 'blue')];
    expect(ids(associateLateFrame(3, detections))).toEqual([0, 0]);
    expect(ids(associateLateFrame(3, detections, neighbour(2, []), neighbour(4, [])))).toEqual([0, 0]);
    expect(associateLateFrame(3, [])).toEqual([]);
  });

  it('requires the minimum IoU', () => {
    // 20 px squares offset by 10 px: IoU 200/600 = 0.333; by 11 px: 180/620 = 0.29.
    const before = neighbour(1, [tracked(1, sq(0))]);
    expect(DEFAULT_LATE_MIN_IOU).toBe(0.3);
    expect(ids(associateLateFrame(2, [det(sq(10))], before))).toEqual([1]);
    expect(ids(associateLateFrame(2, [det(sq(11))], before))).toEqual([0]);
    expect(ids(associateLateFrame(2, [det(sq(10))], before, undefined, { minIou: 0.5 }))).toEqual([0]);
  });

  it('gives a track ID to one detection at most', () => {
    // Two detections over one track: the better overlap takes it, the other gets 0.
    const before = neighbour(1, [tracked(1, sq(0))]);
    expect(ids(associateLateFrame(2, [det(sq(6)), det(sq(2))], before))).toEqual([0, 1]);
  });
});
