/**
 * Soak with a hostile uploader, on the local stack (DynamoDB Local + fauxqs, router,
 * janitor, real worker processes), default tunables.
 *
 * Scenario (all draws seeded, so a run is reproducible up to timing):
 *  - N videos x F frames (default 8 x 300) of synthetic clips with ground truth, numbered
 *    from 1 like ffmpeg output (`000001.jpg` ...), default `firstFrameNumber` (automatic
 *    start). Each video is made of segments of {@link SEGMENT_FRAMES} frames from
 *    different clip seeds (a scene cut between them), so objects stay in view for the
 *    whole video; ground-truth IDs are distinct per segment.
 *  - Each video produces frames at `--fps` (default 10), videos staggered a little. A
 *    pool of `--uploaders` (default 8) parallel uploaders PUTs them through the S3 API,
 *    each frame delayed by a log-normal draw with median `--delay-p50-ms` and p99 at
 *    4 x reorderWaitMs (a heavy tail: a few frames come much later than the wait).
 *  - 1% of frames are never uploaded (never frame 1, which would just move the start);
 *    1% of the uploaded frames get a duplicated notification (local/s3-notifications.ts
 *    fault hook), the second copy 0 to 2 x reorderWaitMs after the first; `--strays`
 *    (default 4) frames are uploaded 40-60 frames ahead of their video's stream.
 *  - One worker (the one holding most videos) is killed with SIGKILL when half of the
 *    planned frames have a record (`--kill-at 0.5`; 0 = no kill).
 *  - After a video's last upload its `_end` marker is put (body: the last frame number,
 *    F, even when frame F was one of the never-uploaded ones). The run waits until every
 *    video's summary is `complete`, or nothing changed for `--quiet-s`, or `--timeout-s`.
 *
 * Measured:
 *  - records by status (ok, late, gap, failed) per video and in total, vs. frames uploaded;
 *  - frames that exist in S3 (a LIST at the end) but ended `gap` (target 0); uploaded
 *    frames with no record (target 0); never-uploaded frames that ended other than `gap`;
 *  - latency from upload (PUT completed, this process's clock) to the record's
 *    `committedAtMs` (worker's clock; same machine) for `ok` frames: p50 / p99 / max;
 *  - tracking against ground truth (gpu-worker/vision `evaluateMot`): IDF1, MOTA, ID
 *    switches, with `ok` and `late` detections (a late detection with trackId 0, i.e. no
 *    track associated, is left out and counted); ground truth restricted to uploaded
 *    frames. Also ID switches over `ok` frames only;
 *  - the largest video lease item seen (`video#<id>` in the leases table, polled every
 *    `--poll-ms`): DynamoDB's item size by its documented rules (attribute names + values,
 *    3 bytes per list/map + 1 per element), and the checkpoint attribute's JSON length;
 *  - uploaded vs. committed over time (from the summaries' counts), so a latency figure
 *    can be told apart from a backlog; the uploader pool's lag behind its plan;
 *  - with the vision processor, a baseline after the run: the same uploaded frames in order
 *    through one in-process VisionProcessor (no pipeline, no faults), so the soak's ID
 *    switches can be set against the tracker's own (`--no-baseline` skips it).
 *
 *   npx node bench/soak.ts [--videos 8] [--frames 300] [--seed 1] [--processor vision|stats]
 *
 * Prints a table and writes bench/results/soak.json.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { endMarkerKey, frameKey } from '../core/keys.ts';
import { allResults, getSummary } from '../core/aws/results-reader.ts';
import type { FrameResultItem, VideoSummaryItem } from '../core/results.ts';
import { videoKey } from '../core/aws/slot-lease-store.ts';
import { evaluateMot, type MotFrame } from '../gpu-worker/vision/eval/mot.ts';
import { createVisionProcessor, visionOptionsFromTunables } from '../gpu-worker/vision/index.ts';
import { rng } from '../core/random.ts';
import { startLocalStack, type LocalStack } from '../local/stack.ts';
import { failoverSeconds } from '../cli/demo-lib.ts';
import { formatDurationMs, table } from '../cli/format.ts';
import { listVideoObjects } from '../cli/read.ts';
import { Z99, ms, normal, numberOption, percentile } from './support.ts';
import { makeSegmentedVideo, SEGMENT_FRAMES } from './workload.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------------------------------
// Options

const { values: argv } = parseArgs({
  options: {
    videos: { type: 'string', default: '8' },
    frames: { type: 'string', default: '300' },
    seed: { type: 'string', default: '1' },
    processor: { type: 'string', default: 'vision' },
    fps: { type: 'string', default: '10' },
    uploaders: { type: 'string', default: '8' },
    'delay-p50-ms': { type: 'string', default: '200' },
    'lost-share': { type: 'string', default: '0.01' },
    'duplicate-share': { type: 'string', default: '0.01' },
    strays: { type: 'string', default: '4' },
    'kill-at': { type: 'string', default: '0.5' },
    'timeout-s': { type: 'string', default: '900' },
    'quiet-s': { type: 'string', default: '90' },
    'poll-ms': { type: 'string', default: '500' },
    'max-delay-ms': { type: 'string', default: '120000' },
    'no-baseline': { type: 'boolean' },
    out: { type: 'string', default: join(HERE, 'results', 'soak.json') },
    help: { type: 'boolean', short: 'h' },
  },
});
if (argv.help) {
  console.log(
    'npx node bench/soak.ts [--videos 8] [--frames 300] [--seed 1] [--processor vision|stats] [--fps 10] [--uploaders 8]\n' +
      '  [--delay-p50-ms 200] [--max-delay-ms 120000] [--lost-share 0.01] [--duplicate-share 0.01] [--strays 4] [--kill-at 0.5]\n' +
      '  [--timeout-s 900] [--quiet-s 90] [--poll-ms 500] [--no-baseline] [--out path]',
  );
  process.exit(0);
}
const num = (name: keyof typeof argv, min: number, max: number): number => numberOption(argv, name, min, max);
const opts = {
  videos: Math.round(num('videos', 1, 64)),
  frames: Math.round(num('frames', 20, 100_000)),
  seed: Math.round(num('seed', 0, 2 ** 31)),
  processor: argv.processor === 'stats' ? ('stats' as const) : ('vision' as const),
  fps: num('fps', 0.1, 1000),
  uploaders: Math.round(num('uploaders', 1, 256)),
  delayP50Ms: num('delay-p50-ms', 1, 600_000),
  lostShare: num('lost-share', 0, 0.5),
  duplicateShare: num('duplicate-share', 0, 1),
  strays: Math.round(num('strays', 0, 1000)),
  killAt: num('kill-at', 0, 1),
  timeoutMs: num('timeout-s', 10, 86_400) * 1000,
  quietMs: num('quiet-s', 5, 86_400) * 1000,
  pollMs: num('poll-ms', 50, 60_000),
  maxDelayMs: num('max-delay-ms', 1, 3_600_000),
  baseline: !argv['no-baseline'],
  out: argv.out!,
};
if (argv.processor !== 'vision' && argv.processor !== 'stats') throw new Error(`--processor must be vision or stats (got ${argv.processor})`);

// ---------------------------------------------------------------------------------------
// Pure helpers


/** Significant digits of a DynamoDB number (leading and trailing zeros trimmed). */
function numberBytes(n: string): number {
  const mantissa = n.replace(/^[-+]/, '').split(/[eE]/)[0]!.replace('.', '');
  const digits = mantissa.replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/**
 * Size of an attribute value by DynamoDB's documented rules (CapacityUnitCalculations):
 * strings UTF-8, numbers 1 byte per two significant digits + 1, binary raw length,
 * bool/null 1, list/map 3 bytes + 1 per element + the elements (map keys included).
 */
function attributeValueBytes(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S);
  if (v.N !== undefined) return numberBytes(v.N);
  if (v.B !== undefined) return v.B.length;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS !== undefined) return v.SS.reduce((n, s) => n + Buffer.byteLength(s), 0);
  if (v.NS !== undefined) return v.NS.reduce((n, s) => n + numberBytes(s), 0);
  if (v.BS !== undefined) return v.BS.reduce((n, b) => n + b.length, 0);
  if (v.L !== undefined) return 3 + v.L.reduce((n, e) => n + 1 + attributeValueBytes(e), 0);
  if (v.M !== undefined) return 3 + Object.entries(v.M).reduce((n, [k, e]) => n + Buffer.byteLength(k) + 1 + attributeValueBytes(e), 0);
  return 0;
}

