/**
 * Non-GPU AWS cost per camera-month (issue 34, part 5), from the calls per frame that
 * `bench/api-calls-live.ts` measured on the local stack, for frames (one JPEG per frame)
 * and segments (one H.264 object per `segmentSeconds`), at the rates those runs used.
 *
 *   npx node bench/cost-model.ts [--frames bench/results/api-calls-live.json]
 *     [--segments bench/results/api-calls-live-segments.json] [--out bench/results/cost-model.json]
 *     [--jpeg-kb 300] [--h264-mbps 1,2,4]
 *
 * Nothing here is measured: it is arithmetic over the result files and the list prices
 * and assumptions in {@link PRICES} and {@link ASSUMPTIONS}, each stated once. Per camera:
 *
 * - requests: the uploader's PUTs (one per object), the worker's S3 GET / HEAD / LIST, the
 *   router's and worker's SQS FIFO requests, the standard ingest queue (one S3 notification
 *   per object, the event source's receive and delete per router invocation), the router
 *   Lambda (invocations ≈ the router's SendMessageBatch calls: one slot), DynamoDB write and
 *   read units as the call log reported them (split into the result items as stored, 2
 *   units per KB of each: one item per frame, or one packed item per segment's run
 *   (decision 56), and the rest: the live-rate checkpoint and summary rewrites, the slot
 *   check, heartbeats),
 *   CloudWatch Logs (the worker's measured bytes and the router's REPORT lines);
 * - storage, steady state: a month's frames or segments kept `frameRetentionDays`, a
 *   month's result items kept `resultsRetentionDays` (each item as stored + DynamoDB's 100 bytes).
 *
 * Runs measured before results were packed (no `resultWriteUnitsPerFrame`) are priced
 * with one item per frame of `resultItemBytes`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchMain, commandLine, RESULTS_DIR, writeResult, type Bench } from './harness/main.ts';
import { parseFlags, type Flag } from './harness/options.ts';

const FLAGS = {
  frames: { text: join(RESULTS_DIR, 'api-calls-live.json') },
  segments: { text: join(RESULTS_DIR, 'api-calls-live-segments.json') },
  out: { text: join(RESULTS_DIR, 'cost-model.json') },
  'jpeg-kb': { num: [300, 1, 10_000] },
  'h264-mbps': { text: '1,2,4' },
} as const satisfies Record<string, Flag>;

/**
 * us-east-1 list prices, USD (checked against the pricing pages where the search tool
 * found them; docs/deploy.md §8 cites them). One place: everything below reads these.
 */
export const PRICES = {
  s3PutPerMillion: 5, // PUT, COPY, POST, LIST: $0.005 per 1,000
  s3GetPerMillion: 0.4, // GET and HEAD (and all other requests): $0.0004 per 1,000
  s3ListPerMillion: 5, // LIST is priced as PUT
  sqsFifoPerMillion: 0.5, // per 64 KB chunk of a request (our messages are < 2 KB: 1 chunk)
  sqsStandardPerMillion: 0.4,
  ddbWriteUnitPerMillion: 0.625, // on-demand WRU (1 KB; transactional writes 2 per KB)
  ddbReadUnitPerMillion: 0.125, // on-demand RRU (4 KB strongly consistent; transactional 2)
  lambdaRequestPerMillion: 0.2,
  lambdaGbSecond: 0.0000133334, // arm64
  logsIngestPerGb: 0.5,
  eventBridgePerMillionEvents: 1,
  s3StoragePerGbMonth: 0.023, // S3 Standard, first 50 TB
  ddbStoragePerGbMonth: 0.25, // Standard table class, beyond the free 25 GB
} as const;

/** What is assumed, not measured. */
export const ASSUMPTIONS = {
  secondsPerMonth: 30 * 86_400,
  routerSecondsPerInvocation: 0.1, // docs/deploy.md §8
  routerMemoryGb: 0.5,
  routerReportBytesPerInvocation: 300, // Lambda's START / END / REPORT lines
  ddbItemOverheadBytes: 100, // DynamoDB bills 100 bytes of overhead per item stored
  retentionProfiles: [
    { name: 'frames 7 d, results 30 d', frameDays: 7, resultsDays: 30 },
    { name: 'frames 30 d (stack default), results 90 d', frameDays: 30, resultsDays: 90 },
  ],
} as const;

const GB = 1024 ** 3;

/** The part of a run of bench/api-calls-live.ts this model reads. */
interface LiveRun {
  readonly source?: 'frames' | 'segments';
  readonly fpsPerVideo: number;
  readonly segmentSeconds?: number;
  readonly framesPerSegment?: number;
  readonly receiveGatherMs: number;
  readonly framesUploaded: number;
  readonly objectsUploaded?: number;
  readonly complete: boolean;
  readonly writeUnitsPerFrame: number;
  readonly readUnitsPerFrame: number;
  readonly resultItemBytes: number;
  /** As stored (runs since decision 56): items, bytes and transactional write units per frame. */
  readonly resultItemsPerFrame?: number;
  readonly storedResultBytesPerFrame?: number;
  readonly resultWriteUnitsPerFrame?: number;
  readonly workerLogBytesPerFrame: number;
  readonly latencyMs: { readonly p50: number };
  readonly operations: Readonly<Record<string, number>>;
}

