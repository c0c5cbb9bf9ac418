import { describe, expect, it } from 'vitest';
import { evaluateMot, type MotFrame } from '../../gpu-worker/vision/eval/mot.ts';

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
});