function itemBytes(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + attributeValueBytes(v), 0);
}

// ---------------------------------------------------------------------------------------
// Plan

interface PlannedUpload {
  readonly videoId: string;
  readonly frame: number;
  /** When the camera produced the frame (ms after the upload clock starts). */
  readonly producedMs: number;
  /** When the uploader may PUT it. */
  readonly dueMs: number;
  /** Drawn delay (due - produced); negative for a stray uploaded ahead. */
  readonly delayMs: number;
  readonly stray?: { readonly aheadBy: number };
  /** The notification is sent twice, the second copy this long after the first. */
  readonly duplicateAfterMs?: number;
}

interface Plan {
  readonly videoIds: readonly string[];
  readonly uploads: readonly PlannedUpload[];
  readonly lost: ReadonlyMap<string, readonly number[]>;
  readonly sigma: number;
}

function makePlan(reorderWaitMs: number): Plan {
  const rand = rng(opts.seed * 7919 + 17);
  const videoIds = Array.from({ length: opts.videos }, (_, i) => `soak-${String(i + 1).padStart(2, '0')}`);
  const frameMs = 1000 / opts.fps;
  const p99 = 4 * reorderWaitMs;
  // Log-normal with median delayP50Ms and 99th percentile 4 x reorderWaitMs.
  const sigma = Math.max(0.01, Math.log(p99 / opts.delayP50Ms) / Z99);
  const all = videoIds.flatMap((videoId) => Array.from({ length: opts.frames }, (_, i) => ({ videoId, frame: i + 1 })));
  const key = (v: string, f: number) => `${v}:${f}`;

  // Strays: frames 40-60 ahead of the stream, spread over the videos, in the middle of each.
  const strays = new Map<string, number>();
  for (let i = 0; i < opts.strays && opts.frames > 80; i++) {
    const videoId = videoIds[i % videoIds.length]!;
    for (let tries = 0; tries < 100; tries++) {
      const frame = 70 + Math.floor(rand() * (opts.frames - 80));
      if (!strays.has(key(videoId, frame))) {
        strays.set(key(videoId, frame), 40 + Math.floor(rand() * 21));
        break;
      }
    }
  }
  // Lost: never uploaded (not frame 1, not a stray).
  const lostCount = Math.round(all.length * opts.lostShare);
  const lostKeys = new Set<string>();
  const candidates = all.filter((x) => x.frame !== 1 && !strays.has(key(x.videoId, x.frame)));
  while (lostKeys.size < Math.min(lostCount, candidates.length)) {
    const c = candidates[Math.floor(rand() * candidates.length)]!;
    lostKeys.add(key(c.videoId, c.frame));
  }
  const uploadable = all.filter((x) => !lostKeys.has(key(x.videoId, x.frame)));
  const dupCount = Math.round(uploadable.length * opts.duplicateShare);
  const dups = new Map<string, number>();
  while (dups.size < Math.min(dupCount, uploadable.length)) {
    const c = uploadable[Math.floor(rand() * uploadable.length)]!;
    if (!dups.has(key(c.videoId, c.frame))) dups.set(key(c.videoId, c.frame), Math.round(rand() * 2 * reorderWaitMs));
  }

  const uploads: PlannedUpload[] = uploadable.map(({ videoId, frame }) => {
    const v = videoIds.indexOf(videoId);
    const startMs = (v * frameMs) / videoIds.length + v * 97;
    const producedMs = startMs + (frame - 1) * frameMs;
    const aheadBy = strays.get(key(videoId, frame));
    const delayMs = aheadBy !== undefined ? -aheadBy * frameMs : Math.min(opts.maxDelayMs, opts.delayP50Ms * Math.exp(sigma * normal(rand)));
    const dup = dups.get(key(videoId, frame));
    return {
      videoId,
      frame,
      producedMs,
      dueMs: Math.max(0, producedMs + delayMs),
      delayMs,
      ...(aheadBy !== undefined ? { stray: { aheadBy } } : {}),
      ...(dup !== undefined ? { duplicateAfterMs: dup } : {}),
    };
  });
  uploads.sort((a, b) => a.dueMs - b.dueMs);
  const lost = new Map<string, number[]>(videoIds.map((id) => [id, []]));
  for (const k of lostKeys) {
    const [v, f] = k.split(':');
    lost.get(v!)!.push(Number(f));
  }
  for (const l of lost.values()) l.sort((a, b) => a - b);
  return { videoIds, uploads, lost, sigma };
}

