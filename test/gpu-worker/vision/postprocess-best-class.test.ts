import { describe, expect, it } from 'vitest';
import { decodeBestClass, finishDetections, postprocessBestClass, type DecodeOptions, type RawDetection } from '../../../gpu-worker/vision/postprocess.ts';
import { BEST_CLASS_ROWS } from '../../../gpu-worker/vision/graph-rewrite.ts';
import { letterboxGeometry, type LetterboxGeometry } from '../../../gpu-worker/vision/preprocess.ts';
import { rng } from '../../../core/random.ts';

/** The reference: candidate objects, greedy NMS, back to source pixels, empty boxes dropped (the path before decision 43). */
const reference = (data: Float32Array, image: number, anchors: number, g: LetterboxGeometry, o: DecodeOptions): RawDetection[] =>
  finishDetections(decodeBestClass(data, image, anchors, o.scoreThreshold), g, o);

interface Case {
  readonly name: string;
  readonly images: number;
  readonly anchors: number;
  /** Share of anchors scoring above the threshold. */
  readonly hot: number;
  readonly classes: number;
  /** Boxes packed into a small area, so many overlap. */
  readonly crowded: boolean;
  readonly options: DecodeOptions;
  /** Odd values written into some anchors: NaN scores, tied scores, empty or NaN sizes. */
  readonly oddities: boolean;
}

/** A `[B, 6, N]` best-class tensor (cx, cy, w, h, score, class) drawn from `seed`. */
function tensor(c: Case, seed: number): Float32Array {
  const random = rng(seed);
  const n = c.anchors;
  const data = new Float32Array(c.images * BEST_CLASS_ROWS * n);
  const span = c.crowded ? 60 : 640;
  for (let b = 0; b < c.images; b++) {
    const base = b * BEST_CLASS_ROWS * n;
    for (let a = 0; a < n; a++) {
      data[base + a] = 20 + random() * span;
      data[base + n + a] = 20 + random() * span;
      data[base + 2 * n + a] = 5 + random() * 80;
      data[base + 3 * n + a] = 5 + random() * 80;
      data[base + 4 * n + a] = random() < c.hot ? c.options.scoreThreshold + random() * 0.5 : random() * c.options.scoreThreshold;
      data[base + 5 * n + a] = Math.floor(random() * c.classes);
      if (!c.oddities) continue;
      const odd = random();
      if (odd < 0.03) data[base + 4 * n + a] = Number.NaN;
      else if (odd < 0.1) data[base + 4 * n + a] = 0.5; // ties in score: anchor order decides
      else if (odd < 0.12) data[base + 2 * n + a] = 0; // no area
      else if (odd < 0.13) data[base + 3 * n + a] = Number.NaN;
      else if (odd < 0.15) data[base + a] = -200; // clipped to nothing in source pixels
      else if (odd < 0.16) data[base + 4 * n + a] = c.options.scoreThreshold; // at the threshold: dropped
      else if (odd < 0.3 && a > 0) for (const row of [0, 1, 2, 3, 5]) data[base + row * n + a] = data[base + row * n + a - 1]!; // the same box again: IoU exactly 1
    }
  }
  return data;
}

const ULTRALYTICS = { scoreThreshold: 0.25, iouThreshold: 0.7, maxDetections: 300 };
const CASES: Case[] = [
  { name: 'a busy frame, one class, crowded', images: 1, anchors: 8400, hot: 0.05, classes: 1, crowded: true, options: ULTRALYTICS, oddities: false },
  { name: 'many classes, spread out', images: 1, anchors: 8400, hot: 0.05, classes: 80, crowded: false, options: ULTRALYTICS, oddities: false },
  { name: 'NaN, tied, empty and clipped candidates', images: 1, anchors: 2000, hot: 0.2, classes: 3, crowded: true, options: ULTRALYTICS, oddities: true },
  { name: 'capped by maxDetections', images: 1, anchors: 2000, hot: 0.5, classes: 4, crowded: false, options: { scoreThreshold: 0.1, iouThreshold: 0.3, maxDetections: 7 }, oddities: true },
  { name: 'every image of a batch of 8', images: 8, anchors: 1344, hot: 0.1, classes: 2, crowded: true, options: { scoreThreshold: 1e-4, iouThreshold: 0.5, maxDetections: 300 }, oddities: true },
  { name: 'nothing above the threshold', images: 1, anchors: 500, hot: 0, classes: 2, crowded: false, options: ULTRALYTICS, oddities: false },
  { name: 'duplicate boxes at IoU threshold 1 are both kept (suppression needs IoU above it)', images: 1, anchors: 1000, hot: 0.2, classes: 2, crowded: true, options: { scoreThreshold: 0.25, iouThreshold: 1, maxDetections: 300 }, oddities: true },
  { name: 'IoU 0 suppresses any overlap, spread out', images: 1, anchors: 300, hot: 1, classes: 1, crowded: false, options: { scoreThreshold: 0.25, iouThreshold: 0, maxDetections: 300 }, oddities: false },
  { name: 'everything above the threshold, IoU 0 suppresses any overlap', images: 1, anchors: 300, hot: 1, classes: 1, crowded: true, options: { scoreThreshold: 0.25, iouThreshold: 0, maxDetections: 300 }, oddities: false },
];

describe('postprocessBestClass (decision 43: candidates in typed arrays)', () => {
  it.each(CASES)('gives exactly the reference result: $name', (c) => {
    // A square source: no padding, so crowded boxes near the corner stay inside the image.
    const geometry = letterboxGeometry(1280, 1280, 640, 640);
    for (const seed of [1, 2, 3]) {
      const data = tensor(c, seed);
      for (let image = 0; image < c.images; image++) {
        const expected = reference(data, image, c.anchors, geometry, c.options);
        expect(postprocessBestClass(data, image, c.anchors, geometry, c.options)).toEqual(expected);
        expect(expected.length > 0).toBe(c.hot > 0);
      }
    }
  });

  it('is not changed by the calls before it, with more or fewer anchors (reused scratch)', () => {
    const geometry = letterboxGeometry(1280, 1280, 640, 640);
    const small = CASES[2]!;
    const large = CASES[0]!;
    const smallData = tensor(small, 9);
    const first = postprocessBestClass(smallData, 0, small.anchors, geometry, small.options);
    postprocessBestClass(tensor(large, 9), 0, large.anchors, geometry, large.options);
    expect(postprocessBestClass(smallData, 0, small.anchors, geometry, small.options)).toEqual(first);
    expect(first).toEqual(reference(smallData, 0, small.anchors, geometry, small.options));
    expect(first.length).toBeGreaterThan(0);
  });
});
