/**
 * Runs the real worker (gpu-worker/runtime/worker.ts) in this process, against:
 *  - the real LeaseStore on DynamoDB Local (tables made by local/resources.ts), with
 *    DynamoDB's own rules that it gets wrong added (harness/dynamodb-rules.ts), or
 *    with `backend: 'memory'` on the lease table's twin (core/leases/memory/), which
 *    enforces them itself,
 *  - SlotQueues over the SQS FIFO model (core/ingest/memory/sqs-fifo-model.ts), or over fauxqs,
 *  - a real FrameStore over fauxqs's S3, or with `backend: 'memory'` over the S3 twin
 *    (core/ingest/memory/memory-s3.ts), optionally wrapped to fail chosen keys,
 *  - the StatsProcessor (trackId = frames the video's state has seen), optionally wrapped.
 *
 * The memory backend starts no process, so its tests need not end in `.int.test.ts`; with
 * `clock: 'fake'` time runs as fast as the worker can go (see harness/fake-time.ts),
 * so a minute of idle release takes a fraction of a second.
 *
 * It only uses the worker's public surface (`WorkerDeps`, `run`, `requestStop`), so it
 * survives changes inside the worker loop.
 *
 *   const h = await WorkerHarness.start({ slots: 2 });           // beforeAll
 *   const w = h.createWorker(0, { tunables: { firstFrameNumber: 0 } }).start();
 *   await h.pinVideo('v1', 0);
 *   await h.putFrames('v1', frames); await h.sendFrames(0, 'v1', order);
 *   await h.putEnd('v1', 29); await h.sendEnd(0, 'v1');
 *   await h.waitForSummary('v1', (s) => s.status === 'complete');
 *   await w.stop();
 *   await h.stop();                                              // afterAll
 */
// Its parts: worker-doubles.ts (fault doubles, test inputs) and harness-worker.ts (one
// background worker and what it logged); both are re-exported here, the path importers use.
import { randomBytes } from 'node:crypto';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { DEFAULT_TUNABLES, validateTunables, type Tunables, type Wiring } from '../core/config.ts';
import { createAwsClientsFrom, type AwsClients } from '../core/aws/clients.ts';
import { LeaseStore } from '../core/leases/dynamodb/lease-store.ts';
import { SlotQueues } from '../core/ingest/sqs/slot-queues.ts';
import { FrameStore } from '../core/ingest/s3/frame-store.ts';
import { endMarkerKey, frameKey } from '../core/ingest/keys.ts';
import { FRAMES_METADATA_KEY, segmentKey, type SourceContainer } from '../core/ingest/segment-keys.ts';
import type { EndMessage, FrameMessage } from '../core/ingest/messages.ts';
import type { FrameProcessor } from '../core/ports.ts';
import { allResults, DynamoDbRecords, getSummary, type ResultsSource } from '../core/commit/dynamodb/results-reader.ts';
import { DynamoDbResultsAdmin } from '../core/commit/dynamodb/results-admin.ts';
import type { FrameResultItem, VideoSummaryItem } from '../core/commit/results.ts';
import { Worker, type WorkerDeps } from '../gpu-worker/runtime/worker.ts';
import { StatsProcessor } from '../lab/worker/stats-processor.ts';
import { LOCAL_CREDENTIALS, startDynamoDbLocal, startFauxqsEmulator } from '../local/emulators.ts';
import { OrphanGuard } from '../local/orphan-guard.ts';
import { createLocalResources, type LocalResources } from '../local/resources.ts';
import { S3Notifier } from '../local/s3-notifications.ts';
import { SqsFifoModel, type SqsFifoModelOptions } from '../core/ingest/memory/sqs-fifo-model.ts';
import { MemoryS3 } from '../core/ingest/memory/memory-s3.ts';
import { MemoryLeaseTable } from '../core/leases/memory/memory-lease-table.ts';
import { resourceNames } from '../core/config.ts';
import { FakeTime } from './fake-time.ts';
import { waitFor } from './wait.ts';
import { installDynamoDbRules, projectKeySchemas } from './dynamodb-rules.ts';
import { sharedDynamoDb } from './shared-dynamodb.ts';
import { gatedClient, type ProcessGate } from './process-gate.ts';
import { HarnessWorker, recordingSinks } from './harness-worker.ts';
import { FaultyFrameStore, testJpeg, testJpegBytes, type FrameFault } from './worker-doubles.ts';

