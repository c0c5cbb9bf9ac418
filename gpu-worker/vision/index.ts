/**
 * The vision library behind the {@link FrameProcessor} port: YOLO-format ONNX
 * detection with cross-video micro-batching, and a ByteTrack tracker per video.
 */
import { allOrThrow } from '../../core/async.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import type { DecodedPixels, Detection, FrameInput, FrameOutcome, FrameProcessor, LateFrameInput } from '../../core/ports.ts';
import { MicroBatcher } from './batcher.ts';
import { BufferPool, inputPoolBytes } from './buffer-pool.ts';
import { DecodeThread, DecodeThreadDiedError } from './decode-thread.ts';
import { ensureDemoModel } from './demo-model/build-model.ts';
import { DemoModelWatch, REAL_MODEL_HINT } from './demo-model-watch.ts';
import { associateLateFrame } from './late-association.ts';
import { InferenceThreadDiedError, type InferenceThreadDeath } from './inference-thread.ts';
import type { VisionProcessorOptions } from './options.ts';
import { loadModel, type ExecutionProvider, type LoadedModel, type ModelLayout } from './model.ts';
import { PREPARED_AHEAD_MAX_FRAMES, PreparedAhead } from './prepared-ahead.ts';
import { DETECT_AHEAD_STREAM, DetectedAhead } from './detected-ahead.ts';
import { ImageDecodeError, sourcePixelLimit } from './preprocess.ts';
import { detectBatch, prepareForModel, type Prepared } from './batch-input.ts';
import { ByteTracker, DEFAULT_TRACKER_OPTIONS, type TrackerInput, type TrackerOptions } from './tracker.ts';

export { ensureDemoModel } from './demo-model/build-model.ts';
export { generateClip } from './synthetic/generate.ts';
export { evaluateMot } from './eval/mot.ts';
export { ByteTracker } from './tracker.ts';
export { associateLateFrame, DEFAULT_LATE_MIN_IOU } from './late-association.ts';
export { InferenceThreadDiedError, type InferenceThreadDeath } from './inference-thread.ts';
export { visionOptionsFromTunables, type VisionProcessorOptions } from './options.ts';


/** A {@link FrameProcessor} that also tells which execution provider runs. */
export interface VisionProcessor extends FrameProcessor {
  /** Execution provider actually in use; valid after `start()`. */
  readonly provider: ExecutionProvider;
  /** Why that provider (e.g. the CUDA load error). */
  readonly providerReason: string;
  /** Sizes of the inference batches run so far. */
  readonly batchSizes: readonly number[];
  /** Decodes started by `prepareAhead`, and of those, used by a frame's processing. */
  readonly preparedAhead: { readonly started: number; readonly used: number };
  /** Detections started by `detectAhead`, and of those, used by a frame's processing (decision 42). */
  readonly detectedAhead: { readonly started: number; readonly used: number };
  /** Input buffers (frames, batches) made new and reused from the pool (decision 37). */
  readonly inputBuffers: { readonly allocated: number; readonly reused: number };
  /** How frames reach the model (valid after `start()`): the rewritten graph's `uint8-nhwc`, or the fallback `float32-nchw`. */
  readonly layout: ModelLayout;
}


interface BatchItem {
  /** A late frame carries its neighbours: `runBatch` associates it with them instead of updating the tracker. */
  readonly frame: FrameInput | LateFrameInput;
  readonly prepared: Prepared;
  readonly late: boolean;
}

/** A live frame's raw detections (the tracker's input), or its outcome when it never got that far. */
type Detected = TrackerInput[] | FrameOutcome;

/**
 * Batcher stream of a video's late frames. Separate from the video's own stream
 * (the batcher keeps a stream in submission order, and a late frame needs no order),
 * so a late frame still decoding never holds back the live frames behind it. `#` is
 * not allowed in video IDs, so this cannot name a real video's stream.
 */
function lateStream(videoId: string): string {
  return `${videoId}#late`;
}

/** Creates the processor; the model loads in `start()`. */
export function createVisionProcessor(options: VisionProcessorOptions): VisionProcessor {
  return new OnnxVisionProcessor(options);
}

