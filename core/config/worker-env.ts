/** The worker's own environment (besides wiring and tunables) and its exit codes. */

/**
 * Exit code of a worker that stopped without its slot lease and left nothing behind:
 * drained on SIGTERM, idle for `workerIdleExitSeconds` (slot released), or no slot to
 * claim. The janitor does not treat it as a crash (core/fleet/stopped-task.ts WORKER_EXITS_WITHOUT_LEASE);
 * a slot that still has work is relaunched like any slot without a live owner.
 */
export const EXIT_DONE = 0;

/** Exit code of a worker that stopped because its slot lease was lost (it no longer held the slot). */
export const EXIT_LEASE_LOST = 3;

/**
 * Exit code of a worker whose frame processor broke for good (its inference thread died:
 * `FrameProcessor.fatal`). It drained first when it could; the janitor treats it as a
 * crash (expires the slot lease if the task still held it) and relaunches the slot.
 */
export const EXIT_PROCESSOR_FAILED = 4;

/** Environment the worker reads besides wiring and tunables (set by the TaskLauncher, the task definition or tests). */
export const WORKER_ENV = {
  /** Slot to claim; set per launch (ECS containerOverrides, local spawn). */
  slotId: 'SLOT_ID',
  /** Worker id in logs and results; default host-pid-random. */
  workerId: 'WORKER_ID',
  /** `vision` (ONNX detector + tracker, default), or a kind the lab adds (gpu-worker/extensions.ts). */
  frameProcessor: 'FRAME_PROCESSOR',
  /** File touched on every confirmed heartbeat, for the container health check. */
  healthFile: 'HEALTH_FILE',
  /** Health check: the heartbeat file may be at most this old. */
  healthMaxAgeSeconds: 'HEALTH_MAX_AGE_SECONDS',
  /** How often EMF metric lines are written (default 10000). */
  metricsFlushIntervalMs: 'METRICS_FLUSH_INTERVAL_MS',
  /** Set by the supervisor (decision 75) on the worker processes it forks: `primary` or `spare`. */
  supervisedRole: 'SUPERVISED_ROLE',
} as const;
