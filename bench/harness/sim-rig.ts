/**
 * The rig of bench/gpu-sim.ts: the real worker (gpu-worker/runtime/worker.ts) in this
 * process, with AWS-like latency on every call (lab/aws/latency-model.ts) and a simulated GPU,
 * on parts chosen so that no emulator is the bottleneck of a design figure:
 *  - SQS: the SQS FIFO model (core/ingest/memory/sqs-fifo-model.ts: real FIFO semantics, up to
 *    10 messages of one group per receive, group blocking), in process, behind the latency
 *    model. fauxqs hands out one message per group per receive, which real SQS does not.
 *  - DynamoDB: DynamoDB Local (a JVM child) through the production LeaseStore and SDK
 *    clients, with the latency middleware (lab/aws/latency-injection.ts) on them: the real
 *    fenced transactions. Its CPU is reported (bench/cpu-accounting.ts).
 *  - S3: frames held in memory behind the latency model (FrameStore.get overridden): an
 *    S3 GET's cost in AWS is its latency, which the model supplies; fauxqs's S3 would add
 *    only this machine's CPU.
 *  - the processor: lab/worker/simulated-gpu.ts, timing decode / infer / track on
 *    the worker's StageClock; receive / fetch / commit / delete are timed by
 *    gpu-worker/runtime/stage-timing.ts around the worker's dependencies.
 */
import sharp from 'sharp';
import { FrameStore } from '../../core/ingest/s3/frame-store.ts';
import { LeaseStore } from '../../core/leases/dynamodb/lease-store.ts';
import { SlotQueues } from '../../core/ingest/sqs/slot-queues.ts';
import { installLatencyModel, withLatency } from '../../lab/aws/latency-injection.ts';
import { LatencyModel, parseLatencyModel } from '../../lab/aws/latency-model.ts';
import type { Tunables } from '../../core/config.ts';
import { packUnits } from '../../core/commit/commit-packing.ts';
import type { UnitOutcome } from '../../core/commit/commit-outcome.ts';
import { frameKey } from '../../core/ingest/keys.ts';
import { FRAMES_METADATA_KEY, segmentKey } from '../../core/ingest/segment-keys.ts';
import { StageClock } from '../../gpu-worker/runtime/stage-clock.ts';
import { timeStages } from '../../gpu-worker/runtime/stage-timing.ts';
import { SimulatedGpuProcessor, type SimulatedGpuOptions } from '../../lab/worker/simulated-gpu.ts';
import { WorkerHarness, type HarnessWorker } from '../../harness/worker-harness.ts';

/** S3 in memory: `get` waits a draw of the latency model, then returns the bytes put. */
class MemoryFrameStore extends FrameStore {
  readonly objects = new Map<string, Uint8Array>();
  /** User metadata of the objects that have some (a segment's declared frame count). */
  readonly metadata = new Map<string, Record<string, string>>();
  private readonly latency: LatencyModel;

  constructor(s3: ConstructorParameters<typeof FrameStore>[0], latency: LatencyModel) {
    super(s3);
    this.latency = latency;
  }

  override async get(bucket: string, key: string): Promise<Uint8Array> {
    return (await this.getVersion(bucket, key)).bytes;
  }

  /** With the ETag every frame's message carries (a read ahead, decision 39). */
  override async getVersion(bucket: string, key: string): Promise<{ bytes: Uint8Array; eTag: string | undefined }> {
    await new Promise((r) => setTimeout(r, this.latency.delayMs('s3', 'GetObject')));
    const b = this.objects.get(`${bucket}/${key}`);
    // A copy, as each GET of S3 is: the processors key work done ahead by the byte array (decision 42).
    if (b) return { bytes: b.slice(), eTag: SIM_ETAG };
    return super.getVersion(bucket, key);
  }