export { HarnessWorker, type HarnessLogEntry, type HarnessMetric } from './harness-worker.ts';
export { FaultyFrameStore, s3Error, shuffledWithinWindows, testJpeg, wrapProcessor, type FrameFault } from './worker-doubles.ts';

/** Where the harness keeps leases, results and frames. */
export type HarnessBackend = 'emulators' | 'memory';

/** The clients the harness and its workers use (the twins' with the memory backend). */
export interface HarnessClients {
  readonly ddb: AwsClients['ddb'];
  readonly s3: AwsClients['s3'];
  readonly sqs: AwsClients['sqs'];
}

export interface WorkerHarnessOptions {
  /**
   * DynamoDB Local and fauxqs (`emulators`), or the in-memory twins (`memory`: no process,
   * no port; the slot queues are then always the SQS FIFO model). @default 'emulators'
   */
  readonly backend?: HarnessBackend;
  /**
   * `fake` (memory backend only): vitest's fake timers and Date, advanced by the harness
   * whenever the program waits (harness/fake-time.ts); the harness's and the test's
   * own waits run on it too. @default 'real'
   */
  readonly clock?: 'real' | 'fake';
  /** Slots (and slot queues). @default 2 */
  readonly slots?: number;
  /** Overrides of DEFAULT_TUNABLES for queue creation and as every worker's base. */
  readonly tunables?: Partial<Tunables>;
  /** Where the slot queues live. @default 'model' */
  readonly queueBackend?: 'model' | 'fauxqs';
  /** Options of the SQS FIFO model. @default { longPollCapMs: 1000 } (a stop waits for one poll) */
  readonly model?: SqsFifoModelOptions;
  /** Resource name prefix. @default a unique one */
  readonly prefix?: string;
  /** Print worker log lines to stderr (also `WORKER_HARNESS_LOG=1`). */
  readonly printLogs?: boolean;
}

export interface HarnessWorkerOptions {
  /** Merged over the harness's tunables (which are merged over DEFAULT_TUNABLES). */
  readonly tunables?: Partial<Tunables>;
  /** @default `w<n>-slot<slot>` */
  readonly workerId?: string;
  /** Makes FrameStore.get (and getText) throw for chosen keys, e.g. an S3 `InvalidObjectState`. */
  readonly frameFault?: FrameFault;
  /** Wraps (or replaces) the worker's FrameStore; applied after `frameFault`. */
  readonly frames?: (inner: FrameStore) => FrameStore;
  /** Wraps (or replaces) the worker's processor (a StatsProcessor). */
  readonly processor?: (inner: StatsProcessor) => FrameProcessor;
  /** Extra ms per StatsProcessor call (a slow model). */
  readonly statsDelayMs?: number;
  /** The worker's clock. @default Date.now */
  readonly now?: () => number;
  /** Extra WorkerDeps fields (for dependencies added to the worker later). */
  readonly extraDeps?: Partial<WorkerDeps> & Record<string, unknown>;
  /** Every AWS call of this worker passes the gate: kill or pause it from outside (process-gate.ts). */
  readonly gate?: ProcessGate;
}

/**
 * The driver's calls to the emulators: the production policy (core/config/aws-call-policy.ts)
 * bounds a connect by 1-2 s, which a 2-core CI machine running four stacks at once can
 * exceed when it starves this process; the driver is not under test, so it waits longer
 * and tries more often.
 */
const DRIVER_HANDLER = { requestHandler: { connectionTimeout: 15_000, requestTimeout: 60_000, socketTimeout: 60_000 }, maxAttempts: 6 } as const;

