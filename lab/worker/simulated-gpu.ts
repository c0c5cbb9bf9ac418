/**
 * A simulated GPU (`FRAME_PROCESSOR=simgpu`, added by lab/worker/register.ts): a FrameProcessor that does no CPU work for
 * inference. Frames of all videos go through the real cross-video micro-batcher
 * (gpu-worker/vision/batcher.ts: batch full or `maxBatchWaitMs`, one batch at a time, as on one GPU), and
 * a batch of n frames "runs" by sleeping `batchFixedMs + n * perFrameMs` (default 2 ms +
 * 1 ms per frame: batch 8 in 10 ms, about 800 frames/s; batch 1 in 3 ms, about 333).
 *
 * It does not decode the JPEG: the "decode" stage reads the image's size from its header
 * (a few bytes; 640 x 480 when the header says nothing), since on a GPU decode would be
 * nvJPEG or the model's own preprocessing. Detections are plausible: a few boxes moving
 * across the frame as functions of the frame number (so they are the same after a
 * failover), fed to the real per-video ByteTrack tracker; late frames get their track IDs
 * from their neighbours (gpu-worker/vision/late-association.ts), as the vision processor does. So tracking,
 * checkpoints (the tracker's snapshot) and commits do their real work.
 *
 * Frames hinted by `detectAhead` (decision 42) are detected in the batches the rounds'
 * own frames leave room in, keyed by their bytes, as the vision processor does.
 *
 * It times decode / infer / track on the worker's {@link StageClock} when given one
 * (infer busy = the GPU's busy time; infer queueing = how long ready frames waited for it).
 */
import type { Detection, FrameInput, FrameOutcome, FrameProcessor, LateFrameInput } from '../../core/ports.ts';
import type { StageClock } from '../../gpu-worker/runtime/stage-clock.ts';
import { MicroBatcher } from '../../gpu-worker/vision/batcher.ts';
import { DETECT_AHEAD_STREAM, DetectedAhead } from '../../gpu-worker/vision/detected-ahead.ts';
import { ByteTracker, type TrackerInput } from '../../gpu-worker/vision/tracker.ts';
import { associateLateFrame } from '../../gpu-worker/vision/late-association.ts';
import { sceneDetections } from '../scene/synthetic-scene.ts';

/** The batch latency model and batching of the simulated GPU. */
export interface SimulatedGpuOptions {
  /** Fixed ms per batch (kernel launches, copies). @default 2 */
  readonly batchFixedMs: number;
  /** ms per frame of a batch. @default 1 */
  readonly perFrameMs: number;
  /** Most frames per batch (`inferenceBatchSize`). @default 8 */
  readonly batchSize: number;
  /** Longest a ready frame waits for its batch to fill (`maxBatchWaitMs`). @default 10 */
  readonly maxBatchWaitMs: number;
  /** Moving objects per video. @default 4 */
  readonly objects: number;
  /**
   * 0: `objects` boxes on fixed paths ({@link simulatedDetections}). Above 0: the cost
   * bench's street scene at this many frames a second (lab/scene/synthetic-scene.ts:
   * `objects` detections a frame on average, born, moving and leaving, on a 1920x1080
   * image whatever the frame's size). @default 0
   */
  readonly sceneFps: number;
}

export const DEFAULT_SIMULATED_GPU: SimulatedGpuOptions = Object.freeze({ batchFixedMs: 2, perFrameMs: 1, batchSize: 8, maxBatchWaitMs: 10, objects: 4, sceneFps: 0 });

/** Frames per second the simulated GPU can do at full batches: its capacity. */
export function simulatedGpuCapacityFps(o: Pick<SimulatedGpuOptions, 'batchFixedMs' | 'perFrameMs' | 'batchSize'>): number {
  return (o.batchSize * 1000) / (o.batchFixedMs + o.batchSize * o.perFrameMs);
}

