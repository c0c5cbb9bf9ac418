/**
 * AWS API calls per routed frame, for the router and the worker separately, at steady
 * state and for a new video. Every SDK call the router, janitor and workers make is
 * logged by a middleware (AWS_CALL_LOG, see core/aws/clients.ts); the user's PUTs and
 * the emulated Lambda event source's own receive/delete are not counted (in AWS those
 * are S3's and Lambda's calls, not ours).
 *
 *   npx node bench/api-calls.ts [videos=8] [framesPerVideo=100] [lostPercent=1]
 *
 * Videos are numbered from 1, as ffmpeg writes them, so a new video's start costs the
 * worker one S3 LIST; in the steady state `lostPercent` of the frames are never uploaded,
 * so each of those costs one LIST to confirm its gap (docs/decisions.md, 12).
 *
 * Targets at steady state: router <= 0.1 DynamoDB requests per frame; all calls
 * (router + worker, including the one S3 GET a frame needs and the LISTs) <= 1.6 per frame;
 * at most 1 LIST per 100 frames per video.
 *
 * This is the backlog figure (uploads as fast as they go). Calls per frame at a live rate
 * (cameras uploading in real time, 1-30 fps each) are bench/api-calls-live.ts's.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { countResults } from '../core/commit/dynamodb/results-reader.ts';
import sharp from 'sharp';
import { frameKey } from '../core/ingest/keys.ts';
import { startLocalStack } from '../local/stack.ts';
import { freshCallLog, RESULTS_DIR, sleep, writeResult } from './harness/main.ts';

const videos = Number(process.argv[2] ?? 8);
const framesPerVideo = Number(process.argv[3] ?? 100);
const lostPercent = Number(process.argv[4] ?? 1);
const callLog = freshCallLog('api-calls');

const stack = await startLocalStack({
  quiet: true,
  stateDir: '.local/bench-api-calls',
  tunables: { slotCount: 1, videosPerSlot: videos + 1 },
  workerEnv: { FRAME_PROCESSOR: 'stats', AWS_CALL_LOG: callLog },
  routerWaitTimeSeconds: 1,
});
const image = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 30, g: 160, b: 60 } } }).jpeg().toBuffer();
const put = (key: string, body: Uint8Array | string) => stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: key, Body: body }));
const count = (videoId: string) => countResults({ ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable }, videoId);
async function waitAll(ids: string[], n: number) {
  for (;;) {
    const counts = await Promise.all(ids.map(count));
    if (counts.every((c) => c >= n)) return;
    await sleep(200);
  }
}
type Tally = Record<string, number>;
function tally(): { lines: string[]; byRoleService: Tally; byOp: Tally } {
  const lines = readFileSync(callLog, 'utf8').split('\n').filter(Boolean);
  const byRoleService: Tally = {};
  const byOp: Tally = {};
  for (const l of lines) {
    const [role, service, op] = l.split('\t');
    byRoleService[`${role}.${service}`] = (byRoleService[`${role}.${service}`] ?? 0) + 1;
    byOp[`${role}.${service}.${op}`] = (byOp[`${role}.${service}.${op}`] ?? 0) + 1;
  }
  return { lines, byRoleService, byOp };
}
function perFrame(t: Tally, frames: number): Record<string, number> {
  return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, Math.round((v / frames) * 1000) / 1000]));
}
function sum(t: Tally, pred: (k: string) => boolean): number {
  return Object.entries(t).filter(([k]) => pred(k)).reduce((a, [, v]) => a + v, 0);
}

let report: Record<string, unknown>;
try {
  // Warm-up: start the worker, so its start-up calls are not billed to the videos.
  await put(frameKey('warmup', 0), image);
  await waitAll(['warmup'], 1);
  await sleep(1500);

  // New videos: the first frame of each (numbered from 1: the start is decided by a listing).
  rmSync(callLog, { force: true });
  writeFileSync(callLog, '');
  const ids = Array.from({ length: videos }, (_, i) => `cam-${i}`);
  for (const id of ids) await put(frameKey(id, 1), image);
  await waitAll(ids, 1);
  await sleep(500);
  const fresh = tally();

  // Steady state: the following frames of the same videos, interleaved like live cameras;
  // a deterministic `lostPercent` of them never uploaded (their records are gaps).
  writeFileSync(callLog, '');
  const t0 = Date.now();
  const lostEvery = lostPercent > 0 ? Math.round(100 / lostPercent) : Infinity;
  let lost = 0;
  for (let f = 2; f <= framesPerVideo + 1; f++) {
    await Promise.all(
      ids.map((id, i) => {
        if ((f + i * 13) % lostEvery === 0) {
          lost++;
          return undefined;
        }
        return put(frameKey(id, f), image);
      }),
    );
  }
  // The last frame of each video closes the stream, so a loss near the end is not a tail.
  for (const id of ids) await put(frameKey(id, framesPerVideo + 2), image);
  await waitAll(ids, framesPerVideo + 2);
  const seconds = (Date.now() - t0) / 1000;
  const steady = tally();
  const frames = videos * (framesPerVideo + 1);
  const lists = sum(steady.byOp, (k) => k === 'worker.s3.ListObjectsV2Command');
  const steadyPerFrame = perFrame(steady.byRoleService, frames);
  const routerDdb = sum(steady.byRoleService, (k) => k === 'router.dynamodb') / frames;
  const total = sum(steady.byRoleService, (k) => k.startsWith('router.') || k.startsWith('worker.')) / frames;
  report = {
    setup: { videos, framesPerVideo, lostPercent, firstFrame: 1, slots: 1, emulator: 'fauxqs returns at most one message per FIFO group per receive (real SQS: up to 10)' },
    newVideo: {
      callsPerNewVideo: perFrame(fresh.byRoleService, videos),
      operations: perFrame(fresh.byOp, videos),
    },
    steadyState: {
      frames,
      seconds,
      callsPerFrame: steadyPerFrame,
      operations: perFrame(steady.byOp, frames),
      routerDynamoDbPerFrame: Math.round(routerDdb * 1000) / 1000,
      routerPlusWorkerPerFrame: Math.round(total * 1000) / 1000,
      framesNeverUploaded: lost,
      s3ListsPer100FramesPerVideo: Math.round((lists / frames) * 100 * 1000) / 1000,
      janitorCallsPerSecond: Math.round((sum(steady.byRoleService, (k) => k.startsWith('janitor.')) / seconds) * 100) / 100,
      targets: { routerDynamoDbPerFrame: 0.1, routerPlusWorkerPerFrame: 1.6, s3ListsPer100FramesPerVideo: 1 },
    },
  };
} finally {
  await stack.stop();
}
writeResult(join(RESULTS_DIR, 'api-calls.json'), report);
console.log(JSON.stringify(report, null, 2));
