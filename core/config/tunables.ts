/**
 * The runtime tunables, declared once in {@link TUNABLES}: default, range, unit and one
 * line of meaning per tunable. The {@link Tunables} type, {@link DEFAULT_TUNABLES}, the
 * range checks, the environment variable names ({@link envNameOf}) and the README's
 * configuration table derive from it; rules that relate several tunables are the named
 * checks of {@link CROSS_FIELD_CHECKS}.
 *
 * Adding a tunable: one entry in {@link TUNABLES} (TSDoc saying why, when there is more
 * to say than the meaning), a named check if it constrains another tunable, then
 * `node scripts/config-tables.ts --write` to regenerate the README table. The CDK
 * context key, the environment variable and the stack's validation follow.
 */
import { ConfigError, defaultsOf, rangeProblems, settingsMarkdownTable, type SettingsOf, type SettingsTable } from './settings.ts';
import { INGEST_RETENTION_SECONDS, SQS_MAX_VISIBILITY_SECONDS, ingestOutageRideOutSeconds } from '../ingest/ingest-retry.ts';

/**
 * Upper bound of `reorderBufferFrames`: the buffer is part of the checkpoint, which lives
 * in one DynamoDB item (400 KB) and is budgeted at 300,000 bytes. A reference costs up to
 * ~310 bytes (128-character video id, 15-digit frame, 63-character bucket), so 500 of
 * them, plus the frames one receive adds after the buffer fills, leave the tracker at
 * least 120 KB (test/core/commit/checkpoint-size.test.ts).
 */
export const MAX_REORDER_BUFFER_FRAMES = 500;

/**
 * Largest Lambda SQS event source batch (standard queues, with a batching window):
 * https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html
 */
export const MAX_ROUTER_BATCH_SIZE = 10_000;

/**
 * The router event source's maximum concurrency: `routerMaxConcurrency` when set, else
 * derived from `slotCount` as max(10, ceil(slotCount / 2)), within Lambda's 2..1000.
 * Why half the slots: at 1,000 slots it asks for 500 concurrent invocations, half the
 * default account concurrency (1,000), leaving the rest to the janitor and the account's
 * other functions, while 500 × the router's ~570 frames per invocation-second (batch
 * 1,000 at 512 MB; ~1,200 at 1,769 MB) covers the 240,000 frames/s such a fleet uploads
 * (docs/deploy.md, "Ingest capacity"). The floor of 10 is the old default: the event
 * source's start (5 concurrent batches) with room to burst.
 */
export function routerMaxConcurrencyOf(t: Pick<Tunables, 'routerMaxConcurrency' | 'slotCount'>): number {
  if (t.routerMaxConcurrency !== 0) return t.routerMaxConcurrency;
  return Math.min(1000, Math.max(10, Math.ceil(t.slotCount / 2)));
}

