/**
 * AWS cost per camera-month (issues 34 and 44): every line the stack pays, per camera and
 * fixed, over a 730-hour month, from four measured inputs and the list prices in
 * core/cost/prices.ts:
 *
 *   npx node bench/cost-model.ts [--frames bench/results/api-calls-live.json]
 *     [--segments bench/results/api-calls-live-segments.json] [--scene bench/results/checkpoint-scene.json]
 *     [--series bench/results/api-calls-live-scene.json]
 *     [--out bench/results/cost-model.json] [--jpeg-kb 300] [--h264-mbps 1,2,4] [--cameras 8,16,80,800]
 *
 * - Calls per frame (S3, SQS, Lambda invocations, logs, DynamoDB reads) are the live runs'
 *   (`bench/api-calls-live.ts` on the local stack: 8 cameras sharing one slot; the stats
 *   processor, one whole-frame detection, no rules).
 * - DynamoDB writes and rule events are the real scene's (`bench/checkpoint-scene.ts`: 5
 *   detections a frame through the real tracker, 10 rules, commits on the twin through
 *   the production adapter, one segment per commit as a live worker commits): the scene's
 *   commit write units per frame, plus what the live run paid beyond the same model of its
 *   own workload (heartbeats, the rare extra commit), at least the heartbeats' 720 units
 *   per slot-hour shared by `videosPerSlot` cameras. JPEG frames (one item and, at a live
 *   rate, one commit per frame and video) take the live figure plus the scene's extra per
 *   commit. Rule events scale with the scene's activity, not the frame rate: the scene's
 *   events per second, each an outbox item (2 write units), an EventBridge event and a
 *   Pipes request.
 * - Fixed monthly costs are counted from the synthesized template (`cdk synth` of
 *   infra/app.ts for each of {@link STACK_PROFILES}: default, small-fleet, small-fleet
 *   provisioned, lean): interface endpoints per AZ-hour, NAT gateways, NAT instances with
 *   their volumes, public IPv4 addresses, alarms per metric, the dashboard, the KMS key,
 *   Pipes' stream polling; custom metrics and Container Insights (when the cluster has it)
 *   while the fleet runs. Custom metrics are the series the live scene run defined
 *   (`--series`: the router's, worker's and janitor's EMF lines), plus the GPU sampler's and
 *   the fault metrics of {@link ASSUMPTIONS}. The template also decides two per-camera lines: the days a frame
 *   is billed past its retention (the frame bucket versioned or not) and PITR on the
 *   results table.
 *
 * Nothing here is measured: it is arithmetic over the result files, the template and the
 * prices and assumptions below, each stated once.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { HOURS_PER_MONTH, PRICES, SECONDS_PER_MONTH } from '../core/cost/prices.ts';
import { DEFAULT_TUNABLES } from '../core/config.ts';
import { METRIC_NAMES } from '../core/metric-names.ts';
import { SAMPLED_METRICS } from '../gpu-worker/runtime/gpu-sampler.ts';
import { metricNameOf } from './harness/emf-series.ts';
import { buildApp, cdkJsonContext } from '../infra/app.ts';
import { FRAME_PREFIX } from '../core/config/s3-layout.ts';
import { benchMain, commandLine, RESULTS_DIR, writeResult, type Bench } from './harness/main.ts';
import { parseFlags, type Flag } from './harness/options.ts';

const FLAGS = {
  frames: { text: join(RESULTS_DIR, 'api-calls-live.json') },
  segments: { text: join(RESULTS_DIR, 'api-calls-live-segments.json') },
  scene: { text: join(RESULTS_DIR, 'checkpoint-scene.json') },
  series: { text: join(RESULTS_DIR, 'api-calls-live-scene.json') },
  out: { text: join(RESULTS_DIR, 'cost-model.json') },
  'jpeg-kb': { num: [300, 1, 10_000] },
  'h264-mbps': { text: '1,2,4' },
  cameras: { text: '8,16,80,800' },
} as const satisfies Record<string, Flag>;

export { PRICES };

/** What is assumed, not measured. */
export const ASSUMPTIONS = {
  hoursPerMonth: HOURS_PER_MONTH,
  routerSecondsPerInvocation: 0.1, // docs/deploy.md §8
  routerMemoryGb: 0.5,
  routerReportBytesPerInvocation: 300, // Lambda's START / END / REPORT lines
  ddbItemOverheadBytes: 100, // DynamoDB bills 100 bytes of overhead per item stored
  /**
   * Days a frame object is billed beyond `frameRetentionDays` (decision 79), whether the
   * frame bucket is versioned read from the template (`VersioningConfiguration.Status`):
   * - any bucket: lifecycle expiry rounds to the next midnight UTC, half a day on average
   *   (`frameExpiryRoundingDays`);
   * - versioned: the expired object stays as a non-current version for the frames rule's
   *   `NoncurrentDays` (read from the template), counted from when lifecycle made it
   *   non-current (some time after that midnight) and rounded to the next midnight again:
   *   about half a day more (`noncurrentExpiryRoundingDays`).
   * Unversioned: 0.5 day; versioned with NoncurrentDays 1: 0.5 + 1 + 0.5 = 2 days (1.5 to
   * 2.5, by when lifecycle gets to the object).
   */
  frameExpiryRoundingDays: 0.5,
  noncurrentExpiryRoundingDays: 0.5,
  /** S3 server access log record per request, bytes (kept 90 days by the log bucket's lifecycle). */
  accessLogBytesPerRequest: 400,
  accessLogRetentionDays: 90,
  /** GetRecords calls per second per stream shard by the pipe's poller (the events table's stream: one shard at this volume). */
  pipeStreamPollsPerSecond: 4,
  /**
   * Custom metrics are measured (decision 83): the series a steady scene's router, worker and
   * janitor define (`metricSeries` of bench/api-calls-live.ts), plus the GPU sampler's
   * (SAMPLED_METRICS: a GPU host's, not the local run's) and these fault metrics, billed as
   * if a real scene's damaged streams and redeliveries raised each of them in every hour
   * (one Reason value each). A series of a rarer fault, start or end costs $0.30 / 730 for
   * each hour it appears.
   */
  faultMetricsEveryHour: [METRIC_NAMES.worker.framesFailed, METRIC_NAMES.worker.framesGap, METRIC_NAMES.worker.framesLate, METRIC_NAMES.worker.framesDuplicate, METRIC_NAMES.worker.videoRollbacks],
  /** Container Insights (standard) on ECS: cluster- and task-level metrics, billed as custom metrics while instances run. */
  containerInsightsMetricsWhileRunning: 20,
  /** GPU: one worker per g5.xlarge sustains this many frames a second at this utilisation (docs/deploy.md §8; your model decides). */
  gpuFramesPerSecond: 100,
  gpuUtilisation: 0.7,
  gpuInstanceType: 'g5.xlarge',
  /** Provisioned capacity (`provisionedCapacityUnits`) is kept this busy by auto scaling (infra/tables.ts: its target utilisation): units consumed cost the hourly price over it. */
  provisionedUtilisation: 0.7,
  /** The worker image in ECR (several GB per version kept). */
  ecrImageGb: 5,
  retentionProfiles: [
    { name: 'frames 7 d, results 30 d', frameDays: 7, resultsDays: 30 },
    { name: 'frames 30 d (stack default), results 90 d', frameDays: 30, resultsDays: 90 },
  ],
} as const;

