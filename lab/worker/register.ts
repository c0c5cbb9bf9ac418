/**
 * The lab's additions to a worker process (gpu-worker/extensions.ts), made by the lab's
 * entry points (lab/worker-main.ts, lab/probe-main.ts) before the product's main runs.
 * Each is switched on by the environment, as it always was; absent, the worker runs as
 * the GPU image's does:
 *
 *   FRAME_PROCESSOR=stats     StatsProcessor (no model; stats-processor.ts), with
 *     STATS_PROCESSOR_DELAY_MS  extra ms per batch (stands in for a slow model in tests)
 *   FRAME_PROCESSOR=simgpu    a simulated GPU for benches (simulated-gpu.ts), with
 *     SIMULATED_GPU             JSON {batchFixedMs, perFrameMs, objects} over its defaults
 *   WORKER_CRASH_ON_KEY       a key substring: handing the model a frame whose S3 key contains
 *                             it SIGKILLs the worker, and trying it kills the crash probe's
 *                             child, as a poison frame would (crash-on-key.ts; the crash-loop
 *                             breaker's tests and the chaos run use it, decision 28)
 *   AWS_FAULT_INJECTION, AWS_LATENCY_MODEL  chaos faults and bench latencies on the AWS
 *                             clients (lab/aws/instrumentation.ts)
 */
import { fileURLToPath } from 'node:url';
import { extendWorker, type WorkerExtension } from '../../gpu-worker/extensions.ts';
import { installLabInstrumentation } from '../aws/instrumentation.ts';
import { crashOnKey, WORKER_CRASH_ON_KEY_ENV } from './crash-on-key.ts';
import { SimulatedGpuProcessor, parseSimulatedGpu } from './simulated-gpu.ts';
import { StatsProcessor, STATS_PROCESSOR_DELAY_MS_ENV } from './stats-processor.ts';

/** The environment variable of the simulated GPU's options. */
export const SIMULATED_GPU_ENV = 'SIMULATED_GPU';

/** The lab's worker extension. */
export const LAB_WORKER_EXTENSION: WorkerExtension = {
  processors: {
    stats: ({ env }) => new StatsProcessor(Number(env[STATS_PROCESSOR_DELAY_MS_ENV] ?? 0)),
    simgpu: ({ env, tunables, clock }) =>
      new SimulatedGpuProcessor(parseSimulatedGpu(env[SIMULATED_GPU_ENV], { batchSize: tunables.inferenceBatchSize, maxBatchWaitMs: tunables.maxBatchWaitMs }), clock, tunables.detectAheadFrames),
  },
  wrapPipeline: (pipeline, env) => {
    const key = env[WORKER_CRASH_ON_KEY_ENV];
    return key ? crashOnKey(key, pipeline.frames, pipeline.processor) : pipeline;
  },
  beforeProbeTry: (key, env) => {
    // Die on the poison key, as the worker would when handed that frame.
    const poison = env[WORKER_CRASH_ON_KEY_ENV];
    if (poison && key?.includes(poison)) process.kill(process.pid, 'SIGKILL');
  },
  probeEntry: fileURLToPath(new URL('../probe-main.ts', import.meta.url)),
};

/** Adds the lab to this process's worker or crash probe, and to its AWS clients (idempotent). */
export function registerLab(): void {
  installLabInstrumentation();
  extendWorker(LAB_WORKER_EXTENSION);
}
