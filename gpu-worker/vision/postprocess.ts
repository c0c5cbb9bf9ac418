/**
 * YOLO (Ultralytics v8/11) output decoding, class-aware NMS, and mapping boxes
 * from model input pixels back to source-image pixels.
 */
import { BEST_CLASS_ROWS } from './graph-rewrite.ts';
import type { LetterboxGeometry } from './preprocess.ts';

/** A box in x1, y1, x2, y2 order. */
export type Box = [number, number, number, number];

/** A detection before tracking. */
export interface RawDetection {
  readonly box: Box;
  readonly score: number;
  readonly classIndex: number;
}

export interface DecodeOptions {
  /** Candidates below this best-class score are dropped before NMS. */
  readonly scoreThreshold: number;
  /** Boxes of one class overlapping more than this (IoU) are suppressed. */
  readonly iouThreshold: number;
  /** At most this many detections are returned per image. */
  readonly maxDetections: number;
}

export const DEFAULT_DECODE: DecodeOptions = Object.freeze({ scoreThreshold: 0.25, iouThreshold: 0.5, maxDetections: 300 });

/** Intersection over union of two x1y1x2y2 boxes; 0 for empty boxes. */
export function iou(a: readonly number[], b: readonly number[]): number {
  return iouOfCorners(a[0]!, a[1]!, a[2]!, a[3]!, b[0]!, b[1]!, b[2]!, b[3]!);
}

/** {@link iou} of boxes given by their corners: the one formula, for arrays and for typed columns. */
function iouOfCorners(ax1: number, ay1: number, ax2: number, ay2: number, bx1: number, by1: number, bx2: number, by2: number): number {
  const iw = Math.min(ax2, bx2) - Math.max(ax1, bx1);
  const ih = Math.min(ay2, by2) - Math.max(ay1, by1);
  if (iw <= 0 || ih <= 0) return 0;
  const inter = iw * ih;
  const union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter;
  return union > 0 ? inter / union : 0;
}

/**
 * Decodes one image of a `[B, 4 + C, N]` output: `data` is the whole batch
 * tensor, `image` the batch index. Boxes stay in model input pixels.
 */
export function decodeYolo(data: Float32Array, image: number, classCount: number, anchorCount: number, scoreThreshold: number): RawDetection[] {
  const channels = 4 + classCount;
  const base = image * channels * anchorCount;
  // Class by class, so each pass reads one contiguous row of the [C, N] block; anchor by
  // anchor would stride N floats per read and miss the cache on every class (1.3 ms
  // against 0.9 ms for YOLOv8n's 80 x 8400 here). `>` keeps the first class on ties and never takes a NaN.
  const bestScore = new Float32Array(anchorCount).fill(-Infinity);
  const bestClass = new Int32Array(anchorCount).fill(-1);
  for (let c = 0; c < classCount; c++) {
    const row = base + (4 + c) * anchorCount;
    for (let n = 0; n < anchorCount; n++) {
      const s = data[row + n];
      if (s > bestScore[n]) {
        bestScore[n] = s;
        bestClass[n] = c;
      }
    }
  }
  const out: RawDetection[] = [];
  for (let n = 0; n < anchorCount; n++) {
    const score = bestScore[n];
    // Strictly above, as Ultralytics' non_max_suppression (`amax > conf_thres`).
    if (!(score > scoreThreshold)) continue;
    const box = anchorBox(data, base, anchorCount, n);
    if (box) out.push({ box, score, classIndex: bestClass[n] });
  }
  return out;
}

/** Anchor n's box (its cx, cy, w, h rows, from `base`) as corners; undefined when it has no area. */
function anchorBox(data: Float32Array, base: number, anchorCount: number, n: number): Box | undefined {
  const cx = data[base + n]!;
  const cy = data[base + anchorCount + n]!;
  const w = data[base + 2 * anchorCount + n]!;
  const h = data[base + 3 * anchorCount + n]!;
  return w > 0 && h > 0 ? [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2] : undefined;
}