class OnnxVisionProcessor implements VisionProcessor {
  private readonly options: VisionProcessorOptions;
  private readonly trackerOptions: TrackerOptions;
  private model: LoadedModel | undefined;
  private batcher: MicroBatcher<BatchItem, Detected> | undefined;
  private readonly trackers = new Map<string, ByteTracker>();
  private readonly ahead = new PreparedAhead<Prepared>();
  private readonly detected: DetectedAhead<TrackerInput[]>;
  /** Input buffers reused across frames and batches (decision 37); set in `start()`. */
  private pool: BufferPool | undefined;
  /** The decode thread, with `decodeInThread` on the uint8 path; set in `start()`. */
  private decoder: DecodeThread | undefined;
  /** Most pixels a frame may declare (from the model's input size); set in `start()`. */
  private maxSourcePixels = 0;
  /** How the inference thread died, once it has: the processor is then broken for good. */
  private death: InferenceThreadDeath | undefined;
  /** Says when the demo detector runs on video it cannot see (demo-model-watch.ts); set in `start()`. */
  private demoWatch = new DemoModelWatch(false);

  constructor(options: VisionProcessorOptions) {
    this.options = options;
    this.trackerOptions = { ...DEFAULT_TRACKER_OPTIONS, ...options.tracker };
    // Two batches decode at once: one running, one filling; more would only hold decoded frames.
    this.detected = new DetectedAhead(options.detectAheadFrames ?? 0, 2 * options.batchSize);
  }

  get provider(): ExecutionProvider {
    return this.model?.provider ?? 'cpu';
  }

  get providerReason(): string {
    return this.model?.providerReason ?? 'not started';
  }

  get batchSizes(): readonly number[] {
    return this.batcher?.batchSizes ?? [];
  }

  get preparedAhead(): { readonly started: number; readonly used: number } {
    return { started: this.ahead.started, used: this.ahead.used };
  }

  get detectedAhead(): { readonly started: number; readonly used: number } {
    return { started: this.detected.started, used: this.detected.used };
  }

  get inputBuffers(): { readonly allocated: number; readonly reused: number } {
    return { allocated: this.pool?.allocated ?? 0, reused: this.pool?.reused ?? 0 };
  }

  get layout(): ModelLayout {
    return this.model?.info.layout ?? 'float32-nchw';
  }

  get fatal(): string | undefined {
    return this.death && new InferenceThreadDiedError(this.death).message;
  }

  get inputSize(): { width: number; height: number } | undefined {
    const info = this.model?.info;
    return info ? { width: info.inputWidth, height: info.inputHeight } : undefined;
  }

  get description(): string {
    if (!this.model) return 'vision processor (not started)';
    const m = this.model;
    return `model=${m.uri} input=${m.info.inputWidth}x${m.info.inputHeight} maxSourcePixels=${this.maxSourcePixels} classes=${m.info.classNames.length} layout=${m.info.layout} provider=${m.provider} (${m.providerReason}) batch=${m.info.dynamicBatch ? this.options.batchSize : 1}`;
  }

