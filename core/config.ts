/**
 * The single source of truth for tunables, defaults and resource names.
 *
 * The CDK stack, the router and janitor Lambdas, the GPU worker and the local
 * stack all read these values; nothing else in the repository hard-codes a TTL,
 * a capacity or a resource name.
 */

/** Tunables with their defaults. Every field can be overridden (CDK context, env). */
export interface Tunables {
  /** Number of worker slots, i.e. the maximum number of GPU tasks. */
  readonly slotCount: number;
  /** Videos a slot takes before admission prefers another slot. */
  readonly videosPerSlot: number;
  /** How long a slot lease lives without a heartbeat. */
  readonly slotLeaseTtlSeconds: number;
  /** How often a worker renews its slot lease. */
  readonly heartbeatIntervalSeconds: number;
  /** A video with no frames for this long is released by its worker. */
  readonly videoIdleReleaseSeconds: number;
  /** How long a missing frame is waited for before it is recorded as a gap. */
  readonly reorderWaitMs: number;
  /**
   * Where videos start. -1 (the default) is automatic: a video starts at the lowest frame
   * that exists for it (decided `reorderWaitMs` after its first frame, from an S3 listing),
   * and a frame below that start which turns up later is processed as `late`. A value of 0
   * or more fixes the start: frames below it are recorded as failures (`before-first-frame`).
   */
  readonly firstFrameNumber: number;
  /** Most out-of-order frames a video may buffer; past it the oldest missing frame becomes a gap. */
  readonly reorderBufferFrames: number;
  /** Frames larger than this are rejected with a failure record instead of being decoded. */
  readonly maxFrameBytes: number;
  /** Frames per inference call (cross-video micro-batch). */
  readonly inferenceBatchSize: number;
  /** Longest a partial inference batch waits for more frames. */
  readonly maxBatchWaitMs: number;
  /**
   * Threads onnxruntime gives one inference (its intra-op pool); 0 = its default, one per
   * physical core. On a CPU-only task, fewer than the cores leaves the rest to fetching,
   * decoding, tracking and commits, which otherwise take them from the model between
   * operators. With CUDA it only sizes the pool for the operators left on the CPU.
   */
  readonly inferenceThreads: number;
  /**
   * Visibility timeout of the slot FIFO queues (default 5 s). Short on purpose: messages
   * a crashed worker held, and their video's FIFO group with them, return within this
   * time, so it is the floor of failover after a crash (the slot lease of a stopped task
   * is expired at once; see Janitor). The worker extends the visibility of a batch still
   * running every half of this, so it must comfortably exceed one extension call.
   */
  readonly slotQueueVisibilitySeconds: number;
  /** Receives before a slot queue message goes to its DLQ. */
  readonly slotQueueMaxReceiveCount: number;
  /** Visibility timeout of the ingest queue (must exceed the router timeout). */
  readonly ingestVisibilitySeconds: number;
  /** Receives before an ingest message goes to the ingest DLQ. */
  readonly ingestMaxReceiveCount: number;
  /** Router Lambda batch size (records per invocation). */
  readonly routerBatchSize: number;
  /**
   * Router event source batching window: how long records are gathered before the router
   * is invoked with fewer than `routerBatchSize` (0 = invoke at once). Trades up to this
   * much ingest latency for about one invocation per batch instead of one per frame at
   * low traffic.
   */
  readonly routerBatchWindowSeconds: number;
  /** Router Lambda maximum concurrency on the SQS event source. */
  readonly routerMaxConcurrency: number;
  /**
   * How long a launched task may take to heartbeat: until then no other launch is made
   * for its slot and the slot is not counted as ownerless. It covers a cold start from
   * zero (capacity provider reaction, GPU instance boot and agent registration, pulling
   * the multi-GB CUDA image: 5-10 minutes), with half again as margin; a start that
   * overruns it is relaunched and counted (TaskStartTimeouts, which alarms).
   */
  readonly taskStartGraceSeconds: number;
  /** How long the router may trust a cached video -> slot pin (safe: workers forward strays). */
  readonly routerPinCacheSeconds: number;
  /** How long the router may trust its cached view of slot liveness and load. */
  readonly routerSlotCacheSeconds: number;
  /** How long released video records (lease + checkpoint) are kept before TTL may collect them. */
  readonly releasedVideoRetentionDays: number;
  /** Janitor period. */
  readonly janitorIntervalSeconds: number;
  /**
   * Most RunTask calls one janitor run has in flight at once. Bounds the burst a cold
   * fleet sends to ECS (whose RunTask rate is throttled per account) while letting 1,000
   * due launches finish well inside the janitor's timeout.
   */
  readonly janitorLaunchConcurrency: number;
  /**
   * Most launches that may be starting at once (granted, not yet heartbeated): ECS limits
   * the tasks waiting in PROVISIONING per cluster (500 by default). A janitor run launches
   * at most this many minus those still starting; the rest wait for the next run.
   */
  readonly maxProvisioningTasks: number;
  /**
   * How far apart two machines' clocks may be (NTP keeps EC2 and Lambda well under a
   * second; this is margin) before liveness suffers. A worker claims a slot only once its
   * lease ran out more than this long ago by the claimer's clock, and the router and
   * janitor treat a slot as dead (or its owner as suspect) only this much later than the
   * lease or heartbeat says. Costs this much extra failover when a dead task is not
   * reported stopped (a pause, a hang); a reported stop is taken over at once. Fencing,
   * not this margin, keeps a skewed worker's writes out.
   */
  readonly clockSkewToleranceMs: number;
  /**
   * A worker that owns no video, finds none pinned to its slot, and has received no
   * message for this long releases its slot and exits (code 0), so an idle fleet drains
   * to zero tasks and the capacity provider can retire the GPU instances. Frames arriving
   * later launch a task again, as from cold. 0 = never exit for idleness (keep the fleet warm).
   */
  readonly workerIdleExitSeconds: number;
  /** Where the worker loads its detector from: a local path or s3://bucket/key.onnx. Empty = demo model. */
  readonly modelUri: string;
  /** Detections below this score are discarded. */
  readonly detectionScoreThreshold: number;
  /**
   * The tracker's first association and new tracks take detections at or above this
   * score (ByteTrack's `track_thresh`). Scores are the model's own scale: a detector
   * calibrated differently from COCO-trained YOLO needs its own values.
   */
  readonly trackHighScoreThreshold: number;
  /** Detections between this and `trackHighScoreThreshold` only extend tracks (ByteTrack's second association); below it they are ignored. */
  readonly trackLowScoreThreshold: number;
  /** A detection left unmatched starts a new track only at or above this score. */
  readonly newTrackScoreThreshold: number;
}

