/**
 * Ports between the pipeline and the parts that plug into it. The pipeline (router,
 * worker runtime, janitor) owns these shapes; the vision library, the ECS adapter and
 * the local stack implement them.
 */

/** One detection in source-image pixels, as written to the results table. */
export interface Detection {
  /** Track id from the per-video tracker; stable across frames and across failover. */
  readonly trackId: number;
  readonly label: string;
  /** Detector confidence in [0, 1]. */
  readonly score: number;
  /** x1, y1, x2, y2 in source-image pixels. */
  readonly box: readonly [number, number, number, number];
}

/** A frame handed to the processor: the encoded image as fetched from S3. */
export interface FrameInput {
  readonly videoId: string;
  readonly frame: number;
  /** Encoded JPEG/PNG bytes; for a frame of a segment, the same bytes as `pixels.data`. */
  readonly image: Uint8Array;
  /** The frame's S3 key, for logs (and the crash probe's test seam); absent where no object is behind it. */
  readonly key?: string;
  /**
   * A frame of an encoded segment, already decoded by the worker (gpu-worker/video/): packed
   * RGB, usually at the letterbox's resized size ({@link FrameProcessor.inputSize}). A
   * processor takes these pixels instead of decoding `image`.
   */
  readonly pixels?: DecodedPixels;
}

/** A decoded frame: packed RGB rows, `width * height * 3` bytes, and the size it had in its stream. */
export interface DecodedPixels {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
  /** The frame's size in the stream: what detections map back to. */
  readonly sourceWidth: number;
  readonly sourceHeight: number;
  /** Presentation time in the stream, ms; null when the stream carries none. */
  readonly ptsMs: number | null;
}

/** The nearest committed record on one side of a late frame, with its tracked detections. */
export interface NeighbourFrame {
  readonly frame: number;
  readonly detections: readonly Detection[];
}

/**
 * A frame that arrived after the tracker moved past it (its number was gapped, or lies
 * below the video's chosen start). It is detected like any frame, but its track IDs are
 * associated from the neighbouring committed frames, and the live tracker is not touched.
 */
export interface LateFrameInput extends FrameInput {
  /** Nearest committed frame below, with detections (status ok or late), if any. */
  readonly before?: NeighbourFrame;
  /** Nearest committed frame above, with detections (status ok or late), if any. */
  readonly after?: NeighbourFrame;
}

export type FrameOutcome =
  | {
      readonly status: 'ok';
      readonly detections: readonly Detection[];
      /** The frame's presentation time in its stream, ms (frames of segments that carry timestamps). */
      readonly ptsMs?: number;
      /**
       * The object the frame was read from, when not the one its step named: a segment that
       * could not yield a frame it declared, which a later-starting object holds (decision 59).
       */
      readonly sourceKey?: string;
    }
  /** A frame that could not be used (corrupt image, undecodable): reason is a short machine-readable code. */
  | { readonly status: 'failed'; readonly reason: string; readonly detail?: string };

/**
 * Turns frames into detections with per-video tracker state.
 *
 * The worker guarantees that, for each video, frames arrive in ascending frame
 * order across calls and within one call, and that `openVideo` precedes them.
 * Frame numbers may skip (gaps, failed frames); the tracker must account for the
 * elapsed frames itself.
 */
export interface FrameProcessor {
  /** One line for logs: model, execution provider, and why that provider. */
  readonly description: string;
  /** Execution provider really in use after `start()` (e.g. `cuda`, `cpu`), when there is a model. */
  readonly provider?: string;
  /**
   * Set once the processor can never process a frame again (e.g. its inference thread
   * died): a one-line reason. From then on `process`/`processLate` reject (they never turn
   * it into `failed` outcomes, so no frame is recorded as failed for it). The worker must
   * then stop receiving, drain and exit with EXIT_PROCESSOR_FAILED so that another task
   * takes the slot over, rather than heartbeat while every round fails. Absent or
   * undefined: the processor is sound.
   */
  readonly fatal?: string;
  /**
   * The model's input size, once started: segment frames are decoded straight to the
   * letterbox's size for it (so a 1080p frame never exists as full-size RGB). Absent: the
   * processor takes frames at their stream's size.
   */
  readonly inputSize?: { readonly width: number; readonly height: number };
  /** Loads the model and warms it up. Called once before any other method. */
  start(): Promise<void>;
  /** Creates the video's state, restoring it from a snapshot when one is given. */
  openVideo(videoId: string, snapshot: string | undefined): void;
  /**
   * Processes frames, possibly of several videos, in one or more inference calls.
   * Returns one outcome per input, in input order. Must not throw for a bad
   * image: that is a `failed` outcome.
   */
  process(frames: readonly FrameInput[]): Promise<FrameOutcome[]>;
  /**
   * Processes late frames (see {@link LateFrameInput}): detection as usual, track IDs
   * by association with the neighbours (0 when a detection matches no neighbouring
   * track). Must not change any video's tracker state, and must not throw for a bad
   * image. Returns one outcome per input, in input order.
   */
  processLate(frames: readonly LateFrameInput[]): Promise<FrameOutcome[]>;
  /**
   * A hint that a frame with these bytes comes soon: a processor may start decoding it
   * now, so that `process`/`processLate` of the same byte array (the same object) finds
   * it ready. Must not throw, must bound what it holds, and must leave any failure for
   * the frame's own processing to report.
   */
  prepareAhead?(image: Uint8Array): void;
  /**
   * A hint that this frame is likely next for its video (decision 42): a processor may run
   * its detection now, in the model's idle time, so that `process` of the same byte array
   * (the same object) only updates the tracker. Detection must depend on the bytes alone;
   * tracker state is never touched here. Same contract as `prepareAhead`: must not
   * throw, must bound what it holds (detect-ahead work must never delay a frame that
   * `process` was asked for by more than the batch already running), and leaves any
   * failure for the frame's own processing. Only frames the worker would run next are
   * hinted, never those of a video under crash isolation.
   */
  detectAhead?(frame: FrameInput): void;
  /**
   * Serialises the video's state compactly; `openVideo(id, snapshot(id))` restores it
   * exactly. With `maxBytes`, the state must fit: the processor drops what matters least
   * (a tracker: its oldest lost tracks first), so the checkpoint stays under DynamoDB's item limit.
   */
  snapshot(videoId: string, maxBytes?: number): string;
  /** Drops the video's state from memory. */
  closeVideo(videoId: string): void;
  /** Releases the model. */
  stop(): Promise<void>;
}

