/**
 * End-to-end worker throughput on the local stack with a real YOLO graph, next to the
 * bare model: does the pipeline around `session.run` (receive, S3 GET, decode,
 * letterbox, NMS, tracking, commit, delete) add at most 10%?
 *
 * Per batch size: a local stack with one slot and the vision worker running YOLOv8n
 * (`../shared/models/yolov8n-random.onnx`, real graph, random weights, decoding at a
 * score threshold of 1e-4 so ~20 boxes per frame reach NMS), 10 videos x N 640x480
 * JPEG frames uploaded before the worker has loaded its model, so it always has a
 * backlog. A commit round stamps its records with the time the round began
 * (`committedAtMs`), so the frames of every round but the last were processed between the
 * first and the last stamp: worker frames/s = those frames / (last stamp - first stamp). Bare frames/s = `session.run` alone at the same batch size, measured
 * in the same run right after (bench/model-timing.ts).
 *
 * Run: npx node bench/worker-throughput.ts [--frames 24] [--batches 1,8]
 * Writes bench/results/worker-throughput.json. Skipped with a message without the graph.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { frameKey } from '../core/keys.ts';
import { allResults } from '../core/results-reader.ts';
import { generateClip } from '../gpu-worker/vision/synthetic/generate.ts';
import { startLocalStack } from '../local/stack.ts';
import { bareModelFps } from './model-timing.ts';

const here = dirname(fileURLToPath(import.meta.url));
const YOLO_PATH = join(here, '..', '..', 'shared', 'models', 'yolov8n-random.onnx');
/** fauxqs returns one message per FIFO group per receive (SQS: up to 10): 10 videos let a receive fill. */
const VIDEOS = 10;
const { values } = parseArgs({ options: { frames: { type: 'string', default: '24' }, batches: { type: 'string', default: '1,8' } } });
const framesPerVideo = Number(values.frames);
const batches = values.batches.split(',').map(Number);

if (!existsSync(YOLO_PATH)) {
  console.log(`SKIPPED: ${YOLO_PATH} is absent (see shared/models/README.md)`);
  process.exit(0);
}
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const clips = await Promise.all(
  Array.from({ length: VIDEOS }, (_, v) => generateClip({ seed: 500 + v, frames: framesPerVideo, width: 640, height: 480, format: 'jpeg', objects: 6 })),
);
const rows: Record<string, unknown>[] = [];
console.log(`worker throughput: YOLOv8n (640), ${VIDEOS} videos x ${framesPerVideo} 640x480 JPEG frames, one slot, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})`);
console.log('batch | worker frames/s | bare session.run frames/s | worker / bare | mean boxes per frame');
for (const batchSize of batches) {
  const stack = await startLocalStack({
    quiet: true,
    stateDir: '.local/bench-worker-throughput',
    tunables: { slotCount: 1, videosPerSlot: VIDEOS, inferenceBatchSize: batchSize, maxBatchWaitMs: 10, modelUri: YOLO_PATH, detectionScoreThreshold: 1e-4, firstFrameNumber: 0 },
    routerWaitTimeSeconds: 1,
  });
  try {
    await Promise.all(
      clips.map(async (clip, v) => {
        for (const f of clip.frames) {
          await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: frameKey(`wt-${v}`, f.frame), Body: f.image, ContentType: 'image/jpeg' }));
        }
      }),
    );
    const source = { ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable };
    const total = VIDEOS * framesPerVideo;
    const deadline = Date.now() + 600_000;
    let records: Awaited<ReturnType<typeof allResults>> = [];
    for (;;) {
      records = (await Promise.all(clips.map((_, v) => allResults(source, `wt-${v}`)))).flat();
      if (records.length >= total) break;
      if (Date.now() > deadline) throw new Error(`only ${records.length} of ${total} records after 10 minutes`);
      await sleep(500);
    }
    const notOk = records.filter((r) => r.status !== 'ok');
    if (notOk.length > 0) throw new Error(`${notOk.length} records not ok: ${JSON.stringify(notOk[0])}`);
    const times = records.map((r) => r.committedAtMs).sort((a, b) => a - b);
    const lastStamp = times.at(-1)!;
    const timed = times.filter((t) => t < lastStamp).length;
    const rounds = new Set(times).size;
    if (rounds < 3) throw new Error(`only ${rounds} commit rounds: upload more frames (--frames)`);
    const workerFps = (timed / (lastStamp - times[0]!)) * 1000;
    const boxes = records.reduce((n, r) => n + r.detections.length, 0) / records.length;
    await stack.stop();
    const bare = await bareModelFps(YOLO_PATH, batchSize, 640);
    rows.push({ batchSize, workerFps, bareSessionRunFps: bare, ratio: workerFps / bare, framesTimed: timed, commitRounds: rounds, meanTrackedBoxesPerFrame: boxes });
    console.log(`${String(batchSize).padStart(5)} | ${workerFps.toFixed(1).padStart(15)} | ${bare.toFixed(1).padStart(25)} | ${(workerFps / bare).toFixed(2).padStart(13)} | ${boxes.toFixed(1)}`);
  } finally {
    await stack.stop();
  }
}
const out = join(here, 'results', 'worker-throughput.json');
await mkdir(dirname(out), { recursive: true });
await writeFile(out, `${JSON.stringify({ command: 'npx node bench/worker-throughput.ts', date: new Date().toISOString(), cpu: cpus()[0]?.model, cores: availableParallelism(), framesPerVideo, videos: VIDEOS, rows }, null, 2)}\n`);
console.log(`wrote ${out}`);
