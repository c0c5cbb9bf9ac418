/**
 * Side by side: seed 000's lock-and-skip design (bench/baseline/) vs. ours, on the same
 * local stack (DynamoDB Local + fauxqs), the same machine, the same `FrameProcessor` and
 * the same workload, in one run.
 *
 * Workload (both designs): `--videos` (8) synthetic videos with ground truth x `--frames`
 * frames, numbered from 1, uploaded interleaved like live cameras at a fixed total rate
 * (`--rate`, frames/s over all videos: frame f of video v is due at ((f-1)·V + v)/rate),
 * `--workers` (4) worker processes. Two scenarios per design: no fault, and `kill -9` of
 * the worker that last committed for the most videos when `--kill-at` (half) of the
 * uploads are done. A run ends when every uploaded frame has a record, or `--cap-s` after
 * the last upload (what is missing then counts as lost).
 *
 *  - Ours: the frames' S3 notifications go to the router, which pins videos to slots
 *    (`slotCount` = workers, `videosPerSlot` = videos / workers so every worker gets work,
 *    `firstFrameNumber` 1 since the clips start at 1); its workers are warmed up first.
 *  - Baseline: the uploader PUTs each frame (outside `frames/`, so our router never sees
 *    it) and sends the seed's message to the shared FIFO queue (group = video); 4 baseline
 *    workers (bench/baseline/worker.ts) long-poll it. The killed worker is replaced at once,
 *    as our janitor replaces ours.
 *
 * Measured per run: p50/p99 latency from the upload (PUT done, or PUT + send for the
 * baseline) to the record's `committedAtMs`; wasted receives (baseline: messages a worker
 * received and skipped for want of the lock; ours: frames forwarded to another slot or
 * dropped as duplicates, from the workers' EMF metrics); AWS calls per uploaded frame
 * and per recorded frame (every SDK call of router, janitor and workers through AWS_CALL_LOG,
 * plus the baseline producer's SendMessage; the user's PUTs and the emulated Lambda event source's own
 * receives are not counted); time from the first upload to the last frame's record;
 * frames lost (uploaded, no record, message gone), unfinished (no record, message still
 * queued at the cap) and doubled (baseline: committed more than once, from
 * the workers' event logs; ours: summary counts above the records); ID switches and IDF1
 * against ground truth (gpu-worker/vision/eval/mot.ts), and the failover stall (kill to
 * the first record of a killed worker's video by another worker; the longest over its videos).
 *
 *   npx node bench/compare.ts [--videos 8] [--frames 200] [--workers 4] [--rate 24] [--cap-s 90]
 *                             [--kill-at 0.5] [--seed 1] [--processor vision|stats] [--only baseline|ours]
 *
 * Prints one table and writes bench/results/compare.json. About 8 minutes at the defaults
 * (the issue's 8 videos x 200 frames) on a 2-core machine; `--frames 60` takes about 5.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { endMarkerKey, frameKey } from '../core/keys.ts';
import { allResults, getSummary } from '../core/aws/results-reader.ts';
import { evaluateMot, type MotFrame } from '../gpu-worker/vision/eval/mot.ts';
import { startLocalStack, type LocalStack } from '../local/stack.ts';
import { failoverSeconds } from '../cli/demo-lib.ts';
import { formatDurationMs, table } from '../cli/format.ts';
import { BaselineFleet, createBaselineResources, earlyEmptyReceives, readEvents, sendFrameMessage, SEED_SETTINGS, type BaselineResources } from './baseline/fleet.ts';
import { numberOption, percentile } from './support.ts';
import { emfValues, makeSegmentedVideo, tallyCallLog } from './workload.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

const { values: argv } = parseArgs({
  options: {
    videos: { type: 'string', default: '8' },
    frames: { type: 'string', default: '200' },
    workers: { type: 'string', default: '4' },
    rate: { type: 'string', default: '24' },
    'cap-s': { type: 'string', default: '90' },
    'kill-at': { type: 'string', default: '0.5' },
    seed: { type: 'string', default: '1' },
    processor: { type: 'string', default: 'vision' },
    uploaders: { type: 'string', default: '4' },
    only: { type: 'string' },
    'baseline-visibility-s': { type: 'string', default: String(SEED_SETTINGS.visibilitySeconds) },
    out: { type: 'string', default: join(HERE, 'results', 'compare.json') },
    help: { type: 'boolean', short: 'h' },
  },
});
if (argv.help) {
  console.log(
    'npx node bench/compare.ts [--videos 8] [--frames 200] [--workers 4] [--rate 24] [--cap-s 90] [--kill-at 0.5] [--seed 1]\n' +
      '  [--processor vision|stats] [--uploaders 4] [--only baseline|ours] [--baseline-visibility-s 30] [--out path]',
  );
  process.exit(0);
}
const num = (name: keyof typeof argv, min: number, max: number): number => numberOption(argv, name, min, max);
const opts = {
  videos: Math.round(num('videos', 1, 64)),
  frames: Math.round(num('frames', 4, 10_000)),
  workers: Math.round(num('workers', 2, 16)),
  rate: num('rate', 0.5, 1000),
  capMs: num('cap-s', 5, 3_600) * 1000,
  killAt: num('kill-at', 0.05, 0.95),
  seed: Math.round(num('seed', 0, 2 ** 31)),
  processor: argv.processor === 'stats' ? ('stats' as const) : ('vision' as const),
  uploaders: Math.round(num('uploaders', 1, 64)),
  only: argv.only as 'baseline' | 'ours' | undefined,
  baselineVisibilitySeconds: Math.round(num('baseline-visibility-s', 0, 43_200)),
  out: argv.out!,
};
if (argv.processor !== 'vision' && argv.processor !== 'stats') throw new Error(`--processor must be vision or stats (got ${argv.processor})`);
if (opts.only !== undefined && opts.only !== 'baseline' && opts.only !== 'ours') throw new Error(`--only must be baseline or ours (got ${opts.only})`);

type Design = 'baseline' | 'ours';
type Scenario = 'kill' | 'calm';

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));
const t0 = Date.now();
const clock = () => `${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s`;
const say = (line = '') => console.log(line);

process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
const stateDir = resolve('.local/bench-compare');
rmSync(stateDir, { recursive: true, force: true });
mkdirSync(stateDir, { recursive: true });
const callLog: Record<Design, string> = { ours: join(stateDir, 'calls-ours.log'), baseline: join(stateDir, 'calls-baseline.log') };
const eventsFile = join(stateDir, 'baseline-events.jsonl');
// The router and janitor run in this process and build their clients from process.env.
process.env.AWS_CALL_LOG = callLog.ours;

/** Our workers' wasted receives, from their EMF lines (summed while `counting`). */
const WASTE_METRICS = ['FramesForwarded', 'FramesDuplicate'] as const;
const oursWaste = { counting: false, FramesForwarded: 0, FramesDuplicate: 0 };
const workerErrors: string[] = [];

