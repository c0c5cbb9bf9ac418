/**
 * Builds the frame processor FRAME_PROCESSOR names, for the worker (main.ts) and for the
 * crash probe's child (probe-main.ts), so that the child decodes and detects exactly as
 * the worker would (decision 41). The product knows `vision` only; other kinds (the lab's
 * `stats` and `simgpu`) are added by a composition root through extensions.ts.
 */
import { unlinkSync } from 'node:fs';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Tunables } from '../core/config.ts';
import type { FrameProcessor, MetricSink } from '../core/ports.ts';
import { MODEL_SHA256_ENV } from './vision/model-pin.ts';
import { processorFactory, processorKinds } from './extensions.ts';
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

/**
 * The processor `kind` names, built from the tunables and the environment (the model comes
 * from `modelUri`, through `s3` when it is an S3 URI): `vision` (or empty), or a kind an
 * extension added; any other kind throws, naming the kinds there are.
 */
export async function createProcessor(
  kind: string,
  tunables: Tunables,
  log: Logger,
  s3: S3Client,
  metrics: MetricSink,
  onFatal: (reason: string) => void,
  clock: StageClock,
): Promise<FrameProcessor> {
  if (kind !== '' && kind !== 'vision') {
    const factory = processorFactory(kind);
    if (!factory) throw new Error(`FRAME_PROCESSOR=${kind} is not a frame processor of this worker (it has: ${processorKinds().join(', ')}); the lab's run through lab/worker-main.ts`);
    return await factory({ tunables, env: process.env, log, s3, metrics, onFatal, clock });
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
    // A warning's own words are its message (the demo model on real video must read as one in any log view).
    warn: (line: string | object) =>
      log.warn(typeof line === 'string' ? line : String((line as { msg?: unknown }).msg ?? 'vision'), typeof line === 'string' ? {} : (line as Record<string, unknown>)),
  });
}

