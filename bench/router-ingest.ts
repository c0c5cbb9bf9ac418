/**
 * Router frames per invocation-second (issue 20, decision 33): the real router handler
 * (functions/router/handler.ts, with core/fleet/router.ts, SlotQueues, LeaseStore and the real
 * SDK v3 clients: serialisation, retries, SQS MD5 checks) invoked in-process on batches
 * of S3 notifications, with AWS's per-call latency injected.
 *
 *   npx node bench/router-ingest.ts [batchSizes=10,100,1000,10000] [sendConcurrency=32] [seed=20]
 *
 * The AWS side is an in-process model, not the emulators: the SDK clients get a request
 * handler (below) that answers SendMessageBatch with the MD5s SQS would compute and
 * BatchGetItem from an in-memory leases table, after sleeping for the latency model. Why
 * not fauxqs / DynamoDB Local: at batch 1,000+ a router invocation makes hundreds of
 * concurrent SendMessageBatch calls, and on this 2-core machine shared by several
 * engineers the emulators' CPU (fauxqs runs in the bench's own event loop) would be
 * what is measured. The model keeps what the router does and what the SDK does real,
 * and makes the network cost what AWS's is.
 *
 * Latency model (uniform within each range, seeded):
 *  - SQS SendMessageBatch 10-30 ms. AWS publishes no SQS latency figure; in-region
 *    SendMessage p50 is commonly measured at 5-20 ms with tails to tens of ms, and the
 *    issue's shape ("SQS send/receive/delete tens of ms") is taken as the model.
 *  - DynamoDB BatchGetItem 5-10 ms (DynamoDB: "single-digit millisecond" reads,
 *    https://aws.amazon.com/dynamodb/features/ ; a 100-key batch read takes a few more).
 *  - DynamoDB TransactWriteItems 10-30 ms (two-phase: about twice a single write).
 *
 * Workload: 1,000 slots × 8 videos = 8,000 videos at 30 fps (240,000 frames/s), every
 * video pinned and every slot live. Records arrive in time order, the videos of one tick
 * shuffled (uploads are parallel), and a batch is the next `B` records of that stream: what
 * one poller takes from the ingest queue. So a batch of 1,000 touches ~1,000 videos on
 * ~630 slots, and per-slot grouping packs only ~1.6 frames per SendMessageBatch.
 *
 * Two router states per batch size:
 *  - warm: the environment's pin and slot caches are filled (steady state: pins are
 *    cached 30 s and each environment sees most videos within a few invocations);
 *  - cold: a fresh environment (reads every pin and target slot with BatchGetItem).
 * "before" is the pre-change sending (routerSendConcurrency 1: one queue after another,
 * one call after another), "after" the default (32 calls in flight).
 *
 * Output: bench/results/router-ingest.json (and a table on stdout).
 */
import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { HttpRequest } from '@smithy/types';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { DEFAULT_TUNABLES, validateTunables, type Tunables, type Wiring } from '../core/config.ts';
import { createAwsClientsFrom } from '../core/aws/clients.ts';
import { LeaseStore } from '../core/leases/dynamodb/lease-store.ts';
import { slotKey, videoKey } from '../core/leases/dynamodb/slot-lease-store.ts';
import { SlotQueues } from '../core/ingest/sqs/slot-queues.ts';
import { rng } from '../core/random.ts';
import { sleep } from '../core/async.ts';
import { setTaskLauncher } from '../core/fleet/launcher-registry.ts';
import { buildObjectCreatedEvent } from '../local/s3-notifications.ts';
import { LAMBDA_INVOKE_PAYLOAD_BYTES, lambdaContext, toSqsRecord } from '../local/event-source.ts';
import type { FunctionContext } from '../functions/shared/context.ts';
import { machine, commandLine, quietLogs } from './harness/main.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESULTS_DIR } from './harness/main.ts';