  /** A HEAD (a segment's `x-amz-meta-frames`, read once per segment by the worker), behind the latency model. */
  override async head(bucket: string, key: string): Promise<Awaited<ReturnType<FrameStore['head']>>> {
    await new Promise((r) => setTimeout(r, this.latency.delayMs('s3', 'HeadObject')));
    const b = this.objects.get(`${bucket}/${key}`);
    if (b) return { sizeBytes: b.byteLength, eTag: SIM_ETAG, metadata: this.metadata.get(`${bucket}/${key}`) ?? {} };
    return super.head(bucket, key);
  }
}

/** The ETag of every in-memory frame (they all carry the same image). */
const SIM_ETAG = 'sim-frame-etag';

export interface SimRigOptions {
  readonly videos: number;
  readonly tunables: Partial<Tunables>;
  readonly gpu: Partial<SimulatedGpuOptions>;
  /** `AWS_LATENCY_MODEL` JSON. */
  readonly latencyModel: string;
  /**
   * Where commits go: `dynamodb-local` (the real fenced transactions, whose time on this
   * machine is DynamoDB Local's CPU plus the latency model), or `model`: each transaction
   * group (core/commit/commit-packing.ts, as the committer packs it) waits one TransactWriteItems
   * draw of the latency model and lands, its records kept in memory (a record written
   * twice is counted). Everything else (claims, adoptions, heartbeats) stays on DynamoDB Local.
   */
  readonly commits: 'dynamodb-local' | 'model';
  /** Frame width x height of the (flat) JPEG every frame carries. */
  readonly width: number;
  readonly height: number;
}

/** One rig: emulators, one slot, the worker built (not started). */
export class SimRig {
  readonly h: WorkerHarness;
  readonly clock: StageClock;
  readonly gpu: SimulatedGpuProcessor;
  readonly worker: HarnessWorker;
  readonly latency: LatencyModel;
  /** Sender-side queues (as the router): the model behind the latency model. */
  readonly sender: SlotQueues;
  /** When each commit stamp (`committedAtMs`) landed, ms since the epoch. */
  readonly landedAt = new Map<number, number>();
  /** With `commits: 'model'`: every record committed, by `video:frame`, and how many were written twice. */
  readonly modelRecords = new Map<string, { videoId: string; frame: number; status: string; committedAtMs: number }>();
  doubledRecords = 0;
  private readonly store: MemoryFrameStore;
  private image: Uint8Array = new Uint8Array();
  readonly videoIds: string[];

  private constructor(h: WorkerHarness, options: SimRigOptions) {
    this.h = h;
    this.latency = new LatencyModel(parseLatencyModel(options.latencyModel), 'gpu-sim');
    // DynamoDB (the real store, DynamoDB Local) gets the latency on its SDK clients.
    installLatencyModel(h.emulatorClients(), options.latencyModel, 'worker', 'gpu-sim');
    const sqs = withLatency(h.model!.asClient(), 'sqs', this.latency);
    this.sender = new SlotQueues(sqs, h.wiring.slotQueueUrlPrefix);
    this.clock = new StageClock();
    this.gpu = new SimulatedGpuProcessor({ batchSize: h.tunables.inferenceBatchSize, maxBatchWaitMs: h.tunables.maxBatchWaitMs, ...options.gpu }, this.clock, h.tunables.detectAheadFrames);
    this.store = new MemoryFrameStore(h.clients.s3, this.latency);
    const leases = LeaseStore.forWiring(h.clients.ddb, h.wiring, h.tunables);
    const landedAt = this.landedAt;
    const modelled = options.commits === 'model';
    const modelCommit = async (units: Parameters<LeaseStore['commit']>[1]) => {
      // The committer sends its groups one after another.
      for (const _group of packUnits(units)) await new Promise((r) => setTimeout(r, this.latency.delayMs('dynamodb', 'TransactWriteItems')));
      const outcomes = new Map<string, UnitOutcome>();
      for (const u of units) {
        outcomes.set(u.videoId, 'landed');
        for (const rec of u.results) {
          const key = `${rec.videoId}:${rec.frame}`;
          if (this.modelRecords.has(key) && !u.replacesGap?.includes(rec.frame)) this.doubledRecords++;
          this.modelRecords.set(key, { videoId: rec.videoId, frame: rec.frame, status: rec.status, committedAtMs: rec.committedAtMs });
        }
      }
      return { kind: 'settled' as const, outcomes, ambiguousRetries: 0 };
    };
    const stamped = new Proxy(leases, {
      get(t, prop) {
        const v = Reflect.get(t, prop) as unknown;
        if (prop !== 'commit') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
        return async (...args: Parameters<LeaseStore['commit']>) => {
          const r = modelled ? await modelCommit(args[1]) : await t.commit(...args);
          landedAt.set(args[2], Date.now());
          return r;
        };
      },
    });
    const timed = timeStages({ queues: new SlotQueues(sqs, h.wiring.slotQueueUrlPrefix), frames: this.store, leases: stamped, processor: this.gpu }, this.clock);
    this.worker = h.createWorker(0, { workerId: 'gpu-sim', extraDeps: { queues: timed.queues, frames: timed.frames, leases: timed.leases, processor: timed.processor } });
    this.videoIds = Array.from({ length: options.videos }, (_, v) => `sim-${v}`);
  }