/**
 * Upper bound of `reorderBufferFrames`: the buffer is part of the checkpoint, which lives
 * in one DynamoDB item (400 KB) and is budgeted at 300,000 bytes. A reference costs up to
 * ~310 bytes (128-character video id, 15-digit frame, 63-character bucket), so 500 of
 * them, plus the frames one receive adds after the buffer fills, leave the tracker at
 * least 120 KB (test/unit/checkpoint-size.test.ts).
 */
export const MAX_REORDER_BUFFER_FRAMES = 500;

export const DEFAULT_TUNABLES: Tunables = Object.freeze({
  slotCount: 4,
  videosPerSlot: 8,
  slotLeaseTtlSeconds: 15,
  heartbeatIntervalSeconds: 5,
  videoIdleReleaseSeconds: 60,
  reorderWaitMs: 5_000,
  firstFrameNumber: -1,
  reorderBufferFrames: 64,
  maxFrameBytes: 20 * 1024 * 1024,
  inferenceBatchSize: 8,
  maxBatchWaitMs: 10,
  inferenceThreads: 0,
  slotQueueVisibilitySeconds: 5,
  slotQueueMaxReceiveCount: 10,
  ingestVisibilitySeconds: 180,
  ingestMaxReceiveCount: 5,
  routerBatchSize: 10,
  routerBatchWindowSeconds: 1,
  routerMaxConcurrency: 10,
  taskStartGraceSeconds: 900,
  routerPinCacheSeconds: 30,
  routerSlotCacheSeconds: 2,
  releasedVideoRetentionDays: 30,
  janitorIntervalSeconds: 60,
  janitorLaunchConcurrency: 10,
  maxProvisioningTasks: 500,
  clockSkewToleranceMs: 5_000,
  workerIdleExitSeconds: 600,
  modelUri: '',
  detectionScoreThreshold: 0.25,
  // ByteTrack's published values.
  trackHighScoreThreshold: 0.5,
  trackLowScoreThreshold: 0.1,
  newTrackScoreThreshold: 0.6,
});