const SLOTS = 1000;
const VIDEOS_PER_SLOT = 8;
const VIDEOS = SLOTS * VIDEOS_PER_SLOT;
const REGION = 'us-east-1';
const BUCKET = 'frames-bucket-123456789012-us-east-1';

const batchSizes = (process.argv[2] ?? '10,100,1000,10000').split(',').map(Number);
const sendConcurrency = Number(process.argv[3] ?? DEFAULT_TUNABLES.routerSendConcurrency);
const seed = Number(process.argv[4] ?? 20);
const draw = rng(seed);
const uniform = (lo: number, hi: number) => lo + (hi - lo) * draw();

/** The latency model, per operation (x-amz-target), in ms. */
const LATENCY_MS: Record<string, () => number> = {
  'AmazonSQS.SendMessageBatch': () => uniform(10, 30),
  'AmazonSQS.ChangeMessageVisibilityBatch': () => uniform(10, 30),
  'DynamoDB_20120810.BatchGetItem': () => uniform(5, 10),
  'DynamoDB_20120810.TransactWriteItems': () => uniform(10, 30),
  'DynamoDB_20120810.GetItem': () => uniform(3, 8),
};

const calls = new Map<string, { count: number; entries: number }>();
/** CPU the model itself spends answering (parsing requests, MD5s, building responses): not the router's. */
let modelCpuMicros = 0;

/**
 * The AWS side: an SDK request handler that sleeps for the latency model and answers as
 * SQS and DynamoDB would. Could share gpusim's AWS_LATENCY_MODEL seam (an SDK middleware
 * in core/aws/) for the sleep; the answers stay a model of this bench's own.
 */
class AwsModel {
  readonly metadata = { handlerProtocol: 'http/1.1' };
  readonly table: Map<string, Record<string, unknown>>;
  constructor(table: Map<string, Record<string, unknown>>) {
    this.table = table;
  }

  /** An HTTP response as the SDK's deserialisers read it (status, headers, a body stream). */
  /** Off while a measurement's caches are being filled (unmeasured), so the warm-up costs no bench time. */
  latencyOn = true;

  async handle(request: HttpRequest): Promise<{ response: { statusCode: number; headers: Record<string, string>; body: Readable } }> {
    const target: string = Object.entries(request.headers).find(([k]) => k.toLowerCase() === 'x-amz-target')?.[1] ?? '';
    const latency = LATENCY_MS[target];
    if (!latency) throw new Error(`unmodelled call ${target}`);
    const raw = request.body as Uint8Array | string;
    const input = JSON.parse(typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8')) as Record<string, unknown>;
    if (this.latencyOn) await sleep(latency());
    const cpu0 = process.cpuUsage();
    const c = calls.get(target) ?? { count: 0, entries: 0 };
    c.count++;
    let out: unknown;
    if (target === 'AmazonSQS.SendMessageBatch') {
      const entries = input.Entries as { Id: string; MessageBody: string }[];
      c.entries += entries.length;
      out = {
        Successful: entries.map((e) => ({ Id: e.Id, MessageId: randomUUID(), MD5OfMessageBody: createHash('md5').update(e.MessageBody).digest('hex'), SequenceNumber: '18849496460467696128' })),
        Failed: [],
      };
    } else if (target === 'DynamoDB_20120810.BatchGetItem') {
      const requests = input.RequestItems as Record<string, { Keys: { pk: { S: string } }[] }>;
      const responses: Record<string, unknown[]> = {};
      for (const [tableName, r] of Object.entries(requests)) {
        c.entries += r.Keys.length;
        responses[tableName] = r.Keys.flatMap((k) => {
          const item = this.table.get(k.pk.S);
          return item ? [marshall(item)] : [];
        });
      }
      out = { Responses: responses, UnprocessedKeys: {} };
    } else {
      out = {};
    }
    calls.set(target, c);
    const body = Readable.from([Buffer.from(JSON.stringify(out))]);
    const spent = process.cpuUsage(cpu0);
    modelCpuMicros += spent.user + spent.system;
    return {
      response: {
        statusCode: 200,
        headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomUUID() },
        body,
      },
    };
  }