// ---------------------------------------------------------------------------------------
// Run

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));
const t0 = Date.now();
const say = (line = '') => console.log(line);
const clock = () => `${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s`;

process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const stateDir = '.local/bench-soak';
rmSync(stateDir, { recursive: true, force: true });
const stackLines: string[] = [];
const workerTail: string[] = [];
let dupOf = new Map<string, number>();

say(`soak: ${opts.videos} videos x ${opts.frames} frames, processor ${opts.processor}, seed ${opts.seed}; generating clips and starting the local stack...`);
const [videos, stack] = await Promise.all([
  Promise.all(Array.from({ length: opts.videos }, (_, i) => makeSegmentedVideo(opts.seed, i, opts.frames))),
  startLocalStack({
    quiet: true,
    stateDir,
    routerWaitTimeSeconds: 1,
    workerStopGraceMs: 5_000,
    workerEnv: { FRAME_PROCESSOR: opts.processor },
    // Decided per key from the plan (filled in below, before any frame is uploaded).
    notificationFault: (key) => {
      const afterMs = dupOf.get(key);
      return afterMs !== undefined ? { kind: 'duplicate', afterMs } : undefined;
    },
    log: (line) => stackLines.push(line),
    onWorkerLine: (line) => {
      workerTail.push(line);
      if (workerTail.length > 60) workerTail.shift();
    },
  }),
]);

let interrupted = false;
const onSignal = () => {
  interrupted = true;
};
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);

let exitCode = 0;
let report: Awaited<ReturnType<typeof run>> | undefined;
try {
  report = await run(stack);
  exitCode = report.ok ? 0 : 1;
} catch (e) {
  exitCode = 1;
  say(`soak failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  say('worker output (last lines):');
  for (const l of workerTail) say(`  ${l}`);
} finally {
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  // Stops the upload lanes and the lease poller, should run() have left them running.
  interrupted = true;
  say(`${clock()}  stopping the stack...`);
  await stack.stop();
}
if (report) {
  const out: Record<string, unknown> = report.out;
  if (opts.processor === 'vision' && opts.baseline) {
    say(`${clock()}  baseline: the same uploaded frames in order through one in-process VisionProcessor (no pipeline, no faults)...`);
    const rows = await baseline(stack.tunables, report.videoIds, report.uploadedFrames);
    const soakRows = report.out.videos;
    for (const line of table(
      ['video', 'soak IDF1', 'baseline IDF1', 'soak IDSW', 'baseline IDSW'],
      rows.map((b, i) => [b.videoId, soakRows[i]!.tracking.idf1.toFixed(3), b.idf1.toFixed(3), soakRows[i]!.tracking.idSwitches, b.idSwitches]),
    ))
      say(`  ${line}`);
    const idsw = rows.reduce((n, b) => n + b.idSwitches, 0);
    say(`ID switches: soak ${report.out.totals.idSwitches}, baseline ${idsw} (the soak's excess is what the pipeline added: late frames, failover, gaps)`);
    out.baseline = { method: 'uploaded frames in order, one in-process VisionProcessor, same tunables', idSwitches: idsw, idf1Mean: rows.reduce((n, b) => n + b.idf1, 0) / rows.length, videos: rows };
  }
  out.runtimeS = (Date.now() - t0) / 1000;
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, `${JSON.stringify(out, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`);
  say(`wrote ${relative(process.cwd(), opts.out)}`);
}
say(`done in ${formatDurationMs(Date.now() - t0)}`);
process.exitCode = exitCode;

