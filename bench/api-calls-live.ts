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
 *   npx node bench/api-calls-live.ts --source segments --fps 3,10,30 --segment-seconds 10,4,2 [--seconds 40]
 *
 * `--source segments` (issue 34): each camera uploads one encoded segment every
 * `--segment-seconds` N (one length, or one per rate), covering k = fps × N frames (`frames/{video}/{n}.mp4`, k declared
 * in `x-amz-meta-frames`, as `affinity upload` and `affinity stream` do). The segment is
 * real H.264 made once per run with the `ffmpeg` binary (160x120 test pattern, one GOP, no
 * B-frames; calls and write units do not depend on the picture). A video's first segment
 * is recorded before counting starts, as its first frame is with `--source frames`.
 * Every figure stays per frame (frames uploaded = segments × k); `objectsUploaded` counts
 * the PUTs.
 *
 * DynamoDB units: the call log records, per DynamoDB call, the capacity units the answer
 * reports (core/aws/instrumentation.ts; DynamoDB Local computes them as the service bills
 * them: 1 write unit per KB per item, 2 in a transaction), so write and read units per
 * frame are measured, not derived.
 *
 * Per rate: calls per frame (router + worker, the issue's figure; router and worker shares;
 * janitor per second apart, since it runs every 5 s locally and every 60 s in AWS), the
 * worker's receives, delete batches and commits per frame, and the upload-to-record
 * latency (PUT done -> the record's `committedAtMs`) p50/p99/max over the frames recorded
 * `ok` (on time). Videos are numbered from 1 with `firstFrameNumber` 1, each video's
 * first frame is sent and recorded before counting starts (a new video's own calls are
 * `bench/api-calls.ts`'s), and frames are uploaded with the videos' phases spread evenly.
 *
 * `--processor scene` (issue 44): the worker runs the simulated GPU on the cost bench's
 * street scene (lab/scene/synthetic-scene.ts: 5 detections a frame through the real
 * tracker) with 10 rules (bench/checkpoint-scene.ts `tenRules`) in the bucket, so the
 * checkpoint, the packed records and the outbox are a real scene's, billed by DynamoDB
 * Local. One rate per run (the scene's motion is in seconds); writes
 * `bench/results/api-calls-live-scene.json` by default.
 *
 *   npx node bench/api-calls-live.ts --processor scene --source segments --fps 3 --segment-seconds 10 --seconds 40
 *
 * fauxqs returns at most one message per FIFO group per receive (SQS: up to 10 of one
 * group), so above 1 frame per video per gather the local receive brings fewer frames
 * than SQS would: the worker figures here are an upper bound of AWS's. Latencies depend
 * on the machine's load; the load average is recorded next to each run.
 */
import { execFileSync } from 'node:child_process';
import { loadavg, tmpdir } from 'node:os';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { videoKey } from '../core/leases/dynamodb/lease-table.ts';
import sharp from 'sharp';
import { endMarkerKey, frameKey } from '../core/ingest/keys.ts';
import { FRAMES_METADATA_KEY, segmentKey } from '../core/ingest/segment-keys.ts';
import { allResults, countResults, getSummary, storedResultItems } from '../core/commit/dynamodb/results-reader.ts';
import { itemBytes as documentItemBytes } from '../core/leases/memory/item-values.ts';
import { DEFAULT_TUNABLES } from '../core/config.ts';
import type { LocalStack } from '../local/stack.ts';
import { benchMain, commandLine, freshCallLog, freshStateDir, machine, RESULTS_DIR, sleep, writeResult, type Bench } from './harness/main.ts';
import { parseFlags, type Flag } from './harness/options.ts';
import { startBenchStack } from './harness/stack.ts';
import { putObject, runUploads } from './harness/uploader.ts';
import { DEFAULT_RULES_KEY } from '../core/analytics/s3/rules-store.ts';
import { tenRules } from './checkpoint-scene.ts';
import { SeriesTally } from './harness/emf-series.ts';
import { WORKER_ENV } from '../core/config/worker-env.ts';

/** The worker's metrics flush interval in this bench (its default: gpu-worker/main.ts). */
const WORKER_METRICS_FLUSH_MS = 10_000;

const FLAGS = {
  fps: { text: '1,3,10,30' },
  'gather-ms': { text: `0,${DEFAULT_TUNABLES.receiveGatherMs}` },
  videos: { num: [8, 1, 64], int: true },
  seconds: { num: [20, 2, 600] },
  'cap-s': { num: [240, 10, 3_600] },
  source: { choice: ['frames', 'segments'], fallback: 'frames' },
  'segment-seconds': { text: '2' },
  processor: { choice: ['stats', 'scene'], fallback: 'stats' },
  out: { text: '' },
} as const satisfies Record<string, Flag>;

type Tally = Record<string, number>;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** DynamoDB operations whose consumed units are write units; every other DynamoDB operation reads. */
const DDB_WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand', 'TransactWriteItemsCommand']);

/**
 * Counts the call log's lines by `role.service.operation`, and sums the DynamoDB lines'
 * consumed capacity (their fourth field) by `role.wcu` / `role.rcu`.
 */
function tally(callLog: string): { calls: Tally; units: Tally } {
  const calls: Tally = {};
  const units: Tally = {};
  for (const line of readFileSync(callLog, 'utf8').split('\n')) {
    if (!line) continue;
    const [role, service, op, consumed] = line.split('\t');
    calls[`${role}.${service}.${op}`] = (calls[`${role}.${service}.${op}`] ?? 0) + 1;
    if (service === 'dynamodb' && consumed) {
      const k = `${role}.${DDB_WRITES.has(op!) ? 'wcu' : 'rcu'}`;
      units[k] = (units[k] ?? 0) + Number(consumed);
    }
  }
  return { calls, units };
}

/** An item's size as DynamoDB counts it (the twin's rule, in document form). */
const ddbItemBytes = (item: object): number => documentItemBytes(item as Parameters<typeof documentItemBytes>[0]);

/** What a camera uploads: one image per frame, or one H.264 segment of `k` frames every `segmentSeconds`. */
type Source = { kind: 'frames'; image: Buffer } | { kind: 'segments'; segmentSeconds: number; k: number; body: Buffer };

/** One H.264 segment of `k` frames at `fps` (160x120 test pattern, one GOP, no B-frames), made by the `ffmpeg` binary. */
function makeSegment(fps: number, k: number): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'api-calls-live-'));
  const file = join(dir, `seg-${fps}-${k}.mp4`);
  execFileSync('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `testsrc2=size=160x120:rate=${fps}`, '-frames:v', String(k),
    '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-bf', '0', '-g', String(k), '-sc_threshold', '0', file]);
  return readFileSync(file);
}
const sum = (t: Tally, prefix: string) => Object.entries(t).filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0);
function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** One rate on a running stack: new videos, counted live uploads, then their end markers. */
async function runRate(stack: LocalStack, callLog: string, c: { fps: number; gatherMs: number; videos: number; seconds: number; capMs: number; source: Source; logBytes: { worker: number }; series: SeriesTally }, bench: Bench) {
  const source = { ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable };
  const src = c.source;
  const tag = src.kind === 'frames' ? '' : `seg${src.segmentSeconds}-`;
  const ids = Array.from({ length: c.videos }, (_, i) => `g${c.gatherMs}-${tag}fps${c.fps}-cam-${i}`);
  // An object: frame n (k = 1), or the segment of frames [n, n + k).
  const k = src.kind === 'frames' ? 1 : src.k;
  const putSource = async (id: string, n: number) => {
    if (src.kind === 'frames') return putObject(stack, frameKey(id, n), src.image, 'image/jpeg');
    await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: segmentKey(id, n), Body: src.body, ContentType: 'video/mp4', Metadata: { [FRAMES_METADATA_KEY]: String(k) } }));
  };
  const waitRecords = async (n: number) => {
    const until = Date.now() + c.capMs;
    for (;;) {
      const counts = await Promise.all(ids.map((id) => countResults(source, id)));
      if (counts.every((x) => x >= n)) return true;
      if (Date.now() > until) return false;
      await sleep(250);
    }
  };
  // New videos first (their adoption is not a live-rate cost): frame 1, or the segment [1, 1 + k).
  for (const id of ids) await putSource(id, 1);
  if (!(await waitRecords(k))) throw new Error(`fps ${c.fps}: first ${src.kind} not recorded`);
  await sleep(500);
  writeFileSync(callLog, '');
  c.logBytes.worker = 0;
  const countStartMs = Date.now();
  // The metric series of the steady state: from one worker flush into counting (what the
  // worker flushes first may still be the videos' starts) to one flush after it.
  const seriesFrom = setTimeout(() => c.series.clear(), WORKER_METRICS_FLUSH_MS + 1_000);
  // Objects per video while counting: frames, or segments (one every segmentSeconds).
  const perVideo = src.kind === 'frames' ? Math.max(1, Math.round(c.fps * c.seconds)) : Math.max(1, Math.round(c.seconds / src.segmentSeconds));
  const periodMs = src.kind === 'frames' ? 1000 / c.fps : src.segmentSeconds * 1000;
  // Object j (from 0) of video v covers frames from 1 + k (j + 1) and is due at (j + v / V) periods:
  // the videos' phases spread evenly.
  const plan = Array.from({ length: perVideo * c.videos }, (_, i) => {
    const v = i % c.videos;
    const j = Math.floor(i / c.videos);
    return { v, n: 1 + k * (j + 1), dueMs: (j + v / c.videos) * periodMs };
  });
  const lastFrame = k * (perVideo + 1);
  const loadBefore = loadavg()[0]!;
  const putDone = new Map<string, number>();
  const uploads = runUploads(plan, Math.min(16, c.videos), async (u) => {
    await putSource(ids[u.v]!, u.n);
    putDone.set(`${ids[u.v]}:${u.n}`, Date.now());
  }, bench.interrupted);
  await uploads.finished;
  if (uploads.error()) throw uploads.error();
  const complete = await waitRecords(lastFrame);
  const { calls, units } = tally(callLog);
  const workerLogBytes = c.logBytes.worker;
  const countedSeconds = (Date.now() - countStartMs) / 1000;
  const loadAfter = loadavg()[0]!;
  // One flush more, before the cameras' silence could raise source.stalled (STALL_INTERVALS).
  clearTimeout(seriesFrom);
  await sleep(WORKER_METRICS_FLUSH_MS + 1_000);
  const metricSeries = c.series.byService();
  const frames = plan.length * k;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let resultBytes = 0;
  for (const id of ids) {
    for (const r of await allResults(source, id)) {
      if (r.frame < 1 + k) continue;
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      const { packed: _readerAdded, ...record } = r;
      resultBytes += ddbItemBytes(record);
      // A frame's upload is its object's: the segment's PUT for each frame it covers.
      const put = putDone.get(`${id}:${r.frame - ((r.frame - 1) % k)}`);
      if (r.status === 'ok' && put !== undefined) latencies.push(r.committedAtMs - put);
    }
  }
  // The result items as stored (a segment's run packed in one item, decision 56): their
  // size as DynamoDB counts it, and the write units their transactional puts cost (2 per KB each).
  let storedItems = 0;
  let storedBytes = 0;
  let storedWriteUnits = 0;
  for (const id of ids) {
    for (const item of await storedResultItems(source, id)) {
      if (item.frame < 1 + k) continue;
      const bytes = ddbItemBytes(item);
      storedItems++;
      storedBytes += bytes;
      storedWriteUnits += 2 * Math.max(1, Math.ceil(bytes / 1024));
    }
  }
  latencies.sort((a, b) => a - b);
  // The videos' lease items (pin + checkpoint: what each commit rewrites), as DynamoDB sizes them.
  let leaseBytes = 0;
  for (const id of ids) {
    const item = (await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk: videoKey(id) }, ConsistentRead: true }))).Item;
    leaseBytes += item ? ddbItemBytes(item) : 0;
  }
  // Close the videos, so the next rate's slot holds only its own.
  for (const id of ids) await putObject(stack, endMarkerKey(id), String(lastFrame));
  const closeBy = Date.now() + 60_000;
  while (Date.now() < closeBy && !(await Promise.all(ids.map((id) => getSummary(source, id)))).every((s) => s?.status === 'complete')) await sleep(250);
  const router = sum(calls, 'router.');
  const worker = sum(calls, 'worker.');
  const op = (key: string) => round3((calls[key] ?? 0) / frames);
  const result = {
    source: src.kind,
    fpsPerVideo: c.fps,
    ...(src.kind === 'segments' ? { segmentSeconds: src.segmentSeconds, framesPerSegment: k, segmentBytes: src.body.length } : {}),
    receiveGatherMs: c.gatherMs,
    objectsUploaded: plan.length,
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
    workerHeadPerFrame: op('worker.s3.HeadObjectCommand'),
    workerListPerFrame: op('worker.s3.ListObjectsV2Command'),
    framesPerCommit: round3(frames / Math.max(1, calls['worker.dynamodb.TransactWriteItemsCommand'] ?? 0)),
    // DynamoDB capacity units as the answers reported them (router + worker; the janitor's apart).
    writeUnitsPerFrame: round3(((units['router.wcu'] ?? 0) + (units['worker.wcu'] ?? 0)) / frames),
    readUnitsPerFrame: round3(((units['router.rcu'] ?? 0) + (units['worker.rcu'] ?? 0)) / frames),
    // The result items' size as DynamoDB counts it (names + values), mean per frame.
    resultItemBytes: round3(resultBytes / Math.max(1, Object.values(statuses).reduce((a, b) => a + b, 0))),
    // As stored: items per frame (1 for one item per frame; ~1/k for packed segments), their bytes per frame, and their write units per frame.
    resultItemsPerFrame: round3(storedItems / Math.max(1, Object.values(statuses).reduce((a, b) => a + b, 0))),
    storedResultBytesPerFrame: round3(storedBytes / Math.max(1, Object.values(statuses).reduce((a, b) => a + b, 0))),
    resultWriteUnitsPerFrame: round3(storedWriteUnits / Math.max(1, Object.values(statuses).reduce((a, b) => a + b, 0))),
    // The video lease item (checkpoint) each commit rewrites, mean over the videos at the end of counting.
    videoLeaseItemBytes: Math.round(leaseBytes / ids.length),
    janitorCalls: sum(calls, 'janitor.'),
    units,
    // What the worker printed while counting (CloudWatch Logs in AWS), lines + newlines.
    workerLogBytes,
    workerLogBytesPerFrame: round3(workerLogBytes / frames),
    countedSeconds: round3(countedSeconds),
    latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) ?? NaN, frames: latencies.length },
    loadAverage1m: { before: round3(loadBefore), after: round3(loadAfter) },
    operations: calls,
    // The CloudWatch custom metric series the router, janitor and worker defined by their
    // EMF lines in the steady state (bench/harness/emf-series.ts): what bench/cost-model.ts bills.
    metricSeriesCount: Object.fromEntries(Object.entries(metricSeries).map(([service, keys]) => [service, keys.length])),
    metricSeries,
  };
  bench.say(
    `${bench.clock()}  ${src.kind === 'frames' ? 'frames' : `segments of ${src.segmentSeconds} s (k ${k})`}, gather ${c.gatherMs} ms, ${c.fps} fps x ${c.videos}: ${result.callsPerFrame} calls/frame (router ${result.routerPerFrame}, worker ${result.workerPerFrame}; ` +
      `receive ${result.workerReceivePerFrame}, delete ${result.workerDeletePerFrame}, commit ${result.workerCommitPerFrame}), ${result.writeUnitsPerFrame} WCU/frame, ` +
      `p50/p99 ${result.latencyMs.p50}/${result.latencyMs.p99} ms, load ${result.loadAverage1m.before}-${result.loadAverage1m.after}${complete ? '' : ' (INCOMPLETE)'}`,
  );
  return result;
}

