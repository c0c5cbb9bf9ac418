/**
 * The simulated world (lab/sim/): the product's real router, janitor, workers and
 * operator commands on the twins (DynamoDB: core/leases/memory; S3: core/ingest/memory;
 * SQS FIFO: the FIFO model), around them what AWS does on its own schedule, modelled:
 *
 * - **S3 notifications** reach a standard ingest queue, at least once and unordered; the
 *   Lambda event source hands them to the router in batches of up to 10 and applies the
 *   router's partial batch failures (visibility, backoff, the ingest DLQ), as
 *   functions/router/handler.ts does.
 * - **ECS**: a launch starts a worker task after a start-up time; a task that stops (its
 *   run loop ended, or it was killed) is reported to the janitor by a task-stopped event
 *   after a delay; `describe` says where each task stands.
 * - **Processes**: each task's AWS calls pass a gate (harness/process-gate.ts): kill -9
 *   closes it for good, SIGSTOP holds every call and answer until SIGCONT.
 * - **The janitor** runs on its schedule.
 *
 * Everything runs on the simulation's clock (lab/sim/clock.ts): nothing here waits for
 * real time.
 */
import { buildObjectCreatedEvent } from '../../core/ingest/s3-event-shapes.ts';
import { FrameRouter, type IngestRecord, type RejectedEvent } from '../../core/fleet/router.ts';
import { Janitor, type JanitorTrigger } from '../../core/fleet/janitor.ts';
import { settleIngestFailures } from '../../core/ingest/ingest-failures.ts';
import { LeaseStore } from '../../core/leases/dynamodb/lease-store.ts';
import { MemoryLeaseTable } from '../../core/leases/memory/memory-lease-table.ts';
import { MemoryS3 } from '../../core/ingest/memory/memory-s3.ts';
import { SqsFifoModel } from '../../core/ingest/memory/sqs-fifo-model.ts';
import { SlotQueues } from '../../core/ingest/sqs/slot-queues.ts';
import { FrameStore } from '../../core/ingest/s3/frame-store.ts';
import { DynamoDbResultsAdmin } from '../../core/commit/dynamodb/results-admin.ts';
import { DynamoDbRecords } from '../../core/commit/dynamodb/results-reader.ts';
import { resourceNames, validateTunables, DEFAULT_TUNABLES, type Tunables, type Wiring } from '../../core/config.ts';
import type { LaunchedTaskState, LaunchRequest, LaunchResult, LogSink, MetricSink, TaskLauncher } from '../../core/ports.ts';
import { Worker } from '../../gpu-worker/runtime/worker.ts';
import { gatedClient, ProcessGate } from '../../harness/process-gate.ts';
import { overriding } from '../../core/overriding.ts';
import { injectedError } from '../aws/fault-injection.ts';
import { SIM_RULES, SIM_SEGMENT_CODEC, SimProcessor } from './media.ts';
import { DEFAULT_RULES_KEY, RulesStore } from '../../core/analytics/s3/rules-store.ts';
import type { AwsFaultRates, DoubtWindow } from './plan.ts';
import { Supervisor, type SupervisedChild } from '../../gpu-worker/supervisor/supervisor.ts';
import { mirroredQueue } from '../../gpu-worker/supervisor/held-handles.ts';
import { StandbyWatch } from '../../gpu-worker/supervisor/standby.ts';
import type { ChildRole } from '../../core/fleet/hot-spare.ts';
import type { ExitReason } from '../../gpu-worker/runtime/worker-deps.ts';

/** Latencies of what AWS does by itself, in ms (drawn per event from these ranges). */
export interface SimLatencies {
  /** S3 PUT to the notification's arrival in the ingest queue. */
  readonly notifyMs: readonly [number, number];
  /** ECS RunTask to the worker's first line of code (image cached, ENI attached). */
  readonly taskStartMs: readonly [number, number];
  /** A task's stop to the janitor's task-stopped event. */
  readonly stoppedEventMs: readonly [number, number];
  /**
   * Added to the first launch after {@link SimWorld.loseInstance}: no warm instance is left,
   * so the capacity provider boots one (boot, agent registration, a cold image pull) before
   * the task can start. Optional (bench/failover-aws.ts sets it); absent, a launch after an
   * instance loss costs only `taskStartMs`.
   */
  readonly instanceStartMs?: readonly [number, number];
}

export const DEFAULT_LATENCIES: SimLatencies = { notifyMs: [20, 400], taskStartMs: [2_000, 8_000], stoppedEventMs: [500, 3_000] };

/**
 * Round trips of AWS calls, ms (drawn per call; the call applies halfway): in-region for the
 * product's processes, over the internet for the operator's CLI. Without them every call of
 * a sequence (a replay's reset, deletes and re-sends; a commit and the read that settles it)
 * would apply at one instant, and no live work could come between them.
 */
export const CALL_LATENCIES: Readonly<Record<'dynamodb' | 's3' | 'sqs' | 'operator', readonly [number, number]>> = {
  dynamodb: [2, 12],
  s3: [8, 40],
  sqs: [4, 20],
  operator: [20, 90],
};