say(
  `compare: ${opts.videos} videos x ${opts.frames} frames at ${opts.rate} frames/s in total, ${opts.workers} workers, processor ${opts.processor}, ` +
    `cap ${opts.capMs / 1000} s after the last upload; generating clips and starting the local stack...`,
);
const [videos, stack] = await Promise.all([
  Promise.all(Array.from({ length: opts.videos }, (_, i) => makeSegmentedVideo(opts.seed, i, opts.frames))),
  startLocalStack({
    quiet: true,
    stateDir,
    routerWaitTimeSeconds: 1,
    workerStopGraceMs: 5_000,
    tunables: { slotCount: opts.workers, videosPerSlot: Math.max(1, Math.ceil(opts.videos / opts.workers)), firstFrameNumber: 1 },
    workerEnv: { FRAME_PROCESSOR: opts.processor, AWS_CALL_LOG: callLog.ours, METRICS_FLUSH_INTERVAL_MS: '1000' },
    log: (line) => {
      if (/error|fail/i.test(line)) workerErrors.push(line);
    },
    onWorkerLine: (line) => {
      if (oursWaste.counting) {
        const v = emfValues(line, WASTE_METRICS);
        for (const n of WASTE_METRICS) oursWaste[n] += v[n] ?? 0;
      }
    },
  }),
]);