  updateHttpClientConfig(): void {}
  httpHandlerConfigs(): Record<string, never> {
    return {};
  }
  destroy(): void {}
}

/** Every video pinned round-robin (8 per slot), every slot live for the whole run. */
function leasesTable(nowMs: number): Map<string, Record<string, unknown>> {
  const t = new Map<string, Record<string, unknown>>();
  for (let s = 0; s < SLOTS; s++) {
    t.set(slotKey(s), { pk: slotKey(s), slot: s, owner: `task-${s}`, epoch: 1, expiresAtMs: nowMs + 3_600_000, heartbeatAtMs: nowMs + 3_600_000, videoCount: VIDEOS_PER_SLOT, launchSeq: 1, launchRequestedAtMs: 0 });
  }
  for (let v = 0; v < VIDEOS; v++) t.set(videoKey(videoId(v)), { pk: videoKey(videoId(v)), videoId: videoId(v), pinnedSlot: v % SLOTS, state: 'pinned', token: 1 });
  return t;
}

const videoId = (v: number) => `cam-${String(v).padStart(5, '0')}`;

/** An SQS record as Lambda hands it over, for a frame upload notification (sizes as AWS's). */
function ingestRecord(v: number, frame: number): SQSRecord {
  const key = `frames/${videoId(v)}/${String(frame).padStart(6, '0')}.jpg`;
  const body = JSON.stringify(
    buildObjectCreatedEvent({
      region: REGION, bucket: BUCKET, key, sizeBytes: 48_213, eTag: createHash('md5').update(key).digest('hex'),
      eventName: 'ObjectCreated:Put', eventTime: new Date(), sequencer: '0066F0E2B9C1A4D3E7', configurationId: 'FrameAffinityFrames',
      sourceIp: '203.0.113.17',
    }),
  );
  const now = String(Date.now());
  return toSqsRecord(
    {
      MessageId: randomUUID(),
      // Real receipt handles are a few hundred characters of base64.
      ReceiptHandle: Buffer.from(randomUUID().repeat(8)).toString('base64').slice(0, 380),
      Body: body,
      MD5OfBody: createHash('md5').update(body).digest('hex'),
      Attributes: { ApproximateReceiveCount: '1', SentTimestamp: now, SenderId: 'AIDAIENQZJOLO23YVJ4VO', ApproximateFirstReceiveTimestamp: now },
    },
    `arn:aws:sqs:${REGION}:123456789012:frameaffinity-ingest`,
    REGION,
  );
}

/** The fleet-wide stream: tick after tick, every video's next frame, a tick's videos shuffled. */
function* stream(): Generator<[number, number]> {
  const order = Array.from({ length: VIDEOS }, (_, v) => v);
  for (let tick = 0; ; tick++) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(draw() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (const v of order) yield [v, tick];
  }
}

let createRouterHandler: typeof import('../functions/router/handler.ts').createRouterHandler;
let model: AwsModel;

function contextFor(table: Map<string, Record<string, unknown>>, tunables: Tunables): FunctionContext {
  const handler = new AwsModel(table);
  model = handler;
  const credentials = { accessKeyId: 'AKIDBENCH', secretAccessKey: 'bench' };
  const base = { region: REGION, credentials, requestHandler: handler };
  const clients = createAwsClientsFrom({ sqs: { ...base }, dynamodb: { ...base }, s3: { ...base } });
  const wiring: Wiring = {
    region: REGION, bucket: BUCKET, leasesTable: 'fa-leases', resultsTable: 'fa-results', eventsTable: 'fa-events',
    ingestQueueUrl: `https://sqs.${REGION}.amazonaws.com/123456789012/fa-ingest`,
    ingestDlqUrl: `https://sqs.${REGION}.amazonaws.com/123456789012/fa-ingest-dlq`,
    slotQueueUrlPrefix: `https://sqs.${REGION}.amazonaws.com/123456789012/fa-slot-`,
    pinnedSlotIndex: 'byPinnedSlot', metricsNamespace: 'FrameAffinity',
  };
  return { wiring, tunables, clients, leases: LeaseStore.forWiring(clients.ddb, wiring, tunables), queues: new SlotQueues(clients.sqs, wiring.slotQueueUrlPrefix) };
}

