/**
 * Builds the frame processor FRAME_PROCESSOR names (`vision`, `stats` or `simgpu`), for
 * the worker (main.ts) and for the crash probe's child (probe-main.ts), so that the child
 * decodes and detects exactly as the worker would (decision 41).
 */
import { unlinkSync } from 'node:fs';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { S3Client } from '@aws-sdk/client-s3';
import { WORKER_ENV, type Tunables } from '../core/config.ts';
import type { FrameProcessor, MetricSink } from '../core/ports.ts';
import { MODEL_SHA256_ENV } from '../core/model-pin.ts';
import { StatsProcessor } from './stats-processor.ts';
import { SimulatedGpuProcessor, parseSimulatedGpu } from './vision/simulated-gpu.ts';
import type { StageClock } from './runtime/stage-clock.ts';
import type { InferenceThreadFault } from './vision/inference-thread.ts';

/** Test seam (see the header): the fault this process's inference thread is to commit, if any. */
export const INFERENCE_THREAD_FAULT_ENV = 'INFERENCE_THREAD_FAULT';

function inferenceThreadFault(env: NodeJS.ProcessEnv): InferenceThreadFault | undefined {
  const text = env[INFERENCE_THREAD_FAULT_ENV];
  if (!text) return undefined;
  const { kind, onRun, onceFile } = JSON.parse(text) as InferenceThreadFault & { onceFile?: string };
  if (onceFile) {
    try {
      // unlink succeeds for exactly one process: the others (successors) run clean.
      unlinkSync(onceFile);
    } catch {
      return undefined;
    }
  }
  return { kind, onRun };
}

/** The processor `kind` names, built from the tunables and the environment (the model comes from `modelUri`, through `s3` when it is an S3 URI). */
export async function createProcessor(
  kind: string,
  tunables: Tunables,
  log: Logger,
  s3: S3Client,
  metrics: MetricSink,
  onFatal: (reason: string) => void,
  clock: StageClock,
): Promise<FrameProcessor> {
  if (kind === 'stats') return new StatsProcessor(Number(process.env[WORKER_ENV.statsDelayMs] ?? 0));
  if (kind === 'simgpu') {
    const options = parseSimulatedGpu(process.env.SIMULATED_GPU, { batchSize: tunables.inferenceBatchSize, maxBatchWaitMs: tunables.maxBatchWaitMs });
    return new SimulatedGpuProcessor(options, clock, tunables.detectAheadFrames);
  }
  const { createVisionProcessor, visionOptionsFromTunables } = await import('./vision/index.ts');
  const fault = inferenceThreadFault(process.env);
  return await createVisionProcessor({
    ...(fault ? { inferenceThread: { fault } } : {}),
    ...visionOptionsFromTunables(tunables),
    modelSha256: process.env[MODEL_SHA256_ENV],
    s3Client: s3,
    metrics,
    onFatal,
    logger: (line: string | object) => log.info(typeof line === 'string' ? line : 'vision', typeof line === 'string' ? {} : (line as Record<string, unknown>)),
  });
}