/** One line of the trace: what happened, when (simulated ms since the start). */
export interface TraceLine {
  readonly atMs: number;
  readonly what: string;
}

interface PendingIngest {
  readonly id: string;
  readonly body: string;
  readonly replayTag?: string;
  receiveCount: number;
  visibleAtMs: number;
}

/** A worker process inside a task with a hot spare (decision 75): its own gate behind the task's. */
export interface SimProcess {
  readonly id: string;
  role: ChildRole;
  readonly gate: ProcessGate;
  readonly worker: Worker;
  /** Ends a spare's wait: promoted (claim) or stopped. */
  wake?: (w: { slot?: number } | 'stop') => void;
}

/** A worker task: its gate, its worker, and how it ended. */
export interface SimTask {
  readonly taskId: string;
  /** The slot it was launched for; a standby's seat (slotCount and up) for a standby. */
  readonly slot: number;
  /** The task's (container's) gate: kill -9 of the task, SIGSTOP of the whole container. */
  readonly gate: ProcessGate;
  /** The worker holding (or claiming) the slot: with a hot spare, the primary's. */
  worker?: Worker;
  state: 'starting' | 'running' | 'stopped';
  /** How it stopped: its run loop's exit reason, `killed`, or a thrown error. */
  exit?: string;
  /** A standby task (decision 75): on an instance of its own, waiting for a lapsed slot. */
  readonly standby: boolean;
  /** With a hot spare: the supervisor and its worker processes. */
  supervisor?: Supervisor;
  readonly processes: Map<string, SimProcess>;
}

const quietLog: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
const nullMetrics: MetricSink = { count() {}, milliseconds() {} };

export class SimWorld {
  readonly tunables: Tunables;
  readonly wiring: Wiring;
  readonly leasesTwin: MemoryLeaseTable;
  readonly s3: MemoryS3;
  readonly sqs: SqsFifoModel;
  readonly leases: LeaseStore;
  readonly queues: SlotQueues;
  readonly router: FrameRouter;
  readonly janitor: Janitor;
  readonly tasks = new Map<string, SimTask>();
  readonly trace: TraceLine[] = [];
  /** Notifications waiting in the ingest queue (or in flight to the router). */
  readonly ingest: PendingIngest[] = [];
  /** What reached the ingest DLQ, with its reason. */
  readonly ingestDlq: { body: string; reason: string }[] = [];
  /** Per video, the lowest frame an operator's replay started from (the oracle's {@link VideoOutcome.keptByReplayBelow}). */
  readonly replayedBelow = new Map<string, number>();
  /** Warnings and errors the product logged, by message (what a person would see). */
  readonly warnings = new Map<string, number>();
  private readonly startMs: number;
  private readonly draw: () => number;
  private readonly latencies: SimLatencies;
  /** Notifications on their way to the ingest queue. */
  notificationsInFlight = 0;
  private ingestSeq = 0;
  private sequencer = 0;
  private pollerArmed = false;
  private pollerDueAtMs = 0;
  private pollerTimer: ReturnType<typeof setTimeout> | undefined;
  private stopping = false;
  private readonly launched = new Map<string, string>();
  private janitorTimer: ReturnType<typeof setInterval> | undefined;
  /** An instance was lost and no launch has paid for a new one yet (see {@link loseInstance}). */
  private instanceLost = false;

  private readonly faults: AwsFaultRates | undefined;
  private readonly faultDraw: () => number;
  private readonly latencyDraw: () => number;

  /** Simulated time each worker's batch takes (SimProcessor's `batchMs`); 0 by default. */
  private readonly processBatchMs: number;

  /** The plan's doubt windows, each struck at most once, and until when each keeps its video's lease reads failing. */
  private readonly doubts: { readonly w: DoubtWindow; struckUntilMs?: number }[];
  /** Told when a doubt window opens (the run puts the withheld upload then). */
  onDoubtOpened: (w: DoubtWindow) => void = () => undefined;

  /** A hot spare in every worker task (decision 75). */
  readonly hotSpare: boolean;
  /**
   * A poison frame (a test's, set before any task starts): the worker process that runs it
   * dies at once, as an out-of-memory kill or a native crash would (the crash-loop breaker's
   * case, decision 28). Deaths on it are counted in {@link poisonDeaths}.
   */
  poison: { readonly videoId: string; readonly frame: number } | undefined;
  poisonDeaths = 0;
  /** Seats of standby tasks launched so far (the first launch of a seat finds its instance warm). */
  private readonly seatsStarted = new Set<number>();