/** What one run measured. */
interface RunReport {
  readonly design: Design;
  readonly scenario: Scenario;
  readonly outcome: 'complete' | 'cap';
  readonly framesUploaded: number;
  readonly framesRecorded: number;
  readonly latencyMs: { p50: number; p99: number; max: number; frames: number };
  readonly wastedReceives: number;
  readonly wastedDetail: Record<string, number>;
  /** Calls as SQS would have seen them (see {@link earlyEmptyReceives}); `awsCallsRaw` as logged. */
  readonly awsCalls: number;
  readonly awsCallsRaw: number;
  /** Calls over the whole run / frames uploaded. */
  readonly awsCallsPerFrame: number;
  /** Calls over the whole run / frames with a record (what each frame that got through cost). */
  readonly awsCallsPerRecordedFrame: number;
  readonly awsCallsByOperation: Record<string, number>;
  /** First upload to the last frame's record; null when frames were still missing at the cap. */
  readonly timeToFinishS: number | null;
  /** First upload to the end of the run (complete or cap). */
  readonly runS: number;
  readonly uploadsS: number;
  /** Uploaded, no record at the end, and no longer queued: dropped. */
  readonly framesLost: number;
  /** Uploaded, no record at the end, message still queued (the baseline's FIFO queue): the cap came first. */
  readonly framesUnfinished: number;
  readonly framesDoubled: number;
  readonly idSwitches: number;
  readonly idf1Mean: number;
  readonly kill: null | {
    readonly atS: number;
    readonly workerId: string;
    readonly videos: readonly string[];
    /** Longest stall over the killed worker's videos; null when one never resumed before the end. */
    readonly failoverStallS: number | null;
    /** Kill to the end of the run: the stall is longer than this when `failoverStallS` is null. */
    readonly untilEndS: number;
    readonly perVideoS: Record<string, number | null>;
  };
  readonly ownerChanges: number;
}