const GB = 1024 ** 3;
const money = (x: number) => Math.round(x * 100) / 100;
const r4 = (x: number) => Math.round(x * 10_000) / 10_000;

/** The part of a run of bench/api-calls-live.ts this model reads. */
interface LiveRun {
  readonly source?: 'frames' | 'segments';
  readonly fpsPerVideo: number;
  readonly segmentSeconds?: number;
  readonly framesPerSegment?: number;
  readonly receiveGatherMs: number;
  readonly framesUploaded: number;
  readonly complete: boolean;
  readonly writeUnitsPerFrame: number;
  readonly readUnitsPerFrame: number;
  readonly resultItemBytes: number;
  readonly resultItemsPerFrame?: number;
  readonly storedResultBytesPerFrame?: number;
  readonly resultWriteUnitsPerFrame?: number;
  readonly workerLogBytesPerFrame: number;
  readonly latencyMs: { readonly p50: number };
  readonly operations: Readonly<Record<string, number>>;
  /** The CloudWatch metric series seen in the steady state, by service (runs since decision 83). */
  readonly metricSeries?: Readonly<Record<string, readonly string[]>>;
}

/** The part of a row of bench/checkpoint-scene.ts this model reads. */
export interface SceneRow {
  readonly workload: 'scene' | 'baseline';
  readonly source: 'segments' | 'frames';
  readonly fps: number;
  readonly framesPerCommit: number;
  readonly eventsPerFrame: number;
  /** Outbox items per frame (rule events batched per unit, decision 72); absent in result files before it (one item per event). */
  readonly eventItemsPerFrame?: number;
  readonly resultItemBytesPerFrame: number;
  readonly checkpointBytes: { readonly leaseItemStored: { readonly p50: number; readonly max: number }; readonly leaseItemPlain: { readonly p50: number; readonly max: number } };
  readonly checkpointBytesWrittenPerFrame: { readonly stored: number; readonly plain: number };
  readonly writeUnitsPerFrame: { readonly slotCheck: number; readonly checkpoint: number; readonly checkpointUncompressed: number; readonly results: number; readonly resultsFormat1: number; readonly summary: number; readonly events: number; readonly eventsSingle?: number };
}

/**
 * What one camera's DynamoDB writes and events are, per frame, under the scene (see the
 * module comment). `before`: as the previous version stored them (the checkpoint a plain
 * map, packed records in format 1).
 */
export function sceneWrites(run: LiveRun, scene: readonly SceneRow[], videosPerSlot: number, before = false) {
  const segments = run.source === 'segments';
  const pick = (workload: SceneRow['workload']) =>
    segments
      ? scene.find((r) => r.workload === workload && r.source === 'segments' && r.fps === run.fpsPerVideo && r.framesPerCommit === run.framesPerSegment)
      : scene.find((r) => r.workload === workload && r.source === 'frames');
  const real = pick('scene');
  const base = pick('baseline');
  if (!real || !base) throw new Error(`checkpoint-scene.json has no ${segments ? `${run.fpsPerVideo} fps, ${run.framesPerSegment}-frame segments` : 'JPEG frames'} row (scene and baseline): run bench/checkpoint-scene.ts`);
  const ck = (r: SceneRow) => (before ? r.writeUnitsPerFrame.checkpointUncompressed : r.writeUnitsPerFrame.checkpoint);
  const res = (r: SceneRow) => (before ? r.writeUnitsPerFrame.resultsFormat1 : r.writeUnitsPerFrame.results);
  const commitSansEvents = (r: SceneRow) => r.writeUnitsPerFrame.slotCheck + ck(r) + res(r) + r.writeUnitsPerFrame.summary;
  // Events scale with the scene's activity (events a second), not with the frame rate: the
  // busiest row's rate, and this row's outbox scaled up to it (an upper bound for batches,
  // which grow in size before they grow in number).
  const eventsPerSecond = Math.max(...scene.filter((r) => r.workload === 'scene').map((r) => r.eventsPerFrame * r.fps));
  const eventsPerFrame = eventsPerSecond / run.fpsPerVideo;
  const scale = real.eventsPerFrame > 0 ? eventsPerFrame / real.eventsPerFrame : 1;
  const singleUnits = real.writeUnitsPerFrame.eventsSingle ?? real.writeUnitsPerFrame.events;
  const eventUnitsPerFrame = real.eventsPerFrame > 0 ? (before ? singleUnits : real.writeUnitsPerFrame.events) * scale : 2 * eventsPerFrame;
  const eventItemsPerFrame = before || real.eventItemsPerFrame === undefined ? eventsPerFrame : real.eventItemsPerFrame * scale;
  const heartbeatsPerFrame = 3600 / DEFAULT_TUNABLES.heartbeatIntervalSeconds / videosPerSlot / (run.fpsPerVideo * 3600);
  let results: number;
  let checkpointEtc: number;
  if (segments) {
    results = res(real);
    // What the live run paid beyond the model of its own workload: heartbeats, the odd extra commit (at least the heartbeats).
    const rest = Math.max(heartbeatsPerFrame, run.writeUnitsPerFrame - commitSansEvents(base) - base.writeUnitsPerFrame.events);
    checkpointEtc = real.writeUnitsPerFrame.slotCheck + ck(real) + real.writeUnitsPerFrame.summary + rest;
  } else {
    const liveResults = run.resultWriteUnitsPerFrame ?? 2 * Math.max(1, Math.ceil(run.resultItemBytes / 1024));
    results = liveResults + res(real) - res(base);
    checkpointEtc = run.writeUnitsPerFrame - liveResults + ck(real) - ck(base);
  }
  return { results, checkpointEtc, events: eventUnitsPerFrame, eventsPerFrame, eventItemsPerFrame, eventsPerSecond, resultBytesPerFrame: real.resultItemBytesPerFrame, leaseItem: real.checkpointBytes.leaseItemStored };
}