  constructor(o: { draw: () => number; tunables?: Partial<Tunables>; latencies?: SimLatencies; slots?: number; faults?: AwsFaultRates; faultDraw?: () => number; latencyDraw?: () => number; processBatchMs?: number; hotSpare?: boolean; standbys?: number; doubtWindows?: readonly DoubtWindow[] }) {
    this.draw = o.draw;
    this.doubts = (o.doubtWindows ?? []).map((w) => ({ w }));
    this.hotSpare = o.hotSpare ?? false;
    this.latencyDraw = o.latencyDraw ?? o.draw;
    this.processBatchMs = o.processBatchMs ?? 0;
    this.faults = o.faults;
    this.faultDraw = o.faultDraw ?? o.draw;
    this.latencies = o.latencies ?? DEFAULT_LATENCIES;
    this.startMs = Date.now();
    const slots = o.slots ?? 2;
    this.tunables = validateTunables({ ...DEFAULT_TUNABLES, slotCount: slots, ...o.tunables, hotSpare: o.hotSpare ?? false, standbyWorkers: o.standbys ?? 0 });
    const prefix = 'Sim';
    const names = resourceNames(prefix);
    const sqsBase = 'https://sqs.us-east-1.amazonaws.com/000000000000/';
    this.leasesTwin = new MemoryLeaseTable({ prefix });
    const bucket = 'sim-frames';
    this.s3 = new MemoryS3().createBucket(bucket);
    // Long polls wake on a send; the poll interval only bounds how often an idle one looks.
    this.sqs = new SqsFifoModel({ pollIntervalMs: 5_000 });
    this.wiring = {
      region: 'us-east-1',
      bucket,
      leasesTable: this.leasesTwin.wiring.leasesTable,
      resultsTable: this.leasesTwin.wiring.resultsTable,
      eventsTable: this.leasesTwin.wiring.eventsTable,
      ingestQueueUrl: `${sqsBase}${names.ingestQueue}`,
      ingestDlqUrl: `${sqsBase}${names.ingestDlq}`,
      slotQueueUrlPrefix: `${sqsBase}${names.slotQueuePrefix}`,
      pinnedSlotIndex: this.leasesTwin.wiring.pinnedSlotIndex,
      metricsNamespace: names.metricsNamespace,
    };
    // Every video runs the simulation's rules (lab/sim/media.ts), read as the product reads them.
    this.s3.putObject(bucket, DEFAULT_RULES_KEY, JSON.stringify(SIM_RULES));
    this.sqs.createSlotQueues(this.wiring.slotQueueUrlPrefix, slots, { visibilityTimeoutSeconds: this.tunables.slotQueueVisibilitySeconds, maxReceiveCount: this.tunables.slotQueueMaxReceiveCount });
    this.leases = LeaseStore.forWiring(this.leasesTwin.ddb, this.wiring, this.tunables);
    this.queues = new SlotQueues(this.sqs.asClient(), this.wiring.slotQueueUrlPrefix);
    const launcher = this.launcher();
    const log = this.logSink('router');
    // The product's processes meet AWS's errors; the operator's CLI and the oracle do not
    // (the SDK's own retries stand for them).
    const fleetLeases = LeaseStore.forWiring(this.faulty(this.leasesTwin.ddb, 'dynamodb'), this.wiring, this.tunables);
    const fleetQueues = new SlotQueues(this.faulty(this.sqs.asClient(), 'sqs'), this.wiring.slotQueueUrlPrefix);
    this.router = new FrameRouter({ bucket, tunables: this.tunables, leases: fleetLeases, queues: fleetQueues, deadLetter: async (events) => this.deadLetter(events), launcher: () => launcher, metrics: nullMetrics, log });
    this.janitor = new Janitor({ tunables: this.tunables, leases: fleetLeases, queues: this.queues, launcher: () => launcher, metrics: nullMetrics, log: this.logSink('janitor') });
  }

  get bucket(): string {
    return this.wiring.bucket;
  }

  /** Simulated ms since the world began. */
  get elapsedMs(): number {
    return Date.now() - this.startMs;
  }

  note(what: string): void {
    this.trace.push({ atMs: this.elapsedMs, what });
  }

  private between([lo, hi]: readonly [number, number]): number {
    return Math.round(lo + this.draw() * (hi - lo));
  }

  private logSink(who: string): LogSink {
    const keep = (level: string) => (message: string) => {
      const k = `${level} ${who.replace(/-\d+$/, '')}: ${message}`;
      this.warnings.set(k, (this.warnings.get(k) ?? 0) + 1);
    };
    // SIM_LOG=1: every line the product logs, with the simulated time (debugging one seed).
    if (process.env.SIM_LOG === '1') {
      const say = (level: string) => (message: string, fields?: unknown) => {
        process.stderr.write(`${(this.elapsedMs / 1000).toFixed(3)} ${level} ${who}: ${message} ${JSON.stringify(fields ?? {}).slice(0, 400)}\n`);
        if (level === 'warn' || level === 'error') keep(level)(message);
      };
      return { debug() {}, info: say('info'), warn: say('warn'), error: say('error') };
    }
    return { ...quietLog, warn: keep('warn'), error: keep('error') };
  }