async function run(stack: LocalStack) {
  const t = stack.tunables;
  const plan = makePlan(t.reorderWaitMs);
  dupOf = new Map(plan.uploads.filter((u) => u.duplicateAfterMs !== undefined).map((u) => [frameKey(u.videoId, u.frame), u.duplicateAfterMs!]));
  const source = { ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable };
  const target = { clients: stack.clients, bucket: stack.wiring.bucket };
  const imageOf = (u: PlannedUpload) => videos[plan.videoIds.indexOf(u.videoId)]!.images.get(u.frame)!;
  const plannedDelays = plan.uploads.filter((u) => !u.stray).map((u) => u.delayMs);
  say(
    `${clock()}  stack up; tunables: reorderWaitMs ${t.reorderWaitMs}, firstFrameNumber ${t.firstFrameNumber}, slotCount ${t.slotCount}, ` +
      `videosPerSlot ${t.videosPerSlot}, slot lease ${t.slotLeaseTtlSeconds} s, slot-queue visibility ${t.slotQueueVisibilitySeconds} s`,
  );
  say(
    `${clock()}  plan: ${plan.uploads.length} uploads (${[...plan.lost.values()].reduce((n, l) => n + l.length, 0)} frames never uploaded, ` +
      `${dupOf.size} duplicated notifications, ${plan.uploads.filter((u) => u.stray).length} strays 40-60 frames ahead), ${opts.uploaders} uploaders, ` +
      `${opts.fps} fps per video; delay log-normal median ${opts.delayP50Ms} ms sigma ${plan.sigma.toFixed(2)} (p99 target ${4 * t.reorderWaitMs} ms): ` +
      `drawn p50 ${ms(percentile(plannedDelays, 50))} p99 ${ms(percentile(plannedDelays, 99))} max ${ms(Math.max(...plannedDelays))}`,
  );

  // Uploads: a pool of lanes takes the plan in due order; each waits for its item's due time.
  const uploadClock = Date.now();
  const putDoneMs = new Map<string, number>();
  const actualDelays: number[] = [];
  /** PUT done - due: how far the uploader pool (and the emulator behind it) fell behind the plan. */
  const uploaderLag: number[] = [];
  const remaining = new Map(plan.videoIds.map((id) => [id, plan.uploads.filter((u) => u.videoId === id).length]));
  const endPutMs = new Map<string, number>();
  let next = 0;
  let uploadError: unknown;
  const lane = async () => {
    while (uploadError === undefined && !interrupted && next < plan.uploads.length) {
      const u = plan.uploads[next++]!;
      // In short steps, so that a stop does not wait for a far-off due time.
      for (let wait = uploadClock + u.dueMs - Date.now(); wait > 0 && !interrupted; wait = uploadClock + u.dueMs - Date.now()) await sleep(Math.min(wait, 500));
      if (interrupted) break;
      await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: frameKey(u.videoId, u.frame), Body: imageOf(u), ContentType: 'image/jpeg' }));
      const done = Date.now();
      putDoneMs.set(`${u.videoId}:${u.frame}`, done);
      if (!u.stray) actualDelays.push(done - uploadClock - u.producedMs);
      uploaderLag.push(done - uploadClock - u.dueMs);
      const left = remaining.get(u.videoId)! - 1;
      remaining.set(u.videoId, left);
      if (left === 0) {
        await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: endMarkerKey(u.videoId), Body: String(opts.frames) }));
        endPutMs.set(u.videoId, Date.now());
      }
    }
  };
  let uploadsDoneMs: number | undefined;
  const uploading = Promise.all(Array.from({ length: opts.uploaders }, lane)).then(
    () => {
      uploadsDoneMs = Date.now();
    },
    (e: unknown) => {
      uploadError = e;
    },
  );

  // Lease items: the largest seen.
  const biggest = { itemBytes: 0, checkpointJsonBytes: 0, itemVideo: '', checkpointVideo: '', atS: 0, samples: 0 };
  let polling = true;
  const poller = (async () => {
    while (polling && !interrupted) {
      for (const id of plan.videoIds) {
        try {
          const r = await stack.clients.dynamodb.send(new GetItemCommand({ TableName: stack.wiring.leasesTable, Key: { pk: { S: videoKey(id) } }, ConsistentRead: true }));
          if (!r.Item) continue;
          biggest.samples++;
          const size = itemBytes(r.Item);
          if (size > biggest.itemBytes) Object.assign(biggest, { itemBytes: size, itemVideo: id, atS: (Date.now() - uploadClock) / 1000 });
          const ck = r.Item.checkpoint ? Buffer.byteLength(JSON.stringify(unmarshall({ c: r.Item.checkpoint }).c)) : 0;
          if (ck > biggest.checkpointJsonBytes) Object.assign(biggest, { checkpointJsonBytes: ck, checkpointVideo: id });
        } catch {
          // DynamoDB Local busy or stopping: the next sample will do.
        }
      }
      await sleep(opts.pollMs);
    }
  })();

  // Watch: progress, the kill, completion.
  const expected = plan.uploads.length;
  let kill: { atMs: number; workerId: string; slot: number; pid: number; videos: string[]; atRecords: number } | undefined;
  let lastTotal = -1;
  /** Uploaded vs. committed over time: the backlog behind the latency figures. */
  const timeline: { atS: number; uploaded: number; records: number }[] = [];
  let lastComplete = 0;
  let lastChangeMs = Date.now();
  let lastPrintMs = 0;
  let outcome: 'complete' | 'quiet' | 'timeout' | 'interrupted' = 'timeout';
  const deadline = t0 + opts.timeoutMs;
  for (;;) {
    if (uploadError) throw uploadError;
    // Records counted from the summaries (one GetItem per video): counting items with
    // queries would load DynamoDB Local, and so the run, more as the tables grow.
    const summaries = await Promise.all(plan.videoIds.map((id) => getSummary(source, id)));
    const total = summaries.reduce((n, s) => n + (s ? s.framesOk + (s.framesLate ?? 0) + s.framesFailed + s.framesGap : 0), 0);
    if (total !== lastTotal) {
      lastTotal = total;
      lastChangeMs = Date.now();
    }
    timeline.push({ atS: Math.round((Date.now() - uploadClock) / 100) / 10, uploaded: putDoneMs.size, records: total });
    const complete = summaries.filter((s) => s?.status === 'complete').length;
    lastComplete = complete;
    if (Date.now() - lastPrintMs >= 5_000) {
      lastPrintMs = Date.now();
      const alive = stack.launcher.workers().filter((w) => w.alive).length;
      const n = stack.notifier.counts;
      say(
        `${clock()}  uploaded ${putDoneMs.size}/${expected}  records ${total}  complete ${complete}/${plan.videoIds.length}  ` +
          `workers alive ${alive}  notifications sent ${n.sent} (duplicated ${n.duplicated})`,
      );
    }
    if (!kill && opts.killAt > 0 && total >= expected * opts.killAt) {
      const owners = new Map<string, string[]>();
      for (const s of summaries) if (s?.worker && s.status !== 'complete') owners.set(s.worker, [...(owners.get(s.worker) ?? []), s.videoId]);
      const busiest = [...owners.entries()].sort((a, b) => b[1].length - a[1].length);
      for (const [workerId, held] of busiest) {
        const w = stack.launcher.workers().find((x) => x.alive && x.workerId === workerId);
        if (!w) continue;
        const atMs = Date.now();
        stack.launcher.kill({ pid: w.pid }, 'SIGKILL');
        kill = { atMs, workerId, slot: w.slot, pid: w.pid, videos: held, atRecords: total };
        say(`${clock()}  >>> SIGKILL worker ${workerId} (slot ${w.slot}, pid ${w.pid}) holding ${held.join(', ')} at ${total}/${expected} records`);
        break;
      }
    }
    if (interrupted) {
      outcome = 'interrupted';
      break;
    }
    if (uploadsDoneMs !== undefined && complete === plan.videoIds.length) {
      outcome = 'complete';
      break;
    }
    if (uploadsDoneMs !== undefined && Date.now() - Math.max(lastChangeMs, uploadsDoneMs) > opts.quietMs) {
      outcome = 'quiet';
      break;
    }
    if (Date.now() > deadline) break;
    await sleep(1_000);
  }
  const finishedMs = Date.now();
  // On a timeout, uploads may still be waiting for their due time: stop them.
  if (outcome === 'timeout') interrupted = true;
  say(`${clock()}  ${outcome} (${lastComplete} of ${plan.videoIds.length} videos complete); waiting for delayed duplicate notifications...`);
  // Second copies of duplicated notifications may still be due: let them arrive and be
  // handled (they must change nothing), bounded.
  await Promise.race([stack.notifier.flush({ delayed: true }), sleep(2 * t.reorderWaitMs + 1_000)]);
  await sleep(Math.min(10_000, 2 * t.reorderWaitMs));
  polling = false;
  await poller;
  await uploading;

  // Collect.
  const allOkLatency: number[] = [];
  const allLateLatency: number[] = [];
  const reasons = new Map<string, number>();
  const collect = async (i: number, videoId: string) => {
    const results: FrameResultItem[] = await allResults(source, videoId);
    const summary: VideoSummaryItem | undefined = await getSummary(source, videoId);
    const listed = new Set(
      (await listVideoObjects(target, videoId)).map((o) => Number(/\/(\d+)\.[a-z]+$/i.exec(o.key)?.[1] ?? Number.NaN)).filter((f) => Number.isFinite(f)),
    );
    const byFrame = new Map(results.map((r) => [r.frame, r]));
    const uploadedFrames = plan.uploads.filter((u) => u.videoId === videoId).map((u) => u.frame);
    const putFrames = uploadedFrames.filter((f) => putDoneMs.has(`${videoId}:${f}`));
    const lost = plan.lost.get(videoId)!;
    const status = { ok: 0, late: 0, gap: 0, failed: 0, other: 0 };
    for (const r of results) {
      const s = String(r.status);
      if (s === 'ok' || s === 'late' || s === 'gap' || s === 'failed') status[s]++;
      else status.other++;
      if (s === 'failed') reasons.set(r.reason ?? '?', (reasons.get(r.reason ?? '?') ?? 0) + 1);
      // Gap runs from before gaps were per frame: count their frames.
      if (s === 'gap' && r.throughFrame !== undefined) status.gap += r.throughFrame - r.frame;
    }
    const gapFrames = new Set<number>();
    for (const r of results) if (String(r.status) === 'gap') for (let f = r.frame; f <= (r.throughFrame ?? r.frame); f++) gapFrames.add(f);
    const existsButGap = [...listed].filter((f) => gapFrames.has(f)).sort((a, b) => a - b);
    const noRecord = putFrames.filter((f) => !byFrame.has(f) && !gapFrames.has(f));
    const lostNotGap = lost.filter((f) => !gapFrames.has(f));
    const lostOutcome = lostNotGap.map((f) => `${f}:${byFrame.get(f)?.status ?? 'none'}`);
    const unexpected = results.filter((r) => r.frame < 1 || r.frame > opts.frames).map((r) => r.frame);
    const okLatency: number[] = [];
    const lateLatency: number[] = [];
    for (const r of results) {
      const put = putDoneMs.get(`${videoId}:${r.frame}`);
      if (put === undefined) continue;
      if (String(r.status) === 'ok') okLatency.push(r.committedAtMs - put);
      if (String(r.status) === 'late') lateLatency.push(r.committedAtMs - put);
    }
    allOkLatency.push(...okLatency);
    allLateLatency.push(...lateLatency);

    // Tracking: ground truth of uploaded frames vs. ok + late detections (trackId 0 left out).
    const gtFrames = new Set(putFrames);
    const gt: MotFrame[] = videos[i]!.groundTruth.filter((g) => gtFrames.has(g.frame)).map((g) => ({ frame: g.frame, objects: g.objects.map((o) => ({ id: o.id, box: o.box })) }));
    let lateUnassociated = 0;
    const predictions = (withLate: boolean): MotFrame[] =>
      results
        .filter((r) => String(r.status) === 'ok' || (withLate && String(r.status) === 'late'))
        .map((r) => ({
          frame: r.frame,
          objects: r.detections
            .filter((d) => {
              if (d.trackId !== 0) return true;
              if (withLate) lateUnassociated++;
              return false;
            })
            .map((d) => ({ id: d.trackId, box: d.box })),
        }));
    const mot = evaluateMot(gt, predictions(true));
    const motOk = evaluateMot(
      gt.filter((g) => String(byFrame.get(g.frame)?.status) === 'ok'),
      predictions(false),
    );
    const fo = kill ? failoverSeconds(results, kill.atMs, kill.workerId) : undefined;
    return {
      videoId,
      planned: opts.frames,
      uploaded: putFrames.length,
      neverUploaded: lost.length,
      strays: plan.uploads.filter((u) => u.videoId === videoId && u.stray).map((u) => ({ frame: u.frame, aheadBy: u.stray!.aheadBy, status: byFrame.get(u.frame)?.status ?? 'none' })),
      duplicated: plan.uploads.filter((u) => u.videoId === videoId && u.duplicateAfterMs !== undefined).length,
      records: results.length,
      status,
      existsButGap,
      uploadedNoRecord: noRecord,
      neverUploadedNotGap: lostOutcome,
      unexpectedFrames: unexpected,
      summary: summary
        ? {
            status: summary.status,
            framesOk: summary.framesOk,
            framesLate: summary.framesLate,
            framesFailed: summary.framesFailed,
            framesGap: summary.framesGap,
            firstFrame: summary.firstFrame,
            lastFrame: summary.lastFrame,
            endFrame: summary.endFrame,
            ownerChanges: summary.ownerChanges,
          }
        : null,
      latencyOkMs: { p50: percentile(okLatency, 50), p99: percentile(okLatency, 99), max: okLatency.length ? Math.max(...okLatency) : Number.NaN },
      latencyLateMs: { p50: percentile(lateLatency, 50), p99: percentile(lateLatency, 99) },
      tracking: {
        idf1: mot.idf1,
        mota: mot.mota,
        idSwitches: mot.idSwitches,
        idSwitchesOkOnly: motOk.idSwitches,
        groundTruthTracks: new Set(gt.flatMap((g) => g.objects.map((o) => o.id))).size,
        predictedTracks: new Set(results.flatMap((r) => r.detections.map((d) => d.trackId)).filter((x) => x !== 0)).size,
        lateDetectionsWithoutTrack: lateUnassociated,
      },
      workers: [...new Set([...results].sort((a, b) => a.frame - b.frame).map((r) => r.worker))],
      failoverSeconds: fo ?? null,
      endMarkerPutS: endPutMs.has(videoId) ? (endPutMs.get(videoId)! - uploadClock) / 1000 : null,
    };
  };
  const perVideo: Awaited<ReturnType<typeof collect>>[] = [];
  for (const [i, videoId] of plan.videoIds.entries()) perVideo.push(await collect(i, videoId));

  const sum = (f: (v: (typeof perVideo)[number]) => number) => perVideo.reduce((n, v) => n + f(v), 0);
  const totals = {
    planned: sum((v) => v.planned),
    uploaded: sum((v) => v.uploaded),
    neverUploaded: sum((v) => v.neverUploaded),
    records: sum((v) => v.records),
    ok: sum((v) => v.status.ok),
    late: sum((v) => v.status.late),
    gap: sum((v) => v.status.gap),
    failed: sum((v) => v.status.failed),
    other: sum((v) => v.status.other),
    existsButGap: sum((v) => v.existsButGap.length),
    uploadedNoRecord: sum((v) => v.uploadedNoRecord.length),
    neverUploadedNotGap: sum((v) => v.neverUploadedNotGap.length),
    unexpectedFrames: sum((v) => v.unexpectedFrames.length),
    idSwitches: sum((v) => v.tracking.idSwitches),
    idSwitchesOkOnly: sum((v) => v.tracking.idSwitchesOkOnly),
    complete: perVideo.filter((v) => v.summary?.status === 'complete').length,
  };
  const idf1Mean = perVideo.reduce((n, v) => n + v.tracking.idf1, 0) / perVideo.length;
  const latencyOk = { p50: percentile(allOkLatency, 50), p99: percentile(allOkLatency, 99), max: allOkLatency.length ? Math.max(...allOkLatency) : Number.NaN };
  const latencyLate = { p50: percentile(allLateLatency, 50), p99: percentile(allLateLatency, 99) };
  const lag = { p50: percentile(uploaderLag, 50), p99: percentile(uploaderLag, 99), max: uploaderLag.length ? Math.max(...uploaderLag) : Number.NaN };
  const realised = { p50: percentile(actualDelays, 50), p99: percentile(actualDelays, 99), max: actualDelays.length ? Math.max(...actualDelays) : Number.NaN };

  // Report. The stats processor detects nothing, so tracking is only scored for vision.
  const tracked = opts.processor === 'vision';
  say('');
  say(`outcome: ${outcome} ${((finishedMs - uploadClock) / 1000).toFixed(1)} s after the first upload (uploads took ${uploadsDoneMs ? ((uploadsDoneMs - uploadClock) / 1000).toFixed(1) : '-'} s); processor ${opts.processor}`);
  say(
    `upload delay (produced -> PUT done, strays excluded): planned p50 ${ms(percentile(plannedDelays, 50))} p99 ${ms(percentile(plannedDelays, 99))}; ` +
      `realised p50 ${ms(realised.p50)} p99 ${ms(realised.p99)} max ${ms(realised.max)} (target p99 ${4 * t.reorderWaitMs} ms = 4 x reorderWaitMs)`,
  );
  say(`uploader lag behind the plan (PUT done - due): p50 ${ms(lag.p50)} p99 ${ms(lag.p99)} max ${ms(lag.max)}${lag.p50 > 1000 ? '  <- the machine could not keep up with the plan: delays above are not the planned ones' : ''}`);
  const backlog = timeline.reduce((m, p) => (p.uploaded - p.records > m.frames ? { frames: p.uploaded - p.records, atS: p.atS } : m), { frames: 0, atS: 0 });
  const commitSpanS = timeline.length ? (timeline.find((p) => p.records >= totals.records)?.atS ?? timeline.at(-1)!.atS) - (timeline.find((p) => p.records > 0)?.atS ?? 0) : 0;
  say(
    `backlog (frames uploaded, not yet recorded): max ${backlog.frames} at ${backlog.atS.toFixed(0)} s; records committed at ${commitSpanS > 0 ? (totals.records / commitSpanS).toFixed(1) : '-'} frames/s ` +
      `from the first to the last (cameras produce ${opts.fps * opts.videos} frames/s)`,
  );
  if (kill) say(`kill: SIGKILL ${kill.workerId} (slot ${kill.slot}) at ${((kill.atMs - uploadClock) / 1000).toFixed(1)} s, holding ${kill.videos.join(', ')}`);
  else say('kill: none');
  say('');
  for (const line of table(
    ['video', 'uploaded', 'lost', 'records', 'ok', 'late', 'gap', 'failed', 'S3 but gap', 'no record', 'lost not gap', 'ok p50', 'ok p99', 'IDF1', 'IDSW', 'IDSW ok-only', 'owners', 'failover', 'summary'],
    [
      ...perVideo.map((v) => [
        v.videoId,
        v.uploaded,
        v.neverUploaded,
        v.records,
        v.status.ok,
        v.status.late,
        v.status.gap,
        v.status.failed,
        v.existsButGap.length,
        v.uploadedNoRecord.length,
        v.neverUploadedNotGap.length,
        ms(v.latencyOkMs.p50),
        ms(v.latencyOkMs.p99),
        tracked ? v.tracking.idf1.toFixed(3) : '-',
        tracked ? v.tracking.idSwitches : '-',
        tracked ? v.tracking.idSwitchesOkOnly : '-',
        v.summary?.ownerChanges ?? '-',
        v.failoverSeconds !== null ? `${v.failoverSeconds.toFixed(1)} s` : '-',
        v.summary?.status ?? '-',
      ]),
      [
        'total',
        totals.uploaded,
        totals.neverUploaded,
        totals.records,
        totals.ok,
        totals.late,
        totals.gap,
        totals.failed,
        totals.existsButGap,
        totals.uploadedNoRecord,
        totals.neverUploadedNotGap,
        ms(latencyOk.p50),
        ms(latencyOk.p99),
        tracked ? idf1Mean.toFixed(3) : '-',
        tracked ? totals.idSwitches : '-',
        tracked ? totals.idSwitchesOkOnly : '-',
        '',
        '',
        `${totals.complete}/${perVideo.length} complete`,
      ],
    ],
  ))
    say(`  ${line}`);
  say('');
  const problems = perVideo.flatMap((v) => [
    ...(v.existsButGap.length ? [`${v.videoId}: in S3 but gap: ${v.existsButGap.join(', ')}`] : []),
    ...(v.uploadedNoRecord.length ? [`${v.videoId}: uploaded, no record: ${v.uploadedNoRecord.join(', ')}`] : []),
    ...(v.neverUploadedNotGap.length ? [`${v.videoId}: never uploaded, not gap: ${v.neverUploadedNotGap.join(', ')}`] : []),
    ...(v.unexpectedFrames.length ? [`${v.videoId}: records outside 1..${opts.frames}: ${v.unexpectedFrames.join(', ')}`] : []),
  ]);
  say(`frames in S3 that ended gap: ${totals.existsButGap} (target 0); uploaded frames with no record: ${totals.uploadedNoRecord} (target 0); never-uploaded frames not gap: ${totals.neverUploadedNotGap} (expect 0)`);
  for (const p of problems.slice(0, 40)) say(`  ${p}`);
  if (problems.length > 40) say(`  ... ${problems.length - 40} more lines in the JSON`);
  say(`latency upload -> commit: ok p50 ${ms(latencyOk.p50)} p99 ${ms(latencyOk.p99)} max ${ms(latencyOk.max)} (${allOkLatency.length} frames); late p50 ${ms(latencyLate.p50)} p99 ${ms(latencyLate.p99)} (${allLateLatency.length} frames)`);
  say(`strays: ${perVideo.flatMap((v) => v.strays.map((s) => `${v.videoId}/${s.frame} (+${s.aheadBy}) ${s.status}`)).join(', ') || 'none'}`);
  if (reasons.size) say(`failed reasons: ${[...reasons.entries()].map(([r, n]) => `${r} ${n}`).join(', ')}`);
  say(
    `largest video lease item: ${biggest.itemBytes} bytes (DynamoDB item size rules) on ${biggest.itemVideo || '-'} at ${biggest.atS.toFixed(1)} s; ` +
      `largest checkpoint attribute: ${biggest.checkpointJsonBytes} bytes as JSON on ${biggest.checkpointVideo || '-'} (${biggest.samples} samples, every ${opts.pollMs} ms)`,
  );
  const n = stack.notifier.counts;
  say(`notifications: events ${n.events}, sent ${n.sent}, duplicated ${n.duplicated}, dropped ${n.dropped}, failed ${n.failed}`);
  const stackErrors = stackLines.filter((l) => /error|fail/i.test(l));
  if (stackErrors.length) {
    say(`stack log lines mentioning errors: ${stackErrors.length}; first:`);
    for (const l of stackErrors.slice(0, 5)) say(`  ${l.slice(0, 300)}`);
  }

  const out = {
    command: `npx node bench/soak.ts ${process.argv.slice(2).join(' ')}`.trim(),
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? '?' },
    processor: opts.processor,
    options: { ...opts, timeoutMs: opts.timeoutMs, out: relative(process.cwd(), opts.out) },
    tunables: t,
    outcome,
    runtimeS: (Date.now() - t0) / 1000,
    firstUploadToOutcomeS: (finishedMs - uploadClock) / 1000,
    uploadsS: uploadsDoneMs ? (uploadsDoneMs - uploadClock) / 1000 : null,
    uploadDelayMs: {
      distribution: `log-normal, median ${opts.delayP50Ms} ms, sigma ${plan.sigma.toFixed(3)} (p99 = 4 x reorderWaitMs)`,
      planned: { p50: percentile(plannedDelays, 50), p99: percentile(plannedDelays, 99), max: Math.max(...plannedDelays) },
      realised,
      uploaderLag: lag,
    },
    kill: kill ? { ...kill, atS: (kill.atMs - uploadClock) / 1000 } : null,
    backlog: { maxFrames: backlog.frames, atS: backlog.atS, commitRatePerS: commitSpanS > 0 ? totals.records / commitSpanS : null },
    timeline,
    totals,
    idf1Mean,
    latencyOkMs: latencyOk,
    latencyLateMs: latencyLate,
    largestLeaseItem: {
      itemBytes: biggest.itemBytes,
      itemBytesMethod: 'DynamoDB item size rules (attribute names + values; numbers 1 byte per 2 significant digits + 1; list/map 3 bytes + 1 per element)',
      itemVideo: biggest.itemVideo,
      atS: biggest.atS,
      checkpointJsonBytes: biggest.checkpointJsonBytes,
      checkpointVideo: biggest.checkpointVideo,
      samples: biggest.samples,
      pollMs: opts.pollMs,
    },
    notifications: n,
    failedReasons: Object.fromEntries(reasons),
    videos: perVideo,
  };
  return { out, ok: outcome === 'complete' || outcome === 'quiet', uploadedFrames: putDoneMs, videoIds: plan.videoIds };
}