/** What a stack profile's template decides about a camera's storage: days a frame is billed past its retention, and PITR on the results. */
export interface StorageTerms {
  readonly framesAfterExpiryDays: number;
  readonly resultsPitr: boolean;
}

/** The storage terms of a synthesized stack (see {@link ASSUMPTIONS}.frameExpiryRoundingDays). */
export function storageTerms(inv: StackInventory): StorageTerms {
  const b = inv.frameBucket;
  if (!b) throw new Error('the template has no frame bucket (an S3 bucket with a lifecycle rule on frames/): cannot price frame storage');
  if (b.versioned && b.noncurrentDays === undefined) throw new Error('the frame bucket is versioned and keeps non-current frames for ever (no NoncurrentVersionExpiration on its frames/ rule)');
  return {
    framesAfterExpiryDays: ASSUMPTIONS.frameExpiryRoundingDays + (b.versioned ? b.noncurrentDays! + ASSUMPTIONS.noncurrentExpiryRoundingDays : 0),
    resultsPitr: inv.resultsTablePitr,
  };
}

/** Cost lines of one camera for a month, in USD. */
export function cameraMonth(run: LiveRun, scene: readonly SceneRow[], o: { jpegBytes: number; h264BitsPerSecond: number; videosPerSlot: number; before?: boolean; storage: StorageTerms }) {
  const segments = run.source === 'segments';
  const k = segments ? run.framesPerSegment! : 1;
  const framesPerMonth = run.fpsPerVideo * SECONDS_PER_MONTH;
  const objectsPerMonth = framesPerMonth / k;
  const perFrame = (prefix: string) => Object.entries(run.operations).filter(([op]) => op.startsWith(prefix)).reduce((a, [, n]) => a + n, 0) / run.framesUploaded;
  const month = (perFrameCount: number, pricePerMillion: number) => (perFrameCount * framesPerMonth * pricePerMillion) / 1e6;
  const invocationsPerFrame = perFrame('router.sqs.SendMessageBatchCommand');
  const w = sceneWrites(run, scene, o.videosPerSlot, o.before ?? false);
  const s3RequestsPerFrame = 1 / k + perFrame('worker.s3.') + perFrame('router.s3.');
  const lines = {
    uploaderPut: (objectsPerMonth * PRICES.s3PutPerMillion) / 1e6,
    s3GetHead: month(perFrame('worker.s3.GetObjectCommand') + perFrame('worker.s3.HeadObjectCommand') + perFrame('router.s3.'), PRICES.s3GetPerMillion),
    s3List: month(perFrame('worker.s3.ListObjectsV2Command'), PRICES.s3ListPerMillion),
    sqsFifo: month(perFrame('router.sqs.') + perFrame('worker.sqs.'), PRICES.sqsFifoPerMillion),
    sqsStandard: ((objectsPerMonth + 2 * invocationsPerFrame * framesPerMonth) * PRICES.sqsStandardPerMillion) / 1e6,
    lambda: month(invocationsPerFrame, PRICES.lambdaRequestPerMillion) + invocationsPerFrame * framesPerMonth * ASSUMPTIONS.routerSecondsPerInvocation * ASSUMPTIONS.routerMemoryGb * PRICES.lambdaGbSecond,
    ddbWritesResults: month(w.results, PRICES.ddbWriteUnitPerMillion),
    ddbWritesCheckpointsEtc: month(w.checkpointEtc, PRICES.ddbWriteUnitPerMillion),
    ddbReads: month(run.readUnitsPerFrame, PRICES.ddbReadUnitPerMillion),
    logs: ((run.workerLogBytesPerFrame * framesPerMonth + invocationsPerFrame * framesPerMonth * ASSUMPTIONS.routerReportBytesPerInvocation) / GB) * PRICES.logsIngestPerGb,
    // Each outbox item (a batch of a unit's rule events, or a life event) is one Pipes request and one bus event (under 64 KB: one chunk each).
    ruleEvents: month(w.events, PRICES.ddbWriteUnitPerMillion) + month(w.eventItemsPerFrame, PRICES.eventBridgePerMillionEvents + PRICES.pipesPerMillionRequests),
  };
  const requests = Object.values(lines).reduce((a, b) => a + b, 0);
  // Storage, steady state: a month's volume kept N days is N / 30.4 of it, all month.
  const daysPerMonth = HOURS_PER_MONTH / 24;
  const bytesPerMonth = segments ? (o.h264BitsPerSecond / 8) * SECONDS_PER_MONTH : o.jpegBytes * framesPerMonth;
  const framesStoragePerDay = ((bytesPerMonth / GB) * PRICES.s3StoragePerGbMonth) / daysPerMonth;
  const storedResultBytesPerFrame = w.resultBytesPerFrame + (segments ? 1 / k : 1) * ASSUMPTIONS.ddbItemOverheadBytes;
  const resultsGbPerDay = (storedResultBytesPerFrame * framesPerMonth) / GB / daysPerMonth;
  const accessLogsGbMonth = (s3RequestsPerFrame * framesPerMonth * ASSUMPTIONS.accessLogBytesPerRequest * (ASSUMPTIONS.accessLogRetentionDays / daysPerMonth)) / GB;
  const profiles = ASSUMPTIONS.retentionProfiles.map((p) => {
    const frames = framesStoragePerDay * p.frameDays;
    const afterExpiry = framesStoragePerDay * o.storage.framesAfterExpiryDays;
    const results = resultsGbPerDay * p.resultsDays * PRICES.ddbStoragePerGbMonth;
    const pitr = o.storage.resultsPitr ? resultsGbPerDay * p.resultsDays * PRICES.ddbPitrPerGbMonth : 0;
    const accessLogs = accessLogsGbMonth * PRICES.s3StoragePerGbMonth;
    return {
      profile: p.name,
      framesStorage: money(frames),
      framesAfterExpiry: money(afterExpiry),
      resultsStorage: money(results),
      pitr: money(pitr),
      accessLogs: money(accessLogs),
      total: money(requests + frames + afterExpiry + results + pitr + accessLogs),
      totalWithoutRuleEvents: money(requests - lines.ruleEvents + frames + afterExpiry + results + pitr + accessLogs),
    };
  });
  return {
    source: segments ? 'segments' : 'frames',
    fps: run.fpsPerVideo,
    ...(segments ? { segmentSeconds: run.segmentSeconds, framesPerSegment: k } : {}),
    framesPerMonth,
    objectsPerMonth: Math.round(objectsPerMonth),
    perFrame: {
      writeUnitsResults: r4(w.results),
      writeUnitsCheckpointsEtc: r4(w.checkpointEtc),
      writeUnitsRuleEvents: r4(w.events),
      ruleEvents: r4(w.eventsPerFrame),
      outboxItems: r4(w.eventItemsPerFrame),
      readUnits: run.readUnitsPerFrame,
      liveWriteUnits: run.writeUnitsPerFrame,
      routerInvocations: r4(invocationsPerFrame),
      resultBytes: r4(w.resultBytesPerFrame),
    },
    leaseItemBytes: w.leaseItem,
    liveRun: { complete: run.complete, latencyP50Ms: run.latencyMs.p50 },
    lines: Object.fromEntries(Object.entries(lines).map(([key, v]) => [key, money(v)])),
    requestsTotal: money(requests),
    storage: o.storage,
    storagePerDayKept: { frames: r4(framesStoragePerDay), results: r4(resultsGbPerDay * PRICES.ddbStoragePerGbMonth), pitr: r4(resultsGbPerDay * PRICES.ddbPitrPerGbMonth) },
    profiles,
  };
}