async function main(bench: Bench, args: readonly string[]): Promise<number> {
  const o = parseFlags('api-calls-live.ts', FLAGS, args);
  if (!o) return 0;
  const rates = o.fps.split(',').map(Number);
  const gathers = o.gatherMs.split(',').map(Number);
  const segments = o.source === 'segments';
  const image = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 30, g: 160, b: 60 } } }).jpeg().toBuffer();
  // One segment length for every rate, or one per rate (`--fps 3,10,30 --segment-seconds 10,4,2`).
  const lengths = o.segmentSeconds.split(',').map(Number);
  if (lengths.some((x) => !(x > 0 && x <= 60)) || (lengths.length !== 1 && lengths.length !== rates.length)) {
    throw new Error(`--segment-seconds ${o.segmentSeconds}: one length in (0, 60], or one per --fps rate`);
  }
  const sourceFor = (fps: number): Source => {
    if (!segments) return { kind: 'frames', image };
    const segmentSeconds = lengths.length === 1 ? lengths[0]! : lengths[rates.indexOf(fps)]!;
    const k = Math.round(fps * segmentSeconds);
    return { kind: 'segments', segmentSeconds, k, body: makeSegment(fps, k) };
  };
  const scene = o.processor === 'scene';
  if (scene && rates.length !== 1) throw new Error('--processor scene runs one rate per run (--fps N): the scene moves in seconds');
  const out = o.out || join(RESULTS_DIR, scene ? 'api-calls-live-scene.json' : segments ? 'api-calls-live-segments.json' : 'api-calls-live.json');
  const runs = [];
  const logBytes = { worker: 0 };
  // The metric series: the worker's EMF lines, and the in-process router's and janitor's
  // (Powertools, on for this bench: their EMF lines are tallied and kept off the output).
  const series = new SeriesTally();
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    const text = String(chunk);
    if (!text.includes('"_aws"')) return write(chunk, ...rest);
    for (const line of text.split('\n')) if (!series.offer(line) && line.trim()) write(`${line}\n`);
    return true;
  }) as typeof process.stdout.write;
  for (const gatherMs of gathers) {
    const callLog = freshCallLog('api-calls-live');
    const { stack } = await startBenchStack({
      stateDir: freshStateDir(`api-calls-live-${gatherMs}`),
      tunables: { slotCount: 1, videosPerSlot: o.videos + 1, firstFrameNumber: 1, receiveGatherMs: gatherMs },
      workerEnv: scene
        ? { FRAME_PROCESSOR: 'simgpu', SIMULATED_GPU: JSON.stringify({ objects: 5, sceneFps: rates[0] }), AWS_CALL_LOG: callLog, [WORKER_ENV.metricsFlushIntervalMs]: String(WORKER_METRICS_FLUSH_MS) }
        : { FRAME_PROCESSOR: 'stats', AWS_CALL_LOG: callLog, [WORKER_ENV.metricsFlushIntervalMs]: String(WORKER_METRICS_FLUSH_MS) },
      onWorkerLine: (line) => {
        logBytes.worker += Buffer.byteLength(line) + 1;
        series.offer(line);
      },
    });
    try {
      // The scene's 10 rules, for every video (the rules store reads this key).
      if (scene) await putObject(stack, DEFAULT_RULES_KEY, JSON.stringify(tenRules(rates[0]!)));
      // Warm-up: the worker's start is not billed to any rate.
      await putObject(stack, frameKey(`g${gatherMs}-warmup`, 1), image);
      await putObject(stack, endMarkerKey(`g${gatherMs}-warmup`), '1');
      while ((await countResults({ ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable }, `g${gatherMs}-warmup`)) < 1) await sleep(250);
      for (const fps of rates) runs.push(await runRate(stack, callLog, { fps, gatherMs, videos: o.videos, seconds: o.seconds, capMs: o.capS * 1000, source: sourceFor(fps), logBytes, series }, bench));
    } finally {
      await stack.stop();
    }
  }
  writeResult(out, {
    command: commandLine('api-calls-live.ts', args),
    date: new Date().toISOString(),
    machine: machine(),
    setup: { source: o.source, ...(segments ? { segmentSeconds: lengths } : {}), videos: o.videos, slots: 1, secondsPerRate: o.seconds, processor: scene ? 'simgpu on the street scene (5 detections a frame), 10 rules' : 'stats', firstFrameNumber: 1 },
    notes: [
      'callsPerFrame = (router + worker SDK calls) / frames uploaded while counting; janitor calls apart (every 5 s locally, 60 s in AWS). Uploads and the emulated Lambda event source are not counted.',
      'writeUnitsPerFrame / readUnitsPerFrame: the DynamoDB capacity units the answers of the router\'s and worker\'s calls reported (ReturnConsumedCapacity, asked by the call log; DynamoDB Local bills as the service does: 1 WCU per KB per item, 2 per KB in a transaction), per frame. resultItemBytes: mean per-frame result item size as DynamoDB sizes items (attribute names + values).',
      'workerLogBytes: what the worker process printed while counting (its logs and EMF metrics: CloudWatch Logs ingestion in AWS); metrics flush on their own interval, so a short run sees few flushes.',
      'metricSeries: the distinct CloudWatch metric series (namespace, name, dimension names and values) in the EMF lines of the worker and of the in-process router and janitor (Powertools) from one worker metrics flush into counting to one flush after it: the steady state\'s series, each billed as a custom metric for every hour it gets data. Series of starts, ends and faults appear only in the hours they happen.',
      'Segments: one H.264 object of k = fps x segmentSeconds frames per camera every segmentSeconds, k declared in x-amz-meta-frames; frames uploaded = segments x k; a frame\'s latency is from its segment\'s PUT.',
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