/** Thrown when a configuration value is out of range; the message names the setting. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Checks cross-field and range constraints; throws {@link ConfigError} with every problem found. */
export function validateTunables(t: Tunables): Tunables {
  const problems: string[] = [];
  const positiveInt = (k: keyof Tunables, max = Number.MAX_SAFE_INTEGER) => {
    const v = t[k] as number;
    if (!Number.isInteger(v) || v < 1 || v > max) problems.push(`${k} must be an integer between 1 and ${max} (got ${v})`);
  };
  positiveInt('slotCount', 1000);
  positiveInt('videosPerSlot', 1000);
  positiveInt('slotLeaseTtlSeconds', 3600);
  positiveInt('heartbeatIntervalSeconds', 3600);
  positiveInt('videoIdleReleaseSeconds', 86_400);
  positiveInt('reorderWaitMs', 3_600_000);
  positiveInt('reorderBufferFrames', MAX_REORDER_BUFFER_FRAMES);
  if (!Number.isSafeInteger(t.firstFrameNumber) || t.firstFrameNumber < -1) problems.push(`firstFrameNumber must be -1 (automatic) or a non-negative integer (got ${t.firstFrameNumber})`);
  positiveInt('maxFrameBytes', 5 * 1024 * 1024 * 1024);
  positiveInt('inferenceBatchSize', 256);
  positiveInt('maxBatchWaitMs', 60_000);
  if (!Number.isInteger(t.inferenceThreads) || t.inferenceThreads < 0 || t.inferenceThreads > 256) {
    problems.push(`inferenceThreads must be 0 (onnxruntime's default) or an integer between 1 and 256 (got ${t.inferenceThreads})`);
  }
  positiveInt('slotQueueVisibilitySeconds', 43_200);
  positiveInt('slotQueueMaxReceiveCount', 1000);
  positiveInt('ingestVisibilitySeconds', 43_200);
  positiveInt('ingestMaxReceiveCount', 1000);
  positiveInt('routerBatchSize', 10);
  if (!Number.isInteger(t.routerBatchWindowSeconds) || t.routerBatchWindowSeconds < 0 || t.routerBatchWindowSeconds > 300) {
    problems.push(`routerBatchWindowSeconds must be an integer between 0 and 300 (got ${t.routerBatchWindowSeconds})`);
  }
  positiveInt('routerMaxConcurrency', 1000);
  positiveInt('taskStartGraceSeconds', 3600);
  positiveInt('routerPinCacheSeconds', 3600);
  positiveInt('routerSlotCacheSeconds', 3600);
  positiveInt('releasedVideoRetentionDays', 3650);
  positiveInt('janitorIntervalSeconds', 3600);
  positiveInt('janitorLaunchConcurrency', 100);
  positiveInt('maxProvisioningTasks', 10_000);
  if (!Number.isInteger(t.clockSkewToleranceMs) || t.clockSkewToleranceMs < 0 || t.clockSkewToleranceMs > 60_000) {
    problems.push(`clockSkewToleranceMs must be an integer between 0 and 60000 (got ${t.clockSkewToleranceMs})`);
  }
  if (!Number.isInteger(t.workerIdleExitSeconds) || t.workerIdleExitSeconds < 0 || t.workerIdleExitSeconds > 86_400) {
    problems.push(`workerIdleExitSeconds must be 0 (never) or an integer between 1 and 86400 (got ${t.workerIdleExitSeconds})`);
  }
  if (t.heartbeatIntervalSeconds * 2 > t.slotLeaseTtlSeconds) {
    problems.push(
      `heartbeatIntervalSeconds (${t.heartbeatIntervalSeconds}) must be at most half of slotLeaseTtlSeconds (${t.slotLeaseTtlSeconds}) so one lost heartbeat does not lose the slot`,
    );
  }
  if (!(t.videoIdleReleaseSeconds > t.routerPinCacheSeconds)) {
    problems.push(
      `videoIdleReleaseSeconds (${t.videoIdleReleaseSeconds}) must exceed routerPinCacheSeconds (${t.routerPinCacheSeconds}): ` +
        'stale router pins are only safe because a video is released for idleness only after every router\'s cached pin of it has expired',
    );
  }
  if (t.routerMaxConcurrency < 2) problems.push('routerMaxConcurrency must be at least 2 (Lambda SQS event source minimum)');
  if (!(t.detectionScoreThreshold > 0 && t.detectionScoreThreshold < 1)) {
    problems.push(`detectionScoreThreshold must be in (0, 1) (got ${t.detectionScoreThreshold})`);
  }
  for (const k of ['trackHighScoreThreshold', 'trackLowScoreThreshold', 'newTrackScoreThreshold'] as const) {
    if (!(t[k] > 0 && t[k] < 1)) problems.push(`${k} must be in (0, 1) (got ${t[k]})`);
  }
  if (!(t.trackLowScoreThreshold <= t.trackHighScoreThreshold)) {
    problems.push(`trackLowScoreThreshold (${t.trackLowScoreThreshold}) must be at most trackHighScoreThreshold (${t.trackHighScoreThreshold})`);
  }
  if (t.modelUri && !/^(s3:\/\/[^/]+\/.+\.onnx|[^:]+\.onnx)$/.test(t.modelUri)) {
    problems.push(`modelUri must be a local .onnx path or s3://bucket/key.onnx (got ${t.modelUri})`);
  }
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return t;
}