/**
 * Tracking on the same clips without the pipeline: the frames that were uploaded, in
 * order, through one in-process VisionProcessor with the workers' settings. What the
 * tracker itself does on these clips, to set the soak's ID switches against.
 */
async function baseline(
  tunables: LocalStack['tunables'],
  videoIds: readonly string[],
  uploaded: ReadonlyMap<string, number>,
): Promise<{ videoId: string; idf1: number; idSwitches: number; frames: number }[]> {
  const processor = createVisionProcessor({
    ...visionOptionsFromTunables(tunables),
    preferCuda: false,
  });
  await processor.start();
  try {
    const rows = [];
    for (const [i, videoId] of videoIds.entries()) {
      const frames = [...videos[i]!.images.entries()]
        .filter(([f]) => uploaded.has(`${videoId}:${f}`))
        .sort((a, b) => a[0] - b[0])
        .map(([frame, image]) => ({ videoId, frame, image }));
      processor.openVideo(videoId, undefined);
      const outcomes = await processor.process(frames);
      processor.closeVideo(videoId);
      const predictions: MotFrame[] = frames.map((f, k) => {
        const o = outcomes[k]!;
        return { frame: f.frame, objects: o.status === 'ok' ? o.detections.map((d) => ({ id: d.trackId, box: d.box })) : [] };
      });
      const keep = new Set(frames.map((f) => f.frame));
      const gt = videos[i]!.groundTruth.filter((g) => keep.has(g.frame)).map((g) => ({ frame: g.frame, objects: g.objects.map((o) => ({ id: o.id, box: o.box })) }));
      const mot = evaluateMot(gt, predictions);
      rows.push({ videoId, idf1: mot.idf1, idSwitches: mot.idSwitches, frames: frames.length });
    }
    return rows;
  } finally {
    await processor.stop();
  }
}