/** What the template creates that costs money whether or not frames flow (a synthesized stack's resources). */
export interface StackInventory {
  readonly interfaceEndpointAzs: number;
  readonly interfaceEndpoints: number;
  readonly natGateways: number;
  readonly alarmMetrics: number;
  readonly alarms: number;
  readonly dashboards: number;
  readonly kmsKeys: number;
  readonly pipes: number;
  readonly containerInsights: boolean;
  /** Provisioned tables and indexes (`provisionedCapacityUnits`): each keeps at least 1 read and 1 write unit. */
  readonly provisionedTablesAndIndexes: number;
  /** NAT instances (`natInstanceType`: instances with the source/destination check off), one type per instance. */
  readonly natInstanceTypes: readonly string[];
  /** Their EBS volumes, GiB together. */
  readonly natInstanceVolumeGb: number;
  /** Public IPv4 addresses: Elastic IPs (each NAT gateway's) and instances that associate one (each NAT instance). */
  readonly publicIpv4Addresses: number;
  /** Tables, and those with point-in-time recovery on. */
  readonly tables: number;
  readonly tablesWithPitr: number;
  /** PITR on the results table (whose bytes the per-camera storage lines price). */
  readonly resultsTablePitr: boolean;
  /** The frame bucket (the bucket whose lifecycle expires `frames/`): versioned or not, and the days its rule keeps a non-current frame. */
  readonly frameBucket?: { readonly versioned: boolean; readonly noncurrentDays?: number };
}

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

/** Counts a template's fixed-cost resources. Pure. */
export function stackInventory(resources: Resources): StackInventory {
  const all = Object.values(resources);
  const of = (type: string) => all.filter((r) => r.Type === type);
  const endpoints = of('AWS::EC2::VPCEndpoint').filter((r) => r.Properties?.VpcEndpointType === 'Interface');
  const alarms = of('AWS::CloudWatch::Alarm');
  const natInstances = of('AWS::EC2::Instance').filter((r) => r.Properties?.SourceDestCheck === false);
  const tables = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::DynamoDB::Table');
  const frameBucket = frameBucketOf(resources);
  return {
    interfaceEndpoints: endpoints.length,
    interfaceEndpointAzs: endpoints.reduce((n, r) => n + ((r.Properties?.SubnetIds as unknown[] | undefined)?.length ?? 0), 0),
    natGateways: of('AWS::EC2::NatGateway').length,
    alarms: alarms.length,
    // An alarm is billed per metric it evaluates (metric math: each MetricStat; a plain alarm: one).
    alarmMetrics: alarms.reduce((n, r) => {
      const metrics = r.Properties?.Metrics as { MetricStat?: unknown }[] | undefined;
      return n + (metrics ? Math.max(1, metrics.filter((m) => m.MetricStat).length) : 1);
    }, 0),
    dashboards: of('AWS::CloudWatch::Dashboard').length,
    kmsKeys: of('AWS::KMS::Key').length,
    pipes: of('AWS::Pipes::Pipe').length,
    provisionedTablesAndIndexes: of('AWS::DynamoDB::Table')
      .filter((r) => r.Properties?.BillingMode !== 'PAY_PER_REQUEST')
      .reduce((n, r) => n + 1 + ((r.Properties?.GlobalSecondaryIndexes as unknown[] | undefined)?.length ?? 0), 0),
    containerInsights: of('AWS::ECS::Cluster').some((r) => JSON.stringify(r.Properties?.ClusterSettings ?? []).includes('"enabled"') || JSON.stringify(r.Properties?.ClusterSettings ?? []).includes('"enhanced"')),
    natInstanceTypes: natInstances.map((r) => String(r.Properties?.InstanceType)),
    natInstanceVolumeGb: natInstances.reduce((n, r) => n + ((r.Properties?.BlockDeviceMappings as { Ebs?: { VolumeSize?: number } }[] | undefined) ?? []).reduce((m, b) => m + (b.Ebs?.VolumeSize ?? 0), 0), 0),
    publicIpv4Addresses: of('AWS::EC2::EIP').length + of('AWS::EC2::Instance').filter((r) => JSON.stringify(r.Properties?.NetworkInterfaces ?? []).includes('"AssociatePublicIpAddress":true')).length,
    tables: tables.length,
    tablesWithPitr: tables.filter(([, r]) => pitrOn(r)).length,
    resultsTablePitr: tables.some(([id, r]) => id.startsWith('TablesResults') && pitrOn(r)),
    ...(frameBucket ? { frameBucket } : {}),
  };
}

function pitrOn(table: Resources[string]): boolean {
  return (table.Properties?.PointInTimeRecoverySpecification as { PointInTimeRecoveryEnabled?: boolean } | undefined)?.PointInTimeRecoveryEnabled === true;
}