  /**
   * `client` as a process of the product meets AWS: throttles before a DynamoDB call
   * applies, transactions applied with their answer lost, S3 reads failing with a 5xx, at
   * the plan's rates.
   */
  /** `client` with a round trip per call (CALL_LATENCIES), drawn from the world's latency stream; the call applies halfway. */
  latent<C extends { send: (...args: never[]) => Promise<unknown> }>(client: C, kind: keyof typeof CALL_LATENCIES): C {
    const send = (client.send as (...a: unknown[]) => Promise<unknown>).bind(client);
    const [lo, hi] = CALL_LATENCIES[kind];
    const draw = this.latencyDraw;
    const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const latent = async (...args: unknown[]) => {
      const rtt = lo + draw() * (hi - lo);
      await wait(rtt / 2);
      const answer = await send(...args);
      await wait(rtt / 2);
      return answer;
    };
    return overriding(client, { send: latent as unknown as C['send'] } as Partial<C>);
  }

  /**
   * A worker's DynamoDB client with the plan's doubt windows (plan.ts `DoubtWindow`): the
   * first commit that puts a gap record at a window's frame is struck (before it is sent, or
   * applied with its answer lost), then the video's lease reads fail until the window closes.
   */
  private doubtful<C extends { send: (...args: never[]) => Promise<unknown> }>(client: C): C {
    if (this.doubts.length === 0) return client;
    const send = (client.send as (...a: unknown[]) => Promise<unknown>).bind(client);
    const doubtful = async (...args: unknown[]) => {
      const command = args[0] as { constructor: { name: string }; input?: Record<string, unknown> };
      const name = command.constructor.name;
      if (name === 'GetCommand') {
        const pk = String((command.input?.Key as { pk?: unknown } | undefined)?.pk ?? '');
        const open = this.doubts.find((d) => d.struckUntilMs !== undefined && Date.now() < d.struckUntilMs && pk === `video#${d.w.videoId}`);
        if (open) throw injectedError('dynamodb', '5xx');
        return send(...args);
      }
      if (name !== 'TransactWriteCommand') return send(...args);
      type Put = { Put?: { Item?: { videoId?: unknown; frame?: unknown; status?: unknown } } };
      const items = (command.input?.TransactItems as Put[] | undefined) ?? [];
      const d = this.doubts.find((x) => x.struckUntilMs === undefined && items.some((i) => i.Put?.Item?.videoId === x.w.videoId && i.Put.Item.frame === x.w.frame && i.Put.Item.status === 'gap'));
      if (!d) return send(...args);
      // The call hangs until it times out (the frame's upload lands meanwhile, so its message
      // meets the commit in flight), then its outcome is unknown, and the video's lease reads
      // fail for as long again.
      d.struckUntilMs = Infinity;
      this.note(`doubt window: the commit of gap ${d.w.videoId}/${d.w.frame} hangs ${d.w.forMs} ms, then ${d.w.mode === 'lost' ? 'applies with its answer lost' : 'fails unsent'}; its lease reads fail meanwhile and ${d.w.forMs} ms more`);
      this.onDoubtOpened(d.w);
      await new Promise((r) => setTimeout(r, d.w.forMs));
      try {
        // A transaction refused (its fence moved meanwhile) answers as it would: that outcome is known.
        if (d.w.mode === 'lost') await send(...args);
      } finally {
        d.struckUntilMs = Date.now() + d.w.forMs;
      }
      throw injectedError('dynamodb', '5xx');
    };
    return overriding(client, { send: doubtful as unknown as C['send'] } as Partial<C>);
  }

  private faulty<C extends { send: (...args: never[]) => Promise<unknown> }>(plain: C, service: 'dynamodb' | 's3' | 'sqs'): C {
    const client = this.latent(plain, service);
    const f = this.faults;
    if (!f || f.ddbThrottle + f.ddbLostAnswer + f.s3Error + (f.sqsError ?? 0) === 0) return client;
    const send = (client.send as (...a: unknown[]) => Promise<unknown>).bind(client);
    const draw = this.faultDraw;
    const faulty = async (...args: unknown[]) => {
      const name = (args[0] as { constructor: { name: string } }).constructor.name;
      if (service === 'dynamodb') {
        if (draw() < f.ddbThrottle) throw injectedError('dynamodb', 'throttle');
        const answer = await send(...args);
        if (name === 'TransactWriteCommand' || name === 'TransactWriteItemsCommand') {
          if (draw() < f.ddbLostAnswer) throw injectedError('dynamodb', '5xx');
        }
        return answer;
      }
      if (service === 'sqs') {
        if (draw() < (f.sqsError ?? 0)) throw injectedError('sqs', draw() < 0.5 ? 'throttle' : '5xx');
        return send(...args);
      }
      // Frames only: the rules document is read once and kept (an outage of it is another story).
      const key = String((args[0] as { input?: { Key?: string } }).input?.Key ?? '');
      if ((name === 'GetObjectCommand' || name === 'HeadObjectCommand') && key.startsWith('frames/') && draw() < f.s3Error) throw injectedError('s3', '5xx');
      return send(...args);
    };
    return overriding(client, { send: faulty as unknown as C['send'] } as Partial<C>);
  }

  // ------------------------------------------------------------------ S3 and its notifications

