/**
 * End-to-end worker throughput on the local stack with a real YOLO graph, next to the
 * bare model: does the pipeline around `session.run` (receive, S3 GET, decode,
 * letterbox, NMS, tracking, commit, delete) add at most 10%?
 *
 * Per batch size: a local stack with one slot and the vision worker running YOLOv8n
 * (`../shared/models/yolov8n-random.onnx`, real graph, random weights, decoding at a
 * score and tracker thresholds near 1e-4 so ~20 boxes per frame reach NMS and the tracker), `--videos` (20) videos of
 * 640x480 JPEG frames; fauxqs hands out one message per video per receive, so 20 let the
 * worker run one receive's videos while the previous receive's commit (decision 19). Warm-up: each video's frame 0 is uploaded and recorded first, so the worker has
 * launched, loaded its model and owns every video before the clock starts. Then the
 * remaining N frames per video are uploaded at once (in order per video, all videos in
 * parallel), a backlog the worker cannot keep up with. The router polls with one
 * invocation at a time here, so each video's frames reach its slot queue in upload order:
 * the figure is the pipeline's, not the reorder buffer's (with two concurrent router
 * invocations frames overtake each other and wait in the buffer for the ones before them).
 *
 * A commit round stamps its records with the time the round began (`committedAtMs`), so
 * the backlog frames of every round but the last were processed between the first and the
 * last stamp: worker frames/s = those frames / (last stamp - first stamp). Bare frames/s
 * = `session.run` alone at the same batch size, on the same graph, in the bench process
 * with the stack up and idle (emulators, the router's long polls, the worker waiting for
 * messages), right before and right after the worker run: the mean of the two medians of
 * 30 calls (bench/model-timing.ts), since this machine's speed drifts.
 *
 * Per thread setting (`--threads`, the worker's `inferenceThreads` and the bare model's
 * alike): 0 = onnxruntime's default, one thread per core, so the model takes both cores
 * and everything else (decode, NMS, tracking, SDK calls, and here the emulators) takes
 * from it; 1 = the model on one core and the rest of the pipeline on the other, as beside
 * a GPU, which measures what the target is about: the pipeline's own overhead.
 *
 * Run: npx node bench/worker-throughput.ts [--videos 20] [--frames 40] [--batches 1,8] [--threads 0,1]
 * Writes bench/results/worker-throughput.json. Skipped with a message without the graph.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { frameKey } from '../core/ingest/keys.ts';
import { allResults } from '../core/commit/dynamodb/results-reader.ts';
import { generateClip } from '../gpu-worker/vision/synthetic/generate.ts';
import { startLocalStack } from '../local/stack.ts';
import { CpuSampler } from './cpu-accounting.ts';
import { bareModelFps } from './model-timing.ts';
import { RANDOM_WEIGHT_THRESHOLDS, YOLOV8N_PATH as YOLO_PATH } from '../harness/yolo-fixtures.ts';
import { sleep } from './harness/main.ts';

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({ options: { videos: { type: 'string', default: '20' }, frames: { type: 'string', default: '40' }, batches: { type: 'string', default: '1,8' }, threads: { type: 'string', default: '0,1' } } });
/**
 * fauxqs returns one message per FIFO group per receive (SQS: up to 10 of one group), so a
 * receive holds at most one frame of each of 10 videos; with 20, the next receive finds
 * other videos to run while the previous round commits.
 */
const VIDEOS = Number(values.videos);
const framesPerVideo = Number(values.frames);
const batches = values.batches.split(',').map(Number);
const threadSettings = values.threads.split(',').map(Number);