const money = (x: number) => Math.round(x * 100) / 100;

/** Cost lines of one camera for a month, in USD. */
export function cameraMonth(run: LiveRun, o: { jpegBytes: number; h264BitsPerSecond: number }) {
  const segments = run.source === 'segments';
  const k = segments ? run.framesPerSegment! : 1;
  const framesPerMonth = run.fpsPerVideo * ASSUMPTIONS.secondsPerMonth;
  const objectsPerMonth = framesPerMonth / k;
  const perFrame = (prefix: string) => Object.entries(run.operations).filter(([op]) => op.startsWith(prefix)).reduce((a, [, n]) => a + n, 0) / run.framesUploaded;
  const month = (perFrameCount: number, pricePerMillion: number) => (perFrameCount * framesPerMonth * pricePerMillion) / 1e6;
  const invocationsPerFrame = perFrame('router.sqs.SendMessageBatchCommand');
  const resultUnitsPerFrame = run.resultWriteUnitsPerFrame ?? 2 * Math.max(1, Math.ceil(run.resultItemBytes / 1024));
  const storedBytesPerFrame = run.storedResultBytesPerFrame !== undefined ? run.storedResultBytesPerFrame + (run.resultItemsPerFrame ?? 1) * ASSUMPTIONS.ddbItemOverheadBytes : run.resultItemBytes + ASSUMPTIONS.ddbItemOverheadBytes;
  const lines = {
    uploaderPut: (objectsPerMonth * PRICES.s3PutPerMillion) / 1e6,
    s3GetHead: month(perFrame('worker.s3.GetObjectCommand') + perFrame('worker.s3.HeadObjectCommand') + perFrame('router.s3.'), PRICES.s3GetPerMillion),
    s3List: month(perFrame('worker.s3.ListObjectsV2Command'), PRICES.s3ListPerMillion),
    sqsFifo: month(perFrame('router.sqs.') + perFrame('worker.sqs.'), PRICES.sqsFifoPerMillion),
    sqsStandard: ((objectsPerMonth + 2 * invocationsPerFrame * framesPerMonth) * PRICES.sqsStandardPerMillion) / 1e6,
    lambda: month(invocationsPerFrame, PRICES.lambdaRequestPerMillion) + invocationsPerFrame * framesPerMonth * ASSUMPTIONS.routerSecondsPerInvocation * ASSUMPTIONS.routerMemoryGb * PRICES.lambdaGbSecond,
    ddbWritesResults: month(resultUnitsPerFrame, PRICES.ddbWriteUnitPerMillion),
    ddbWritesCheckpointsEtc: month(Math.max(0, run.writeUnitsPerFrame - resultUnitsPerFrame), PRICES.ddbWriteUnitPerMillion),
    ddbReads: month(run.readUnitsPerFrame, PRICES.ddbReadUnitPerMillion),
    logs: ((run.workerLogBytesPerFrame * framesPerMonth + invocationsPerFrame * framesPerMonth * ASSUMPTIONS.routerReportBytesPerInvocation) / GB) * PRICES.logsIngestPerGb,
  };
  const requests = Object.values(lines).reduce((a, b) => a + b, 0);
  // Storage, steady state: a month's volume kept N days is N / 30 of it, all month.
  const bytesPerMonth = segments ? (o.h264BitsPerSecond / 8) * ASSUMPTIONS.secondsPerMonth : o.jpegBytes * framesPerMonth;
  const framesStoragePerDay = ((bytesPerMonth / GB) * PRICES.s3StoragePerGbMonth) / 30;
  const resultsStoragePerDay = ((storedBytesPerFrame * framesPerMonth) / GB) * PRICES.ddbStoragePerGbMonth / 30;
  const profiles = ASSUMPTIONS.retentionProfiles.map((p) => {
    const frames = framesStoragePerDay * p.frameDays;
    const results = resultsStoragePerDay * p.resultsDays;
    return {
      profile: p.name,
      framesStorage: money(frames),
      resultsStorage: money(results),
      total: money(requests + frames + results),
    };
  });
  return {
    source: segments ? 'segments' : 'frames',
    fps: run.fpsPerVideo,
    ...(segments ? { segmentSeconds: run.segmentSeconds, framesPerSegment: k } : {}),
    framesPerMonth,
    objectsPerMonth: Math.round(objectsPerMonth),
    measured: {
      writeUnitsPerFrame: run.writeUnitsPerFrame,
      resultUnitsPerFrame,
      readUnitsPerFrame: run.readUnitsPerFrame,
      resultItemBytes: run.resultItemBytes,
      ...(run.resultItemsPerFrame !== undefined ? { resultItemsPerFrame: run.resultItemsPerFrame } : {}),
      routerInvocationsPerFrame: Math.round(invocationsPerFrame * 1000) / 1000,
      complete: run.complete,
      latencyP50Ms: run.latencyMs.p50,
    },
    lines: Object.fromEntries(Object.entries(lines).map(([key, v]) => [key, money(v)])),
    requestsTotal: money(requests),
    storagePerDayKept: { frames: Math.round(framesStoragePerDay * 1000) / 1000, results: Math.round(resultsStoragePerDay * 1000) / 1000 },
    profiles,
  };
}