/** Environment variable that carries each tunable (e.g. SLOT_LEASE_TTL_SECONDS). */
export function envNameOf(key: keyof Tunables): string {
  return key.replace(/([A-Z])/g, '_$1').toUpperCase();
}

/** Overrides defaults with whatever is set in `env`; validates the result. */
export function tunablesFromEnv(env: Record<string, string | undefined> = process.env): Tunables {
  const out: Record<string, unknown> = { ...DEFAULT_TUNABLES };
  for (const key of Object.keys(DEFAULT_TUNABLES) as (keyof Tunables)[]) {
    const raw = env[envNameOf(key)];
    if (raw === undefined || raw === '') continue;
    if (typeof DEFAULT_TUNABLES[key] === 'number') {
      const n = Number(raw);
      if (!Number.isFinite(n)) throw new ConfigError(`${envNameOf(key)} must be a number (got "${raw}")`);
      out[key] = n;
    } else {
      out[key] = raw;
    }
  }
  return validateTunables(out as unknown as Tunables);
}

/** Renders tunables as the environment variables {@link tunablesFromEnv} reads. */
export function tunablesToEnv(t: Tunables): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of Object.keys(t) as (keyof Tunables)[]) env[envNameOf(key)] = String(t[key]);
  return env;
}

/** Physical names of every resource, derived from one prefix (the stack name). */
export interface ResourceNames {
  readonly prefix: string;
  readonly leasesTable: string;
  readonly resultsTable: string;
  readonly ingestQueue: string;
  readonly ingestDlq: string;
  /** Where the router parks events it rejects (malformed keys, unknown events), with the reason attached. */
  readonly slotQueue: (slot: number) => string;
  readonly slotDlq: (slot: number) => string;
  /** Prefix of every slot queue name: `${slotQueuePrefix}${slot}.fifo`. */
  readonly slotQueuePrefix: string;
  /** GSI on the leases table listing the videos pinned to a slot. */
  readonly pinnedSlotIndex: string;
  /** CloudWatch metrics namespace. */
  readonly metricsNamespace: string;
}

