/**
 * AWS API calls per frame at a live rate (issue 20): `bench/api-calls.ts` measures a
 * backlog; here 8 cameras upload in real time, each at `fps` frames/s, into one slot, and
 * every SDK call of the router, the janitor and the worker is counted (AWS_CALL_LOG, as in
 * `bench/api-calls.ts`: the uploader's PUTs and the emulated Lambda event source's own
 * receives/deletes of the ingest queue are not counted). Each rate is run once per
 * `receiveGatherMs` value given (0 = the worker receives at once: the behaviour before
 * decision 31), on a fresh stack per value.
 *
 *   npx node bench/api-calls-live.ts [--fps 1,3,10,30] [--gather-ms 0,250] [--videos 8] [--seconds 20]
 *
 * Per rate: calls per frame (router + worker, the figure; router and worker shares;
 * janitor per second apart, since it runs every 5 s locally and every 60 s in AWS), the
 * worker's receives, delete batches and commits per frame, and the upload-to-record
 * latency (PUT done -> the record's `committedAtMs`) p50/p99/max over the frames recorded
 * `ok` (on time). Videos are numbered from 1 with `firstFrameNumber` 1, each video's
 * first frame is sent and recorded before counting starts (a new video's own calls are
 * `bench/api-calls.ts`'s), and frames are uploaded with the videos' phases spread evenly.
 *
 * fauxqs returns at most one message per FIFO group per receive (SQS: up to 10 of one
 * group), so above 1 frame per video per gather the local receive brings fewer frames
 * than SQS would: the worker figures here are an upper bound of AWS's. Latencies depend
 * on the machine's load; the load average is recorded next to each run.
 */
import { loadavg } from 'node:os';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { endMarkerKey, frameKey } from '../core/ingest/keys.ts';
import { allResults, countResults, getSummary } from '../core/commit/dynamodb/results-reader.ts';
import { DEFAULT_TUNABLES } from '../core/config.ts';
import type { LocalStack } from '../local/stack.ts';
import { benchMain, commandLine, freshCallLog, freshStateDir, machine, RESULTS_DIR, sleep, writeResult, type Bench } from './harness/main.ts';
import { parseFlags, type Flag } from './harness/options.ts';
import { startBenchStack } from './harness/stack.ts';
import { putObject, runUploads } from './harness/uploader.ts';

const FLAGS = {
  fps: { text: '1,3,10,30' },
  'gather-ms': { text: `0,${DEFAULT_TUNABLES.receiveGatherMs}` },
  videos: { num: [8, 1, 64], int: true },
  seconds: { num: [20, 2, 600] },
  'cap-s': { num: [240, 10, 3_600] },
  out: { text: join(RESULTS_DIR, 'api-calls-live.json') },
} as const satisfies Record<string, Flag>;