/** Parses `SIMULATED_GPU` (JSON, every field optional) over the defaults; throws on anything malformed. */
export function parseSimulatedGpu(text: string | undefined, base: Partial<SimulatedGpuOptions> = {}): SimulatedGpuOptions {
  const raw = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  const out: Record<string, number> = { ...DEFAULT_SIMULATED_GPU, ...base };
  for (const [k, v] of Object.entries(raw)) {
    if (!(k in DEFAULT_SIMULATED_GPU)) throw new Error(`SIMULATED_GPU: unknown field ${k}`);
    if (typeof v !== 'number' || !(v >= 0)) throw new Error(`SIMULATED_GPU.${k} must be a non-negative number (got ${JSON.stringify(v)})`);
    out[k] = v;
  }
  if (!(out.batchSize! >= 1)) throw new Error('SIMULATED_GPU.batchSize must be at least 1');
  return out as unknown as SimulatedGpuOptions;
}

/** Width and height from a JPEG's SOF or a PNG's IHDR; undefined when neither is found. */
export function imageSize(b: Uint8Array): { width: number; height: number } | undefined {
  if (b.length > 24 && b[0] === 0x89 && b[1] === 0x50) return { width: (b[16]! << 24) | (b[17]! << 16) | (b[18]! << 8) | b[19]!, height: (b[20]! << 24) | (b[21]! << 16) | (b[22]! << 8) | b[23]! };
  if (b[0] !== 0xff || b[1] !== 0xd8) return undefined;
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    const len = (b[i + 2]! << 8) | b[i + 3]!;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) return { height: (b[i + 5]! << 8) | b[i + 6]!, width: (b[i + 7]! << 8) | b[i + 8]! };
    i += 2 + len;
  }
  return undefined;
}

/** The boxes of frame `frame` of a video: `objects` boxes moving on fixed paths, from the frame number alone. */
export function simulatedDetections(videoId: string, frame: number, width: number, height: number, objects: number): TrackerInput[] {
  let h = 0;
  for (let i = 0; i < videoId.length; i++) h = (Math.imul(h, 31) + videoId.charCodeAt(i)) | 0;
  const out: TrackerInput[] = [];
  for (let k = 0; k < objects; k++) {
    const phase = ((h >>> (k * 3)) & 0xff) / 255;
    const w = width * 0.1;
    const hh = height * 0.15;
    const x = ((phase + frame * 0.004 * (k + 1)) % 1) * (width - w);
    const y = (height - hh) * ((k + 0.5) / objects);
    out.push({ box: [x, y, x + w, y + hh], score: 0.9 - k * 0.05, label: k % 2 === 0 ? 'person' : 'car' });
  }
  return out;
}

/** Most overshoot carried to later batches, ms. */
const MAX_OVERSHOOT_CREDIT_MS = 20;

interface Ready {
  readonly videoId: string;
  readonly frame: number;
  readonly width: number;
  readonly height: number;
  readonly readyAtMs: number;
}

/** The simulated GPU; see the module comment. */
export class SimulatedGpuProcessor implements FrameProcessor {
  readonly reportsStages = true as const;
  readonly description: string;
  readonly provider = 'simulated-gpu';
  readonly options: SimulatedGpuOptions;
  private readonly clock: StageClock | undefined;
  private readonly trackers = new Map<string, ByteTracker>();
  private readonly batcher: MicroBatcher<Ready, TrackerInput[]>;
  private readonly detected: DetectedAhead<TrackerInput[]>;
  /** Frames per batch run so far. */
  readonly batchSizes: number[] = [];
  /** Frames run on the GPU so far (detected ahead included). */
  framesRun = 0;
  /** Frames through `process` so far: detected and tracked for their round. */
  framesTracked = 0;
  /** Timer overshoot not yet paid back, ms (bounded, so an idle spell earns no credit). */
  private overshootMs = 0;

  /** `detectAheadFrames`: the tunable of that name (0, the default here: `detectAhead` does nothing). */
  constructor(options: Partial<SimulatedGpuOptions> = {}, clock?: StageClock, detectAheadFrames = 0) {
    this.options = { ...DEFAULT_SIMULATED_GPU, ...options };
    this.clock = clock;
    const o = this.options;
    this.detected = new DetectedAhead(detectAheadFrames, 2 * o.batchSize);
    this.description = `simulated GPU (${o.batchFixedMs} ms + ${o.perFrameMs} ms/frame per batch, batch ${o.batchSize}, ~${simulatedGpuCapacityFps(o).toFixed(0)} frames/s; no decode, no model)`;
    this.batcher = new MicroBatcher<Ready, TrackerInput[]>({
      batchSize: o.batchSize,
      maxBatchWaitMs: o.maxBatchWaitMs,
      run: (inputs) => this.runBatch(inputs),
    });
  }