/** DynamoDB Local and fauxqs (or their twins) with the project's resources, and workers run in this process against them (see the module's doc). */
export class WorkerHarness {
  readonly backend: HarnessBackend;
  readonly tunables: Tunables;
  readonly wiring: Wiring;
  /** The local stack's resources (undefined with the memory backend). */
  readonly resources: LocalResources | undefined;
  readonly clients: HarnessClients;
  /** The twins (with the memory backend): the lease table's, and S3's. */
  readonly twins: { readonly leases: MemoryLeaseTable; readonly s3: MemoryS3 } | undefined;
  /** The fake clock (with `clock: 'fake'`). */
  readonly fakeTime: FakeTime | undefined;
  /** The SQS FIFO model (undefined with the fauxqs backend). */
  readonly model: SqsFifoModel | undefined;
  /** Sender-side SlotQueues (the production dedup id logic) over the chosen backend. */
  readonly queues: SlotQueues;
  /** A LeaseStore for set-up and inspection (pins, slots). */
  readonly leases: LeaseStore;
  readonly results: ResultsSource;
  readonly workers: HarnessWorker[] = [];
  /** The slot queues' client (the SQS FIFO model's, or fauxqs's). */
  private readonly sqs: AwsClients['sqs'];
  /**
   * The harness's own calls (puts of frames, segments and end markers; pins; reads for
   * assertions): the uploader's and the reviewer's side, not the product's. On the
   * emulators they wait patiently (see {@link DRIVER_HANDLER}), so a CI machine that
   * starves this process of the CPU for seconds fails no test through its driver.
   */
  private readonly driver: Pick<HarnessClients, 'ddb' | 's3'>;
  private readonly emulators: AwsClients | undefined;
  /** Stops what the backend started (emulators, the fake clock), after the workers. */
  private readonly stopBackend: () => Promise<void>;
  private readonly printLogs: boolean;
  private workerSeq = 0;
  private idSeq = 0;

  private constructor(init: {
    backend: HarnessBackend;
    tunables: Tunables;
    wiring: Wiring;
    resources: LocalResources | undefined;
    clients: HarnessClients;
    driver?: Pick<HarnessClients, 'ddb' | 's3'>;
    emulators: AwsClients | undefined;
    twins: WorkerHarness['twins'];
    fakeTime: FakeTime | undefined;
    model: SqsFifoModel | undefined;
    sqs: AwsClients['sqs'];
    queues: SlotQueues;
    stopBackend: () => Promise<void>;
    printLogs: boolean;
  }) {
    this.backend = init.backend;
    this.tunables = init.tunables;
    this.resources = init.resources;
    this.wiring = init.wiring;
    this.clients = init.clients;
    this.driver = init.driver ?? init.clients;
    this.emulators = init.emulators;
    this.twins = init.twins;
    this.fakeTime = init.fakeTime;
    this.model = init.model;
    this.sqs = init.sqs;
    this.queues = init.queues;
    this.stopBackend = init.stopBackend;
    this.printLogs = init.printLogs;
    this.leases = LeaseStore.forWiring(this.driver.ddb, this.wiring, this.tunables);
    this.results = { ddb: this.driver.ddb, resultsTable: this.wiring.resultsTable };
  }

  /** Starts the backend (DynamoDB Local and fauxqs, or the twins), creates tables, the bucket and the slot queues. */
  static async start(options: WorkerHarnessOptions = {}): Promise<WorkerHarness> {
    const slots = options.slots ?? 2;
    const tunables = validateTunables({ ...DEFAULT_TUNABLES, slotCount: slots, ...options.tunables });
    const prefix = options.prefix ?? `WH${randomBytes(3).toString('hex')}`;
    const printLogs = options.printLogs ?? process.env.WORKER_HARNESS_LOG === '1';
    if ((options.backend ?? 'emulators') === 'memory') return WorkerHarness.startInMemory(options, slots, tunables, prefix, printLogs);
    if (options.clock === 'fake') throw new Error("clock: 'fake' needs backend: 'memory' (the emulators answer on real time)");
    return WorkerHarness.startOnEmulators(options, slots, tunables, prefix, printLogs);
  }

  /** The memory backend: the lease table's twin, the S3 twin and the SQS FIFO model; nothing started. */
  private static startInMemory(options: WorkerHarnessOptions, slots: number, tunables: Tunables, prefix: string, printLogs: boolean): WorkerHarness {
    if (options.queueBackend === 'fauxqs') throw new Error("queueBackend: 'fauxqs' needs backend: 'emulators'");
    // Faked before the twins are built: they capture Date.now as their clock.
    const fakeTime = options.clock === 'fake' ? FakeTime.start() : undefined;
    try {
      return WorkerHarness.buildInMemory(options, slots, tunables, prefix, printLogs, fakeTime);
    } catch (e) {
      void fakeTime?.stop();
      throw e;
    }
  }