  async start(): Promise<void> {
    if (this.model) return;
    const uri = this.options.modelUri ? this.options.modelUri : await ensureDemoModel(this.options.demoModelDir);
    this.model = await loadModel({
      uri,
      classesUri: this.options.modelClassesUri || undefined,
      sha256: this.options.modelUri ? this.options.modelSha256 : undefined,
      s3Client: this.options.s3Client,
      preferCuda: this.options.preferCuda,
      inferenceThreads: this.options.inferenceThreads,
      thread: this.options.inferenceThread,
      preprocessInGraph: this.options.preprocessInGraph,
      createSession: this.options.createSession,
    });
    void this.model.session.died?.then((death) => this.onThreadDeath(death));
    this.maxSourcePixels = sourcePixelLimit(this.model.info.inputWidth, this.model.info.inputHeight);
    this.pool = new BufferPool(inputPoolBytes(this.model.info, this.options.batchSize, PREPARED_AHEAD_MAX_FRAMES));
    // Off unless asked (decision 40): once sharp's output is freed at once, decoding from this
    // thread costs less CPU than a thread of its own, with a small heap or a large one.
    const decodeInThread = this.options.decodeInThread ?? false;
    if (decodeInThread && this.model.info.layout === 'uint8-nhwc') this.decoder = await DecodeThread.start((why) => {
        // No frame is lost (they decode on the main thread from now on), but the CPU per frame rises: said once, counted.
        this.options.metrics?.count(METRIC_NAMES.worker.decodeThreadDied);
        this.options.logger?.({ msg: 'decode thread ended: frames decode on the main thread from now on', detail: why });
      });
    this.options.logger?.({
      msg: 'vision model loaded',
      provider: this.model.provider,
      reason: this.model.providerReason,
      model: uri,
      dynamicBatch: this.model.info.dynamicBatch,
      inferenceThreads: this.options.inferenceThreads || 'default',
      maxSourcePixels: this.maxSourcePixels,
      layout: this.model.info.layout,
      layoutReason: this.model.info.layoutReason,
      decodeInThread: this.decoder !== undefined,
      inputSize: `${this.model.info.inputWidth}x${this.model.info.inputHeight}`,
      classes: this.model.info.classNames.length,
      classNames: this.model.info.classNamesSource,
      demoModel: this.model.info.demoModel,
      ...(this.model.info.demoModel ? { demoModelNote: `the demo detector finds only the demo's coloured squares; ${REAL_MODEL_HINT}` } : {}),
    });
    this.demoWatch = new DemoModelWatch(this.model.info.demoModel);
    this.batcher = new MicroBatcher({
      batchSize: this.options.batchSize,
      maxBatchWaitMs: this.options.maxBatchWaitMs,
      run: (items, streams) => this.runBatch(items, streams),
    });
  }

  openVideo(videoId: string, snapshot: string | undefined): void {
    this.trackers.set(videoId, snapshot ? ByteTracker.restore(snapshot, this.trackerOptions) : new ByteTracker(this.trackerOptions));
  }

  /**
   * The video's tracker state. With `maxBytes`, the tracker evicts what matters least
   * (oldest lost tracks first, see {@link ByteTracker.compact}) until it fits, in memory
   * as well as in the returned snapshot, so the two stay the same state.
   */
  snapshot(videoId: string, maxBytes?: number): string {
    const tracker = this.trackers.get(videoId);
    if (!tracker) throw new Error(`video ${videoId} is not open`);
    if (maxBytes === undefined) return tracker.serialize();
    const c = tracker.compact(maxBytes);
    if (c.evictedIds.length > 0 || !c.fits) {
      this.options.logger?.({
        msg: 'tracker state compacted to fit its budget',
        videoId,
        maxBytes,
        fullBytes: c.fullBytes,
        bytes: c.bytes,
        evicted: c.evicted,
        fits: c.fits,
      });
    }
    return c.snapshot;
  }

  closeVideo(videoId: string): void {
    this.trackers.delete(videoId);
    this.demoWatch.forget(videoId);
  }

  /**
   * Decodes a frame expected soon (see prepared-ahead.ts); ignored before `start()` and
   * once broken. Held to the same pixel limit as a frame's own decode: a frame over it is
   * refused from its header, never decoded ahead.
   */
  prepareAhead(image: Uint8Array): void {
    const model = this.model;
    if (!model || this.death || this.detected.has(image)) return;
    this.ahead.start(image, (bytes) => this.prepare(model, bytes));
  }

  /**
   * Runs a frame's detection ahead of its round (decision 42; detected-ahead.ts), in
   * batches only the rounds' own frames leave room in. Ignored before `start()`, once
   * broken, and with `detectAheadFrames` 0. Detection only: the tracker is not touched.
   */
  detectAhead(frame: FrameInput): void {
    const { model, batcher } = this;
    if (!model || !batcher || this.death) return;
    this.detected.offer(frame.image, (image) =>
      batcher.submit(DETECT_AHEAD_STREAM, (this.ahead.take(image) ?? this.prepare(model, image, frame.pixels)).then((prepared) => ({ frame, prepared, late: false })), 'background') as Promise<TrackerInput[]>,
    );
  }