/** The bucket whose lifecycle expires `frames/`: versioned or not, and its rule's days for a non-current frame (undefined: kept for ever). */
function frameBucketOf(resources: Resources): StackInventory['frameBucket'] {
  for (const r of Object.values(resources)) {
    if (r.Type !== 'AWS::S3::Bucket') continue;
    const rules = ((r.Properties?.LifecycleConfiguration as { Rules?: Record<string, unknown>[] } | undefined)?.Rules ?? []).filter((x) => (x.Prefix ?? (x.Filter as { Prefix?: string } | undefined)?.Prefix) === FRAME_PREFIX && x.ExpirationInDays !== undefined);
    if (rules.length === 0) continue;
    const versioned = (r.Properties?.VersioningConfiguration as { Status?: string } | undefined)?.Status === 'Enabled';
    const noncurrent = rules.map((x) => (x.NoncurrentVersionExpiration as { NoncurrentDays?: number } | undefined)?.NoncurrentDays ?? (x.NoncurrentVersionExpirationInDays as number | undefined)).find((d) => d !== undefined);
    return { versioned, ...(noncurrent !== undefined ? { noncurrentDays: noncurrent } : {}) };
  }
  return undefined;
}

/** The custom metric series a deployed stack pays for: while the fleet runs, and always (the janitor's). */
export interface MetricSeriesBill {
  readonly whileRunning: {
    /** Measured: the router's and worker's series in the steady state. */
    readonly measured: readonly string[];
    /** The GPU sampler's metrics the measurement did not see (it ran without a GPU). */
    readonly sampled: readonly string[];
    /** ASSUMPTIONS.faultMetricsEveryHour not already measured. */
    readonly faults: readonly string[];
    readonly total: number;
  };
  readonly always: { readonly measured: readonly string[]; readonly total: number };
}

/**
 * The series to bill from the `metricSeries` of live runs (by service: router, worker,
 * janitor), their union: the janitor's run always, the rest while the fleet runs, with the
 * sampler's and the fault metrics added by name when no measured series has that name.
 */
export function metricSeriesBill(measured: readonly Readonly<Record<string, readonly string[]>>[]): MetricSeriesBill {
  const running = new Set<string>();
  const always = new Set<string>();
  for (const m of measured) {
    for (const [service, keys] of Object.entries(m)) for (const k of keys) (service === 'janitor' ? always : running).add(k);
  }
  if (running.size === 0 || always.size === 0) throw new Error('the live run has no metric series of the fleet and of the janitor: run `npx node bench/api-calls-live.ts --processor scene --source segments --fps 3 --segment-seconds 10 --gather-ms 250 --seconds 40` again');
  const names = new Set([...running].map(metricNameOf));
  const sampled = SAMPLED_METRICS.filter((n) => !names.has(n));
  const faults = ASSUMPTIONS.faultMetricsEveryHour.filter((n) => !names.has(n));
  return {
    whileRunning: { measured: [...running].sort(), sampled, faults, total: running.size + sampled.length + faults.length },
    always: { measured: [...always].sort(), total: always.size },
  };
}

/** Monthly fixed costs of a deployed stack, USD: `idle` with no cameras (fleet at zero), `running` added while workers run around the clock. */
export function fixedMonthly(inv: StackInventory, series: MetricSeriesBill) {
  const h = HOURS_PER_MONTH;
  const streamReads = Math.max(0, inv.pipes * ASSUMPTIONS.pipeStreamPollsPerSecond * h * 3600 - PRICES.ddbStreamReadsFreePerMonth);
  const idle = {
    interfaceEndpoints: inv.interfaceEndpointAzs * h * PRICES.interfaceEndpointPerAzHour,
    natGateways: inv.natGateways * h * PRICES.natGatewayPerHour,
    natInstances: inv.natInstanceTypes.reduce((n, type) => {
      const hourly = PRICES.ec2InstanceHour[type];
      if (hourly === undefined) throw new Error(`no price for the NAT instance type ${type}: add it to PRICES.ec2InstanceHour (core/cost/prices.ts)`);
      return n + hourly * h;
    }, 0),
    natInstanceVolumes: inv.natInstanceVolumeGb * PRICES.ebsGp3PerGbMonth,
    publicIpv4: inv.publicIpv4Addresses * h * PRICES.publicIpv4PerHour,
    alarms: inv.alarmMetrics * PRICES.cloudWatchAlarmPerMonth,
    dashboard: inv.dashboards * PRICES.cloudWatchDashboardPerMonth,
    kmsKeys: inv.kmsKeys * PRICES.kmsKeyPerMonth,
    pipeStreamPolling: (streamReads / 100_000) * PRICES.ddbStreamReadsPer100k,
    janitorMetrics: series.always.total * PRICES.customMetricPerMonth,
    dynamoDbMinimumCapacity: inv.provisionedTablesAndIndexes * h * (PRICES.ddbProvisionedWcuHour + PRICES.ddbProvisionedRcuHour),
    ecrImage: ASSUMPTIONS.ecrImageGb * PRICES.ecrStoragePerGbMonth,
  };
  const running = {
    customMetrics: series.whileRunning.total * PRICES.customMetricPerMonth,
    containerInsights: inv.containerInsights ? ASSUMPTIONS.containerInsightsMetricsWhileRunning * PRICES.customMetricPerMonth : 0,
  };
  const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
  const round = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, money(v)]));
  return { idle: round(idle), idleTotal: money(sum(idle)), running: round(running), runningTotal: money(sum(idle) + sum(running)) };
}

/** A camera's GPU share a month: its frames at the assumed rate and utilisation, and never less than one slot's share (`videosPerSlot` per GPU). */
export function gpuPerCameraMonth(fps: number, videosPerSlot: number): number {
  const share = Math.max(fps / (ASSUMPTIONS.gpuFramesPerSecond * ASSUMPTIONS.gpuUtilisation), 1 / videosPerSlot);
  return share * HOURS_PER_MONTH * PRICES.gpuInstanceHour[ASSUMPTIONS.gpuInstanceType]!;
}

/** Price per million units consumed on provisioned capacity at the assumed utilisation, as a fraction of on demand's: writes, reads. */
export const PROVISIONED_RATIO = {
  writes: (PRICES.ddbProvisionedWcuHour * 1e6) / 3600 / ASSUMPTIONS.provisionedUtilisation / PRICES.ddbWriteUnitPerMillion,
  reads: (PRICES.ddbProvisionedRcuHour * 1e6) / 3600 / ASSUMPTIONS.provisionedUtilisation / PRICES.ddbReadUnitPerMillion,
};