  /** Starts the emulators and pins `videos` videos to slot 0. */
  static async start(options: SimRigOptions): Promise<SimRig> {
    const h = await WorkerHarness.start({
      slots: 1,
      tunables: { slotCount: 1, videosPerSlot: Math.max(8, options.videos), firstFrameNumber: 0, ...options.tunables },
      model: { longPollCapMs: 20_000 },
    });
    const rig = new SimRig(h, options);
    rig.image = new Uint8Array(await sharp({ create: { width: options.width, height: options.height, channels: 3, background: { r: 90, g: 120, b: 60 } } }).jpeg().toBuffer());
    // DynamoDB Local on a loaded machine can miss the 1.5 s request timeout: retry the set-up.
    for (const v of rig.videoIds) {
      for (let attempt = 1; ; attempt++) {
        try {
          await h.pinVideo(v, 0);
          break;
        } catch (e) {
          if (attempt >= 5 || String(e).includes('could not pin')) throw e;
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    }
    return rig;
  }

  /** Puts frames into the in-memory S3 (instant: an upload is not the worker's cost). */
  putFrames(videoId: string, frames: readonly number[]): void {
    for (const f of frames) this.store.objects.set(`${this.h.bucket}/${frameKey(videoId, f)}`, this.image);
  }

  /**
   * Puts an encoded segment covering frames `[firstFrame, firstFrame + frames)` into the
   * in-memory S3 (MPEG-TS, `x-amz-meta-frames` declared, as the CLI and the edge segmenter
   * upload); returns its key.
   */
  putSegment(videoId: string, firstFrame: number, bytes: Uint8Array, frames: number): string {
    const key = segmentKey(videoId, firstFrame, 'mpegts');
    this.store.objects.set(`${this.h.bucket}/${key}`, bytes);
    this.store.metadata.set(`${this.h.bucket}/${key}`, { [FRAMES_METADATA_KEY]: String(frames) });
    return key;
  }

  /** Sends the message the router sends for a segment (one frame message for its first frame, with the segment's key). */
  async sendSegment(videoId: string, firstFrame: number, sizeBytes: number): Promise<void> {
    const key = segmentKey(videoId, firstFrame, 'mpegts');
    const outcomes = await this.sender.send(0, [{ message: { ...this.h.frameMessage(videoId, firstFrame, sizeBytes), key, eTag: SIM_ETAG } }]);
    const bad = outcomes.find((o) => !o.ok);
    if (bad && !bad.ok) throw new Error(`send failed: ${bad.error}`);
  }

  /** Sends frame messages to slot 0 as the router would (through the latency model). */
  async send(videoId: string, frames: readonly number[]): Promise<void> {
    const outcomes = await this.sender.send(0, frames.map((f) => ({ message: { ...this.h.frameMessage(videoId, f, this.image.byteLength), eTag: SIM_ETAG } })));
    const bad = outcomes.find((o) => !o.ok);
    if (bad && !bad.ok) throw new Error(`send failed: ${bad.error}`);
  }

  async stop(): Promise<void> {
    await this.h.stop();
  }
}