  /** Decodes and letterboxes a frame in the layout the model takes. */
  private prepare(model: LoadedModel, image: Uint8Array, pixels?: DecodedPixels): Promise<Prepared> {
    const { decoder, pool } = this;
    const onMain = () => prepareForModel(model.info, pixels ?? image, this.maxSourcePixels, pool);
    // A segment's frame is decoded already: only its letterbox is left, a copy.
    if (pixels || !decoder || decoder.dead || !pool) return onMain();
    // A decode thread that ended costs no frame: its frames decode here instead.
    return decoder.prepare(image, model.info.inputWidth, model.info.inputHeight, this.maxSourcePixels, pool).catch((error: unknown) => {
      if (error instanceof DecodeThreadDiedError) return onMain();
      throw error;
    });
  }

  /**
   * The inference thread died. It is not replaced: the processor breaks for good and the
   * worker exits (EXIT_PROCESSOR_FAILED), so another task takes the slot over. Why not a
   * new thread in this process:
   * - a fresh process is the only state known to be clean. A thread that ran out of
   *   memory, or died inside onnxruntime, may leave its native session, its CUDA memory
   *   and its allocator arenas behind; a replacement would load a second model beside
   *   that and fail later and less clearly;
   * - one path for every crash: a native crash in the decoder or the model kills the
   *   process anyway, and the crash-loop breaker counts process deaths on adoption, so a
   *   frame that kills the thread every time is handled as one that kills the process
   *   (parked as `crashed-worker` after 3), not by a second, in-process budget with its
   *   own tunables;
   * - failover is already fast and tested (the drain hands the slot off at once), and
   *   the exit can never leave a process that heartbeats while every round fails.
   * In-flight and later runs reject (InferenceThreadDiedError); `process` passes that on
   * rather than writing `failed` records, so the round rolls back and nothing is lost.
   */
  private onThreadDeath(death: InferenceThreadDeath): void {
    if (this.death) return;
    this.death = death;
    this.ahead.clear();
    this.detected.clear();
    const reason = this.fatal!;
    this.options.metrics?.count(METRIC_NAMES.worker.inferenceThreadDied, 1, { Reason: death.reason });
    this.options.logger?.({ msg: 'inference thread died: processor broken, the worker must exit', reason: death.reason, detail: death.detail });
    this.options.onFatal?.(reason);
  }

  async stop(): Promise<void> {
    this.ahead.clear();
    this.detected.clear();
    this.pool?.clear();
    await this.decoder?.stop();
    this.decoder = undefined;
    this.batcher?.dispose();
    this.batcher = undefined;
    const session = this.model?.session;
    this.model = undefined;
    await session?.release();
  }

  /**
   * Detects every frame (taking what was detected ahead for the same bytes), then updates
   * the trackers in input order, which is each video's frame order: a frame's place in
   * its track never depends on which batch, or which round ahead, detected it.
   */
  async process(frames: readonly FrameInput[]): Promise<FrameOutcome[]> {
    const batcher = this.usable();
    const detected = await allOrThrow(
      frames.map((frame): Promise<Detected> => (this.trackers.has(frame.videoId) ? this.detectLive(batcher, frame) : Promise.resolve({ status: 'failed', reason: 'video-not-open' }))),
    );
    const outcomes = frames.map((frame, i) => this.track(frame, detected[i]!));
    outcomes.forEach((o, i) => {
      if (o.status !== 'ok') return;
      const warning = this.demoWatch.observe(frames[i]!.videoId, o.detections.length);
      if (warning) (this.options.warn ?? this.options.logger)?.(warning);
    });
    return outcomes;
  }

  /** A live frame's detections: those started ahead for its bytes if any, else its own batch turn. */
  private detectLive(batcher: MicroBatcher<BatchItem, Detected>, frame: FrameInput): Promise<Detected> {
    const own = () => this.submit(batcher, frame.videoId, frame, false);
    const early = this.detected.take(frame.image);
    if (!early) return own();
    // A corrupt image is the frame's own fault, found ahead as it would be now; anything
    // else that failed ahead (a batch that threw) is not, so the frame gets its own turn.
    return early.catch((error: unknown) => (error instanceof ImageDecodeError ? decodeFailure(error) : own()));
  }