/** Every tunable: default, range, unit, meaning. Every one can be overridden (CDK context, environment). */
export const TUNABLES = {
  /** Number of worker slots, i.e. the maximum number of GPU tasks. */
  slotCount: { kind: 'integer', default: 4, min: 1, max: 1000, unit: 'slots', meaning: 'Worker slots = slot FIFO queues = most GPU tasks (see docs/deploy.md, "Scaling to 1,000 slots")' },
  /** Videos a slot takes before admission prefers another slot. */
  videosPerSlot: { kind: 'integer', default: 8, min: 1, max: 1000, unit: 'videos', meaning: 'Videos a slot takes before admission prefers another slot' },
  /** How long a slot lease lives without a heartbeat. */
  slotLeaseTtlSeconds: { kind: 'integer', default: 15, min: 1, max: 3600, unit: 's', meaning: 'Slot lease lifetime without a heartbeat' },
  /**
   * How often a worker re-checks a video's rules document (issue 22): a conditional GET per
   * video (plus one for the shared default) at most this often, so a changed rules file
   * takes effect on a live video within this bound plus one round, and costs no call per frame.
   */
  rulesRefreshSeconds: { kind: 'integer', default: 30, min: 1, max: 86_400, unit: 's', meaning: 'How often a video\'s rules document (`rules/{videoId}.json` or `rules/_default.json`) is re-checked with a conditional GET; bounds how long a change takes' },
  /** How often a worker renews its slot lease. */
  heartbeatIntervalSeconds: { kind: 'integer', default: 5, min: 1, max: 3600, unit: 's', meaning: 'Worker heartbeat period; at most half of `slotLeaseTtlSeconds`' },
  /** A video with no frames for this long is released by its worker. */
  videoIdleReleaseSeconds: { kind: 'integer', default: 60, min: 1, max: 86_400, unit: 's', meaning: 'A video with no frames for this long is released (state checkpointed); more than `routerPinCacheSeconds`' },
  /** How long a missing frame is waited for before it is recorded as a gap. */
  reorderWaitMs: { kind: 'integer', default: 5_000, min: 1, max: 3_600_000, unit: 'ms', meaning: 'How long a missing frame is waited for once frames after it arrive (the watermark\'s bound) before it becomes a gap' },
  /**
   * Where videos start. -1 (the default) is automatic: a video starts at the lowest frame
   * that exists for it (decided at its first frame by one S3 listing; `reorderWaitMs` later
   * when that listing failed or could not prove what lies below),
   * and a frame below that start which turns up later is processed as `late`. A value of 0
   * or more fixes the start: frames below it are recorded as failures (`before-first-frame`).
   */
  firstFrameNumber: {
    kind: 'integer', default: -1, min: -1, max: Number.MAX_SAFE_INTEGER, off: { value: -1, meaning: 'automatic' }, unit: 'frame',
    meaning: 'Where videos start: -1 = the lowest frame that exists (lower frames that come later are `late`); 0 or more fixes the start',
  },
  /** Most out-of-order frames a video may buffer; past it the oldest missing frame becomes a gap. */
  reorderBufferFrames: { kind: 'integer', default: 64, min: 1, max: MAX_REORDER_BUFFER_FRAMES, unit: 'frames', meaning: 'Most out-of-order frames buffered per video (the buffer lives in the checkpoint)' },
  /** Frames larger than this are rejected with a failure record instead of being decoded. */
  maxFrameBytes: { kind: 'integer', default: 20 * 1024 * 1024, min: 1, max: 5 * 1024 * 1024 * 1024, unit: 'bytes', meaning: 'Larger frames get a `failed: oversized` record instead of being decoded (default 20 MiB)' },
  /**
   * Encoded segments (core/ingest/segment-keys.ts) larger than this get `failed: oversized`
   * records for every frame they cover instead of being fetched: a segment's bytes are held
   * while its frames decode. 2 s of 1080p H.264 is 1-3 MB; 10 s of 4K at 40 Mbit/s is 50 MB.
   */
  maxSegmentBytes: { kind: 'integer', default: 64 * 1024 * 1024, min: 1, max: 5 * 1024 * 1024 * 1024, unit: 'bytes', meaning: 'Larger segments get `failed: oversized` records for their frames instead of being decoded (default 64 MiB: 10 s of 4K at 50 Mbit/s); with `maxOpenSegments` it must fit the worker container\'s memory limit (checked at synth)' },
  /**
   * Segment decoders open at once in a worker (gpu-worker/sources/segment/segment-reader.ts; the least
   * recently used is closed beyond). Each holds its segment's bytes and its frames, so this,
   * `maxSegmentBytes` and `segmentReadAheadBytes` must fit under the container's hard memory
   * limit `taskMemoryLimitMiB`: the stack checks it at synth (core/config/worker-memory.ts).
   */
  maxOpenSegments: { kind: 'integer', default: 32, min: 1, max: 1024, unit: 'decoders', meaning: 'Segment decoders open at once per worker (each holds a segment and its frames); checked at synth against taskMemoryLimitMiB with maxSegmentBytes' },
  /**
   * Where segments decode (gpu-worker/video/segment-decoder.ts): `auto` uses NVDEC when a
   * CUDA device opens and the CPU otherwise, segment by segment (a hardware failure mid-way
   * goes on on the CPU); the decoder in use is logged and is the `Decoder` dimension of
   * `SegmentFramesDecoded`.
   */
  videoDecoder: {
    kind: 'text', default: 'auto', pattern: /^(auto|cpu|cuda)$/, rule: 'be auto, cpu or cuda',
    meaning: 'Where H.264/H.265 segments decode: `auto` (NVDEC when a CUDA device opens, else CPU), `cpu`, or `cuda` (falls back to CPU, logged)',
  },
  /**
   * Segments read ahead across rounds (decision 51; gpu-worker/sources/segment/segment-reader.ts
   * `readAhead`): while a video's current segment decodes, the GETs of the next ones its
   * held messages name start, so a round that crosses into a new segment does not wait
   * for its GET with the GPU idle. Counted past the segment decoding now (or about to);
   * the bytes are held until its decoder opens, within `segmentReadAheadBytes`.
   */
  segmentReadAheadSegments: {
    kind: 'integer', default: 2, min: 0, max: 8, off: { value: 0, meaning: 'off' }, unit: 'segments',
    meaning: "A video's next segments fetched into memory while its current one decodes, at most this many past it per video (decision 51)",
  },
  /**
   * The worker's budget for segments read ahead (all videos): 16 videos × 2 segments of
   * 2-s 1080p H.264 (1-3 MB) fit 64 MiB; a segment that does not fit is fetched by its
   * round, as without reading ahead.
   */
  segmentReadAheadBytes: {
    kind: 'integer', default: 64 * 1024 * 1024, min: 1, max: 4 * 1024 * 1024 * 1024, unit: 'bytes',
    meaning: 'Most bytes of segments read ahead held at once per worker; one that does not fit is fetched by its round (default 64 MiB)',
  },
  /** Frames per inference call (cross-video micro-batch). */
  inferenceBatchSize: { kind: 'integer', default: 8, min: 1, max: 256, unit: 'frames', meaning: 'Frames per inference call (cross-video micro-batch)' },
  /** Longest a partial inference batch waits for more frames. */
  maxBatchWaitMs: { kind: 'integer', default: 10, min: 1, max: 60_000, unit: 'ms', meaning: 'Longest a partial inference batch waits for more frames' },
  /**
   * At a live rate each long poll returns with the first frame that arrives, and that frame
   * then pays a receive, a delete batch and a commit of its own. After a receive that was
   * neither full nor behind, the worker starts the next one no sooner than this after it
   * (holding no message meanwhile), so one receive, delete and commit carry the frames of
   * several videos. Bounded by 1 s: it adds at most this much to a frame's upload-to-record
   * time, and never delays a drain, a lost lease, a video's due wake-up or a backlog
   * (decision 31, bench/README.md "API calls per frame at a live rate").
   */
  receiveGatherMs: {
    kind: 'integer', default: 250, min: 0, max: 1_000, off: { value: 0, meaning: 'receive at once' }, unit: 'ms',
    meaning: 'At a live rate, the shortest spacing of receives, so one receive, delete and commit carry several frames; adds at most this to latency (decision 31)',
  },
  /**
   * Receives a worker has in flight at once behind a backlog (decision 30). A FIFO receive
   * fills from one group first, and a group is blocked while any of its messages is in
   * flight, so one receive brings about one video's frames: with more videos than that, a
   * round needs several receives at once to give the GPU a full batch. Extra receives go
   * out only when the first came back full (a backlog), one per owned video not already
   * received or committing, at most this many in all.
   */
  receiveConcurrency: { kind: 'integer', default: 16, min: 1, max: 64, unit: 'receives', meaning: 'Most receives in flight at once behind a backlog (extra receives only after a full one, one per idle video, at most half the owned videos: two cohorts; decisions 30, 38)' },
  /**
   * Frames past a full receive's last one fetched by predicted key before their messages
   * can be received (gpu-worker/sources/ahead/read-ahead.ts, decision 39). Behind a backlog a
   * video's next messages wait for its last commit's deletes, and then for the slowest of
   * their GETs: reading them ahead takes the GETs off that cycle. Only after a receive of
   * 10 consecutive frames of one video, the first predicted key alone before the rest, and
   * bytes used only under the ETag their message brings.
   */
  readAheadFrames: {
    kind: 'integer', default: 10, min: 0, max: 10, off: { value: 0, meaning: 'off' }, unit: 'frames',
    meaning: "Behind a backlog, a video's next frames fetched by predicted key while its current ones run, used only if their message's ETag matches (decision 39)",
  },
  /**
   * Frames read ahead (decision 39) whose detection runs before their round, in the model's
   * idle time (decision 42; gpu-worker/vision/detected-ahead.ts). Behind a backlog the
   * model otherwise idles through each FIFO cycle's commit, delete and receive. Only frames
   * the worker would run next, never a video under crash isolation; the work only fills
   * inference batches the round's own frames leave, and at most two batches of it decode
   * at once. Each held entry is a frame's read-ahead bytes and then its raw detections.
   */
  detectAheadFrames: {
    kind: 'integer', default: 160, min: 0, max: 1_000, off: { value: 0, meaning: 'off' }, unit: 'frames',
    meaning: 'Frames read ahead whose detection runs before their round, in the model\'s idle time; held, queued or running at most (decision 42)',
  },
  /**
   * A frame GET slower than this is sent once more, the first answer used
   * (gpu-worker/sources/ahead/hedged-fetch.ts). On by default since decision 38: a round waits for
   * its slowest GET, so S3's tail (p99 in the hundreds of ms against a median of tens)
   * idles the GPU more than anything else behind a backlog; at 100 ms about 9% of GETs
   * are sent twice under the latency model (lab/aws/latency-model.ts).
   */
  fetchHedgeMs: {
    kind: 'integer', default: 100, min: 0, max: 10_000, off: { value: 0, meaning: 'off' }, unit: 'ms',
    meaning: "A frame's S3 GET not answered within this is sent once more and the first answer used (S3's advice for latency-sensitive reads; decisions 30, 38)",
  },
  /** S3 GETs one round has in flight at once. */
  fetchConcurrency: { kind: 'integer', default: 32, min: 1, max: 256, unit: 'GETs', meaning: 'S3 GETs of frames in flight at once per round (an S3 GET is ~30 ms, so 32 feed ~1,000 frames/s)' },
  /**
   * Threads onnxruntime gives one inference (its intra-op pool); 0 = its default, one per
   * physical core. On a CPU-only task, fewer than the cores leaves the rest to fetching,
   * decoding, tracking and commits, which otherwise take them from the model between
   * operators. With CUDA it only sizes the pool for the operators left on the CPU.
   */
  inferenceThreads: {
    kind: 'integer', default: 0, min: 0, max: 256, off: { value: 0, meaning: "onnxruntime's default" }, unit: 'threads',
    meaning: 'Intra-op threads of one inference; on a CPU-only task, one fewer than the cores leaves a core to the pipeline (bench/README.md, worker throughput)',
  },
  /**
   * Visibility timeout of the slot FIFO queues (default 5 s). Short on purpose: messages
   * a crashed worker held, and their video's FIFO group with them, return within this
   * time, so it is the floor of failover after a crash (the slot lease of a stopped task
   * is expired at once; see Janitor). The worker extends the visibility of a batch still
   * running every half of this, so it must comfortably exceed one extension call.
   */
  slotQueueVisibilitySeconds: { kind: 'integer', default: 5, min: 1, max: 43_200, unit: 's', meaning: 'Visibility timeout of the slot queues; the worker extends it while a batch runs. Bounds kill -9 failover' },
  /** Receives before a slot queue message goes to its DLQ. */
  /**
   * The crash probe (decision 41). After a takeover from a dead owner, each frame of a video
   * run isolated is first decoded and detected in a child process; a frame that kills that
   * child this many times is recorded `failed: crashed-worker` without ever reaching the
   * worker's own model, so the first successor keeps every other video of the slot
   * committing. 0 turns the probe off: a poison frame then costs two more worker crashes
   * (decision 29) before it is parked.
   */
  crashProbeDeaths: {
    kind: 'integer', default: 2, min: 0, max: 10, off: { value: 0, meaning: 'no probe' }, unit: 'deaths',
    meaning: 'Deaths of the crash probe\'s child process on one isolated frame before the frame is recorded `failed: crashed-worker` (decision 41)',
  },
  slotQueueMaxReceiveCount: { kind: 'integer', default: 10, min: 1, max: 1000, unit: 'receives', meaning: 'Receives before a slot message goes to its DLQ' },
  /** Visibility timeout of the ingest queue (must exceed the router timeout). */
  ingestVisibilitySeconds: { kind: 'integer', default: 180, min: 1, max: 43_200, unit: 's', meaning: 'Ingest visibility timeout; the router timeout is a sixth of it (10..900 s), so a deployment needs at least 60' },
  /**
   * Receives before an ingest message goes to the ingest DLQ. Sized with the two outage
   * backoffs below so an outage of DynamoDB or SQS is ridden out for about 5.9 days before
   * anything is dead-lettered, under the ingest queue's 7-day retention (arithmetic in
   * core/ingest/ingest-retry.ts, `ingestOutageRideOutSeconds`; a named check).
   */
  ingestMaxReceiveCount: { kind: 'integer', default: 576, min: 1, max: 1000, unit: 'receives', meaning: 'Receives before an ingest message goes to the ingest DLQ; with the outage backoffs it rides out ~5.9 days of outage' },
  /** First backoff of an ingest record that failed with an outage-like error (throttling, 5xx, timeout, network): its visibility is set to this × 2^(receive count − 1). */
  ingestOutageBackoffBaseSeconds: { kind: 'integer', default: 15, min: 1, max: SQS_MAX_VISIBILITY_SECONDS, unit: 's', meaning: 'First visibility backoff of an ingest record that failed in an outage; doubles per receive' },
  /** Longest outage backoff: also the longest a record waits after an outage ends before it is routed. */
  ingestOutageBackoffMaxSeconds: { kind: 'integer', default: 900, min: 1, max: SQS_MAX_VISIBILITY_SECONDS, unit: 's', meaning: 'Longest outage backoff of an ingest record (and the longest wait after an outage ends)' },
  /**
   * Router Lambda batch size (records per invocation). Lambda takes up to 10,000 from a
   * standard queue, but above 10 only with a batching window of at least 1 s (a named
   * check, as Lambda enforces it), and never more than fit its 6 MB invocation payload:
   * about 3,700 S3 notification records of ~1,660 bytes (bench/router-ingest.ts measures
   * the record; docs/deploy.md, "Ingest capacity").
   */
  routerBatchSize: {
    kind: 'integer', default: 10, min: 1, max: MAX_ROUTER_BATCH_SIZE, unit: 'records',
    meaning: 'Records per router invocation; above 10 needs `routerBatchWindowSeconds` ≥ 1 (Lambda\'s rule); the 6 MB payload caps a batch at about 3,700 S3 records (docs/deploy.md, "Ingest capacity")',
  },
  /**
   * Router event source batching window: how long records are gathered before the router
   * is invoked with fewer than `routerBatchSize` (0 = invoke at once). Trades up to this
   * much ingest latency for about one invocation per batch instead of one per frame at
   * low traffic. 0 by default: Lambda counts the window in whole seconds, so even the
   * shortest one would spend the whole 1-s budget of a new video's first result and of
   * on-time p99 at camera rates, where its saving (about 0.5-1 call per frame, cents per
   * million frames) is small against the GPU (docs/deploy.md §8, decision 33).
   */
  routerBatchWindowSeconds: { kind: 'integer', default: 0, min: 0, max: 300, unit: 's', meaning: 'Event source batching window: records are gathered this long before a smaller batch is delivered; 0 = at once (latency first); ≥ 1 required above 10 records (docs/deploy.md §8)' },
  /**
   * Router Lambda maximum concurrency on the SQS event source (ScalingConfig, 2..1000).
   * 0 (the default) derives it from `slotCount` ({@link routerMaxConcurrencyOf}: one
   * invocation per two slots, at least 10, at most 1,000), so a deployment sized for
   * 1,000 slots gets an ingest path sized for it without a second setting.
   */
  routerMaxConcurrency: {
    kind: 'integer', default: 0, min: 2, max: 1000, off: { value: 0, meaning: 'derived from `slotCount`: max(10, ceil(slotCount / 2))' }, unit: 'invocations',
    meaning: 'Event source maximum concurrency (Lambda allows 2..1000); 0 derives it from `slotCount` (docs/deploy.md, "Ingest capacity")',
  },
  /**
   * Most SendMessageBatch calls one router invocation has in flight. A batch's frames are
   * grouped per slot queue; each queue's calls go one after another (so the frames of one
   * video reach its queue in the order the router got them) while different queues are
   * sent to in parallel, up to this many at once. At most the SDK's socket pool per host
   * (50, @smithy/node-http-handler), since every slot queue is on the same SQS endpoint.
   */
  routerSendConcurrency: {
    kind: 'integer', default: 32, min: 1, max: 50, unit: 'calls',
    meaning: 'SendMessageBatch calls one router invocation has in flight (different slot queues in parallel, one queue\'s calls in order)',
  },
  /**
   * How long a launched task may take to heartbeat: until then no other launch is made
   * for its slot and the slot is not counted as ownerless. It covers a cold start from
   * zero (capacity provider reaction, GPU instance boot and agent registration, pulling
   * the multi-GB CUDA image: 5-10 minutes), with half again as margin; a start that
   * overruns it is relaunched and counted (TaskStartTimeouts, which alarms).
   */
  taskStartGraceSeconds: {
    kind: 'integer', default: 900, min: 1, max: 3600, unit: 's',
    meaning: 'How long a launched task may take to heartbeat before its slot counts as ownerless; covers a cold start from zero (5-10 minutes) with margin (docs/decisions.md 16)',
  },
  /** How long the router may trust a cached video -> slot pin (safe: workers forward strays). */
  routerPinCacheSeconds: { kind: 'integer', default: 30, min: 1, max: 3600, unit: 's', meaning: 'How long the router trusts a cached video → slot pin' },
  /** How long the router may trust its cached view of slot liveness and load. */
  routerSlotCacheSeconds: { kind: 'integer', default: 2, min: 1, max: 3600, unit: 's', meaning: 'How long the router trusts cached slot liveness and load' },
  /**
   * How long a per-frame result item is kept (issue 34): its commit writes
   * `ttlEpochSeconds` = commit time + this many days, and DynamoDB's TTL deletes it
   * some time after that (typically within a few days; it reads until then). 0 writes no
   * TTL: records never expire, as before this setting. The summary item (frame -1) and
   * the events never get one here. While kept, a frame has exactly one record; what an
   * expired record means for duplicates, late frames and `affinity reconcile` is the
   * results contract's rule (README, docs/decisions.md 55): the stack requires it to be
   * 0 or longer than `frameRetentionDays`, so a frame's object leaves S3 before its record
   * may.
   */
  resultsRetentionDays: {
    kind: 'integer', default: 0, min: 0, max: 36_500, off: { value: 0, meaning: 'never expire' }, unit: 'days',
    meaning: 'TTL of per-frame result items, from their commit (0 = never expire); more than `frameRetentionDays` (docs/deploy.md §8 prices it)',
  },
  /** How long released video records (lease + checkpoint) are kept before TTL may collect them. */
  releasedVideoRetentionDays: { kind: 'integer', default: 30, min: 1, max: 3650, unit: 'days', meaning: 'TTL horizon of released video records (lease + checkpoint)' },
  /** Janitor period. */
  janitorIntervalSeconds: { kind: 'integer', default: 60, min: 1, max: 3600, unit: 's', meaning: 'Janitor period; rounded up to whole minutes (EventBridge)' },
  /**
   * Most RunTask calls one janitor run has in flight at once. Bounds the burst a cold
   * fleet sends to ECS (whose RunTask rate is throttled per account) while letting 1,000
   * due launches finish well inside the janitor's timeout.
   */
  janitorLaunchConcurrency: { kind: 'integer', default: 10, min: 1, max: 100, unit: 'launches', meaning: 'RunTask calls one janitor run has in flight at once' },
  /**
   * Most launches that may be starting at once (granted, not yet heartbeated): ECS limits
   * the tasks waiting in PROVISIONING per cluster (500 by default). A janitor run launches
   * at most this many minus those still starting; the rest wait for the next run.
   */
  maxProvisioningTasks: { kind: 'integer', default: 500, min: 1, max: 10_000, unit: 'tasks', meaning: 'Launches starting at once (ECS PROVISIONING budget); the rest wait for the next janitor run (`LaunchesDeferred`)' },
  /**
   * How far apart two machines' clocks may be (NTP keeps EC2 and Lambda well under a
   * second; this is margin) before liveness suffers. A worker claims a slot only once its
   * lease ran out more than this long ago by the claimer's clock, and the router and
   * janitor treat a slot as dead (or its owner as suspect) only this much later than the
   * lease or heartbeat says. Costs this much extra failover when a dead task is not
   * reported stopped (a pause, a hang); a reported stop is taken over at once. Fencing,
   * not this margin, keeps a skewed worker's writes out.
   */
  clockSkewToleranceMs: { kind: 'integer', default: 5_000, min: 0, max: 60_000, unit: 'ms', meaning: 'Clock skew tolerated by take-over and suspicion decisions (costs this much failover for an unreported death)' },
  /**
   * A hot spare beside each worker (decision 75): the task runs a supervisor, the worker and
   * a second worker process with its model loaded, which takes the slot the moment the first
   * dies (kill -9, a crash), its lease ended by the supervisor, fenced by the dead worker's
   * claim, and its messages handed back. Costs a second model's memory on the task's GPU and
   * host; no AWS cost. Off: the task runs one worker process, as before.
   */
  hotSpare: { kind: 'flag', default: true, meaning: 'A second worker process per task, model loaded, that takes the slot at once when the first dies (decision 75); costs a second model\'s GPU and host memory' },
  /**
   * Standby worker tasks for the whole fleet (decision 75), each on a GPU instance that runs
   * no worker (ECS placement: `not(task:group == ...)`), model loaded, taking a slot whose
   * lease lapsed with no stop reported (an instance lost). A lost standby is replaced by the
   * janitor. Each costs a GPU instance: see docs/deploy.md "Standbys" for the figures
   * behind the default.
   */
  standbyWorkers: { kind: 'integer', default: 0, min: 0, max: 100, off: { value: 0, meaning: 'none' }, unit: 'tasks', meaning: 'Standby worker tasks, each on a GPU instance of its own, taking over a slot whose lease lapsed (an instance lost); 0 = none (see docs/deploy.md, "Standbys")' },
  /** How often a standby reads the slot leases for one to take (one BatchGetItem of every slot). */
  standbyPollMs: { kind: 'integer', default: 500, min: 100, max: 60_000, unit: 'ms', meaning: 'How often a standby reads the slot leases (one strongly consistent BatchGetItem per 100 slots)' },
  /**
   * A worker that owns no video, finds none pinned to its slot, and has received no
   * message for this long releases its slot and exits (code 0), so an idle fleet drains
   * to zero tasks and the capacity provider can retire the GPU instances. Frames arriving
   * later launch a task again, as from cold. 0 = never exit for idleness (keep the fleet warm).
   */
  workerIdleExitSeconds: {
    kind: 'integer', default: 600, min: 0, max: 86_400, off: { value: 0, meaning: 'never' }, unit: 's',
    meaning: 'A worker with no video, none pinned to its slot and nothing received for this long releases its slot and exits 0, so an idle fleet drains to zero',
  },
  /** Where the worker loads its detector from: a local path or s3://bucket/key.onnx. Empty = demo model. */
  modelUri: {
    kind: 'text', default: '', pattern: /^(s3:\/\/[^/]+\/.+\.onnx|[^:]+\.onnx)$/, rule: 'be a local .onnx path or s3://bucket/key.onnx', emptyMeans: 'the demo model baked into the image',
    meaning: 'The detector, a YOLO (Ultralytics v8/11) export. An `s3://` URI grants the task `s3:GetObject` on exactly that object; `models/*` in the stack\'s model bucket (output `ModelBucketName`) is always readable',
  },
  /**
   * The model's class names, in output order, from a file of their own: for an export whose
   * embedded names are wrong or missing (a graph re-saved by another tool), without
   * touching the graph. Checked against the model's output channels when it loads.
   */
  modelClassesUri: {
    kind: 'text', default: '', pattern: /^(s3:\/\/[^/]+\/.+|[^:]+)$/, rule: 'be a local path or s3://bucket/key', emptyMeans: "the model's own: its `<modelUri>.json` sidecar, else the names its Ultralytics export embeds",
    meaning: 'Class names of the model, one per output class in order: a text file with one name per line, a JSON array, or an Ultralytics `data.yaml` (`names:`). An `s3://` URI grants the task `s3:GetObject` on exactly that object',
  },
  /** Detections below this score are discarded. */
  detectionScoreThreshold: { kind: 'fraction', default: 0.25, unit: 'score', meaning: 'Detections below this score are dropped' },
  /**
   * The tracker's first association and new tracks take detections at or above this
   * score (ByteTrack's `track_thresh`; the default is ByteTrack's published value). Scores
   * are the model's own scale: a detector calibrated differently from COCO-trained YOLO
   * needs its own values.
   */
  trackHighScoreThreshold: { kind: 'fraction', default: 0.5, unit: 'score', meaning: "The tracker's first association takes detections at or above this score (ByteTrack's `track_thresh`), on the model's own score scale" },
  /** Detections between this and `trackHighScoreThreshold` only extend tracks (ByteTrack's second association); below it they are ignored. */
  trackLowScoreThreshold: { kind: 'fraction', default: 0.1, unit: 'score', meaning: 'Detections from here up to `trackHighScoreThreshold` only extend existing tracks (ByteTrack\'s second association); at most `trackHighScoreThreshold`' },
  /** A detection left unmatched starts a new track only at or above this score. */
  newTrackScoreThreshold: { kind: 'fraction', default: 0.6, unit: 'score', meaning: 'An unmatched detection starts a new track only at or above this score' },
} as const satisfies SettingsTable;