  /** An uploader's PUT: stores the object now; its notification follows (see {@link notify}). Returns the ETag. */
  put(key: string, body: Uint8Array | string, metadata?: Record<string, string>): { eTag: string; size: number } {
    const eTag = this.s3.putObject(this.bucket, key, body, metadata);
    const size = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    this.note(`put ${key} (${size} B${metadata?.frames ? `, frames=${metadata.frames}` : ''})`);
    return { eTag, size };
  }

  /** S3's notification of a PUT reaches the ingest queue after `delayMs` (drawn when absent). */
  notify(key: string, eTag: string, size: number, o: { delayMs?: number; replayTag?: string } = {}): void {
    const delayMs = o.delayMs ?? this.between(this.latencies.notifyMs);
    this.sequencer++;
    const body = JSON.stringify(
      buildObjectCreatedEvent({ region: 'us-east-1', bucket: this.bucket, key, sizeBytes: size, eTag, eventName: 'ObjectCreated:Put', eventTime: new Date(), sequencer: this.sequencer.toString(16).padStart(16, '0'), configurationId: 'sim' }),
    );
    this.notificationsInFlight++;
    setTimeout(() => {
      this.notificationsInFlight--;
      this.enqueueIngest(body, o.replayTag);
    }, delayMs);
  }

  /** A message lands in the ingest queue (a notification, or an operator's re-send). */
  enqueueIngest(body: string, replayTag?: string): void {
    this.ingestSeq++;
    this.ingest.push({ id: `m${this.ingestSeq}`, body, ...(replayTag ? { replayTag } : {}), receiveCount: 0, visibleAtMs: Date.now() });
    this.armPoller(0);
  }

  /** The Lambda event source: polls while messages wait, hands batches of up to 10 visible ones to the router. */
  private armPoller(inMs: number): void {
    if (this.stopping) return;
    // A poll armed for later (every message in flight: the next visibility) is brought
    // forward when a message arrives: Lambda's pollers never stop polling a queue with
    // messages in it. Without this, one poll that found only messages in flight slept until
    // their visibility ran out (minutes), however many notifications came meanwhile.
    const dueAtMs = Date.now() + inMs;
    if (this.pollerArmed && dueAtMs >= this.pollerDueAtMs) return;
    if (this.pollerTimer) clearTimeout(this.pollerTimer);
    this.pollerArmed = true;
    this.pollerDueAtMs = dueAtMs;
    this.pollerTimer = setTimeout(() => void this.poll(), inMs);
  }

  private async poll(): Promise<void> {
    this.pollerArmed = false;
    this.pollerTimer = undefined;
    const now = Date.now();
    const batch = this.ingest.filter((m) => m.visibleAtMs <= now).slice(0, 10);
    if (batch.length > 0) {
      const visibilityMs = this.tunables.ingestVisibilitySeconds * 1000;
      for (const m of batch) {
        m.receiveCount++;
        m.visibleAtMs = now + visibilityMs;
      }
      let failed = new Set<string>(batch.map((m) => m.id));
      try {
        const records: IngestRecord[] = batch.map((m) => ({ id: m.id, body: m.body, ...(m.replayTag ? { replayTag: m.replayTag } : {}) }));
        const outcomes = await this.router.route(records);
        const settled = await settleIngestFailures(
          batch.map((m) => ({ id: m.id, body: m.body, receiptHandle: m.id, receiveCount: m.receiveCount })),
          outcomes,
          {
            tunables: this.tunables,
            changeVisibility: async (changes) => {
              for (const c of changes) {
                const m = this.ingest.find((x) => x.id === c.receiptHandle);
                if (m) m.visibleAtMs = Date.now() + c.visibilitySeconds * 1000;
              }
              return { failed: 0 };
            },
            deadLetter: async (events) => this.deadLetter(events),
            metrics: nullMetrics,
            log: this.logSink('router'),
          },
        );
        failed = settled.failedIds;
      } catch (e) {
        this.note(`router invocation failed: ${String(e)}`);
      }
      for (const m of batch) {
        if (failed.has(m.id)) {
          if (m.receiveCount >= this.tunables.ingestMaxReceiveCount) {
            this.remove(m);
            this.ingestDlq.push({ body: m.body, reason: 'max-receives' });
          }
          continue;
        }
        this.remove(m);
      }
    }
    if (this.ingest.length > 0) {
      const next = Math.min(...this.ingest.map((m) => m.visibleAtMs));
      this.armPoller(Math.max(batch.length > 0 ? 0 : 20, next - Date.now()));
    }
  }

  private remove(m: PendingIngest): void {
    const i = this.ingest.indexOf(m);
    if (i >= 0) this.ingest.splice(i, 1);
  }

  private async deadLetter(events: readonly RejectedEvent[]): Promise<boolean[]> {
    for (const e of events) {
      this.ingestDlq.push({ body: e.body, reason: e.reason });
      this.note(`ingest DLQ: ${e.reason} (${e.detail})`);
    }
    return events.map(() => true);
  }