/**
 * Starts a worker task for a slot. Implementations are idempotent per (slot, launchSeq),
 * never throw for an answer the service gave, and never refuse because an older task of
 * the slot may still be alive: a paused task is replaced, fencing keeps the two apart,
 * and the stale one exits on its first heartbeat.
 */
export interface TaskLauncher {
  launch(request: LaunchRequest): Promise<LaunchResult>;
  /**
   * Where tasks this launcher started stand (by the `taskId`s their launches returned),
   * asked by the janitor before it waits out `taskStartGraceSeconds` for granted launches
   * that have not heartbeated yet: one call for many tasks (ECS DescribeTasks takes 100).
   * A task missing from the answer counts as `unknown`. Optional: without it the grace
   * rule alone decides. Must not throw for an answer the service gave.
   */
  describe?(taskIds: readonly string[]): Promise<ReadonlyMap<string, LaunchedTaskState>>;
}

export interface LaunchRequest {
  readonly slot: number;
  /** Grows every time a launch for this slot is granted; adapters derive idempotency tokens from it. */
  readonly launchSeq: number;
  /** Why the launch was requested, for logs. */
  readonly reason: string;
}

/**
 * Why a launch did not happen, as the dimension `Reason` of `TaskLaunchFailures`:
 * - `throttled`: the API refused for rate (ECS ThrottlingException, "Rate exceeded");
 * - `access-denied`: the caller may not run the task (IAM, SCP, KMS);
 * - `invalid-request`: bad parameters, unknown cluster or task definition (a deploy fault);
 * - `placement`: the call answered `failures[]` (no capacity, agent disconnected, ...);
 * - `no-task`: the call answered neither a task nor a failure, or a grant recorded no task
 *   within one janitor period (its caller died between grant and call);
 * - `error`: any other error (service error, network, timeout);
 * - `exception`: the launcher threw, which the port forbids (counted all the same);
 * - `stopped-before-start`: the task was started but stopped (or vanished) before its first heartbeat;
 * - `refused`: a local launcher that is shutting down;
 * - `provisioning-quota`: the cluster already holds as many tasks in PROVISIONING as its
 *   quota allows (ECS "Tasks in the PROVISIONING state per cluster", 500 by default): not
 *   a failure, the launch is queued (task-launch.ts: `deferred`, counted as
 *   `LaunchesDeferred`, never as `TaskLaunchFailures`) and the janitor starts it as the
 *   tasks ahead of it leave PROVISIONING.
 */
export type LaunchFailureReason =
  | 'throttled'
  | 'access-denied'
  | 'invalid-request'
  | 'placement'
  | 'no-task'
  | 'error'
  | 'exception'
  | 'stopped-before-start'
  | 'refused'
  | 'provisioning-quota';

export interface LaunchResult {
  readonly launched: boolean;
  /** ECS task ARN, or local process id: what {@link TaskLauncher.describe} takes. */
  readonly taskId?: string;
  /** Why nothing was launched (capacity, failure), for logs. */
  readonly detail?: string;
  /** With `launched: false`: the reason code for the `TaskLaunchFailures` metric. */
  readonly reason?: LaunchFailureReason;
}

/**
 * A launched task as its launcher sees it: `coming` (ECS PROVISIONING, PENDING, ACTIVATING
 * or RUNNING; a live local process), `gone` (STOPPED or stopping, or unknown to the
 * service: the launch grant is void), or `unknown` (the question failed: keep waiting).
 */
export interface LaunchedTaskState {
  readonly state: 'coming' | 'gone' | 'unknown';
  /** The service's own words (last status, stop reason), for logs. */
  readonly detail?: string;
}

/** Minimal metrics sink used by the pure core; adapters map it to Powertools or EMF. */
export interface MetricSink {
  count(name: string, value?: number, dimensions?: Record<string, string>): void;
  milliseconds(name: string, value: number, dimensions?: Record<string, string>): void;
}

export const nullMetrics: MetricSink = { count() {}, milliseconds() {} };

/** Structured logger used by the core; Powertools' Logger satisfies it. */
export interface LogSink {
  debug(message: string, ...extra: Record<string, unknown>[]): void;
  info(message: string, ...extra: Record<string, unknown>[]): void;
  warn(message: string, ...extra: Record<string, unknown>[]): void;
  error(message: string, ...extra: Record<string, unknown>[]): void;
}