interface Point {
  readonly mode: 'before' | 'after';
  readonly state: 'warm' | 'cold';
  readonly batchSize: number;
  readonly invocations: number;
  readonly framesPerInvocationSecond: number;
  readonly invocationMsP50: number;
  readonly invocationMsMax: number;
  readonly sendMessageBatchCallsPerFrame: number;
  readonly entriesPerSendMessageBatch: number;
  readonly batchGetItemCallsPerInvocation: number;
  /** CPU of the router, the handler and the SDK (the model's own CPU taken out), per frame. */
  readonly routerCpuMsPerFrame: number;
  /** The invocation time the latency model alone gives (calls / lanes × mean latency, per queue sequential), for comparison. */
  readonly modelledNetworkMs: number;
}

async function measure(mode: Point['mode'], state: Point['state'], batchSize: number, frames: Generator<[number, number]>): Promise<Point> {
  const tunables = validateTunables({ ...DEFAULT_TUNABLES, slotCount: SLOTS, videosPerSlot: VIDEOS_PER_SLOT, routerBatchSize: batchSize, routerBatchWindowSeconds: batchSize > 10 ? 1 : DEFAULT_TUNABLES.routerBatchWindowSeconds, routerSendConcurrency: mode === 'before' ? 1 : sendConcurrency });
  const table = leasesTable(Date.now());
  const invocations = batchSize <= 100 ? 20 : batchSize <= 1000 ? 6 : 3;
  const batches = Array.from({ length: invocations + (state === 'warm' ? 1 : 0) }, () =>
    Array.from({ length: batchSize }, () => {
      const [v, f] = frames.next().value as [number, number];
      return ingestRecord(v, f);
    }),
  );
  let context = contextFor(table, tunables);
  let handler = createRouterHandler(() => context);
  if (state === 'warm') {
    // One invocation fills the caches with the pins of the stream's videos (unmeasured).
    const warmup = Array.from({ length: VIDEOS }, (_, v) => ingestRecord(v, 1_000_000));
    model.latencyOn = false;
    for (let i = 0; i < warmup.length; i += 1000) await handler({ Records: warmup.slice(i, i + 1000) } as SQSEvent, lambdaContext('router', REGION, 900_000) as Context);
    model.latencyOn = true;
    batches.shift();
  }
  calls.clear();
  modelCpuMicros = 0;
  const walls: number[] = [];
  const cpu0 = process.cpuUsage();
  for (const records of batches) {
    if (state === 'cold') {
      // A fresh environment: new clients, empty caches (perEnvironment builds once per handler).
      context = contextFor(table, tunables);
      handler = createRouterHandler(() => context);
    }
    const t0 = performance.now();
    const r = await handler({ Records: records } as SQSEvent, lambdaContext('router', REGION, 900_000) as Context);
    walls.push(performance.now() - t0);
    if (r.batchItemFailures.length > 0) throw new Error(`${r.batchItemFailures.length} records failed`);
  }
  const cpu = process.cpuUsage(cpu0);
  const frameCount = invocations * batchSize;
  const sends = calls.get('AmazonSQS.SendMessageBatch') ?? { count: 0, entries: 0 };
  const gets = calls.get('DynamoDB_20120810.BatchGetItem') ?? { count: 0, entries: 0 };
  const sorted = [...walls].sort((a, b) => a - b);
  const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
  return {
    mode, state, batchSize, invocations,
    framesPerInvocationSecond: Math.round(frameCount / (walls.reduce((a, b) => a + b, 0) / 1000)),
    invocationMsP50: round(sorted[Math.floor(sorted.length / 2)]!),
    invocationMsMax: round(sorted[sorted.length - 1]!),
    sendMessageBatchCallsPerFrame: round(sends.count / frameCount, 3),
    entriesPerSendMessageBatch: round(sends.entries / Math.max(1, sends.count), 2),
    batchGetItemCallsPerInvocation: round(gets.count / invocations, 1),
    routerCpuMsPerFrame: round((cpu.user + cpu.system - modelCpuMicros) / 1000 / frameCount, 3),
    modelledNetworkMs: round(((sends.count / invocations) * 20) / (mode === 'before' ? 1 : sendConcurrency) + (gets.count / invocations) * 7.5, 0),
  };
}

