/**
 * The worker container's contract with ECS (name, health check, stop timeout, log
 * buffer), shared by the fleet construct and its tests.
 */
import { Duration, Size } from 'aws-cdk-lib';
import { WORKER_ENV } from '../core/config.ts';

/** Name of the worker container in the task definition. */
export const WORKER_CONTAINER_NAME = 'worker';

/**
 * Health-check contract with the worker: it touches the file named by
 * `HEALTH_FILE` each time its slot heartbeat is confirmed; the check fails when the
 * file is older than `HEALTH_MAX_AGE_SECONDS`. The same script is in the Dockerfile.
 */
export const HEALTH_ENV = { file: WORKER_ENV.healthFile, maxAgeSeconds: WORKER_ENV.healthMaxAgeSeconds } as const;
export const DEFAULT_HEALTH_FILE = '/tmp/worker-heartbeat';
export const HEALTH_CHECK_SCRIPT =
  "const f=process.env.HEALTH_FILE||'/tmp/worker-heartbeat';const m=Number(process.env.HEALTH_MAX_AGE_SECONDS||45);" +
  "try{process.exit((Date.now()-require('node:fs').statSync(f).mtimeMs)/1000<=m?0:1)}catch{process.exit(1)}";

/**
 * ECS waits this long after SIGTERM before SIGKILL, giving the worker time to drain,
 * checkpoint and hand its videos off. 120 s is the most the ECS agent allows.
 */
export const WORKER_STOP_TIMEOUT = Duration.seconds(120);

/**
 * Buffer of the awslogs driver in non-blocking mode. Non-blocking, because Node writes
 * stdout to a pipe synchronously: a blocking driver stalled by CloudWatch Logs would
 * stall the event loop, and with it the slot heartbeat, so a logging hiccup would cost
 * the slot lease. The buffer is 25 MiB instead of the 1 MiB Docker default (ECS's
 * default is 10 MiB) so a burst of EMF metric lines (every flush writes them together)
 * and logs rides out a slow CloudWatch Logs instead of being dropped: AWS's tests of the
 * awslogs driver lost nothing at up to 5 MB/s with 25 MiB ("Preventing log loss with
 * non-blocking mode in the AWSLogs container log driver", AWS Containers blog). A worker
 * writes far less than that. The memory comes from the instance, not the task.
 */
export const WORKER_LOG_BUFFER = Size.mebibytes(25);
