/**
 * The vision processor's options, and the mapping from the deployment's tunables (split
 * from index.ts to keep it short; re-exported there).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { Tunables } from '../../core/config.ts';
import type { MetricSink } from '../../core/ports.ts';
import type { ThreadOptions } from './inference-thread.ts';
import type { LoadModelOptions } from './model.ts';
import type { TrackerOptions } from './tracker.ts';

export interface VisionProcessorOptions {
  /** Local path or s3://bucket/key.onnx; empty or absent = the demo model (built if missing). */
  readonly modelUri?: string;
  /** The model's class names from a file (`modelClassesUri`; class-names.ts); empty or absent = the model's own. */
  readonly modelClassesUri?: string;
  /** Expected SHA-256 (hex) of the `modelUri` model; the worker refuses other bytes. Absent or empty = not checked. */
  readonly modelSha256?: string;
  /** Frames per inference call (`inferenceBatchSize`). */
  readonly batchSize: number;
  /** Longest a partial batch waits for more frames (`maxBatchWaitMs`). */
  readonly maxBatchWaitMs: number;
  /** Detections below this score are not reported (`detectionScoreThreshold`). */
  readonly scoreThreshold: number;
  /** Needed for s3:// model URIs. */
  readonly s3Client?: S3Client;
  /** Receives the one provider line at start. */
  readonly logger?: (line: string | object) => void;
  /** Receives warnings (the demo model on real video); `logger` when absent. */
  readonly warn?: (line: string | object) => void;
  /** Try the CUDA execution provider first (default true). */
  readonly preferCuda?: boolean;
  /** onnxruntime intra-op threads (`inferenceThreads`); 0 or absent = its default. */
  readonly inferenceThreads?: number;
  /** Tracker tuning; ByteTrack defaults otherwise. */
  readonly tracker?: Partial<TrackerOptions>;
  /** IoU above which NMS suppresses a same-class box (default 0.5). */
  readonly nmsIouThreshold?: number;
  /** Where the demo model is built when `modelUri` is empty (default `.local/models`). */
  readonly demoModelDir?: string;
  /** Least IoU for a late frame's detection to take a neighbouring track's ID (default `DEFAULT_LATE_MIN_IOU`, late-association.ts). */
  readonly lateMinIou?: number;
  /** Receives `InferenceThreadDied{Reason}`. */
  readonly metrics?: MetricSink;
  /**
   * Called once when the processor breaks for good (see {@link FrameProcessor.fatal}),
   * with the reason; the worker entry point drains and exits on it.
   */
  readonly onFatal?: (reason: string) => void;
  /** How the inference thread is created: heap limits, and a fault for tests. */
  readonly inferenceThread?: ThreadOptions;
  /**
   * Bench and test seam: creates the inference session for a provider list instead of
   * the inference thread (bench/pipeline-cpu.ts replays a recorded model with it).
   */
  readonly createSession?: LoadModelOptions['createSession'];
  /**
   * Letterbox in uint8 and let the graph, rewritten at load, convert to float and pick
   * the best class (default true; decision 32). False keeps the CPU float path, which is
   * also what runs, with a logged reason, for a model the rewrite does not fit.
   */
  readonly preprocessInGraph?: boolean;
  /**
   * Decode and letterbox in a thread of their own, on the uint8 path (decision 37,
   * decode-thread.ts). Default off (decision 40): since sharp's output is freed as soon as
   * it is copied, the thread no longer saves the main heap's collections, and it costs
   * 0.1-0.4 core-ms per frame more (decision 40); on a CPU model it also took
   * cores from the model's threads. False decodes on this thread's libuv pool.
   */
  readonly decodeInThread?: boolean;
  /**
   * Most frames detected ahead of their round, held, queued or running (`detectAheadFrames`,
   * decision 42; detected-ahead.ts). Absent or 0: `detectAhead` does nothing.
   */
  readonly detectAheadFrames?: number;
}

/** The processor options that come from the deployment's tunables (one mapping for the worker and the benchmarks). */
export function visionOptionsFromTunables(
  t: Pick<
    Tunables,
    'modelUri' | 'modelClassesUri' | 'inferenceBatchSize' | 'maxBatchWaitMs' | 'inferenceThreads' | 'detectionScoreThreshold' | 'trackHighScoreThreshold' | 'trackLowScoreThreshold' | 'newTrackScoreThreshold' | 'detectAheadFrames'
  >,
): Pick<VisionProcessorOptions, 'modelUri' | 'modelClassesUri' | 'batchSize' | 'maxBatchWaitMs' | 'inferenceThreads' | 'scoreThreshold' | 'tracker' | 'detectAheadFrames'> {
  return {
    detectAheadFrames: t.detectAheadFrames,
    modelUri: t.modelUri,
    modelClassesUri: t.modelClassesUri,
    batchSize: t.inferenceBatchSize,
    maxBatchWaitMs: t.maxBatchWaitMs,
    inferenceThreads: t.inferenceThreads,
    scoreThreshold: t.detectionScoreThreshold,
    tracker: { highScoreThreshold: t.trackHighScoreThreshold, lowScoreThreshold: t.trackLowScoreThreshold, newTrackThreshold: t.newTrackScoreThreshold },
  };
}
