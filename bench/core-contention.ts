/**
 * Does work on one core slow a model running on the other? On this machine's two vCPUs it
 * does, and by how much depends on the kind of work: the reason the worker cannot reach
 * 0.9x the bare model here even with the model on a core of its own (bench/README.md,
 * worker throughput).
 *
 * YOLOv8n (random weights, 640, batch 1) runs with one intra-op thread on this thread,
 * while one child process keeps the other core busy with one kind of work:
 * - nothing (the baseline);
 * - an integer loop;
 * - a floating-point loop (what convolutions use: the vector units);
 * - memory streaming (a 64 MB array, one float per cache line);
 * - JPEG decoding with sharp, 640x480 frames as the worker decodes them.
 * Reported: the median ms per `session.run` of 30, and the slowdown against the baseline,
 * each load twice in alternation, since this machine's speed drifts. Linux or not, it
 * runs anywhere; the figures in bench/README.md are from the 2-core bench machine.
 *
 * Run: npx node bench/core-contention.ts
 * Skipped with a message without ../shared/models.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { BARE_SESSION_OPTIONS, withInferenceThreads } from '../gpu-worker/vision/model.ts';
import { medianRunMs } from './model-timing.ts';
import { YOLOV8N_PATH } from '../harness/yolo-fixtures.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = 30;

/** Each load, as a Node script that runs until killed. */
const LOADS: Record<string, string | undefined> = {
  'other core idle': undefined,
  'integer loop': 'let x = 0; for (;;) { x = (x * 1103515245 + 12345) | 0; }',
  'floating-point loop': 'let x = 1.5; for (;;) { x = Math.sqrt(x * x + 1.25) * 0.999; }',
  'memory streaming (64 MB)': 'const a = new Float32Array(16e6); for (;;) for (let i = 0; i < a.length; i += 16) a[i] += 1;',
  'sharp JPEG decode (640x480)': [
    "const sharp = (await import('sharp')).default;",
    'const jpeg = await sharp({ create: { width: 640, height: 480, channels: 3, noise: { type: "gaussian", mean: 128, sigma: 40 } } }).jpeg().toBuffer();',
    // One decode at a time: one core's worth, as the worker's decodes beside the model.
    'sharp.concurrency(1); for (;;) await sharp(jpeg).raw().toBuffer();',
  ].join('\n'),
};

function startLoad(script: string): ChildProcess {
  return spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: root, stdio: 'ignore' });
}

if (!existsSync(YOLOV8N_PATH)) {
  console.log(`SKIPPED: ${YOLOV8N_PATH} is absent (see shared/models/README.md)`);
  process.exit(0);
}
const session = await ort.InferenceSession.create(new Uint8Array(await readFile(YOLOV8N_PATH)), { ...withInferenceThreads(BARE_SESSION_OPTIONS, 1), executionProviders: ['cpu'] });
console.log(`core contention: YOLOv8n (640, batch 1, 1 intra-op thread), ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), median of ${RUNS} runs`);
const results = new Map<string, number[]>();
for (let round = 0; round < 2; round++) {
  for (const [name, script] of Object.entries(LOADS)) {
    const child = script ? startLoad(script) : undefined;
    // Let the load start (sharp builds its test image first).
    if (child) await new Promise((r) => setTimeout(r, 1500));
    try {
      results.set(name, [...(results.get(name) ?? []), await medianRunMs(session, 1, 640, RUNS)]);
    } finally {
      child?.kill('SIGKILL');
    }
  }
}
await session.release();
const baseline = Math.min(...results.get('other core idle')!);
console.log('load on the other core | ms per run (two rounds) | slowdown');
for (const [name, ms] of results) {
  console.log(`${name.padEnd(28)} | ${ms.map((m) => m.toFixed(1)).join(' / ').padStart(13)} | ${((Math.min(...ms) / baseline - 1) * 100).toFixed(0).padStart(4)}%`);
}