  /** The operator's redrive of the ingest DLQ: its messages go back to the ingest queue. */
  redriveIngestDlq(): number {
    const moved = this.ingestDlq.splice(0);
    for (const m of moved) this.enqueueIngest(m.body);
    return moved.length;
  }

  // ------------------------------------------------------------------ ECS

  private launcher(): TaskLauncher {
    return {
      launch: async (r: LaunchRequest): Promise<LaunchResult> => {
        // Idempotent per (slot, launchSeq), as RunTask's clientToken makes it.
        const key = `${r.slot}:${r.launchSeq}`;
        const known = this.launched.get(key);
        if (known) return { launched: true, taskId: known };
        const standby = r.slot >= this.tunables.slotCount;
        const taskId = standby ? `s${r.slot - this.tunables.slotCount}-${r.launchSeq}` : `t${r.slot}-${r.launchSeq}`;
        this.launched.set(key, taskId);
        if (standby) {
          // A standby lives on an instance of its own (placement, decision 75): its seat's
          // first instance is there from the deploy; a replacement needs a new one.
          const coldMs = this.seatsStarted.has(r.slot) && this.latencies.instanceStartMs ? this.between(this.latencies.instanceStartMs) : 0;
          this.seatsStarted.add(r.slot);
          this.startTask(taskId, r.slot, coldMs + this.between(this.latencies.taskStartMs), coldMs > 0 ? `${r.reason}; new instance first (${coldMs} ms)` : r.reason);
          return { launched: true, taskId };
        }
        // Drawn only after an instance loss: a seed without one replays as before.
        const coldMs = this.instanceLost && this.latencies.instanceStartMs ? this.between(this.latencies.instanceStartMs) : 0;
        this.instanceLost = false;
        this.startTask(taskId, r.slot, coldMs + this.between(this.latencies.taskStartMs), coldMs > 0 ? `${r.reason}; new instance first (${coldMs} ms)` : r.reason);
        return { launched: true, taskId };
      },
      describe: async (ids) => {
        const out = new Map<string, LaunchedTaskState>();
        for (const id of ids) {
          const t = this.tasks.get(id);
          out.set(id, { state: !t ? 'unknown' : t.state === 'stopped' ? 'gone' : 'coming' });
        }
        return out;
      },
    };
  }

  private startTask(taskId: string, slot: number, afterMs: number, reason: string): void {
    const standby = slot >= this.tunables.slotCount;
    const task: SimTask = { taskId, slot, gate: new ProcessGate(), state: 'starting', standby, processes: new Map() };
    this.tasks.set(taskId, task);
    this.note(`launch ${taskId} for ${standby ? `standby seat ${slot}` : `slot ${slot}`} (${reason}); starts in ${afterMs} ms`);
    setTimeout(() => {
      if (task.state !== 'starting') return;
      if (this.stopping) {
        task.state = 'stopped';
        return;
      }
      task.state = 'running';
      this.note(`${taskId} runs`);
      if (this.hotSpare && !standby) {
        this.startSupervised(task);
        return;
      }
      const worker = this.workerFor(task, taskId, task.gate, standby ? { standBy: this.standByFor(task, taskId, task.gate) } : {});
      task.worker = worker;
      worker.run().then(
        (reason) => this.taskStopped(task, reason, reason === 'drained' || reason === 'idle' ? 0 : 1),
        (e) => this.taskStopped(task, `error: ${e instanceof Error ? e.message : String(e)}`, 1),
      );
    }, afterMs);
  }

  /** A worker of `task` whose AWS calls pass `gates` (its process's, then its task's). */
  private workerFor(task: SimTask, workerId: string, gate: ProcessGate, extra: Partial<ConstructorParameters<typeof Worker>[0]> & { queueSink?: Parameters<typeof mirroredQueue>[1] } = {}): Worker {
    const through = <C extends { send: (...args: never[]) => Promise<unknown> }>(c: C): C => (gate === task.gate ? gatedClient(c, gate) : gatedClient(gatedClient(c, gate), task.gate));
    const ddb = through(this.doubtful(this.faulty(this.leasesTwin.ddb, 'dynamodb')));
    const s3 = through(this.faulty(this.s3.asClient(), 's3'));
    const queues = new SlotQueues(through(this.faulty(this.sqs.asClient(), 'sqs')), this.wiring.slotQueueUrlPrefix);
    const { queueSink, ...deps } = extra;
    const processor = new SimProcessor(this.processBatchMs);
    const run = processor.process.bind(processor);
    processor.process = async (frames) => {
      const p = this.poison;
      if (p && frames.some((f) => f.videoId === p.videoId && f.frame === p.frame)) {
        this.poisonDeaths++;
        this.note(`${workerId} dies on poison frame ${p.videoId}/${p.frame}`);
        const child = task.supervisor?.primary;
        if (child?.id === workerId) child.kill();
        else this.kill(task, { whole: true });
        return new Promise(() => undefined);
      }
      return run(frames);
    };
    return new Worker({
      workerId,
      ...(task.standby ? {} : { slot: task.slot }),
      tunables: this.tunables,
      leases: LeaseStore.forWiring(ddb, this.wiring, this.tunables),
      queues: queueSink ? mirroredQueue(queues, queueSink) : queues,
      frames: new FrameStore(s3),
      bucket: this.bucket,
      records: new DynamoDbRecords({ ddb, resultsTable: this.wiring.resultsTable }),
      replayDeletes: new DynamoDbResultsAdmin({ ddb, resultsTable: this.wiring.resultsTable, eventsTable: this.wiring.eventsTable }),
      processor,
      metrics: nullMetrics,
      log: this.logSink(`worker-${workerId}`),
      segmentCodec: SIM_SEGMENT_CODEC,
      rules: new RulesStore({ s3, bucket: this.bucket, refreshMs: this.tunables.rulesRefreshSeconds * 1000, log: quietLog, metrics: nullMetrics }),
      ...deps,
    });
  }