type Tally = Record<string, number>;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Counts the call log's lines by `role.service.operation`. */
function tally(callLog: string): Tally {
  const byOp: Tally = {};
  for (const line of readFileSync(callLog, 'utf8').split('\n')) {
    if (!line) continue;
    const [role, service, op] = line.split('\t');
    byOp[`${role}.${service}.${op}`] = (byOp[`${role}.${service}.${op}`] ?? 0) + 1;
  }
  return byOp;
}
const sum = (t: Tally, prefix: string) => Object.entries(t).filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0);
function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** One rate on a running stack: new videos, counted live uploads, then their end markers. */
async function runRate(stack: LocalStack, callLog: string, c: { fps: number; gatherMs: number; videos: number; seconds: number; capMs: number; image: Buffer }, bench: Bench) {
  const source = { ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable };
  const ids = Array.from({ length: c.videos }, (_, i) => `g${c.gatherMs}-fps${c.fps}-cam-${i}`);
  const waitRecords = async (n: number) => {
    const until = Date.now() + c.capMs;
    for (;;) {
      const counts = await Promise.all(ids.map((id) => countResults(source, id)));
      if (counts.every((x) => x >= n)) return true;
      if (Date.now() > until) return false;
      await sleep(250);
    }
  };
  // New videos first (their adoption is not a live-rate cost).
  for (const id of ids) await putObject(stack, frameKey(id, 1), c.image);
  if (!(await waitRecords(1))) throw new Error(`fps ${c.fps}: first frames not recorded`);
  await sleep(500);
  writeFileSync(callLog, '');
  const perVideo = Math.max(1, Math.round(c.fps * c.seconds));
  // Frame f (from 2) of video v is due at (f - 2 + v / V) / fps: the videos' phases spread evenly.
  const plan = Array.from({ length: perVideo * c.videos }, (_, k) => {
    const v = k % c.videos;
    const f = Math.floor(k / c.videos) + 2;
    return { v, f, dueMs: ((f - 2 + v / c.videos) / c.fps) * 1000 };
  });
  const loadBefore = loadavg()[0]!;
  const putDone = new Map<string, number>();
  const uploads = runUploads(plan, Math.min(16, c.videos), async (u) => {
    await putObject(stack, frameKey(ids[u.v]!, u.f), c.image, 'image/jpeg');
    putDone.set(`${ids[u.v]}:${u.f}`, Date.now());
  }, bench.interrupted);
  await uploads.finished;
  if (uploads.error()) throw uploads.error();
  const complete = await waitRecords(perVideo + 1);
  const calls = tally(callLog);
  const loadAfter = loadavg()[0]!;
  const frames = plan.length;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  for (const id of ids) {
    for (const r of await allResults(source, id)) {
      if (r.frame < 2) continue;
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      const put = putDone.get(`${id}:${r.frame}`);
      if (r.status === 'ok' && put !== undefined) latencies.push(r.committedAtMs - put);
    }
  }
  latencies.sort((a, b) => a - b);
  // Close the videos, so the next rate's slot holds only its own.
  for (const id of ids) await putObject(stack, endMarkerKey(id), String(perVideo + 1));
  const closeBy = Date.now() + 60_000;
  while (Date.now() < closeBy && !(await Promise.all(ids.map((id) => getSummary(source, id)))).every((s) => s?.status === 'complete')) await sleep(250);
  const router = sum(calls, 'router.');
  const worker = sum(calls, 'worker.');
  const op = (k: string) => round3((calls[k] ?? 0) / frames);
  const result = {
    fpsPerVideo: c.fps,
    receiveGatherMs: c.gatherMs,
    framesUploaded: frames,
    complete,
    statuses,
    callsPerFrame: round3((router + worker) / frames),
    routerPerFrame: round3(router / frames),
    workerPerFrame: round3(worker / frames),
    workerReceivePerFrame: op('worker.sqs.ReceiveMessageCommand'),
    workerDeletePerFrame: op('worker.sqs.DeleteMessageBatchCommand'),
    workerCommitPerFrame: op('worker.dynamodb.TransactWriteItemsCommand'),
    workerGetPerFrame: op('worker.s3.GetObjectCommand'),
    routerSendPerFrame: op('router.sqs.SendMessageBatchCommand'),
    framesPerCommit: round3(frames / Math.max(1, calls['worker.dynamodb.TransactWriteItemsCommand'] ?? 0)),
    janitorCalls: sum(calls, 'janitor.'),
    latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) ?? NaN, frames: latencies.length },
    loadAverage1m: { before: round3(loadBefore), after: round3(loadAfter) },
    operations: calls,
  };
  bench.say(
    `${bench.clock()}  gather ${c.gatherMs} ms, ${c.fps} fps x ${c.videos}: ${result.callsPerFrame} calls/frame (router ${result.routerPerFrame}, worker ${result.workerPerFrame}; ` +
      `receive ${result.workerReceivePerFrame}, delete ${result.workerDeletePerFrame}, commit ${result.workerCommitPerFrame}), p50/p99 ${result.latencyMs.p50}/${result.latencyMs.p99} ms, load ${result.loadAverage1m.before}-${result.loadAverage1m.after}`,
  );
  return result;
}

async function main(bench: Bench, args: readonly string[]): Promise<number> {
  const o = parseFlags('api-calls-live.ts', FLAGS, args);
  if (!o) return 0;
  const rates = o.fps.split(',').map(Number);
  const gathers = o.gatherMs.split(',').map(Number);
  const image = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 30, g: 160, b: 60 } } }).jpeg().toBuffer();
  const runs = [];
  for (const gatherMs of gathers) {
    const callLog = freshCallLog('api-calls-live');
    const { stack } = await startBenchStack({
      stateDir: freshStateDir(`api-calls-live-${gatherMs}`),
      tunables: { slotCount: 1, videosPerSlot: o.videos + 1, firstFrameNumber: 1, receiveGatherMs: gatherMs },
      workerEnv: { FRAME_PROCESSOR: 'stats', AWS_CALL_LOG: callLog },
    });
    try {
      // Warm-up: the worker's start is not billed to any rate.
      await putObject(stack, frameKey(`g${gatherMs}-warmup`, 1), image);
      await putObject(stack, endMarkerKey(`g${gatherMs}-warmup`), '1');
      while ((await countResults({ ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable }, `g${gatherMs}-warmup`)) < 1) await sleep(250);
      for (const fps of rates) runs.push(await runRate(stack, callLog, { fps, gatherMs, videos: o.videos, seconds: o.seconds, capMs: o.capS * 1000, image }, bench));
    } finally {
      await stack.stop();
    }
  }
  writeResult(o.out, {
    command: commandLine('api-calls-live.ts', args),
    date: new Date().toISOString(),
    machine: machine(),
    setup: { videos: o.videos, slots: 1, secondsPerRate: o.seconds, processor: 'stats', firstFrameNumber: 1 },
    notes: [
      'callsPerFrame = (router + worker SDK calls) / frames uploaded while counting; janitor calls apart (every 5 s locally, 60 s in AWS). Uploads and the emulated Lambda event source are not counted.',
      'fauxqs returns at most one message per FIFO group per receive (SQS: up to 10 of one group): above one frame per video per gather, receives here bring fewer frames than SQS would, so the worker figures are an upper bound of what AWS would show. No receive was replaced or corrected: every logged call counts.',
      'The emulated router event source invokes with what one long poll (1 s) returned and has no batching window; in AWS the window (routerBatchWindowSeconds) decides the router share.',
      'Latency: PUT done -> committedAtMs (stamped when the round that wrote the record began, before its fetch, inference and transaction), frames recorded ok; a 2-core machine shared with other work, load average recorded per run.',
    ],
    runs,
  }, bench.say);
  return 0;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  await benchMain('api-calls-live', (bench) => main(bench, args));
}
