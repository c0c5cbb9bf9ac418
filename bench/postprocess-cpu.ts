/**
 * CPU of YOLO post-processing on the uint8 path's `[1, 6, N]` best-class output
 * (decision 43): the path before, an object per candidate then greedy NMS over them
 * (`decodeBestClass`, then `finishDetections`: NMS and back to source pixels), against `postprocessBestClass`,
 * candidates in reused typed arrays. Both give the same detections (checked here on every
 * output, and by test/gpu-worker/vision/postprocess-best-class.test.ts).
 *
 * Synthetic outputs of 8,400 anchors (YOLOv8n at 640), `--candidates` of them above the
 * score threshold, boxes 10-110 px spread over the frame, `--classes` classes. A trained
 * model on a busy scene with ByteTrack's low threshold (0.1) passes tens to hundreds; the
 * random-weight fixture at the benches' thresholds passes about 400 (harness/yolo-fixtures.ts).
 *
 * Run: npx node bench/postprocess-cpu.ts [--candidates 50,400,1000] [--classes 1,3] [--iterations 2000] [--out bench/results/postprocess-cpu.json]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { rng } from '../core/random.ts';
import { BEST_CLASS_ROWS } from '../gpu-worker/vision/graph-rewrite.ts';
import { decodeBestClass, finishDetections, postprocessBestClass, type DecodeOptions, type RawDetection } from '../gpu-worker/vision/postprocess.ts';
import { letterboxGeometry, type LetterboxGeometry } from '../gpu-worker/vision/preprocess.ts';
import { numberOption } from './support.ts';

const ANCHORS = 8400;
const OPTIONS: DecodeOptions = { scoreThreshold: 0.25, iouThreshold: 0.7, maxDetections: 300 };

const { values } = parseArgs({
  options: {
    candidates: { type: 'string', default: '50,400,1000' },
    classes: { type: 'string', default: '1,3' },
    iterations: { type: 'string', default: '2000' },
    out: { type: 'string' },
  },
});
const iterations = numberOption(values, 'iterations', 10, 1_000_000);
const candidateCounts = values.candidates.split(',').map(Number);
const classCounts = values.classes.split(',').map(Number);

/** The path before decision 43. */
const before = (data: Float32Array, g: LetterboxGeometry): RawDetection[] => finishDetections(decodeBestClass(data, 0, ANCHORS, OPTIONS.scoreThreshold), g, OPTIONS);

function output(candidates: number, classes: number, seed: number): Float32Array {
  const random = rng(seed);
  const data = new Float32Array(BEST_CLASS_ROWS * ANCHORS);
  for (let n = 0; n < ANCHORS; n++) {
    data[n] = random() * 640;
    data[ANCHORS + n] = 80 + random() * 480;
    data[2 * ANCHORS + n] = 10 + random() * 100;
    data[3 * ANCHORS + n] = 10 + random() * 100;
    data[4 * ANCHORS + n] = random() < candidates / ANCHORS ? 0.3 + random() * 0.7 : random() * 0.2;
    data[5 * ANCHORS + n] = Math.floor(random() * classes);
  }
  return data;
}

/** CPU ms per call of `fn` over `iterations` calls, after as many untimed. */
function cpuMsPerCall(fn: () => RawDetection[]): number {
  for (let i = 0; i < iterations; i++) fn();
  const start = process.cpuUsage();
  for (let i = 0; i < iterations; i++) fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000 / iterations;
}

const geometry = letterboxGeometry(640, 480, 640, 640);
const rows = [];
for (const classes of classCounts) {
  for (const candidates of candidateCounts) {
    const data = output(candidates, classes, candidates * 31 + classes);
    const same = JSON.stringify(before(data, geometry)) === JSON.stringify(postprocessBestClass(data, 0, ANCHORS, geometry, OPTIONS));
    if (!same) throw new Error(`different detections at ${candidates} candidates, ${classes} classes`);
    const kept = before(data, geometry).length;
    const beforeMs = cpuMsPerCall(() => before(data, geometry));
    const afterMs = cpuMsPerCall(() => postprocessBestClass(data, 0, ANCHORS, geometry, OPTIONS));
    rows.push({ candidates, classes, kept, beforeCpuMsPerFrame: beforeMs, afterCpuMsPerFrame: afterMs });
    console.log(`${candidates} candidates, ${classes} class(es), ${kept} kept: before ${beforeMs.toFixed(3)} ms, after ${afterMs.toFixed(3)} ms CPU per frame`);
  }
}
if (values.out) {
  const command = `npx node bench/postprocess-cpu.ts ${process.argv.slice(2).join(' ')}`.trim();
  writeFileSync(values.out, `${JSON.stringify({ command, date: new Date().toISOString(), anchors: ANCHORS, options: OPTIONS, iterations, rows }, null, 2)}\n`);
  console.log(`wrote ${values.out}`);
}