/** The largest batch Lambda can hand over: records of this shape within the 6 MB payload. */
function payloadBound(): { recordBytes: number; maxRecords: number } {
  const sample = Array.from({ length: 100 }, (_, i) => ingestRecord(i, i));
  const eventBytes = JSON.stringify({ Records: sample }).length;
  const recordBytes = Math.ceil(eventBytes / sample.length);
  return { recordBytes, maxRecords: Math.floor(LAMBDA_INVOKE_PAYLOAD_BYTES / recordBytes) };
}

async function main(): Promise<void> {
  quietLogs();
  // Imported after quietLogs: Powertools reads its environment when the handler module loads.
  ({ createRouterHandler } = await import('../functions/router/handler.ts'));
  // Every slot is live, so the router must never launch: a launch fails the bench.
  setTaskLauncher({
    launch: async () => {
      throw new Error('the bench keeps every slot live: no launch expected');
    },
  });
  const payload = payloadBound();
  console.log(`Lambda event: ~${payload.recordBytes} bytes per S3-notification record; 6 MB holds ${payload.maxRecords} records`);
  const frames = stream();
  const points: Point[] = [];
  for (const batchSize of batchSizes) {
    for (const [mode, state] of [['before', 'warm'], ['after', 'warm'], ['after', 'cold']] as const) {
      const p = await measure(mode, state, batchSize, frames);
      points.push(p);
      console.log(
        `batch ${String(batchSize).padStart(5)} ${mode.padEnd(6)} ${state}: ${String(p.framesPerInvocationSecond).padStart(6)} frames/invocation-s, ` +
          `p50 ${p.invocationMsP50} ms (max ${p.invocationMsMax}), ${p.sendMessageBatchCallsPerFrame} sends/frame (${p.entriesPerSendMessageBatch} entries each), ` +
          `${p.batchGetItemCallsPerInvocation} BatchGetItem/invocation, router CPU ${p.routerCpuMsPerFrame} ms/frame, latency model alone ~${p.modelledNetworkMs} ms`,
      );
    }
  }
  const result = {
    bench: 'router-ingest',
    command: commandLine('router-ingest.ts'),
    date: new Date().toISOString(),
    machine: machine(),
    backend: 'in-process AWS model (SDK request handler) with injected latency; real router handler and SDK clients',
    latencyModelMs: { sendMessageBatch: [10, 30], batchGetItem: [5, 10], transactWriteItems: [10, 30], getItem: [3, 8] },
    workload: { slots: SLOTS, videosPerSlot: VIDEOS_PER_SLOT, fps: 30, seed },
    routerSendConcurrency: sendConcurrency,
    lambdaPayload: { limitBytes: LAMBDA_INVOKE_PAYLOAD_BYTES, ...payload },
    points,
  };
  const file = join(RESULTS_DIR, sendConcurrency === DEFAULT_TUNABLES.routerSendConcurrency ? 'router-ingest.json' : `router-ingest-send${sendConcurrency}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${file}`);
}

await main();
