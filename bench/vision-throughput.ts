/**
 * Worker-side vision throughput: frames/s through the FrameProcessor at inference
 * batch 1, 4 and 8, with several concurrent videos, and per-frame latency inside the
 * processor (process() call to outcome); next to it, the bare model: frames/s of
 * `session.run` alone at the same batch size, on letterbox-grey input.
 *
 * Each video is fed like the worker feeds it: a loop that hands the processor a
 * small chunk of that video's frames and waits for the outcomes before the next
 * chunk, all videos at once. Frames are synthetic 320x240 PNGs from the demo clip
 * generator. Models: the demo ONNX model, and Ultralytics YOLOv8n (640 input, real
 * graph with random weights, `../shared/models/`, skipped with a message where
 * absent) with thresholds near 1e-4 so that real numbers of boxes reach NMS and the
 * tracker. CPU.
 *
 * Run: npx node bench/vision-throughput.ts [--json bench/results/vision-throughput.json]
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FrameInput } from '../core/ports.ts';
import { createVisionProcessor, type VisionProcessorOptions } from '../gpu-worker/vision/index.ts';
import { bareModelFps } from './model-timing.ts';
import { percentile } from './support.ts';
import { RANDOM_WEIGHT_PROCESSOR_OPTIONS, YOLOV8N_PATH as YOLO_PATH } from '../harness/yolo-fixtures.ts';
import { ensureDemoModel } from '../gpu-worker/vision/demo-model/build-model.ts';
import { generateClip, type Clip } from '../gpu-worker/vision/synthetic/generate.ts';

const here = dirname(fileURLToPath(import.meta.url));
const VIDEOS = 8;
const CHUNK_FRAMES = 2;
const MAX_BATCH_WAIT_MS = 10;
const BATCH_SIZES = [1, 4, 8];

interface ModelCase {
  readonly name: string;
  /** undefined: the demo model. */
  readonly uri?: string;
  readonly framesPerVideo: number;
  readonly options: Pick<VisionProcessorOptions, 'scoreThreshold' | 'tracker'>;
}

const MODELS: ModelCase[] = [
  { name: 'demo (320)', framesPerVideo: 40, options: { scoreThreshold: 0.25 } },
  {
    name: 'YOLOv8n (640)',
    uri: YOLO_PATH,
    framesPerVideo: 12,
    // Random weights score ~1e-5..1.6e-4 (shared/models/README.md).
    options: RANDOM_WEIGHT_PROCESSOR_OPTIONS,
  },
];


async function runOnce(model: ModelCase, batchSize: number, clips: Clip[]): Promise<{ fps: number; p50: number; p99: number; meanBatch: number; provider: string; detectionsPerFrame: number }> {
  const processor = createVisionProcessor({ modelUri: model.uri, batchSize, maxBatchWaitMs: MAX_BATCH_WAIT_MS, preferCuda: false, ...model.options });
  await processor.start();
  clips.forEach((_, v) => processor.openVideo(`video-${v}`, undefined));
  const latenciesMs: number[] = [];
  let detections = 0;
  const t0 = performance.now();
  await Promise.all(
    clips.map(async (clip, v) => {
      for (let i = 0; i < clip.frames.length; i += CHUNK_FRAMES) {
        const chunk: FrameInput[] = clip.frames.slice(i, i + CHUNK_FRAMES).map((f) => ({ videoId: `video-${v}`, frame: f.frame, image: f.image }));
        const start = performance.now();
        const outcomes = await processor.process(chunk);
        const elapsed = performance.now() - start;
        for (const o of outcomes) {
          if (o.status !== 'ok') throw new Error(`frame failed: ${JSON.stringify(o)}`);
          detections += o.detections.length;
          latenciesMs.push(elapsed);
        }
      }
    }),
  );
  const wallMs = performance.now() - t0;
  const sizes = processor.batchSizes;
  const provider = processor.provider;
  await processor.stop();
  latenciesMs.sort((a, b) => a - b);
  return {
    fps: (latenciesMs.length / wallMs) * 1000,
    p50: percentile(latenciesMs, 50),
    p99: percentile(latenciesMs, 99),
    meanBatch: sizes.reduce((a, b) => a + b, 0) / sizes.length,
    provider,
    detectionsPerFrame: detections / latenciesMs.length,
  };
}


const jsonAt = process.argv.indexOf('--json');
const jsonPath = jsonAt >= 0 ? process.argv[jsonAt + 1] : join(here, 'results', 'vision-throughput.json');
const rows: Record<string, unknown>[] = [];
console.log(`vision throughput: ${VIDEOS} videos, 320x240 PNG, chunks of ${CHUNK_FRAMES}, maxBatchWaitMs=${MAX_BATCH_WAIT_MS}, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})`);
console.log('model         | batch | provider | frames/s | p50 ms | p99 ms | mean batch | boxes/frame | bare session.run frames/s | processor / bare');
for (const model of MODELS) {
  if (model.uri && !existsSync(model.uri)) {
    console.log(`${model.name}: SKIPPED, ${model.uri} is absent (see shared/models/README.md)`);
    continue;
  }
  const uri = model.uri ?? (await ensureDemoModel());
  const inputSize = model.uri ? 640 : 320;
  const clips = await Promise.all(Array.from({ length: VIDEOS }, (_, v) => generateClip({ seed: 100 + v, frames: model.framesPerVideo, objects: 4 })));
  // One untimed pass warms sharp, the thread pools and the page cache.
  await runOnce(model, 4, clips.slice(0, 2));
  for (const batchSize of BATCH_SIZES) {
    const r = await runOnce(model, batchSize, clips);
    const bare = await bareModelFps(uri, batchSize, inputSize);
    rows.push({ model: model.name, batchSize, ...r, bareSessionRunFps: bare, ratio: r.fps / bare });
    console.log(
      `${model.name.padEnd(13)} | ${String(batchSize).padStart(5)} | ${r.provider.padEnd(8)} | ${r.fps.toFixed(1).padStart(8)} | ${r.p50.toFixed(1).padStart(6)} | ${r.p99.toFixed(1).padStart(6)} | ${r.meanBatch.toFixed(2).padStart(10)} | ${r.detectionsPerFrame.toFixed(1).padStart(11)} | ${bare.toFixed(1).padStart(25)} | ${(r.fps / bare).toFixed(2)}`,
    );
  }
}
await mkdir(dirname(jsonPath), { recursive: true });
await writeFile(jsonPath, `${JSON.stringify({ command: 'npx node bench/vision-throughput.ts', date: new Date().toISOString(), cpu: cpus()[0]?.model, cores: availableParallelism(), rows }, null, 2)}\n`);
console.log(`wrote ${jsonPath}`);