/** The tunables, one field per entry of {@link TUNABLES}. */
export type Tunables = SettingsOf<typeof TUNABLES>;

export const DEFAULT_TUNABLES: Tunables = defaultsOf(TUNABLES);

/**
 * Rules that relate tunables to each other (or narrow one for a reason of its own), by
 * name. Each returns the problem, or undefined.
 */
export const CROSS_FIELD_CHECKS: Readonly<Record<string, (t: Tunables) => string | undefined>> = {
  heartbeatWithinHalfTtl: (t) =>
    t.heartbeatIntervalSeconds * 2 > t.slotLeaseTtlSeconds
      ? `heartbeatIntervalSeconds (${t.heartbeatIntervalSeconds}) must be at most half of slotLeaseTtlSeconds (${t.slotLeaseTtlSeconds}) so one lost heartbeat does not lose the slot`
      : undefined,
  idleReleaseAfterPinCache: (t) =>
    !(t.videoIdleReleaseSeconds > t.routerPinCacheSeconds)
      ? `videoIdleReleaseSeconds (${t.videoIdleReleaseSeconds}) must exceed routerPinCacheSeconds (${t.routerPinCacheSeconds}): ` +
        'stale router pins are only safe because a video is released for idleness only after every router\'s cached pin of it has expired'
      : undefined,
  outageBackoffBaseAtMostMax: (t) =>
    t.ingestOutageBackoffBaseSeconds > t.ingestOutageBackoffMaxSeconds
      ? `ingestOutageBackoffBaseSeconds (${t.ingestOutageBackoffBaseSeconds}) must be at most ingestOutageBackoffMaxSeconds (${t.ingestOutageBackoffMaxSeconds})`
      : undefined,
  outageRideOutWithinRetention: (t) =>
    ingestOutageRideOutSeconds(t) > INGEST_RETENTION_SECONDS - 86_400
      ? `ingestMaxReceiveCount (${t.ingestMaxReceiveCount}) with outage backoffs of ${t.ingestOutageBackoffBaseSeconds}-${t.ingestOutageBackoffMaxSeconds} s rides out ${ingestOutageRideOutSeconds(t)} s, more than the ingest queue's retention (${INGEST_RETENTION_SECONDS} s) less a day: messages would expire instead of reaching the DLQ`
      : undefined,
  batchOverTenNeedsWindow: (t) =>
    t.routerBatchSize > 10 && t.routerBatchWindowSeconds < 1
      ? `routerBatchSize (${t.routerBatchSize}) above 10 must have routerBatchWindowSeconds of at least 1 (got ${t.routerBatchWindowSeconds}): Lambda refuses such an event source mapping`
      : undefined,
  batchWindowWithinVisibility: (t) =>
    t.routerBatchWindowSeconds + Math.ceil(t.ingestVisibilitySeconds / 6) > t.ingestVisibilitySeconds
      ? `routerBatchWindowSeconds (${t.routerBatchWindowSeconds}) plus the router timeout (a sixth of ingestVisibilitySeconds, ${Math.ceil(t.ingestVisibilitySeconds / 6)}) must be at most ingestVisibilitySeconds (${t.ingestVisibilitySeconds}): ` +
        'records are in flight from the poller\'s receive, through the window, until the invocation ends, and would be delivered twice otherwise'
      : undefined,
  trackLowAtMostHigh: (t) =>
    !(t.trackLowScoreThreshold <= t.trackHighScoreThreshold)
      ? `trackLowScoreThreshold (${t.trackLowScoreThreshold}) must be at most trackHighScoreThreshold (${t.trackHighScoreThreshold})`
      : undefined,
};