  private static buildInMemory(options: WorkerHarnessOptions, slots: number, tunables: Tunables, prefix: string, printLogs: boolean, fakeTime: FakeTime | undefined): WorkerHarness {
    const names = resourceNames(prefix);
    const sqsBase = 'https://sqs.us-east-1.amazonaws.com/000000000000/';
    const leases = new MemoryLeaseTable({ prefix });
    const bucket = `${prefix.toLowerCase()}-frames`;
    const s3 = new MemoryS3().createBucket(bucket);
    const model = new SqsFifoModel({ longPollCapMs: 1000, ...options.model });
    const wiring: Wiring = {
      region: 'us-east-1',
      bucket,
      leasesTable: leases.wiring.leasesTable,
      resultsTable: leases.wiring.resultsTable,
      eventsTable: leases.wiring.eventsTable,
      ingestQueueUrl: `${sqsBase}${names.ingestQueue}`,
      ingestDlqUrl: `${sqsBase}${names.ingestDlq}`,
      slotQueueUrlPrefix: `${sqsBase}${names.slotQueuePrefix}`,
      pinnedSlotIndex: leases.wiring.pinnedSlotIndex,
      metricsNamespace: names.metricsNamespace,
    };
    model.createSlotQueues(wiring.slotQueueUrlPrefix, slots, { visibilityTimeoutSeconds: tunables.slotQueueVisibilitySeconds, maxReceiveCount: tunables.slotQueueMaxReceiveCount });
    const sqs = model.asClient();
    return new WorkerHarness({
      backend: 'memory',
      tunables,
      wiring,
      resources: undefined,
      clients: { ddb: leases.ddb, s3: s3.asClient(), sqs },
      emulators: undefined,
      twins: { leases, s3 },
      fakeTime,
      model,
      sqs,
      queues: new SlotQueues(sqs, wiring.slotQueueUrlPrefix),
      stopBackend: async () => fakeTime?.stop(),
      printLogs,
    });
  }

  /** The emulators backend: DynamoDB Local and fauxqs (S3, and the slot queues with `queueBackend: 'fauxqs'`). */
  private static async startOnEmulators(options: WorkerHarnessOptions, slots: number, tunables: Tunables, prefix: string, printLogs: boolean): Promise<WorkerHarness> {
    const region = 'us-east-1';
    const guard = new OrphanGuard();
    const cleanups: (() => Promise<void> | void)[] = [() => guard.dispose()];
    try {
      // The lane's shared DynamoDB Local (a database of this harness's own), else one of its own.
      const shared = sharedDynamoDb();
      const [dynamo, fauxqs] = await Promise.all([
        shared
          ? { endpoint: shared.endpoint, stop: async () => {} }
          : startDynamoDbLocal({ region }).then((d) => {
              guard.watch(d.pid, { group: true });
              cleanups.push(() => d.stop());
              return d;
            }),
        startFauxqsEmulator({ region }).then((f) => {
          cleanups.push(() => f.stop());
          return f;
        }),
      ]);
      const common = { region, credentials: { ...(shared?.credentials ?? LOCAL_CREDENTIALS) } };
      const clients = createAwsClientsFrom({
        s3: { ...common, endpoint: fauxqs.endpoint, forcePathStyle: true },
        sqs: { ...common, endpoint: fauxqs.endpoint },
        dynamodb: { ...common, endpoint: dynamo.endpoint },
      });
      cleanups.push(() => clients.destroy());
      const driver = createAwsClientsFrom({
        s3: { ...common, endpoint: fauxqs.endpoint, forcePathStyle: true, ...DRIVER_HANDLER },
        sqs: { ...common, endpoint: fauxqs.endpoint, ...DRIVER_HANDLER },
        dynamodb: { ...common, endpoint: dynamo.endpoint, ...DRIVER_HANDLER },
      });
      cleanups.push(() => driver.destroy());
      // Not attached to fauxqs: frames put by the harness notify nobody (the harness sends the slot messages itself).
      const notifier = new S3Notifier({ region, sqs: clients.sqs });
      const resources = await createLocalResources({ prefix, region, tunables, dynamodb: clients.dynamodb, sqs: clients.sqs, s3: clients.s3, notifier });
      // What DynamoDB refuses, DynamoDB Local must refuse too (two operations on one item).
      installDynamoDbRules(clients.dynamodb, projectKeySchemas(resources.wiring));
      let model: SqsFifoModel | undefined;
      let sqs = clients.sqs;
      if ((options.queueBackend ?? 'model') === 'model') {
        model = new SqsFifoModel({ longPollCapMs: 1000, ...options.model });
        model.createSlotQueues(resources.wiring.slotQueueUrlPrefix, slots, {
          visibilityTimeoutSeconds: tunables.slotQueueVisibilitySeconds,
          maxReceiveCount: tunables.slotQueueMaxReceiveCount,
        });
        sqs = model.asClient();
      }
      return new WorkerHarness({
        backend: 'emulators',
        tunables,
        wiring: resources.wiring,
        resources,
        clients,
        driver,
        emulators: clients,
        twins: undefined,
        fakeTime: undefined,
        model,
        sqs,
        queues: new SlotQueues(sqs, resources.wiring.slotQueueUrlPrefix),
        stopBackend: async () => {
          clients.destroy();
          driver.destroy();
          await fauxqs.stop().catch(() => undefined);
          await dynamo.stop().catch(() => undefined);
          guard.dispose();
        },
        printLogs,
      });
    } catch (e) {
      for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
      throw e;
    }
  }