  /** A standby's wait (gpu-worker/supervisor/standby.ts): holds its seat, reads the slots, names the one to take. */
  private standByFor(task: SimTask, workerId: string, gate: ProcessGate): () => Promise<{ slot?: number } | 'stop'> {
    const ddb = gatedClient(this.faulty(this.leasesTwin.ddb, 'dynamodb'), gate);
    const watch = new StandbyWatch({ workerId: `${workerId}/seat`, seat: task.slot, tunables: this.tunables, leases: LeaseStore.forWiring(ddb, this.wiring, this.tunables), metrics: nullMetrics, log: this.logSink(`standby-${workerId}`), now: Date.now });
    return async () => {
      const w = await watch.wait(() => this.stopping || task.state !== 'running');
      if (w !== 'stop') this.note(`${task.taskId} standby takes slot ${w.slot}`);
      return w;
    };
  }

  /**
   * A task with a hot spare (decision 75): the product's supervisor over two worker
   * processes in this task, each behind its own gate (kill -9 of a worker process) and the
   * task's (the whole container). A child's death reaches the supervisor as its reaping
   * would, a millisecond after the kill.
   */
  private startSupervised(task: SimTask): void {
    const gate = task.gate;
    const ddb = gatedClient(this.faulty(this.leasesTwin.ddb, 'dynamodb'), gate);
    const sqs = new SlotQueues(gatedClient(this.faulty(this.sqs.asClient(), 'sqs'), gate), this.wiring.slotQueueUrlPrefix);
    let seq = 0;
    let watchdog: ReturnType<typeof setInterval> | undefined;
    const codeOf = (r: ExitReason): number => (r === 'lease-lost' ? 3 : 0);
    const supervisor: Supervisor = new Supervisor({
      leases: LeaseStore.forWiring(ddb, this.wiring, this.tunables),
      queues: sqs,
      newWorkerId: (role) => `${task.taskId}/${role === 'spare' ? 's' : 'p'}${++seq}`,
      metrics: nullMetrics,
      log: this.logSink(`supervisor-${task.taskId}`),
      now: Date.now,
      onTaskExit: (code) => {
        clearInterval(watchdog);
        for (const p of task.processes.values()) p.gate.kill();
        this.taskStopped(task, `supervisor exit ${code}`, code);
      },
      spawn: (role, id): SupervisedChild => {
        const pgate = new ProcessGate();
        let wake: SimProcess['wake'];
        const waiting = role === 'spare' ? new Promise<{ slot?: number } | 'stop'>((resolve) => (wake = resolve)) : undefined;
        const worker = this.workerFor(task, id, pgate, {
          queueSink: supervisor.sinkFor(id),
          onClaimed: (fence, exp) => supervisor.claimed(id, fence, exp),
          onHeartbeat: (exp) => supervisor.heartbeat(id, exp),
          ...(waiting ? { standBy: () => waiting } : {}),
        });
        const proc: SimProcess = { id, role, gate: pgate, worker, ...(wake ? { wake } : {}) };
        task.processes.set(id, proc);
        if (role === 'primary') task.worker = worker;
        let reaped = false;
        const reap = (code: number | null, signal: string | null) => {
          if (reaped) return;
          reaped = true;
          task.processes.delete(id);
          // SIGCHLD: the supervisor reaps the child a moment after it ends.
          setTimeout(() => void supervisor.exited(id, code, signal), 1);
        };
        worker.run().then(
          (r) => {
            if (!pgate.killed && !gate.killed) reap(codeOf(r), null);
          },
          () => {
            if (!pgate.killed && !gate.killed) reap(1, null);
          },
        );
        return {
          id,
          kill: () => {
            if (gate.killed) return;
            pgate.kill();
            this.note(`kill -9 ${id} (worker process of ${task.taskId})`);
            reap(null, 'SIGKILL');
          },
          stop: () => {
            worker.requestStop();
            proc.wake?.('stop');
          },
          promote: () => {
            proc.role = 'primary';
            task.worker = worker;
            this.note(`${id} promoted`);
            proc.wake?.({});
          },
        };
      },
    });
    task.supervisor = supervisor;
    supervisor.start();
    watchdog = setInterval(() => {
      if (task.state !== 'running' || gate.killed) return clearInterval(watchdog);
      // The supervisor's own timer: it does not run while the whole container is stopped.
      if (!gate.paused) supervisor.checkFrozen();
    }, 1_000);
  }