/** Checks every range of {@link TUNABLES} and every {@link CROSS_FIELD_CHECKS} rule; throws {@link ConfigError} with every problem found. */
export function validateTunables(t: Tunables): Tunables {
  const problems = rangeProblems(TUNABLES, t);
  for (const check of Object.values(CROSS_FIELD_CHECKS)) {
    const p = check(t);
    if (p !== undefined) problems.push(p);
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
  for (const key of Object.keys(TUNABLES) as (keyof Tunables)[]) {
    const raw = env[envNameOf(key)];
    if (raw === undefined || raw === '') continue;
    const kind = (TUNABLES[key] as { kind: string }).kind;
    if (kind === 'text') {
      out[key] = raw;
    } else if (kind === 'flag') {
      // The first flag among the tunables (hotSpare): as tunablesToEnv writes it.
      if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${key} must be true or false (${envNameOf(key)} is "${raw}")`);
      out[key] = raw === 'true';
    } else {
      const n = Number(raw);
      if (!Number.isFinite(n)) throw new ConfigError(`${envNameOf(key)} must be a number (got "${raw}")`);
      out[key] = n;
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

/** The README's configuration table (key, default, range, unit, environment variable, meaning), generated from {@link TUNABLES}. */
export function tunablesMarkdownTable(): string {
  return settingsMarkdownTable(TUNABLES, (k) => envNameOf(k as keyof Tunables));
}