let baseline: { resources: BaselineResources; fleet: BaselineFleet } | undefined;
const reports: RunReport[] = [];
let exitCode = 0;
try {
  if (opts.only !== 'baseline') {
    await warmUpOurs(stack);
    for (const scenario of ['calm', 'kill'] as const) reports.push(await run(stack, 'ours', scenario));
  }
  if (opts.only !== 'ours') {
    // A fresh queue, tables and fleet per run: what one run leaves in its queue (the
    // baseline seldom finishes before the cap) must not compete with the next run.
    for (const scenario of ['calm', 'kill'] as const) {
      say(`${clock()}  baseline: creating its FIFO queue and tables, starting ${opts.workers} workers...`);
      const resources = await createBaselineResources(stack, opts.baselineVisibilitySeconds, `-${scenario}`);
      const fleet = new BaselineFleet({
        stack,
        resources,
        workers: opts.workers,
        eventsFile,
        callLog: callLog.baseline,
        env: { FRAME_PROCESSOR: opts.processor },
        onLine: (line) => {
          if (/error|fail/i.test(line)) workerErrors.push(line);
        },
      });
      baseline = { resources, fleet };
      await fleet.start();
      reports.push(await run(stack, 'baseline', scenario));
      await fleet.stop();
    }
  }
} catch (e) {
  exitCode = 1;
  say(`compare failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
} finally {
  say(`${clock()}  stopping...`);
  await baseline?.fleet.stop();
  await stack.stop();
}

if (reports.length > 0) {
  printTable(reports);
  const out = {
    command: `npx node bench/compare.ts ${process.argv.slice(2).join(' ')}`.trim(),
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? '?' },
    options: { ...opts, out: relative(process.cwd(), opts.out) },
    tunables: stack.tunables,
    baselineSettings: { ...SEED_SETTINGS, visibilitySeconds: opts.baselineVisibilitySeconds },
    notes: [
      'Indicative: a 2-core machine shared with other work; fauxqs hands out at most one message per FIFO group per receive (SQS: up to 10).',
      'Wasted receives: baseline = messages received by a worker that could not lock their video (left to reappear after the visibility timeout); ours = frames forwarded to the slot their video is pinned to, plus redelivered or duplicate frames dropped (workers\' EMF metrics).',
      'AWS calls: every SDK call of router, janitor and workers (AWS_CALL_LOG), plus the baseline producer\'s SendMessage per frame; uploads (PUT) and the emulated Lambda event source are not counted. fauxqs returns a FIFO long poll early and empty when a send wakes it for a blocked group; the baseline\'s such receives are replaced by the 20-s long polls SQS would have held (awsCallsRaw: as logged).',
      'Frames lost: uploaded frames without a record when the run ended whose message is no longer queued; frames unfinished: without a record, message still in the queue when the cap (after the last upload) came.',
    ],
    runs: reports,
    errorsSeen: workerErrors.slice(0, 20),
    runtimeS: (Date.now() - t0) / 1000,
  };
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, `${JSON.stringify(out, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`);
  say(`wrote ${relative(process.cwd(), opts.out)}`);
}
say(`done in ${formatDurationMs(Date.now() - t0)}`);
process.exitCode = exitCode;

// ---------------------------------------------------------------------------------------

/** Starts our workers (one per slot) with one-frame videos, so no run pays for process start and model load. */
async function warmUpOurs(s: LocalStack): Promise<void> {
  say(`${clock()}  ours: warming up ${opts.workers} workers...`);
  const source = { ddb: s.clients.ddb, resultsTable: s.wiring.resultsTable };
  const ids = Array.from({ length: opts.workers * s.tunables.videosPerSlot }, (_, i) => `warmup-${i}`);
  const image = videos[0]!.images.get(1)!;
  for (const id of ids) {
    await s.clients.s3.send(new PutObjectCommand({ Bucket: s.wiring.bucket, Key: frameKey(id, 1), Body: image }));
    await s.clients.s3.send(new PutObjectCommand({ Bucket: s.wiring.bucket, Key: endMarkerKey(id), Body: '1' }));
  }
  const until = Date.now() + 180_000;
  for (;;) {
    const sums = await Promise.all(ids.map((id) => getSummary(source, id)));
    if (sums.every((x) => x?.status === 'complete')) break;
    if (Date.now() > until) throw new Error('warm-up: our workers did not complete one frame per video in 180 s');
    await sleep(500);
  }
  say(`${clock()}  ours: ${s.launcher.workers().filter((w) => w.alive).length} workers up`);
}

async function run(s: LocalStack, design: Design, scenario: Scenario): Promise<RunReport> {
  const videoIds = Array.from({ length: opts.videos }, (_, i) => `${design === 'ours' ? 'ours' : 'base'}-${scenario}-${String(i + 1).padStart(2, '0')}`);
  const total = opts.videos * opts.frames;
  const plan = Array.from({ length: total }, (_, k) => {
    const frame = Math.floor(k / opts.videos) + 1;
    const v = k % opts.videos;
    return { v, videoId: videoIds[v]!, frame, dueMs: (k * 1000) / opts.rate };
  });
  const resultsTable = design === 'ours' ? s.wiring.resultsTable : baseline!.resources.resultsTable;
  const source = { ddb: s.clients.ddb, resultsTable };
  writeFileSync(callLog[design], '');
  if (design === 'baseline') writeFileSync(eventsFile, '');
  oursWaste.FramesForwarded = 0;
  oursWaste.FramesDuplicate = 0;
  oursWaste.counting = design === 'ours';
  let producerSends = 0;
  say(`${clock()}  ${design} / ${scenario === 'kill' ? 'kill -9 at the midpoint' : 'no fault'}: ${total} uploads over ${(total / opts.rate).toFixed(0)} s...`);

  const uploadClock = Date.now();
  const putDone = new Map<string, number>();
  let next = 0;
  let uploadError: unknown;
  let uploadsDoneMs: number | undefined;
  const lane = async () => {
    while (uploadError === undefined && next < plan.length) {
      const u = plan[next++]!;
      for (let wait = uploadClock + u.dueMs - Date.now(); wait > 0; wait = uploadClock + u.dueMs - Date.now()) await sleep(Math.min(wait, 500));
      const image = videos[u.v]!.images.get(u.frame)!;
      if (design === 'ours') {
        await s.clients.s3.send(new PutObjectCommand({ Bucket: s.wiring.bucket, Key: frameKey(u.videoId, u.frame), Body: image, ContentType: 'image/jpeg' }));
        putDone.set(`${u.videoId}:${u.frame}`, Date.now());
        if (u.frame === opts.frames) await s.clients.s3.send(new PutObjectCommand({ Bucket: s.wiring.bucket, Key: endMarkerKey(u.videoId), Body: String(opts.frames) }));
      } else {
        // Outside `frames/`: our router is not notified of the baseline's frames.
        const key = `baseline/${u.videoId}/${String(u.frame).padStart(6, '0')}.jpg`;
        await s.clients.s3.send(new PutObjectCommand({ Bucket: s.wiring.bucket, Key: key, Body: image, ContentType: 'image/jpeg' }));
        putDone.set(`${u.videoId}:${u.frame}`, Date.now());
        await sendFrameMessage(s, baseline!.resources.queueUrl, { videoId: u.videoId, frame: u.frame, bucket: s.wiring.bucket, key });
        producerSends++;
      }
    }
  };
  const uploading = Promise.all(Array.from({ length: opts.uploaders }, lane)).then(
    () => {
      uploadsDoneMs = Date.now();
    },
    (e: unknown) => {
      uploadError = e;
    },
  );

  /** Which worker committed each video's latest frame so far. */
  const latestOwners = async (): Promise<Map<string, string>> => {
    const owners = new Map<string, string>();
    if (design === 'ours') {
      for (const id of videoIds) {
        const sum = await getSummary(source, id);
        if (sum?.worker && sum.status !== 'complete') owners.set(id, sum.worker);
      }
    } else {
      for (const e of readEvents(eventsFile)) if (e.e === 'commit' && e.v) owners.set(e.v, e.w);
    }
    return owners;
  };
  const recordedCount = async (): Promise<number> => {
    if (design === 'ours') {
      const sums = await Promise.all(videoIds.map((id) => getSummary(source, id)));
      return sums.reduce((n, x) => n + (x ? x.framesOk + (x.framesLate ?? 0) + x.framesFailed + x.framesGap : 0), 0);
    }
    return new Set(readEvents(eventsFile).filter((e) => e.e === 'commit').map((e) => `${e.v}:${e.f}`)).size;
  };

  let kill: { atMs: number; workerId: string; videos: string[] } | undefined;
  let outcome: RunReport['outcome'] = 'cap';
  let lastPrint = 0;
  for (;;) {
    if (uploadError) throw uploadError;
    const recorded = await recordedCount();
    if (scenario === 'kill' && !kill && putDone.size >= total * opts.killAt) {
      const owners = await latestOwners();
      const byWorker = new Map<string, string[]>();
      for (const [v, w] of owners) byWorker.set(w, [...(byWorker.get(w) ?? []), v]);
      for (const [workerId, held] of [...byWorker].sort((a, b) => b[1].length - a[1].length)) {
        const atMs = Date.now();
        if (design === 'ours') {
          const w = s.launcher.workers().find((x) => x.alive && x.workerId === workerId);
          if (!w) continue;
          s.launcher.kill({ pid: w.pid }, 'SIGKILL');
        } else {
          const w = baseline!.fleet.workers.find((x) => x.alive && x.workerId === workerId);
          if (!w) continue;
          baseline!.fleet.kill(w.pid, 'SIGKILL');
          // As an auto-scaling group (or our janitor) would: a replacement at once.
          void baseline!.fleet.spawnOne().catch((e: unknown) => workerErrors.push(`baseline replacement: ${String(e)}`));
        }
        kill = { atMs, workerId, videos: held };
        say(`${clock()}  >>> SIGKILL ${workerId}, last to commit for ${held.join(', ')}, at ${putDone.size}/${total} uploads, ${recorded} records`);
        break;
      }
    }
    if (Date.now() - lastPrint >= 10_000) {
      lastPrint = Date.now();
      say(`${clock()}  uploaded ${putDone.size}/${total}  recorded ${recorded}`);
    }
    if (uploadsDoneMs !== undefined && recorded >= total) {
      outcome = 'complete';
      break;
    }
    if (uploadsDoneMs !== undefined && Date.now() > uploadsDoneMs + opts.capMs) break;
    await sleep(500);
  }
  const endMs = Date.now();
  await uploading;
  // Let the last EMF flush (1 s) and event lines land.
  await sleep(1_500);
  oursWaste.counting = false;

  // Collect.
  const perVideo = await Promise.all(videoIds.map((id) => allResults(source, id)));
  const events = design === 'baseline' ? readEvents(eventsFile) : [];
  const latency: number[] = [];
  let lost = 0;
  let recorded = 0;
  let lastCommit = 0;
  let idSwitches = 0;
  let idf1Sum = 0;
  let ownerChanges = 0;
  for (const [i, id] of videoIds.entries()) {
    const results = perVideo[i]!.filter((r) => r.frame >= 1);
    const byFrame = new Map(results.map((r) => [r.frame, r]));
    for (let f = 1; f <= opts.frames; f++) {
      const r = byFrame.get(f);
      if (!r || String(r.status) === 'gap') {
        lost++;
        continue;
      }
      recorded++;
      lastCommit = Math.max(lastCommit, r.committedAtMs);
      if (String(r.status) === 'ok') latency.push(r.committedAtMs - putDone.get(`${id}:${f}`)!);
    }
    const gt: MotFrame[] = videos[i]!.groundTruth.filter((g) => g.frame <= opts.frames).map((g) => ({ frame: g.frame, objects: g.objects.map((o) => ({ id: o.id, box: o.box })) }));
    const predictions: MotFrame[] = results
      .filter((r) => String(r.status) === 'ok' || String(r.status) === 'late')
      .map((r) => ({ frame: r.frame, objects: r.detections.filter((d) => d.trackId !== 0).map((d) => ({ id: d.trackId, box: d.box })) }));
    const mot = evaluateMot(gt, predictions);
    idSwitches += mot.idSwitches;
    idf1Sum += mot.idf1;
    const sorted = [...results].sort((a, b) => a.frame - b.frame);
    for (let k = 1; k < sorted.length; k++) if (sorted[k]!.worker !== sorted[k - 1]!.worker) ownerChanges++;
  }
  let doubled = 0;
  if (design === 'baseline') {
    const commits = new Map<string, number>();
    for (const e of events) if (e.e === 'commit') commits.set(`${e.v}:${e.f}`, (commits.get(`${e.v}:${e.f}`) ?? 0) + 1);
    for (const n of commits.values()) if (n > 1) doubled += n - 1;
  } else {
    for (const [i, id] of videoIds.entries()) {
      const sum = await getSummary(source, id);
      const counted = sum ? sum.framesOk + (sum.framesLate ?? 0) + sum.framesFailed + sum.framesGap : 0;
      doubled += Math.max(0, counted - perVideo[i]!.filter((r) => r.frame >= 1).length);
      void id;
    }
  }
  // Frames without a record whose message is still in the baseline's queue are unfinished, not lost.
  let unfinished = 0;
  if (design === 'baseline' && lost > 0) {
    const a = await s.clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: baseline!.resources.queueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
    );
    unfinished = Math.min(lost, Number(a.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0));
  }
  const calls = tallyCallLog(callLog[design]);
  // The baseline's empty receives that fauxqs answered early are counted as the long polls SQS would have held.
  const emulatorEarly = design === 'baseline' ? earlyEmptyReceives(events) : { early: 0, asLongPolls: 0 };
  const awsCallsRaw = calls.total + producerSends;
  const awsCalls = awsCallsRaw - emulatorEarly.early + emulatorEarly.asLongPolls;
  const byOperation = { ...calls.byOperation, ...(design === 'baseline' ? { 'producer.sqs.SendMessageCommand': producerSends } : {}) };
  const wastedDetail: Record<string, number> = design === 'baseline' ? { skippedForLock: events.filter((e) => e.e === 'skip').length } : { framesForwarded: oursWaste.FramesForwarded, framesDuplicate: oursWaste.FramesDuplicate };
  let killReport: RunReport['kill'] = null;
  if (kill) {
    const perVideoS: Record<string, number | null> = {};
    for (const [i, id] of videoIds.entries()) {
      if (!kill.videos.includes(id)) continue;
      perVideoS[id] = failoverSeconds(perVideo[i]!, kill.atMs, kill.workerId) ?? null;
    }
    const stalls = Object.values(perVideoS);
    killReport = {
      atS: (kill.atMs - uploadClock) / 1000,
      workerId: kill.workerId,
      videos: kill.videos,
      failoverStallS: stalls.length > 0 && stalls.every((x) => x !== null) ? Math.max(...(stalls as number[])) : null,
      untilEndS: (endMs - kill.atMs) / 1000,
      perVideoS,
    };
  }
  const report: RunReport = {
    design,
    scenario,
    outcome,
    framesUploaded: putDone.size,
    framesRecorded: recorded,
    latencyMs: { p50: percentile(latency, 50), p99: percentile(latency, 99), max: latency.length ? Math.max(...latency) : Number.NaN, frames: latency.length },
    wastedReceives: Object.values(wastedDetail).reduce((a, b) => a + b, 0),
    wastedDetail,
    awsCalls,
    awsCallsRaw,
    awsCallsPerFrame: Math.round((awsCalls / putDone.size) * 1000) / 1000,
    awsCallsPerRecordedFrame: recorded > 0 ? Math.round((awsCalls / recorded) * 1000) / 1000 : Number.NaN,
    awsCallsByOperation: byOperation,
    timeToFinishS: lost === 0 ? (lastCommit - uploadClock) / 1000 : null,
    runS: (endMs - uploadClock) / 1000,
    uploadsS: ((uploadsDoneMs ?? endMs) - uploadClock) / 1000,
    framesLost: lost - unfinished,
    framesUnfinished: unfinished,
    framesDoubled: doubled,
    idSwitches,
    idf1Mean: idf1Sum / videoIds.length,
    kill: killReport,
    ownerChanges,
  };
  say(
    `${clock()}  ${design} / ${scenario}: ${outcome}, ${recorded}/${total} recorded, latency p50 ${Math.round(report.latencyMs.p50)} ms p99 ${Math.round(report.latencyMs.p99)} ms, ` +
      `wasted receives ${report.wastedReceives}, ${report.awsCallsPerFrame} AWS calls/frame, ID switches ${idSwitches}` +
      (killReport ? `, failover stall ${killReport.failoverStallS ?? `> ${killReport.untilEndS.toFixed(0)}`} s` : ''),
  );
  return report;
}

function printTable(rs: readonly RunReport[]): void {
  const fmtS = (v: number | null, bound?: number) => (v !== null ? `${v.toFixed(1)} s` : bound !== undefined ? `> ${bound.toFixed(0)} s` : '-');
  const ratio = (o: number | null, b: number | null, oBound?: number, bBound?: number): string => {
    if (o === null && b === null) return '-';
    if (b === null) return bBound !== undefined && o !== null ? `< ${(o / bBound).toFixed(2)}` : '-';
    if (o === null) return oBound !== undefined && b !== 0 ? `> ${(oBound / b).toFixed(2)}` : '-';
    if (b === 0) return o === 0 ? '-' : 'inf';
    const x = o / b;
    return x === 0 || x >= 0.1 ? x.toFixed(2) : x.toPrecision(2);
  };
  const rows: (string | number)[][] = [];
  for (const scenario of ['kill', 'calm'] as const) {
    const b = rs.find((r) => r.design === 'baseline' && r.scenario === scenario);
    const o = rs.find((r) => r.design === 'ours' && r.scenario === scenario);
    const label = scenario === 'kill' ? 'kill -9' : 'no fault';
    const line = (metric: string, get: (r: RunReport) => number | null, fmt: (r: RunReport) => string, bound?: (r: RunReport) => number | undefined) =>
      rows.push([
        label,
        metric,
        b ? fmt(b) : '-',
        o ? fmt(o) : '-',
        b && o ? ratio(get(o), get(b), bound?.(o), bound?.(b)) : '-',
      ]);
    const msOf = (v: number) => (Number.isFinite(v) ? `${Math.round(v)} ms` : '-');
    line('latency p50', (r) => r.latencyMs.p50, (r) => msOf(r.latencyMs.p50));
    line('latency p99', (r) => r.latencyMs.p99, (r) => msOf(r.latencyMs.p99));
    line('wasted receives', (r) => r.wastedReceives, (r) => String(r.wastedReceives));
    line('AWS calls / uploaded frame', (r) => r.awsCallsPerFrame, (r) => r.awsCallsPerFrame.toFixed(2));
    line('AWS calls / recorded frame', (r) => r.awsCallsPerRecordedFrame, (r) => r.awsCallsPerRecordedFrame.toFixed(2));
    line('time to finish', (r) => r.timeToFinishS, (r) => fmtS(r.timeToFinishS, r.runS), (r) => r.runS);
    line('frames lost', (r) => r.framesLost, (r) => `${r.framesLost}/${r.framesUploaded}`);
    line('frames unfinished at the cap', (r) => r.framesUnfinished, (r) => `${r.framesUnfinished}/${r.framesUploaded}`);
    line('frames doubled', (r) => r.framesDoubled, (r) => String(r.framesDoubled));
    line('ID switches', (r) => r.idSwitches, (r) => String(r.idSwitches));
    line('IDF1 (mean)', (r) => r.idf1Mean, (r) => r.idf1Mean.toFixed(3));
    if (scenario === 'kill')
      line(
        'failover stall',
        (r) => r.kill?.failoverStallS ?? null,
        (r) => (r.kill ? fmtS(r.kill.failoverStallS, r.kill.untilEndS) : '-'),
        (r) => r.kill?.untilEndS,
      );
  }
  say('');
  for (const l of table(['scenario', 'metric', 'baseline (seed 000)', 'ours', 'ours/baseline'], rows)) say(`  ${l}`);
  say('');
}