function readRuns(file: string): LiveRun[] {
  return (JSON.parse(readFileSync(file, 'utf8')) as { runs: LiveRun[] }).runs;
}

async function main(bench: Bench, args: readonly string[]): Promise<number> {
  const o = parseFlags('cost-model.ts', FLAGS, args);
  if (!o) return 0;
  const mbps = o.h264Mbps.split(',').map(Number);
  const frameRuns = readRuns(o.frames).filter((r) => (r.source ?? 'frames') === 'frames');
  const segmentRuns = readRuns(o.segments).filter((r) => r.source === 'segments');
  // One frames run per rate: the default receive gather's when several were run.
  const byFps = new Map<number, LiveRun>();
  for (const r of frameRuns) if (!byFps.has(r.fpsPerVideo) || r.receiveGatherMs === 250) byFps.set(r.fpsPerVideo, r);
  const rates = [...new Set([...byFps.keys(), ...segmentRuns.map((r) => r.fpsPerVideo)])].sort((a, b) => a - b);
  // H.264 bit rate by frame rate: --h264-mbps lists one per rate, lowest first (1080p camera presets: an assumption).
  const bitsFor = (fps: number) => (mbps[Math.min(rates.indexOf(fps), mbps.length - 1)] ?? 4) * 1e6;
  const rows = [
    ...[...byFps.values()].sort((a, b) => a.fpsPerVideo - b.fpsPerVideo).map((r) => cameraMonth(r, { jpegBytes: o.jpegKb * 1024, h264BitsPerSecond: bitsFor(r.fpsPerVideo) })),
    ...segmentRuns.sort((a, b) => a.fpsPerVideo - b.fpsPerVideo).map((r) => cameraMonth(r, { jpegBytes: o.jpegKb * 1024, h264BitsPerSecond: bitsFor(r.fpsPerVideo) })),
  ];
  const head = ['source', 'fps', 'PUT', 'GET/HEAD', 'LIST', 'SQS FIFO', 'SQS std', 'Lambda', 'DDB results', 'DDB ckpt etc', 'DDB reads', 'logs', 'requests', ...ASSUMPTIONS.retentionProfiles.flatMap((_, i) => [`frames st.${i + 1}`, `results st.${i + 1}`, `TOTAL ${i + 1}`])];
  bench.say(head.join(' | '));
  for (const r of rows) {
    const l = r.lines as Record<string, number>;
    bench.say(
      [
        r.source === 'segments' ? `segments ${r.segmentSeconds} s` : 'frames',
        r.fps,
        l.uploaderPut, l.s3GetHead, l.s3List, l.sqsFifo, l.sqsStandard, l.lambda, l.ddbWritesResults, l.ddbWritesCheckpointsEtc, l.ddbReads, l.logs,
        r.requestsTotal,
        ...r.profiles.flatMap((p) => [p.framesStorage, p.resultsStorage, p.total]),
      ].join(' | '),
    );
  }
  bench.say('retention profiles: ' + ASSUMPTIONS.retentionProfiles.map((p, i) => `${i + 1} = ${p.name}`).join('; '));
  writeResult(o.out, {
    command: commandLine('cost-model.ts', args),
    date: new Date().toISOString(),
    inputs: { frames: o.frames.replace(/^.*bench\//, 'bench/'), segments: o.segments.replace(/^.*bench\//, 'bench/'), jpegBytes: o.jpegKb * 1024, h264Mbps: Object.fromEntries(rates.map((f) => [f, bitsFor(f) / 1e6])) },
    prices: PRICES,
    assumptions: ASSUMPTIONS,
    notes: [
      'Per camera, month = 30 days. Calls and DynamoDB units per frame are the live-rate bench\'s (8 cameras sharing one slot); the uploader\'s PUTs, the standard ingest queue and the router\'s Lambda cost are computed per object and per router invocation (≈ router SendMessageBatch calls).',
      'Not included: the GPU, fixed monthly costs (endpoints, alarms, dashboard, custom metrics: docs/deploy.md §8), EventBridge ($1 per million events raised: the stats processor raises none, a user\'s rules decide), data transfer.',
      'Storage is steady state: frames (or segments) kept frameRetentionDays, result items kept resultsRetentionDays (0 = never: then the results line grows by one month\'s worth every month).',
      'Frame sizes are assumptions (not measured: synthetic test patterns compress unlike camera footage): --jpeg-kb per 1080p JPEG, --h264-mbps per rate for 1080p H.264.',
    ],
    rows,
  }, bench.say);
  return 0;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  await benchMain('cost-model', (bench) => main(bench, args));
}