/** A camera row's lines with DynamoDB's writes and reads on provisioned capacity (the rule events' outbox writes included). */
export function provisionedLines(r: ReturnType<typeof cameraMonth>): Record<string, number> {
  const l = r.lines as Record<string, number>;
  const eventWrites = (r.perFrame.writeUnitsRuleEvents * r.framesPerMonth * PRICES.ddbWriteUnitPerMillion) / 1e6;
  return {
    ...l,
    ddbWritesResults: money(l.ddbWritesResults! * PROVISIONED_RATIO.writes),
    ddbWritesCheckpointsEtc: money(l.ddbWritesCheckpointsEtc! * PROVISIONED_RATIO.writes),
    ddbReads: money(l.ddbReads! * PROVISIONED_RATIO.reads),
    ruleEvents: money(l.ruleEvents! - eventWrites + eventWrites * PROVISIONED_RATIO.writes),
  };
}

/** The camera's own total (first retention profile) with or without provisioned capacity. */
function ownTotal(r: ReturnType<typeof cameraMonth>, provisioned: boolean, withoutRuleEvents = false): number {
  const p = r.profiles[0]!;
  if (!provisioned) return withoutRuleEvents ? p.totalWithoutRuleEvents : p.total;
  const l = provisionedLines(r);
  const storage = p.framesStorage + p.framesAfterExpiry + p.resultsStorage + p.pitr + p.accessLogs;
  return Object.entries(l).reduce((a, [k, v]) => a + (withoutRuleEvents && k === 'ruleEvents' ? 0 : v), 0) + storage;
}

/**
 * The stack profiles priced, each by the context it is synthesized with (docs/deploy.md §8):
 * the defaults; small-fleet (one NAT gateway instead of the interface endpoints); it with
 * provisioned DynamoDB; and lean (decision 79): that with one t4g.nano NAT instance instead
 * of the NAT gateway, point-in-time recovery and Container Insights off.
 */
export const STACK_PROFILES = {
  default: {},
  smallFleet: { natGateways: 1, interfaceEndpoints: false },
  smallFleetProvisioned: { natGateways: 1, interfaceEndpoints: false, provisionedCapacityUnits: 1000 },
  lean: { natGateways: 1, interfaceEndpoints: false, provisionedCapacityUnits: 1000, natInstanceType: 't4g.nano', pointInTimeRecovery: false, containerInsights: false },
} as const satisfies Record<string, Record<string, unknown>>;
type ProfileName = keyof typeof STACK_PROFILES;
const PROFILE_NAMES = Object.keys(STACK_PROFILES) as ProfileName[];