/**
 * Decodes one image of a rewritten graph's `[B, 6, N]` output (graph-rewrite.ts: cx, cy,
 * w, h, best score, best class index as float, per anchor): the same candidates
 * {@link decodeYolo} finds in the raw `[B, 4 + C, N]` output, since the graph's ArgMax
 * also keeps the first class on ties. Boxes stay in model input pixels.
 */
export function decodeBestClass(data: Float32Array, image: number, anchorCount: number, scoreThreshold: number): RawDetection[] {
  const base = image * BEST_CLASS_ROWS * anchorCount;
  const scores = base + 4 * anchorCount;
  const classes = base + 5 * anchorCount;
  const out: RawDetection[] = [];
  for (let n = 0; n < anchorCount; n++) {
    const score = data[scores + n];
    if (!(score > scoreThreshold)) continue;
    const box = anchorBox(data, base, anchorCount, n);
    if (box) out.push({ box, score, classIndex: data[classes + n] });
  }
  return out;
}

/**
 * Greedy class-aware NMS. Ties in score keep the earlier candidate (stable
 * sort), so the result is deterministic for identical scores.
 */
export function nms(candidates: readonly RawDetection[], iouThreshold: number, maxDetections: number): RawDetection[] {
  const order = candidates.map((_, i) => i).sort((a, b) => candidates[b].score - candidates[a].score || a - b);
  const kept: RawDetection[] = [];
  const suppressed = new Uint8Array(candidates.length);
  for (let oi = 0; oi < order.length && kept.length < maxDetections; oi++) {
    const i = order[oi];
    if (suppressed[i]) continue;
    const keep = candidates[i];
    kept.push(keep);
    for (let oj = oi + 1; oj < order.length; oj++) {
      const j = order[oj];
      if (suppressed[j] || candidates[j].classIndex !== keep.classIndex) continue;
      if (iou(keep.box, candidates[j].box) > iouThreshold) suppressed[j] = 1;
    }
  }
  return kept;
}

/** Maps a model-input box to source pixels: undo padding and scale, clip to the image. */
export function unletterboxBox(box: readonly number[], g: LetterboxGeometry): Box {
  const clip = (v: number, max: number) => Math.min(Math.max(v, 0), max);
  return [
    clip((box[0] - g.padLeft) / g.scale, g.sourceWidth),
    clip((box[1] - g.padTop) / g.scale, g.sourceHeight),
    clip((box[2] - g.padLeft) / g.scale, g.sourceWidth),
    clip((box[3] - g.padTop) / g.scale, g.sourceHeight),
  ];
}

/**
 * Full post-processing for one image: decode, NMS, map back to the source, and
 * drop boxes that clipping left empty.
 */
export function postprocess(
  data: Float32Array,
  image: number,
  classCount: number,
  anchorCount: number,
  geometry: LetterboxGeometry,
  options: DecodeOptions = DEFAULT_DECODE,
): RawDetection[] {
  return finishDetections(decodeYolo(data, image, classCount, anchorCount, options.scoreThreshold), geometry, options);
}

/**
 * {@link postprocess} for a rewritten graph's `[B, 6, N]` best-class output (decision 32),
 * with the same result as `finishDetections(decodeBestClass(...))` but without an object
 * per candidate: candidates live in reused typed arrays, and only the kept ones become
 * detections (decision 43). A busy frame has hundreds of candidates above a low score
 * threshold and keeps tens; their boxes were the largest share of the main thread's garbage per frame.
 */