  async start(): Promise<void> {}

  openVideo(videoId: string, snapshot: string | undefined): void {
    this.trackers.set(videoId, snapshot ? ByteTracker.restore(snapshot) : new ByteTracker());
  }

  /** Detections started ahead (decision 42), and of those, used by a frame's round. */
  get detectedAhead(): { readonly started: number; readonly used: number; readonly takenQueued: number; readonly dropped: number; readonly held: number } {
    const d = this.detected;
    return { started: d.started, used: d.used, takenQueued: d.takenQueued, dropped: d.dropped, held: d.size };
  }

  detectAhead(f: FrameInput): void {
    this.detected.offer(f.image, () => this.detect(f, 'background'));
  }

  async process(frames: readonly FrameInput[]): Promise<FrameOutcome[]> {
    const detected = await Promise.all(frames.map((f) => this.detected.take(f.image) ?? this.detect(f)));
    const t0 = performance.now();
    const out = frames.map((f, i): FrameOutcome => {
      const tracker = this.trackers.get(f.videoId);
      if (!tracker) throw new Error(`video ${f.videoId} was not opened`);
      const tracked = tracker.update(f.frame, detected[i]!);
      return { status: 'ok', detections: tracked.map((t): Detection => ({ trackId: t.trackId, label: t.label, score: t.score, box: t.box })) };
    });
    this.clock?.add('track', performance.now() - t0, frames.length);
    this.framesTracked += frames.length;
    return out;
  }

  async processLate(frames: readonly LateFrameInput[]): Promise<FrameOutcome[]> {
    const detected = await Promise.all(frames.map((f) => this.detect(f)));
    return frames.map((f, i): FrameOutcome => ({ status: 'ok', detections: associateLateFrame(f.frame, detected[i]!, f.before, f.after) }));
  }

  /** "Decode" (the header's size), then the frame's turn on the GPU (ahead of its round: in the batches' free places). */
  private detect(f: FrameInput, priority: 'foreground' | 'background' = 'foreground'): Promise<TrackerInput[]> {
    const t0 = performance.now();
    const size = (f.pixels ? { width: f.pixels.sourceWidth, height: f.pixels.sourceHeight } : imageSize(f.image)) ?? { width: 640, height: 480 };
    const t1 = performance.now();
    this.clock?.add('decode', t1 - t0);
    return this.batcher.submit(priority === 'background' ? DETECT_AHEAD_STREAM : f.videoId, Promise.resolve({ videoId: f.videoId, frame: f.frame, ...size, readyAtMs: t1 }), priority);
  }

  private async runBatch(inputs: Ready[]): Promise<TrackerInput[][]> {
    const end = this.clock?.begin('infer');
    const started = performance.now();
    for (const r of inputs) this.clock?.queued('infer', started - r.readyAtMs);
    this.batchSizes.push(inputs.length);
    // The model's time, less what earlier timers overshot (a loaded host fires timers late;
    // a GPU does not slow down with its host's event loop): back to back, batches keep the model's rate.
    const modelMs = this.options.batchFixedMs + inputs.length * this.options.perFrameMs;
    const payback = Math.min(this.overshootMs, modelMs);
    await new Promise((r) => setTimeout(r, modelMs - payback));
    this.overshootMs = Math.min(MAX_OVERSHOOT_CREDIT_MS, this.overshootMs - payback + Math.max(0, performance.now() - started - (modelMs - payback)));
    end?.(inputs.length);
    this.framesRun += inputs.length;
    const o = this.options;
    return inputs.map((r) => (o.sceneFps > 0 ? sceneDetections(r.videoId, r.frame, { fps: o.sceneFps, detections: o.objects }) : simulatedDetections(r.videoId, r.frame, r.width, r.height, o.objects)));
  }

  snapshot(videoId: string, maxBytes?: number): string {
    const t = this.trackers.get(videoId);
    return (t ?? new ByteTracker()).serialize(maxBytes);
  }

  closeVideo(videoId: string): void {
    this.trackers.delete(videoId);
  }

  async stop(): Promise<void> {
    this.detected.clear();
  }
}
