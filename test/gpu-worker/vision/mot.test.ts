import { describe, expect, it } from 'vitest';
import { evaluateMot, type MotFrame } from '../../../gpu-worker/vision/eval/mot.ts';

const box = (x: number): [number, number, number, number] => [x, 0, x + 10, 10];
const frames = (rows: [number, number][][]): MotFrame[] => rows.map((objs, frame) => ({ frame, objects: objs.map(([id, x]) => ({ id, box: box(x) })) }));

describe('evaluateMot', () => {
  it('scores perfect tracking as MOTA 1 and IDF1 1', () => {
    const gt = frames([[[1, 0], [2, 50]], [[1, 2], [2, 52]], [[1, 4], [2, 54]]]);
    const pred = frames([[[7, 0], [9, 50]], [[7, 2], [9, 52]], [[7, 4], [9, 54]]]);
    expect(evaluateMot(gt, pred)).toMatchObject({ mota: 1, idf1: 1, idSwitches: 0, falsePositives: 0, falseNegatives: 0, matches: 6 });
  });

  it('counts an id switch and the IDF1 of the best global assignment', () => {
    // GT 1 for 4 frames; predictions use id 5 for two frames, then id 6.
    const gt = frames([[[1, 0]], [[1, 1]], [[1, 2]], [[1, 3]]]);
    const pred = frames([[[5, 0]], [[5, 1]], [[6, 2]], [[6, 3]]]);
    const r = evaluateMot(gt, pred);
    // MOTA = 1 - 1/4; IDTP = 2 (1<->5 or 1<->6), IDF1 = 2*2/(4+4).
    expect(r).toMatchObject({ idSwitches: 1, mota: 0.75, idtp: 2, idf1: 0.5 });
  });

  it('counts misses, false positives and the IoU threshold', () => {
    // Frame 0: pred shifted by 4 px (IoU 6/14 < 0.5) -> one FN and one FP.
    // Frame 1: pred shifted by 2 px (IoU 8/12 >= 0.5) -> match. Frame 2: an extra pred.
    const gt = frames([[[1, 0]], [[1, 0]], [[1, 0]]]);
    const pred = frames([[[3, 4]], [[3, 2]], [[3, 0], [4, 40]]]);
    const r = evaluateMot(gt, pred);
    expect(r).toMatchObject({ falseNegatives: 1, falsePositives: 2, matches: 2, idSwitches: 0, groundTruthCount: 3, predictionCount: 4 });
    expect(r.mota).toBeCloseTo(1 - 3 / 3, 12);
    expect(r.idf1).toBeCloseTo((2 * 2) / 7, 12);
  });

  it('keeps an existing match rather than switching to a better-overlapping newcomer', () => {
    // Frame 1: pred 8 overlaps GT 1 perfectly, pred 7 (the previous match) still at IoU >= 0.5.
    const gt = frames([[[1, 0]], [[1, 0]]]);
    const pred = frames([[[7, 0]], [[7, 1], [8, 0]]]);
    expect(evaluateMot(gt, pred)).toMatchObject({ idSwitches: 0, falsePositives: 1, matches: 2 });
  });

  it('treats frames missing on either side as empty', () => {
    const gt: MotFrame[] = [{ frame: 3, objects: [{ id: 1, box: box(0) }] }];
    const pred: MotFrame[] = [{ frame: 4, objects: [{ id: 2, box: box(0) }] }];
    expect(evaluateMot(gt, pred)).toMatchObject({ falseNegatives: 1, falsePositives: 1, mota: -1, idf1: 0 });
  });

  describe('agrees with TrackEval CLEAR (trackeval/metrics/clear.py) on its edge cases', () => {
    // Boxes 10 wide: shifting by 1 px gives IoU 9/11 = 0.82, by 2 px 8/12 = 0.67, by 3 px 7/13 = 0.54.
    it('after a missed frame, matches the better overlap and counts a switch against the last track', () => {
      // GT 1 matched to track 1 in frame 0, unmatched in frame 1 (no overlapping prediction),
      // frame 2: tracks 1 (IoU 0.54) and 2 (IoU 1) both overlap it.
      const gt = frames([[[1, 0]], [[1, 0]], [[1, 0]]]);
      const pred = frames([[[1, 0]], [[9, 50]], [[1, 3], [2, 0]]]);
      const r = evaluateMot(gt, pred);
      expect(r).toMatchObject({ idSwitches: 1, matches: 2, falseNegatives: 1, falsePositives: 2 });
      expect(r.meanIou).toBeCloseTo((1 + 1) / 2, 12); // track 2 (IoU 1) was matched, not track 1
    });

    it('keeps the previous frame\'s match over a better overlap (no switch)', () => {
      const gt = frames([[[1, 0]], [[1, 0]]]);
      const pred = frames([[[1, 0]], [[1, 3], [2, 0]]]);
      expect(evaluateMot(gt, pred)).toMatchObject({ idSwitches: 0, matches: 2, falsePositives: 1 });
    });

    it('counts no switch when an object comes back to its last track after a miss', () => {
      const gt = frames([[[1, 0]], [[1, 0]], [[1, 0]]]);
      const pred = frames([[[1, 0]], [[9, 50]], [[1, 0]]]);
      expect(evaluateMot(gt, pred)).toMatchObject({ idSwitches: 0, matches: 2, falseNegatives: 1 });
    });

    it('counts a switch against the last track even when an older track returns', () => {
      // 1 -> 2 (switch) -> 1 (switch again: compared with the last, 2).
      const gt = frames([[[1, 0]], [[1, 0]], [[1, 0]]]);
      const pred = frames([[[1, 0]], [[2, 0]], [[1, 0]]]);
      expect(evaluateMot(gt, pred).idSwitches).toBe(2);
    });

    it('leaves the previous matches in place across a frame with no predictions', () => {
      // Frame 1 has no predictions at all: TrackEval skips it, so frame 2 still continues
      // frame 0's match (track 1) over the better-overlapping track 2.
      const gt = frames([[[1, 0]], [[1, 0]], [[1, 0]]]);
      const pred = frames([[[1, 0]], [], [[1, 3], [2, 0]]]);
      expect(evaluateMot(gt, pred)).toMatchObject({ idSwitches: 0, matches: 2, falseNegatives: 1, falsePositives: 1 });
    });

    it('counts a pair at exactly the IoU threshold as a match', () => {
      // Shift 10/3 px: IoU = (10 - 10/3) / (10 + 10/3) = 0.5 exactly (up to rounding).
      const gt = frames([[[1, 0]]]);
      const pred = frames([[[1, 10 / 3]]]);
      expect(evaluateMot(gt, pred)).toMatchObject({ matches: 1, falseNegatives: 0, falsePositives: 0 });
    });

    it('resolves a conflict jointly: continuing matches first, then the best total IoU', () => {
      // Frame 0: GT 1 <-> track 1, GT 2 <-> track 2. Frame 1: both GTs overlap both tracks;
      // continuing (1<->1, 2<->2) wins although the swapped pairs overlap more.
      const gt = frames([[[1, 0], [2, 4]], [[1, 0], [2, 4]]]);
      const pred = frames([[[1, 0], [2, 4]], [[1, 3], [2, 1]]]);
      expect(evaluateMot(gt, pred)).toMatchObject({ idSwitches: 0, matches: 4 });
    });
  });
});
