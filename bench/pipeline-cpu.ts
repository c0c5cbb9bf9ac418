/**
 * CPU per frame of the vision pipeline around the model, by thread: how many core-ms a
 * frame costs outside `session.run` (decode, letterbox, batching, YOLO decoding, NMS,
 * tracking, and the garbage collection all that allocation brings), next to the model's
 * own. This is the arithmetic behind the worker-throughput target with the model on both
 * cores: whatever the pipeline and the emulators take per frame comes out of the model's
 * two cores (bench/README.md, worker throughput). Without AWS: the processor is fed like
 * the worker feeds it, 8 videos in chunks of 2, 640x480 JPEG frames.
 *
 * Per-thread CPU comes from /proc/self/task (Linux only): the main thread, the inference
 * thread (a Node worker thread running onnxruntime with one intra-op thread, so the
 * model's work is all there), V8's platform workers (concurrent GC), libvips' workers and
 * libuv's pool (sharp).
 *
 * Run: npx node bench/pipeline-cpu.ts [--frames 20] [--batches 1,8]
 * Skipped with a message without the YOLOv8n graph.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { createVisionProcessor } from '../gpu-worker/vision/index.ts';
import { generateClip } from '../gpu-worker/vision/synthetic/generate.ts';
import { parseProcStat, TICKS_PER_SECOND } from './cpu-accounting.ts';
import { numberOption } from './support.ts';
import { RANDOM_WEIGHT_PROCESSOR_OPTIONS, YOLOV8N_PATH } from './yolo-fixtures.ts';

const VIDEOS = 8;
const CHUNK_FRAMES = 2;
/** The thread that runs the model: Node names its worker threads so. */
const INFERENCE_THREAD = 'WorkerThread';

const { values } = parseArgs({ options: { frames: { type: 'string', default: '20' }, batches: { type: 'string', default: '1,8' } } });
const framesPerVideo = numberOption(values, 'frames', 3, 1000);
const batches = values.batches.split(',').map(Number);

if (!existsSync(YOLOV8N_PATH)) {
  console.log(`SKIPPED: ${YOLOV8N_PATH} is absent (see shared/models/README.md)`);
  process.exit(0);
}
if (!existsSync('/proc/self/task')) {
  console.log('SKIPPED: per-thread CPU needs Linux /proc');
  process.exit(0);
}

/** CPU ms so far by thread name, summed over threads of one name. */
function cpuMsByThread(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const { comm, ticks } = parseProcStat(stat);
    out.set(comm, (out.get(comm) ?? 0) + (ticks * 1000) / TICKS_PER_SECOND);
  }
  return out;
}

const clips = await Promise.all(
  Array.from({ length: VIDEOS }, (_, v) => generateClip({ seed: 500 + v, frames: framesPerVideo + 1, width: 640, height: 480, format: 'jpeg', objects: 6 })),
);
console.log(`pipeline CPU per frame: YOLOv8n (640), one inference thread, ${VIDEOS} videos x ${framesPerVideo} 640x480 JPEG frames, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})`);
for (const batchSize of batches) {
  const processor = createVisionProcessor({ modelUri: YOLOV8N_PATH, batchSize, maxBatchWaitMs: 10, inferenceThreads: 1, preferCuda: false, ...RANDOM_WEIGHT_PROCESSOR_OPTIONS });
  await processor.start();
  clips.forEach((_, v) => processor.openVideo(`v${v}`, undefined));
  // Frame 0 of every video, untimed: warms sharp, the thread pools and the trackers.
  await processor.process(clips.map((c, v) => ({ videoId: `v${v}`, frame: 0, image: c.frames[0]!.image })));
  const before = cpuMsByThread();
  const startedMs = performance.now();
  let frames = 0;
  await Promise.all(
    clips.map(async (clip, v) => {
      for (let i = 1; i < clip.frames.length; i += CHUNK_FRAMES) {
        const chunk = clip.frames.slice(i, i + CHUNK_FRAMES).map((f) => ({ videoId: `v${v}`, frame: f.frame, image: f.image }));
        const outcomes = await processor.process(chunk);
        if (outcomes.some((o) => o.status !== 'ok')) throw new Error(`a frame failed: ${JSON.stringify(outcomes)}`);
        frames += chunk.length;
      }
    }),
  );
  const wallMs = performance.now() - startedMs;
  const after = cpuMsByThread();
  await processor.stop();
  const perFrame = [...after]
    .map(([name, ms]) => [name, (ms - (before.get(name) ?? 0)) / frames] as const)
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1]);
  const model = perFrame.find(([name]) => name === INFERENCE_THREAD)?.[1] ?? NaN;
  const pipeline = perFrame.filter(([name]) => name !== INFERENCE_THREAD).reduce((sum, [, ms]) => sum + ms, 0);
  console.log(`batch ${batchSize}: ${frames} frames, ${((frames / wallMs) * 1000).toFixed(1)} frames/s`);
  for (const [name, ms] of perFrame) console.log(`  ${name.padEnd(16)} ${ms.toFixed(1).padStart(6)} core-ms per frame${name === INFERENCE_THREAD ? ' (the model)' : ''}`);
  console.log(`  pipeline outside the model: ${pipeline.toFixed(1)} core-ms per frame, ${((pipeline / model) * 100).toFixed(0)}% of the model's`);
}
