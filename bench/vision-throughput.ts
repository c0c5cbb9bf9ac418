/**
 * Worker-side vision throughput: frames/s through the FrameProcessor at
 * inference batch 1 vs batched, with several concurrent videos, and per-frame
 * latency inside the processor (process() call to outcome).
 *
 * Each video is fed like the worker feeds it: a loop that hands the processor a
 * small chunk of that video's frames and waits for the outcomes before the
 * next chunk, all videos at once. Frames are synthetic 320x240 PNGs from the
 * demo clip generator, run through the demo ONNX model on CPU.
 *
 * Run: npx node bench/vision-throughput.ts
 */
import { availableParallelism } from 'node:os';
import type { FrameInput } from '../core/ports.ts';
import { createVisionProcessor } from '../gpu-worker/vision/index.ts';
import { generateClip, type Clip } from '../gpu-worker/vision/synthetic/generate.ts';

const VIDEOS = 8;
const FRAMES_PER_VIDEO = 40;
const CHUNK_FRAMES = 2;
const MAX_BATCH_WAIT_MS = 10;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function runOnce(batchSize: number, clips: Clip[]): Promise<{ fps: number; p50: number; p99: number; meanBatch: number; provider: string }> {
  const processor = createVisionProcessor({ batchSize, maxBatchWaitMs: MAX_BATCH_WAIT_MS, scoreThreshold: 0.25 });
  await processor.start();
  clips.forEach((_, v) => processor.openVideo(`video-${v}`, undefined));
  const latenciesMs: number[] = [];
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
  };
}

const clips = await Promise.all(Array.from({ length: VIDEOS }, (_, v) => generateClip({ seed: 100 + v, frames: FRAMES_PER_VIDEO, objects: 4 })));
// One untimed pass warms sharp, the thread pools and the page cache.
await runOnce(8, clips.slice(0, 2));

console.log(`vision throughput: ${VIDEOS} videos x ${FRAMES_PER_VIDEO} frames (320x240 PNG), chunks of ${CHUNK_FRAMES}, maxBatchWaitMs=${MAX_BATCH_WAIT_MS}, ${availableParallelism()} cores`);
console.log('batch | provider | frames/s | p50 ms | p99 ms | mean batch');
for (const batchSize of [1, 4, 8, 16]) {
  const r = await runOnce(batchSize, clips);
  console.log(
    `${String(batchSize).padStart(5)} | ${r.provider.padEnd(8)} | ${r.fps.toFixed(1).padStart(8)} | ${r.p50.toFixed(1).padStart(6)} | ${r.p99.toFixed(1).padStart(6)} | ${r.meanBatch.toFixed(2)}`,
  );
}