export function postprocessBestClass(data: Float32Array, image: number, anchorCount: number, geometry: LetterboxGeometry, options: DecodeOptions = DEFAULT_DECODE): RawDetection[] {
  const base = image * BEST_CLASS_ROWS * anchorCount;
  const s = candidateScratch(anchorCount);
  let count = 0;
  for (let n = 0; n < anchorCount; n++) {
    const score = data[base + 4 * anchorCount + n]!;
    // As decodeBestClass: strictly above the threshold (never a NaN), and a box with area.
    if (!(score > options.scoreThreshold)) continue;
    const w = data[base + 2 * anchorCount + n]!;
    const h = data[base + 3 * anchorCount + n]!;
    if (!(w > 0 && h > 0)) continue;
    const cx = data[base + n]!;
    const cy = data[base + anchorCount + n]!;
    s.x1[count] = cx - w / 2;
    s.y1[count] = cy - h / 2;
    s.x2[count] = cx + w / 2;
    s.y2[count] = cy + h / 2;
    s.score[count] = score;
    s.classIndex[count] = data[base + 5 * anchorCount + n]!;
    s.order[count] = count;
    count++;
  }
  // Best score first, ties in anchor order: the order nms() sorts candidates into.
  const order = s.order.subarray(0, count).sort((a, b) => s.score[b]! - s.score[a]! || a - b);
  const kept = s.kept;
  let keptCount = 0;
  for (let oi = 0; oi < count && keptCount < options.maxDetections; oi++) {
    const i = order[oi]!;
    // Greedy NMS keeps a candidate exactly when no kept candidate of its class, all of
    // them earlier in the order, overlaps it by more than the threshold.
    let suppressed = false;
    for (let k = 0; k < keptCount && !suppressed; k++) {
      const j = kept[k]!;
      suppressed = s.classIndex[j] === s.classIndex[i] && overlap(s, j, i) > options.iouThreshold;
    }
    if (!suppressed) kept[keptCount++] = i;
  }
  const out: RawDetection[] = [];
  for (let k = 0; k < keptCount; k++) {
    const i = kept[k]!;
    const box = unletterboxBox([s.x1[i]!, s.y1[i]!, s.x2[i]!, s.y2[i]!], geometry);
    if (box[2] - box[0] > 0 && box[3] - box[1] > 0) out.push({ box, score: s.score[i]!, classIndex: s.classIndex[i]! });
  }
  return out;
}

/** Candidate columns for {@link postprocessBestClass}, reused across calls (one thread runs them). */
interface CandidateScratch {
  readonly x1: Float64Array;
  readonly y1: Float64Array;
  readonly x2: Float64Array;
  readonly y2: Float64Array;
  readonly score: Float32Array;
  readonly classIndex: Float32Array;
  readonly order: Int32Array;
  readonly kept: Int32Array;
}
let scratch: CandidateScratch | undefined;

function candidateScratch(anchorCount: number): CandidateScratch {
  if (!scratch || scratch.order.length < anchorCount) {
    scratch = {
      x1: new Float64Array(anchorCount),
      y1: new Float64Array(anchorCount),
      x2: new Float64Array(anchorCount),
      y2: new Float64Array(anchorCount),
      score: new Float32Array(anchorCount),
      classIndex: new Float32Array(anchorCount),
      order: new Int32Array(anchorCount),
      kept: new Int32Array(anchorCount),
    };
  }
  return scratch;
}

/** {@link iou} of scratch candidates a and b. */
function overlap(s: CandidateScratch, a: number, b: number): number {
  return iouOfCorners(s.x1[a]!, s.y1[a]!, s.x2[a]!, s.y2[a]!, s.x1[b]!, s.y1[b]!, s.x2[b]!, s.y2[b]!);
}

/**
 * NMS, mapping back to the source, and dropping boxes that clipping left empty. Over
 * {@link decodeBestClass}'s candidates it is the reference {@link postprocessBestClass} must equal.
 */
export function finishDetections(candidates: RawDetection[], geometry: LetterboxGeometry, options: DecodeOptions): RawDetection[] {
  const kept = nms(candidates, options.iouThreshold, options.maxDetections);
  const out: RawDetection[] = [];
  for (const d of kept) {
    const box = unletterboxBox(d.box, geometry);
    if (box[2] - box[0] > 0 && box[3] - box[1] > 0) out.push({ box, score: d.score, classIndex: d.classIndex });
  }
  return out;
}
