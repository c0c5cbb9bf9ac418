/**
 * Multi-object tracking metrics against ground truth: CLEAR MOT (MOTA, ID
 * switches) and IDF1 (Ristani et al. 2016), with IoU matching.
 */
import { munkres } from 'munkres';
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

/** A continuing match outweighs any IoU (TrackEval's CLEAR uses the same 1000). */
const CONTINUATION_BONUS = 1000;
const EPS = Number.EPSILON;

/**
 * Evaluates `predictions` against `groundTruth` (frames may be missing on either
 * side: a missing frame has no objects).
 *
 * CLEAR MOT as TrackEval computes it (`trackeval/metrics/clear.py`, the reference behind
 * HOTA and the MOTChallenge devkit), so figures agree with published ones:
 * - per frame, one Hungarian assignment maximising `1000 × continuing + IoU` over pairs
 *   with IoU ≥ threshold, where *continuing* means the ground-truth object was matched to
 *   that prediction id in the **previous frame** (not in any earlier frame);
 * - an ID switch is counted when a ground-truth object is matched to a different id than
 *   the **last** id it was matched to, in any earlier frame;
 * - a frame with no ground truth or no predictions matches nothing and leaves the
 *   previous frame's matches in place for the next frame (TrackEval skips it).
 */
export function evaluateMot(groundTruth: readonly MotFrame[], predictions: readonly MotFrame[], iouThreshold = 0.5): MotResult {
  const gtBy = new Map(groundTruth.map((f) => [f.frame, f.objects]));
  const prBy = new Map(predictions.map((f) => [f.frame, f.objects]));
  const frames = [...new Set([...gtBy.keys(), ...prBy.keys()])].sort((a, b) => a - b);

  /** Ground-truth id -> the prediction id it was last matched to (any earlier frame): for switches. */
  const lastMatch = new Map<number, number>();
  /** Ground-truth id -> the prediction id it was matched to in the previous frame: for matching. */
  let previousFrameMatch = new Map<number, number>();
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
    const ious = gts.map((g) => prs.map((p) => iou(g.box, p.box)));
    gts.forEach((g, gi) => {
      prs.forEach((p, pi) => {
        if (ious[gi][pi] < iouThreshold - EPS) return;
        let row = pairFrames.get(g.id);
        if (!row) pairFrames.set(g.id, (row = new Map()));
        row.set(p.id, (row.get(p.id) ?? 0) + 1);
      });
    });
    if (gts.length === 0 || prs.length === 0) {
      fn += gts.length;
      fp += prs.length;
      continue;
    }

    const score = gts.map((g, gi) =>
      prs.map((p, pi) => (ious[gi][pi] < iouThreshold - EPS ? 0 : (previousFrameMatch.get(g.id) === p.id ? CONTINUATION_BONUS : 0) + ious[gi][pi])),
    );
    const maxScore = Math.max(...score.flat());
    const frameMatches = munkres(score.map((row) => row.map((v) => maxScore - v))).filter(([gi, pi]) => score[gi][pi] > EPS);

    const thisFrame = new Map<number, number>();
    for (const [gi, pi] of frameMatches) {
      const g = gts[gi];
      const p = prs[pi];
      const last = lastMatch.get(g.id);
      if (last !== undefined && last !== p.id) idsw++;
      lastMatch.set(g.id, p.id);
      thisFrame.set(g.id, p.id);
      iouSum += ious[gi][pi];
    }
    previousFrameMatch = thisFrame;
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
