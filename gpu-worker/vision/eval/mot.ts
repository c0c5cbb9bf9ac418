/**
 * Multi-object tracking metrics against ground truth: CLEAR MOT (MOTA, ID
 * switches) and IDF1 (Ristani et al. 2016), with IoU matching.
 */
import { munkres } from 'munkres';
import { assign } from '../assignment.ts';
import { iou } from '../postprocess.ts';

/** One object (ground truth or prediction) in one frame. */
export interface MotObject {
  readonly id: number;
  readonly box: readonly [number, number, number, number];
}

export interface MotFrame {
  readonly frame: number;
  readonly objects: readonly MotObject[];
}

export interface MotResult {
  /** 1 - (FN + FP + IDSW) / GT. */
  readonly mota: number;
  /** 2 IDTP / (GT + predictions) under the best global GT-id to predicted-id assignment. */
  readonly idf1: number;
  readonly idSwitches: number;
  readonly falsePositives: number;
  readonly falseNegatives: number;
  /** Frame-level matches (CLEAR MOT). */
  readonly matches: number;
  readonly groundTruthCount: number;
  readonly predictionCount: number;
  readonly idtp: number;
  /** Mean IoU of the frame-level matches. */
  readonly meanIou: number;
}

/**
 * Evaluates `predictions` against `groundTruth` (frames may be missing on either
 * side: a missing frame has no objects).
 *
 * Per frame, as py-motmetrics does: a ground-truth object keeps the prediction
 * it matched last time while their IoU stays >= threshold; the rest are matched
 * by the Hungarian algorithm on 1 - IoU. An ID switch is counted when a
 * ground-truth object is matched to a different predicted id than the last one
 * it was matched to.
 */
export function evaluateMot(groundTruth: readonly MotFrame[], predictions: readonly MotFrame[], iouThreshold = 0.5): MotResult {
  const gtBy = new Map(groundTruth.map((f) => [f.frame, f.objects]));
  const prBy = new Map(predictions.map((f) => [f.frame, f.objects]));
  const frames = [...new Set([...gtBy.keys(), ...prBy.keys()])].sort((a, b) => a - b);

  const lastMatch = new Map<number, number>();
  const pairFrames = new Map<number, Map<number, number>>();
  let fp = 0;
  let fn = 0;
  let idsw = 0;
  let matches = 0;
  let iouSum = 0;
  let gtCount = 0;
  let prCount = 0;

  for (const frame of frames) {
    const gts = gtBy.get(frame) ?? [];
    const prs = prBy.get(frame) ?? [];
    gtCount += gts.length;
    prCount += prs.length;

    // IDF1 co-occurrence counts: every (gt, pred) pair over threshold in this frame.
    for (const g of gts) {
      for (const p of prs) {
        if (iou(g.box, p.box) < iouThreshold) continue;
        let row = pairFrames.get(g.id);
        if (!row) pairFrames.set(g.id, (row = new Map()));
        row.set(p.id, (row.get(p.id) ?? 0) + 1);
      }
    }

    const gtUsed = new Set<number>();
    const prUsed = new Set<number>();
    const frameMatches: [number, number][] = [];
    gts.forEach((g, gi) => {
      const prev = lastMatch.get(g.id);
      if (prev === undefined) return;
      const pi = prs.findIndex((p, i) => p.id === prev && !prUsed.has(i));
      if (pi >= 0 && iou(g.box, prs[pi].box) >= iouThreshold) {
        gtUsed.add(gi);
        prUsed.add(pi);
        frameMatches.push([gi, pi]);
      }
    });
    const gRest = gts.map((_, i) => i).filter((i) => !gtUsed.has(i));
    const pRest = prs.map((_, i) => i).filter((i) => !prUsed.has(i));
    const cost = gRest.map((gi) => pRest.map((pi) => 1 - iou(gts[gi].box, prs[pi].box)));
    for (const [r, c] of assign(cost, 1 - iouThreshold, pRest.length).matches) frameMatches.push([gRest[r], pRest[c]]);

    for (const [gi, pi] of frameMatches) {
      const g = gts[gi];
      const p = prs[pi];
      const prev = lastMatch.get(g.id);
      if (prev !== undefined && prev !== p.id) idsw++;
      lastMatch.set(g.id, p.id);
      iouSum += iou(g.box, p.box);
    }
    matches += frameMatches.length;
    fn += gts.length - frameMatches.length;
    fp += prs.length - frameMatches.length;
  }

  // IDF1: one-to-one GT id <-> predicted id assignment maximising co-occurring matches.
  const gtIds = [...pairFrames.keys()];
  const prIds = [...new Set(gtIds.flatMap((g) => [...pairFrames.get(g)!.keys()]))];
  let idtp = 0;
  if (gtIds.length > 0 && prIds.length > 0) {
    const counts = gtIds.map((g) => prIds.map((p) => pairFrames.get(g)!.get(p) ?? 0));
    const maxCount = Math.max(...counts.flat());
    for (const [r, c] of munkres(counts.map((row) => row.map((v) => maxCount - v)))) idtp += counts[r][c];
  }
  const denominator = gtCount + prCount;
  return {
    mota: gtCount > 0 ? 1 - (fn + fp + idsw) / gtCount : 0,
    idf1: denominator > 0 ? (2 * idtp) / denominator : 1,
    idSwitches: idsw,
    falsePositives: fp,
    falseNegatives: fn,
    matches,
    groundTruthCount: gtCount,
    predictionCount: prCount,
    idtp,
    meanIou: matches > 0 ? iouSum / matches : 0,
  };
}