  /** The emulators' SDK clients (a test that builds its own clients to them); throws with the memory backend. */
  emulatorClients(): AwsClients {
    if (!this.emulators) throw new Error('the memory backend has no emulator clients');
    return this.emulators;
  }

  get bucket(): string {
    return this.wiring.bucket;
  }

  slotUrl(slot: number): string {
    return this.queues.url(slot);
  }

  dlqUrl(slot: number): string {
    return `${this.wiring.slotQueueUrlPrefix}${slot}-dlq.fifo`;
  }

  /** A video id no other test of this harness uses. */
  videoId(base = 'video'): string {
    this.idSeq++;
    return `${base}-${this.idSeq}-${randomBytes(2).toString('hex')}`;
  }

  /** Builds (does not start) a worker for `slot`. */
  createWorker(slot: number, options: HarnessWorkerOptions = {}): HarnessWorker {
    this.workerSeq++;
    const workerId = options.workerId ?? `w${this.workerSeq}-slot${slot}`;
    const tunables = validateTunables({ ...this.tunables, ...options.tunables });
    const { logs, metrics, log, metricSink } = recordingSinks(workerId, this.printLogs);
    const gate = options.gate;
    const s3 = gate ? gatedClient(this.clients.s3, gate) : this.clients.s3;
    const ddb = gate ? gatedClient(this.clients.ddb, gate) : this.clients.ddb;
    let frames: FrameStore = options.frameFault ? new FaultyFrameStore(s3, options.frameFault) : new FrameStore(s3);
    if (options.frames) frames = options.frames(frames);
    const stats = this.fakeTime ? new TrackedStatsProcessor(this.fakeTime, options.statsDelayMs ?? 0) : new StatsProcessor(options.statsDelayMs ?? 0);
    const processor = options.processor ? options.processor(stats) : stats;
    let harnessWorker: HarnessWorker | undefined;
    const deps: WorkerDeps = {
      workerId,
      slot,
      tunables,
      leases: LeaseStore.forWiring(ddb, this.wiring, tunables),
      queues: gate ? new SlotQueues(gatedClient(this.sqs, gate), this.wiring.slotQueueUrlPrefix) : this.queues,
      frames,
      bucket: this.bucket,
      records: new DynamoDbRecords(gate ? { ddb, resultsTable: this.wiring.resultsTable } : this.results),
      replayDeletes: new DynamoDbResultsAdmin({ ddb, resultsTable: this.wiring.resultsTable, eventsTable: this.wiring.eventsTable }),
      processor,
      metrics: metricSink,
      log,
      ...(options.now ? { now: options.now } : {}),
      onLeaseLost: (reason) => {
        if (harnessWorker) harnessWorker.leaseLost = reason;
      },
      ...options.extraDeps,
    };
    harnessWorker = new HarnessWorker({ worker: new Worker(deps), workerId, slot, tunables, logs, metrics, frames, ...(gate ? { gate } : {}) });
    this.workers.push(harnessWorker);
    return harnessWorker;
  }