export function resourceNames(prefix = 'FrameAffinity'): ResourceNames {
  const p = prefix;
  return {
    prefix: p,
    leasesTable: `${p}-leases`,
    resultsTable: `${p}-results`,
    ingestQueue: `${p}-ingest`,
    ingestDlq: `${p}-ingest-dlq`,
    slotQueuePrefix: `${p}-slot-`,
    slotQueue: (slot) => `${p}-slot-${slot}.fifo`,
    slotDlq: (slot) => `${p}-slot-${slot}-dlq.fifo`,
    pinnedSlotIndex: 'byPinnedSlot',
    metricsNamespace: 'FrameAffinity',
  };
}

/** The S3 layout. */
export const FRAME_PREFIX = 'frames/';
/** Name of the end-of-stream marker object inside a video's folder. */
export const END_MARKER_NAME = '_end';

/**
 * Runtime wiring shared by the router, janitor and worker: where the resources are.
 * In AWS the CDK stack sets these as environment variables; locally the local stack does.
 */
export interface Wiring {
  readonly region: string;
  readonly bucket: string;
  readonly leasesTable: string;
  readonly resultsTable: string;
  readonly ingestQueueUrl: string;
  readonly ingestDlqUrl: string;
  /** Slot queue URL = `${slotQueueUrlPrefix}${slot}.fifo`. */
  readonly slotQueueUrlPrefix: string;
  readonly pinnedSlotIndex: string;
  readonly metricsNamespace: string;
}

export const WIRING_ENV = {
  region: 'AWS_REGION',
  bucket: 'FRAME_BUCKET',
  leasesTable: 'LEASES_TABLE',
  resultsTable: 'RESULTS_TABLE',
  ingestQueueUrl: 'INGEST_QUEUE_URL',
  ingestDlqUrl: 'INGEST_DLQ_URL',
  slotQueueUrlPrefix: 'SLOT_QUEUE_URL_PREFIX',
  pinnedSlotIndex: 'PINNED_SLOT_INDEX',
  metricsNamespace: 'METRICS_NAMESPACE',
} as const satisfies Record<keyof Wiring, string>;

export function wiringFromEnv(env: Record<string, string | undefined> = process.env): Wiring {
  const missing: string[] = [];
  const read = (k: keyof Wiring, fallback?: string) => {
    const v = env[WIRING_ENV[k]] ?? fallback;
    if (v === undefined || v === '') missing.push(WIRING_ENV[k]);
    return v ?? '';
  };
  const names = resourceNames();
  const w: Wiring = {
    region: read('region', env.AWS_DEFAULT_REGION),
    bucket: read('bucket'),
    leasesTable: read('leasesTable'),
    resultsTable: read('resultsTable'),
    ingestQueueUrl: read('ingestQueueUrl'),
    ingestDlqUrl: read('ingestDlqUrl'),
    slotQueueUrlPrefix: read('slotQueueUrlPrefix'),
    pinnedSlotIndex: read('pinnedSlotIndex', names.pinnedSlotIndex),
    metricsNamespace: read('metricsNamespace', names.metricsNamespace),
  };
  if (missing.length > 0) throw new ConfigError(`Missing environment: ${missing.join(', ')}`);
  return w;
}

export function wiringToEnv(w: Wiring): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of Object.keys(WIRING_ENV) as (keyof Wiring)[]) env[WIRING_ENV[k]] = w[k];
  return env;
}

export function slotQueueUrl(w: Pick<Wiring, 'slotQueueUrlPrefix'>, slot: number): string {
  return `${w.slotQueueUrlPrefix}${slot}.fifo`;
}

/**
 * Exit code of a worker that stopped without its slot lease and left nothing behind:
 * drained on SIGTERM, idle for `workerIdleExitSeconds` (slot released), or no slot to
 * claim. The janitor does not treat it as a crash (core/janitor.ts WORKER_EXITS_WITHOUT_LEASE);
 * a slot that still has work is relaunched like any slot without a live owner.
 */
export const EXIT_DONE = 0;

/** Exit code of a worker that stopped because its slot lease was lost (it no longer held the slot). */
export const EXIT_LEASE_LOST = 3;