  /** The tracker's update for one live frame, in order; a frame that has an outcome already keeps it. */
  private track(frame: FrameInput, detected: Detected): FrameOutcome {
    if (!Array.isArray(detected)) return detected;
    const tracker = this.trackers.get(frame.videoId);
    if (!tracker) return { status: 'failed', reason: 'video-closed' };
    const last = tracker.lastFrameNumber;
    if (last !== null && frame.frame <= last) return { status: 'failed', reason: 'frame-out-of-order', detail: `frame ${frame.frame} after ${last}` };
    const tracked = tracker.update(frame.frame, detected);
    return {
      status: 'ok',
      detections: tracked.filter((t) => t.score >= this.options.scoreThreshold).map((t): Detection => ({ trackId: t.trackId, label: t.label, score: t.score, box: t.box })),
    };
  }

  /**
   * Late frames go through the same batcher and model as live ones (they may share an
   * inference call with other videos' live frames), but never reach a tracker: their
   * IDs come from the neighbours. The video need not be open, since a late frame may
   * arrive after its video was released.
   */
  async processLate(frames: readonly LateFrameInput[]): Promise<FrameOutcome[]> {
    const batcher = this.usable();
    // A late item's result is always an outcome (runBatch associates it, or it failed).
    return allOrThrow(frames.map((frame) => this.submit(batcher, lateStream(frame.videoId), frame, true) as Promise<FrameOutcome>));
  }

  /** The batcher, once started and while not broken (a broken processor rejects every call). */
  private usable(): MicroBatcher<BatchItem, Detected> {
    if (this.death) throw new InferenceThreadDiedError(this.death);
    if (!this.model || !this.batcher) throw new Error('vision processor not started');
    return this.batcher;
  }

  private async submit(batcher: MicroBatcher<BatchItem, Detected>, stream: string, frame: FrameInput | LateFrameInput, late: boolean): Promise<Detected> {
    const model = this.model!;
    try {
      return await batcher.submit(
        stream,
        (this.ahead.take(frame.image) ?? this.prepare(model, frame.image, frame.pixels)).then((prepared) => ({ frame, prepared, late })),
      );
    } catch (error) {
      if (error instanceof ImageDecodeError) return decodeFailure(error);
      // Not the frame's fault: the call rejects and the worker retries the round elsewhere.
      if (error instanceof InferenceThreadDiedError || this.death) throw this.death ? new InferenceThreadDiedError(this.death) : error;
      return { status: 'failed', reason: 'inference-error', detail: error instanceof Error ? error.message.slice(0, 200) : String(error) };
    }
  }

  /**
   * One inference call (or one per frame for a fixed-batch model). Live and ahead items
   * get their raw detections (`process` tracks them, in order); late items are associated
   * with their neighbours here.
   */
  private async runBatch(items: BatchItem[], _streams: string[]): Promise<Detected[]> {
    const model = this.model;
    if (!model) throw new Error('vision processor stopped');
    const { info } = model;
    const decode = {
      scoreThreshold: Math.min(this.options.scoreThreshold, this.trackerOptions.lowScoreThreshold),
      iouThreshold: this.options.nmsIouThreshold ?? 0.5,
      maxDetections: 300,
    };
    const raw = await detectBatch(model, items.map((it) => it.prepared), decode, this.pool);
    const labelOf = (classIndex: number) => info.classNames[classIndex] ?? `class${classIndex}`;
    return items.map((it, i) => {
      const detections = raw[i]!.map((d): TrackerInput => ({ box: d.box, score: d.score, label: labelOf(d.classIndex) }));
      if (!it.late) return detections;
      // Only what `process` would report (score >= scoreThreshold) is associated, so a
      // late frame's detections are held to the same bar as a live frame's.
      const late = it.frame as LateFrameInput;
      const reported = detections.filter((d) => d.score >= this.options.scoreThreshold);
      return { status: 'ok', detections: associateLateFrame(late.frame, reported, late.before, late.after, { minIou: this.options.lateMinIou }) } as const;
    });
  }
}

/** The outcome of a frame whose image could not be decoded. */
function decodeFailure(error: ImageDecodeError): FrameOutcome {
  return { status: 'failed', reason: error.reason, detail: error.message.slice(0, 200) };
}