function synthInventory(context: Record<string, unknown>): StackInventory {
  const outdir = mkdtempSync(join(tmpdir(), 'cost-model-cdk-'));
  try {
    const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
    return stackInventory(Template.fromStack(stack).toJSON().Resources as Resources);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

function readRuns(file: string): LiveRun[] {
  return (JSON.parse(readFileSync(file, 'utf8')) as { runs: LiveRun[] }).runs;
}

async function main(bench: Bench, args: readonly string[]): Promise<number> {
  const o = parseFlags('cost-model.ts', FLAGS, args);
  if (!o) return 0;
  const mbps = o.h264Mbps.split(',').map(Number);
  const cameraCounts = o.cameras.split(',').map(Number);
  const scene = (JSON.parse(readFileSync(o.scene, 'utf8')) as { rows: SceneRow[] }).rows;
  const videosPerSlot = DEFAULT_TUNABLES.videosPerSlot;
  const frameRuns = readRuns(o.frames).filter((r) => (r.source ?? 'frames') === 'frames');
  const segmentRuns = readRuns(o.segments).filter((r) => r.source === 'segments');
  // One frames run per rate: the default receive gather's when several were run.
  const byFps = new Map<number, LiveRun>();
  for (const r of frameRuns) if (!byFps.has(r.fpsPerVideo) || r.receiveGatherMs === DEFAULT_TUNABLES.receiveGatherMs) byFps.set(r.fpsPerVideo, r);
  const rates = [...new Set([...byFps.keys(), ...segmentRuns.map((r) => r.fpsPerVideo)])].sort((a, b) => a - b);
  // H.264 bit rate by frame rate: --h264-mbps lists one per rate, lowest first (1080p camera presets: an assumption).
  const bitsFor = (fps: number) => (mbps[Math.min(rates.indexOf(fps), mbps.length - 1)] ?? 4) * 1e6;
  const runs = [...[...byFps.values()].sort((a, b) => a.fpsPerVideo - b.fpsPerVideo), ...segmentRuns.sort((a, b) => a.fpsPerVideo - b.fpsPerVideo)];

  const series = metricSeriesBill(readRuns(o.series).map((r) => r.metricSeries ?? {}));
  bench.say(`custom metric series: ${series.whileRunning.total} while the fleet runs (${series.whileRunning.measured.length} measured, ${series.whileRunning.sampled.length} of the GPU sampler, ${series.whileRunning.faults.length} fault metrics), ${series.always.total} always (the janitor's)`);
  bench.say(`synthesizing the stack for each profile (${PROFILE_NAMES.join(', ')}) to count its fixed-cost resources and read its storage terms ...`);
  const fixed = Object.fromEntries(
    PROFILE_NAMES.map((name) => {
      const context = STACK_PROFILES[name];
      const inventory = synthInventory(context);
      return [name, { context, inventory, storage: storageTerms(inventory), ...fixedMonthly(inventory, series) }];
    }),
  ) as Record<ProfileName, { context: Record<string, unknown>; inventory: StackInventory; storage: StorageTerms } & ReturnType<typeof fixedMonthly>>;
  const rowOf = (r: LiveRun, before: boolean, storage: StorageTerms) => cameraMonth(r, scene, { jpegBytes: o.jpegKb * 1024, h264BitsPerSecond: bitsFor(r.fpsPerVideo), videosPerSlot, before, storage });
  // A camera's own lines depend on the profile through its template: the frame bucket's versioning and PITR on the results.
  const rowsBy = Object.fromEntries(PROFILE_NAMES.map((name) => [name, runs.map((r) => rowOf(r, false, fixed[name].storage))])) as Record<ProfileName, ReturnType<typeof cameraMonth>[]>;
  const rows = rowsBy.default;
  const before = runs.map((r) => rowOf(r, true, fixed.default.storage));

  const head = ['source', 'fps', 'PUT', 'GET/HEAD', 'LIST', 'SQS FIFO', 'SQS std', 'Lambda', 'DDB results', 'DDB ckpt etc', 'DDB reads', 'logs', 'rule events', 'requests', ...ASSUMPTIONS.retentionProfiles.flatMap((_, i) => [`frames st.${i + 1}`, `+after expiry`, `results+PITR ${i + 1}`, `TOTAL ${i + 1}`])];
  bench.say(`default profile (frames ${fixed.default.storage.framesAfterExpiryDays} d past expiry, results PITR ${fixed.default.storage.resultsPitr ? 'on' : 'off'}):`);
  bench.say(head.join(' | '));
  for (const r of rows) {
    const l = r.lines as Record<string, number>;
    bench.say(
      [
        r.source === 'segments' ? `segments ${r.segmentSeconds} s` : 'frames',
        r.fps,
        l.uploaderPut, l.s3GetHead, l.s3List, l.sqsFifo, l.sqsStandard, l.lambda, l.ddbWritesResults, l.ddbWritesCheckpointsEtc, l.ddbReads, l.logs, l.ruleEvents,
        r.requestsTotal,
        ...r.profiles.flatMap((p) => [p.framesStorage, p.framesAfterExpiry, money(p.resultsStorage + p.pitr), p.total]),
      ].join(' | '),
    );
  }
  for (const [name, f] of Object.entries(fixed)) {
    bench.say(`fixed (${name}): idle $${f.idleTotal} a month, with the fleet running $${f.runningTotal}: ${JSON.stringify(f.idle)} + ${JSON.stringify(f.running)}; frames ${f.storage.framesAfterExpiryDays} d past expiry (bucket ${f.inventory.frameBucket?.versioned ? 'versioned' : 'unversioned'}), PITR on ${f.inventory.tablesWithPitr} of ${f.inventory.tables} tables`);
  }

  // Per camera-month at N cameras: the camera's own lines (frames 7 d, results 30 d) under each profile + its fixed costs shared, with and without the GPU.
  const ownOf = (name: ProfileName, i: number, withoutRuleEvents = false) => ownTotal(rowsBy[name][i]!, fixed[name].inventory.provisionedTablesAndIndexes > 0, withoutRuleEvents);
  const segmentRows = rows.map((r, i) => ({ r, i })).filter(({ r }) => r.source === 'segments');
  const perCamera = segmentRows.map(({ r, i }) => {
    const own = r.profiles[0]!;
    const gpu = gpuPerCameraMonth(r.fps, videosPerSlot);
    return {
      source: `segments ${r.segmentSeconds} s`,
      fps: r.fps,
      cameraOwn: own.total,
      cameraOwnWithoutRuleEvents: own.totalWithoutRuleEvents,
      cameraOwnProvisioned: money(ownTotal(r, true)),
      cameraOwnByProfile: Object.fromEntries(PROFILE_NAMES.map((name) => [name, money(ownOf(name, i))])),
      gpu: money(gpu),
      byCameras: cameraCounts.map((n) => ({
        cameras: n,
        ...Object.fromEntries(
          PROFILE_NAMES.map((name) => {
            const mine = ownOf(name, i);
            const share = fixed[name].runningTotal / n;
            return [name, { nonGpu: money(mine + share), nonGpuWithoutRuleEvents: money(ownOf(name, i, true) + share), withGpu: money(mine + share + gpu) }];
          }),
        ),
      })) as ({ cameras: number } & Record<ProfileName, { nonGpu: number; nonGpuWithoutRuleEvents: number; withGpu: number }>)[],
    };
  });
  for (const p of perCamera) {
    bench.say(`per camera-month, ${p.source} at ${p.fps} fps (frames 7 d, results 30 d): own $${p.cameraOwn} ($${p.cameraOwnWithoutRuleEvents} without rule events), by profile ${JSON.stringify(p.cameraOwnByProfile)}, GPU share $${p.gpu}`);
    for (const c of p.byCameras) {
      bench.say(`  ${c.cameras} cameras: default $${c.default.nonGpu} non-GPU ($${c.default.nonGpuWithoutRuleEvents} without rule events; $${c.default.withGpu} with GPU); small-fleet $${c.smallFleet.nonGpu} ($${c.smallFleet.withGpu}); small-fleet, provisioned $${c.smallFleetProvisioned.nonGpu}; lean $${c.lean.nonGpu} ($${c.lean.nonGpuWithoutRuleEvents} without rule events)`);
    }
  }

  // Where each dollar goes (issue 44's two targets): every line of a camera-month at 16 cameras, largest first, per profile.
  const TARGETS = [
    { fps: 30, segmentSeconds: 2, target: 30 },
    { fps: 3, segmentSeconds: 10, target: 8 },
  ];
  const SHARED_OVER = 16;
  const lineItems = TARGETS.flatMap((t) => {
    const at = segmentRows.find(({ r }) => r.fps === t.fps && r.segmentSeconds === t.segmentSeconds);
    if (!at) return [];
    const byProfile = Object.fromEntries(
      PROFILE_NAMES.map((name) => {
        const f = fixed[name];
        const r = rowsBy[name][at.i]!;
        const p = r.profiles[0]!;
        const storage = { framesStorage: p.framesStorage, framesAfterExpiry: p.framesAfterExpiry, resultsStorage: p.resultsStorage, pitr: p.pitr, accessLogs: p.accessLogs };
        const provisioned = f.inventory.provisionedTablesAndIndexes > 0;
        const own: Record<string, number> = { ...(provisioned ? provisionedLines(r) : (r.lines as Record<string, number>)), ...storage };
        const shared = Object.fromEntries(Object.entries({ ...f.idle, ...f.running }).map(([k, v]) => [`fixed.${k}`, money(v / SHARED_OVER)]));
        const all = Object.entries({ ...own, ...shared }).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
        const total = money(all.reduce((a, [, v]) => a + v, 0));
        const eventWrites = (r.perFrame.writeUnitsRuleEvents * r.framesPerMonth * PRICES.ddbWriteUnitPerMillion * (provisioned ? PROVISIONED_RATIO.writes : 1)) / 1e6;
        const ddbWrites = own.ddbWritesResults! + own.ddbWritesCheckpointsEtc! + eventWrites;
        return [name, { total, target: t.target, met: total <= t.target, ddbWrites: money(ddbWrites), lines: Object.fromEntries(all) }];
      }),
    ) as Record<ProfileName, { total: number; target: number; met: boolean; ddbWrites: number; lines: Record<string, number> }>;
    return [{ case: `${t.fps} fps, ${t.segmentSeconds}-s segments, frames 7 d, results 30 d, fixed shared over ${SHARED_OVER} cameras`, ...byProfile }];
  });
  for (const li of lineItems) {
    for (const name of PROFILE_NAMES) {
      const x = li[name];
      bench.say(`where the dollars go: ${li.case}, ${name}: $${x.total} (target $${x.target}, ${x.met ? 'met' : 'not met'}); DynamoDB writes $${x.ddbWrites} of it`);
      bench.say('  ' + Object.entries(x.lines).map(([k, v]) => `${k} ${v} (${Math.round((100 * v) / x.total)} %)`).join(', '));
    }
  }
  // The targets at every camera count, each profile (the same sums as lineItems at 16).
  const againstTargets = TARGETS.flatMap((t) => {
    const p = perCamera.find((x) => x.fps === t.fps && x.source === `segments ${t.segmentSeconds} s`);
    if (!p) return [];
    return [{ case: `${t.fps} fps, ${t.segmentSeconds}-s segments`, target: t.target, byCameras: p.byCameras.map((c) => ({ cameras: c.cameras, ...Object.fromEntries(PROFILE_NAMES.map((name) => [name, { nonGpu: c[name].nonGpu, met: c[name].nonGpu <= t.target }])) })) }];
  });
  for (const a of againstTargets) {
    bench.say(`target ${a.case} ≤ $${a.target}: ` + a.byCameras.map((c) => `${c.cameras} cameras ` + PROFILE_NAMES.map((name) => `${name} $${(c as unknown as Record<string, { nonGpu: number; met: boolean }>)[name]!.nonGpu}${(c as unknown as Record<string, { met: boolean }>)[name]!.met ? ' ✓' : ''}`).join(', ')).join('; '));
  }

  writeResult(o.out, {
    command: commandLine('cost-model.ts', args),
    date: new Date().toISOString(),
    inputs: {
      frames: o.frames.replace(/^.*bench\//, 'bench/'),
      segments: o.segments.replace(/^.*bench\//, 'bench/'),
      scene: o.scene.replace(/^.*bench\//, 'bench/'),
      series: o.series.replace(/^.*bench\//, 'bench/'),
      jpegBytes: o.jpegKb * 1024,
      h264Mbps: Object.fromEntries(rates.map((f) => [f, bitsFor(f) / 1e6])),
      videosPerSlot,
    },
    prices: PRICES,
    assumptions: ASSUMPTIONS,
    metricSeries: series,
    notes: [
      'Per camera, month = 730 hours. Calls and read units per frame are the live runs\' (8 cameras sharing one slot, the stats processor); DynamoDB writes and rule events are the real scene\'s (bench/checkpoint-scene.ts: model, on the twin through the production adapter), see the module comment.',
      'rows: the default profile, as now stored (the checkpoint compressed, packed records in format 2); rowsBefore: the same scene as the previous version stored it (the checkpoint a plain map, records in format 1); rowsByProfile: each profile\'s storage lines (they follow its template).',
      'ruleEvents: the scene\'s 10 rules raise events at a rate set by the scene (objects crossing lines, entering and leaving zones), not by the frame rate; each is an outbox item (2 write units), an EventBridge event and a Pipes request. A deployment without rules pays none: totalWithoutRuleEvents.',
      'Storage is steady state: frames kept frameRetentionDays plus framesAfterExpiry (lifecycle rounds expiry to the next midnight UTC, 0.5 day on average, in any bucket; a versioned frame bucket, read from the template, adds its NoncurrentDays and another 0.5 day of rounding), result items kept resultsRetentionDays with PITR on the same bytes when the results table has it (read from the template), S3 access logs kept 90 days.',
      'fixed: counted from each profile\'s synthesized template (interface endpoints per AZ-hour, NAT gateways, NAT instances with their EBS volumes, public IPv4 addresses (Elastic IPs of NAT gateways included), alarm metrics, dashboards, KMS keys, the pipe\'s stream polling) plus the janitor\'s metric series (measured) and the ECR image; running adds the fleet\'s custom metric series (metricSeries: measured in the live scene run, plus the GPU sampler\'s and the assumed hourly fault metrics) and Container Insights (when the cluster has it) while workers run around the clock (prorated by the hour otherwise).',
      'GPU: one worker per g5.xlarge at the assumed frames a second and utilisation, at least 1 / videosPerSlot instance per camera.',
      'smallFleetProvisioned: the small-fleet profile with -c provisionedCapacityUnits=1000 (tables and index provisioned, auto scaled at 70 %): DynamoDB units consumed (writes, reads, the rule events\' outbox writes) cost the hourly unit price over the utilisation, and each table and index keeps 1 write and 1 read unit all month (fixed: dynamoDbMinimumCapacity).',
      'lean: smallFleetProvisioned with -c natInstanceType=t4g.nano -c pointInTimeRecovery=false -c containerInsights=false (decision 79): a NAT instance (its hours, 8 GiB gp3 root volume and public IPv4) instead of the NAT gateway (its hours and Elastic IP), no PITR on any table, no Container Insights metrics.',
      'Not priced: data through a NAT (gateway $0.045/GB; a NAT instance none, traffic to AWS services in the region is free) and interface endpoints ($0.01/GB), Container Insights\' performance log events, PITR on the leases and events tables (their bytes are small and not modelled).',
      'Frame sizes are assumptions (--jpeg-kb per 1080p JPEG, --h264-mbps per rate for 1080p H.264), not measured.',
    ],
    fixed,
    rows,
    rowsBefore: before.map((r) => ({ source: r.source, fps: r.fps, segmentSeconds: r.segmentSeconds, lines: r.lines, requestsTotal: r.requestsTotal, profiles: r.profiles })),
    rowsByProfile: Object.fromEntries(PROFILE_NAMES.map((name) => [name, rowsBy[name].map((r) => ({ source: r.source, fps: r.fps, segmentSeconds: r.segmentSeconds, storage: r.storage, profiles: r.profiles }))])),
    perCamera,
    againstTargets,
    lineItems,
  }, bench.say);
  return 0;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  await benchMain('cost-model', (bench) => main(bench, args));
}