  /** The primary worker process of a task with a hot spare. */
  primaryOf(task: SimTask): SimProcess | undefined {
    for (const p of task.processes.values()) if (p.role === 'primary') return p;
    return undefined;
  }

  private taskStopped(task: SimTask, exit: string, exitCode: number): void {
    if (task.state === 'stopped') return;
    task.state = 'stopped';
    task.exit = exit;
    this.note(`${task.taskId} stopped: ${exit}`);
    if (this.stopping) return;
    const stoppedAtMs = Date.now();
    setTimeout(() => void this.runJanitor({ kind: 'task-stopped', slot: task.slot, stoppedAtMs, workerId: task.taskId, exitCode }), this.between(this.latencies.stoppedEventMs));
  }

  /**
   * kill -9 of a running task's worker process: its calls never return. Without a hot spare
   * the task ends with it, and ECS reports it stopped (exit 137); with one, the supervisor
   * reaps it and the spare takes over (decision 75). `whole`: the whole task (container).
   */
  kill(task: SimTask, o: { whole?: boolean } = {}): void {
    if (task.state !== 'running') return;
    if (task.supervisor && !o.whole) {
      // Through the supervisor's handle of its child, so the reaping follows as it would.
      const child = task.supervisor.primary;
      if (child) child.kill();
      else this.note(`kill -9: ${task.taskId} has no primary worker process`);
      return;
    }
    task.gate.kill();
    this.note(`kill -9 ${task.taskId}`);
    this.taskStopped(task, 'killed', 137);
  }

  /**
   * Loss of the instance (bench/failover-aws.ts): every task on it, running or starting,
   * dies at once, and none reports (its ECS agent went with it, so no task-stopped event:
   * the lease's expiry is what reveals the loss). The next launch pays
   * `latencies.instanceStartMs` for a new instance. The world models one instance: all its tasks.
   */
  loseInstance(): void {
    this.note('instance lost: every task on it dies, no task-stopped event');
    this.instanceLost = true;
    for (const t of this.tasks.values()) {
      // Standbys are placed on instances of their own (decision 75).
      if (t.state === 'stopped' || t.standby) continue;
      t.gate.kill();
      t.state = 'stopped';
      t.exit = 'instance lost';
      this.note(`${t.taskId} gone with its instance`);
    }
  }

  /**
   * SIGSTOP for `forMs`, then SIGCONT: of the worker process when the task has a hot spare
   * (its supervisor then kills it once its lease ran out), of the whole task otherwise or
   * when `whole` (the container: supervisor and spare with it).
   */
  pause(task: SimTask, forMs: number, o: { whole?: boolean } = {}): void {
    if (task.state !== 'running') return;
    const primary = task.supervisor && !o.whole ? this.primaryOf(task) : undefined;
    const gate = primary ? primary.gate : task.gate;
    const name = primary ? `${primary.id} (worker process of ${task.taskId})` : task.taskId;
    gate.pause();
    this.note(`SIGSTOP ${name} for ${forMs} ms`);
    setTimeout(() => {
      gate.resume();
      this.note(`SIGCONT ${name}`);
    }, forMs);
  }

  /** Running worker tasks (standbys apart: {@link runningStandbys}). */
  runningTasks(): SimTask[] {
    return [...this.tasks.values()].filter((t) => t.state === 'running' && !t.gate.killed && !t.standby);
  }

  runningStandbys(): SimTask[] {
    return [...this.tasks.values()].filter((t) => t.state === 'running' && !t.gate.killed && t.standby);
  }

  // ------------------------------------------------------------------ the janitor

  startJanitor(): void {
    // Standbys were there before the first frame (the janitor has run since the deploy).
    if (this.tunables.standbyWorkers > 0) setTimeout(() => void this.runJanitor({ kind: 'schedule' }), 0);
    this.janitorTimer = setInterval(() => void this.runJanitor({ kind: 'schedule' }), this.tunables.janitorIntervalSeconds * 1000);
  }

  private async runJanitor(trigger: JanitorTrigger): Promise<void> {
    if (this.stopping) return;
    try {
      await this.janitor.run(trigger);
    } catch (e) {
      this.note(`janitor failed: ${String(e)}`);
    }
  }

  /** Ends the world: no more polls, launches or janitor runs; running workers drain (a paused one is resumed first). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.janitorTimer) clearInterval(this.janitorTimer);
    for (const t of this.tasks.values()) {
      if (t.state === 'running' && !t.gate.killed) {
        t.gate.resume();
        if (t.supervisor) {
          for (const p of t.processes.values()) p.gate.resume();
          t.supervisor.stop();
        } else t.worker?.requestStop();
      }
    }
  }
}