  /** Pins a video to a slot, as the router would. */
  async pinVideo(videoId: string, slot: number): Promise<void> {
    const r = await this.leases.pinVideo(videoId, slot, Date.now());
    if (r !== 'pinned') throw new Error(`could not pin ${videoId} to slot ${slot}: ${r}`);
  }

  /** Puts frame objects into S3 (no messages). */
  async putFrames(videoId: string, frames: readonly number[], body?: Uint8Array): Promise<void> {
    const b = body ?? (await this.realWork(testJpeg()));
    for (const f of frames) {
      const key = frameKey(videoId, f);
      const put = await this.driver.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: b }));
      if (put.ETag) this.eTags.set(key, put.ETag.replace(/"/g, ''));
    }
  }

  /** The ETag of each frame put, as S3 events carry it: the messages sent for them bring it, as the router's do. */
  private readonly eTags = new Map<string, string>();

  /**
   * Puts an encoded segment covering frames from `firstFrame` (no message), with the frame
   * count in `x-amz-meta-frames` when `frames` is given, as the CLI's uploads set it.
   */
  async putSegment(videoId: string, firstFrame: number, body: Uint8Array, options: { frames?: number; container?: Exclude<SourceContainer, 'image'> } = {}): Promise<string> {
    const key = segmentKey(videoId, firstFrame, options.container ?? 'mp4');
    const put = await this.driver.s3.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ...(options.frames !== undefined ? { Metadata: { [FRAMES_METADATA_KEY]: String(options.frames) } } : {}) }),
    );
    if (put.ETag) this.eTags.set(key, put.ETag.replace(/"/g, ''));
    this.sizes.set(key, body.byteLength);
    return key;
  }

  /** Sends the message the router sends for a segment put with {@link putSegment} (its key carries `firstFrame`). */
  async sendSegment(slot: number, videoId: string, firstFrame: number, container: Exclude<SourceContainer, 'image'> = 'mp4'): Promise<void> {
    const key = segmentKey(videoId, firstFrame, container);
    const eTag = this.eTags.get(key);
    const message: FrameMessage = { kind: 'frame', videoId, frame: firstFrame, bucket: this.bucket, key, sizeBytes: this.sizes.get(key) ?? 1, eventTime: new Date().toISOString(), ...(eTag ? { eTag } : {}) };
    const [outcome] = await this.queues.send(slot, [{ message }]);
    if (!outcome?.ok) throw new Error(`segment message not accepted: ${outcome && !outcome.ok ? outcome.error : 'no outcome'}`);
  }

  private readonly sizes = new Map<string, number>();

  /** Puts the end-of-stream marker (its body is the last frame number). */
  async putEnd(videoId: string, lastFrame: number): Promise<void> {
    await this.driver.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: endMarkerKey(videoId), Body: String(lastFrame) }));
  }

  /** The frame message the router would send for a frame. */
  frameMessage(videoId: string, frame: number, sizeBytes?: number): FrameMessage {
    const key = frameKey(videoId, frame);
    const eTag = this.eTags.get(key);
    return { kind: 'frame', videoId, frame, bucket: this.bucket, key, sizeBytes: sizeBytes ?? testJpegBytes() ?? 1, eventTime: new Date().toISOString(), ...(eTag ? { eTag } : {}) };
  }

  /** Sends frame messages to a slot queue in the given order, through SlotQueues.send; throws if any is not accepted. */
  async sendFrames(slot: number, videoId: string, frames: readonly number[], options: { replayTag?: string } = {}): Promise<void> {
    await this.realWork(testJpeg());
    const outcomes = await this.queues.send(
      slot,
      frames.map((f) => ({ message: this.frameMessage(videoId, f), ...(options.replayTag ? { replayTag: options.replayTag } : {}) })),
    );
    const failed = outcomes.map((o, i) => (o.ok ? undefined : `frame ${frames[i]}: ${o.error}`)).filter((x) => x !== undefined);
    if (failed.length > 0) throw new Error(`slot ${slot} did not accept ${failed.length} message(s): ${failed.join('; ')}`);
  }

  /** Sends the end-of-stream message of a video. */
  /** Sends the end marker's message; `replayTag` gives it a fresh FIFO dedup id (a marker written again within SQS's 5-minute dedup window). */
  async sendEnd(slot: number, videoId: string, options: { replayTag?: string } = {}): Promise<void> {
    const msg: EndMessage = { kind: 'end', videoId, bucket: this.bucket, key: endMarkerKey(videoId), eventTime: new Date().toISOString() };
    const [outcome] = await this.queues.send(slot, [{ message: msg, ...(options.replayTag ? { replayTag: options.replayTag } : {}) }]);
    if (!outcome?.ok) throw new Error(`end message not accepted: ${outcome && !outcome.ok ? outcome.error : 'no outcome'}`);
  }

  /** Every per-frame result of a video, in frame order. */
  frameResults(videoId: string): Promise<FrameResultItem[]> {
    return allResults(this.results, videoId);
  }

  summary(videoId: string): Promise<VideoSummaryItem | undefined> {
    return getSummary(this.results, videoId);
  }

  /** Waits until the video's summary satisfies `predicate`. */
  waitForSummary(videoId: string, predicate: (s: VideoSummaryItem) => boolean, timeoutMs = 60_000): Promise<VideoSummaryItem> {
    return this.waitFor(`summary of ${videoId}`, async () => {
      const s = await this.summary(videoId);
      return s && predicate(s) ? s : undefined;
    }, timeoutMs, 200);
  }

  /** Waits until the video has at least `count` per-frame results. */
  waitForResults(videoId: string, count: number, timeoutMs = 60_000): Promise<FrameResultItem[]> {
    return this.waitFor(`${count} results of ${videoId}`, async () => {
      const r = await this.frameResults(videoId);
      return r.length >= count ? r : undefined;
    }, timeoutMs, 200);
  }

  /**
   * Polls `check` until it yields a value or `timeoutMs` passes ({@link waitFor}). On the
   * fake clock the timeout counts fake time, which runs as fast as the program can go.
   */
  waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 60_000, intervalMs = 200) {
    return waitFor(what, check, timeoutMs, intervalMs);
  }

  /** `work` (real asynchronous work: sharp, a child process), tracked by the fake clock when there is one ({@link FakeTime.track}). */
  realWork<T>(work: Promise<T>): Promise<T> {
    return this.fakeTime ? this.fakeTime.track(work) : work;
  }

  /**
   * Stops every started worker that is still running (drain), then the backend. With the
   * memory backend, then throws if any write lowered a video's token or a slot's epoch
   * (the twin's invariant check, {@link MemoryLeaseTable.violations}): every test on the
   * twins checks guarantee 3 for free.
   */
  async stop(): Promise<void> {
    // A killed worker never ends (its calls wait at a closed gate): nothing to drain.
    const running = this.workers.filter((w) => w.started && !w.gate?.killed);
    await Promise.allSettled(running.map((w) => w.stop()));
    await this.stopBackend();
    const violations = this.twins?.leases.violations ?? [];
    if (violations.length > 0) throw new Error(`the lease table's twin saw counters go down: ${violations.join('; ')}`);
  }
}

/**
 * The StatsProcessor with its decodes (sharp, on libuv's pool: real time) tracked by the
 * fake clock, so that they take as much fake time as real time (see fake-time.ts).
 */
class TrackedStatsProcessor extends StatsProcessor {
  private readonly time: FakeTime;

  constructor(time: FakeTime, delayMs: number) {
    super(delayMs);
    this.time = time;
  }

  override process(...args: Parameters<StatsProcessor['process']>): ReturnType<StatsProcessor['process']> {
    return this.time.track(super.process(...args));
  }

  override processLate(...args: Parameters<StatsProcessor['processLate']>): ReturnType<StatsProcessor['processLate']> {
    return this.time.track(super.processLate(...args));
  }
}