if (!existsSync(YOLO_PATH)) {
  console.log(`SKIPPED: ${YOLO_PATH} is absent (see shared/models/README.md)`);
  process.exit(0);
}
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const clips = await Promise.all(
  Array.from({ length: VIDEOS }, (_, v) => generateClip({ seed: 500 + v, frames: framesPerVideo + 1, width: 640, height: 480, format: 'jpeg', objects: 6 })),
);
const rows: Record<string, unknown>[] = [];
console.log(`worker throughput: YOLOv8n (640), ${VIDEOS} videos x ${framesPerVideo} 640x480 JPEG frames, one slot, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})`);
console.log('threads | batch | worker frames/s | bare session.run frames/s | worker / bare | mean boxes per frame');
const threadsLabel = (n: number) => (n === 0 ? 'default' : String(n));
for (const inferenceThreads of threadSettings) for (const batchSize of batches) {
  const stack = await startLocalStack({
    quiet: true,
    stateDir: '.local/bench-worker-throughput',
    tunables: { slotCount: 1, videosPerSlot: VIDEOS, inferenceBatchSize: batchSize, maxBatchWaitMs: 10, inferenceThreads, modelUri: YOLO_PATH, firstFrameNumber: 0, ...RANDOM_WEIGHT_THRESHOLDS },
    routerWaitTimeSeconds: 1,
    routerConcurrency: 1,
  });
  try {
    const source = { ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable };
    const recordsOf = async () => (await Promise.all(clips.map((_, v) => allResults(source, `wt-${v}`)))).flat();
    const put = (v: number, f: { frame: number; image: Uint8Array }) =>
      stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: frameKey(`wt-${v}`, f.frame), Body: f.image, ContentType: 'image/jpeg' }));
    // Reading every record costs DynamoDB Local CPU that the worker would otherwise get:
    // the backlog is polled every 5 s (its window comes from the commit stamps, not from this loop).
    const waitForRecords = async (count: number, what: string, pollMs: number): Promise<Awaited<ReturnType<typeof recordsOf>>> => {
      const deadline = Date.now() + 600_000;
      for (;;) {
        const records = await recordsOf();
        if (records.length >= count) return records;
        if (Date.now() > deadline) throw new Error(`${what}: only ${records.length} of ${count} records after 10 minutes`);
        await sleep(pollMs);
      }
    };
    // Warm-up: worker launched, model loaded, every video owned.
    await Promise.all(clips.map((clip, v) => put(v, clip.frames[0]!)));
    await waitForRecords(VIDEOS, 'warm-up', 500);
    // This machine's speed drifts by tens of percent from minute to minute: time the bare
    // model right before and right after the worker run, and compare with their mean.
    const bareBefore = await bareModelFps(YOLO_PATH, batchSize, 640, 30, inferenceThreads);
    const sampler = new CpuSampler(availableParallelism());
    await Promise.all(
      clips.map(async (clip, v) => {
        for (const f of clip.frames.slice(1)) await put(v, f);
      }),
    );
    const total = VIDEOS * (framesPerVideo + 1);
    const records = (await waitForRecords(total, 'backlog', 5000)).filter((r) => r.frame > 0);
    sampler.stop();
    const notOk = records.filter((r) => r.status !== 'ok');
    if (notOk.length > 0) throw new Error(`${notOk.length} records not ok: ${JSON.stringify(notOk[0])}`);
    const times = records.map((r) => r.committedAtMs).sort((a, b) => a - b);
    const lastStamp = times.at(-1)!;
    const timed = times.filter((t) => t < lastStamp).length;
    const rounds = new Set(times).size;
    if (rounds < 3) throw new Error(`only ${rounds} commit rounds: upload more frames (--frames)`);
    const workerFps = (timed / (lastStamp - times[0]!)) * 1000;
    const boxes = records.reduce((n, r) => n + r.detections.length, 0) / records.length;
    const cpu = sampler.window(times[0]!, lastStamp);
    // With the stack still up and idle (emulators, router polling, the idle worker), as it was around the worker.
    const bareAfter = await bareModelFps(YOLO_PATH, batchSize, 640, 30, inferenceThreads);
    const bare = (bareBefore + bareAfter) / 2;
    await stack.stop();
    rows.push({ inferenceThreads, batchSize, workerFps, bareSessionRunFps: bare, bareBefore, bareAfter, ratio: workerFps / bare, framesTimed: timed, commitRounds: rounds, meanTrackedBoxesPerFrame: boxes, cpu });
    console.log(`${threadsLabel(inferenceThreads).padStart(7)} | ${String(batchSize).padStart(5)} | ${workerFps.toFixed(1).padStart(15)} | ${bare.toFixed(1).padStart(25)} | ${(workerFps / bare).toFixed(2).padStart(13)} | ${boxes.toFixed(1)}`);
    const share = (coreSeconds: number) => `${((coreSeconds / cpu.capacityCoreSeconds) * 100).toFixed(0)}%`;
    console.log(
      `      CPU in the ${cpu.seconds.toFixed(1)} s window, share of ${availableParallelism()} cores: machine busy ${share(cpu.machineBusyCoreSeconds)}; ` +
        Object.entries(cpu.byRole).map(([role, s]) => `${role} ${share(s)}`).join(', '),
    );
  } finally {
    await stack.stop();
  }
}
const out = join(here, 'results', 'worker-throughput.json');
await mkdir(dirname(out), { recursive: true });
await writeFile(out, `${JSON.stringify({ command: 'npx node bench/worker-throughput.ts', date: new Date().toISOString(), cpu: cpus()[0]?.model, cores: availableParallelism(), framesPerVideo, videos: VIDEOS, rows }, null, 2)}\n`);
console.log(`wrote ${out}`);