/** Environment the worker reads besides wiring and tunables (set by the TaskLauncher, the task definition or tests). */
export const WORKER_ENV = {
  /** Slot to claim; set per launch (ECS containerOverrides, local spawn). */
  slotId: 'SLOT_ID',
  /** Worker id in logs and results; default host-pid-random. */
  workerId: 'WORKER_ID',
  /** `vision` (ONNX detector + tracker, default) or `stats` (no model). */
  frameProcessor: 'FRAME_PROCESSOR',
  /** File touched on every confirmed heartbeat, for the container health check. */
  healthFile: 'HEALTH_FILE',
  /** Health check: the heartbeat file may be at most this old. */
  healthMaxAgeSeconds: 'HEALTH_MAX_AGE_SECONDS',
  /** With `stats`: extra milliseconds per batch, standing in for a slow model in tests. */
  statsDelayMs: 'STATS_PROCESSOR_DELAY_MS',
  /** How often EMF metric lines are written (default 10000). */
  metricsFlushIntervalMs: 'METRICS_FLUSH_INTERVAL_MS',
} as const;

// ---------------------------------------------------------------------------------------
// AWS SDK timeouts and retries (applied by core/aws/clients.ts to every client it builds).
// Not tunables: they describe the AWS calls, not the pipeline. Explicit client
// configuration (`requestHandler`, `maxAttempts`, `retryMode`) overrides them.
// ---------------------------------------------------------------------------------------

/** How one service's calls are bounded. */
export interface AwsCallPolicy {
  /** TCP connect must finish within this. */
  readonly connectionTimeoutMs: number;
  /** From sending a request to its response headers; past it the attempt fails with `TimeoutError` (retried). */
  readonly requestTimeoutMs: number;
  /** Longest the socket may stay idle during a call, including while a response body streams. */
  readonly socketTimeoutMs: number;
  /** Attempts per call, the first included (standard retry mode: jittered exponential backoff, retry quota). */
  readonly maxAttempts: number;
}

/**
 * Why these numbers (defaults: slot lease 15 s, heartbeat every 5 s):
 *
 * - DynamoDB: a single-item or transactional write answers in milliseconds, so 1.5 s is
 *   far beyond normal latency. A heartbeat is one UpdateItem, plus one GetItem when the
 *   update errs (it may have been applied). With 3 attempts an UpdateItem gives up after
 *   at most about 3 × 1.5 s = 4.5 s, less than the heartbeat interval, so a hung call
 *   delays at most one heartbeat; update plus re-read take at most about 9 s, less than
 *   TTL − interval = 10 s, so a worker cut off from DynamoDB declares its slot lost before
 *   the lease runs out (test/unit/aws-clients.test.ts checks this arithmetic).
 * - SQS: sends, deletes and visibility changes get 5 s. A long poll legitimately holds
 *   the response for `WaitTimeSeconds` (at most 20 s), so a ReceiveMessage gets its wait
 *   plus `longPollMarginMs`, and the socket idle limit must exceed 20 s as well.
 * - S3: 5 s to the first response byte of a GET, LIST or HEAD; uploads get
 *   `uploadMsPerMiB` more per MiB of body (the response only comes after the whole body).
 *   Frames and models can be many MiB, so a GET body is bounded by the idle limit
 *   (10 s without a byte), not by a total time.
 */
export const AWS_CALL_POLICY = Object.freeze({
  retryMode: 'standard' as const,
  dynamodb: Object.freeze({ connectionTimeoutMs: 1_000, requestTimeoutMs: 1_500, socketTimeoutMs: 1_500, maxAttempts: 3 }) satisfies AwsCallPolicy,
  sqs: Object.freeze({ connectionTimeoutMs: 2_000, requestTimeoutMs: 5_000, socketTimeoutMs: 25_000, maxAttempts: 3, longPollMarginMs: 5_000 }) satisfies AwsCallPolicy,
  s3: Object.freeze({ connectionTimeoutMs: 2_000, requestTimeoutMs: 5_000, socketTimeoutMs: 10_000, maxAttempts: 3, uploadMsPerMiB: 1_000 }) satisfies AwsCallPolicy,
});
