/**
 * The worker's seam for what does not ship in the GPU image (issue 33, step 6). The image
 * runs gpu-worker/main.ts with nothing added: the vision processor (`FRAME_PROCESSOR` unset
 * or `vision`) and plain AWS clients. A composition root outside the product adds to it
 * before the worker's main (or the crash probe's) runs: lab/worker-main.ts and
 * lab/probe-main.ts add the lab's processors (`stats`, `simgpu`), the `WORKER_CRASH_ON_KEY`
 * seam and the AWS fault and latency injection (lab/worker/register.ts), and the local
 * stack starts its workers through them.
 *
 * AWS client instrumentation has its own hook, shared with the Lambdas
 * (core/aws/instrumentation.ts `addClientInstrumentation`).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Tunables } from '../core/config.ts';
import type { FrameSource } from '../core/ingest/port.ts';
import type { FrameProcessor, MetricSink } from '../core/ports.ts';
import type { StageClock } from './runtime/stage-clock.ts';

/** What a processor is built from: the worker's (or the probe's) tunables, environment and services. */
export interface ProcessorContext {
  readonly tunables: Tunables;
  readonly env: Record<string, string | undefined>;
  readonly log: Logger;
  readonly s3: S3Client;
  readonly metrics: MetricSink;
  readonly onFatal: (reason: string) => void;
  readonly clock: StageClock;
}

/** Builds the processor of one `FRAME_PROCESSOR` kind. */
export type ProcessorFactory = (context: ProcessorContext) => FrameProcessor | Promise<FrameProcessor>;

/** The frame source and processor the worker runs, as a wrapper may replace them. */
export interface FramePipeline {
  readonly frames: FrameSource;
  readonly processor: FrameProcessor;
}

/** What a composition root adds to the worker; every part optional. */
export interface WorkerExtension {
  /** Processors by `FRAME_PROCESSOR` kind, besides the built-in `vision`. */
  readonly processors?: Readonly<Record<string, ProcessorFactory>>;
  /** Wraps the worker's frame source and processor (applied in the order added), after the processor is built. */
  readonly wrapPipeline?: (pipeline: FramePipeline, env: Record<string, string | undefined>) => FramePipeline;
  /** Runs in the crash probe's child before it tries a frame (its S3 key, when the worker sent one). */
  readonly beforeProbeTry?: (key: string | undefined, env: Record<string, string | undefined>) => void;
  /** The crash probe's child entry (absolute path), so that the child gets the same extensions; default gpu-worker/probe-main.ts. */
  readonly probeEntry?: string;
}

const extensions: WorkerExtension[] = [];

/** Adds an extension, for this process's worker or crash probe (once, however often added). */
export function extendWorker(extension: WorkerExtension): void {
  if (extensions.includes(extension)) return;
  if (extension.processors && 'vision' in extension.processors) throw new Error('the vision processor is built in: an extension cannot replace it');
  extensions.push(extension);
}

/** The extensions added so far. */
export function workerExtensions(): readonly WorkerExtension[] {
  return extensions;
}

/** The factory an extension registered for `kind`, if any (the last one added wins). */
export function processorFactory(kind: string): ProcessorFactory | undefined {
  for (let i = extensions.length - 1; i >= 0; i--) {
    const factory = extensions[i]!.processors?.[kind];
    if (factory) return factory;
  }
  return undefined;
}

/** The kinds `FRAME_PROCESSOR` may name in this process. */
export function processorKinds(): string[] {
  return ['vision', ...new Set(extensions.flatMap((e) => Object.keys(e.processors ?? {})))];
}

/** Applies every extension's `wrapPipeline`, in the order added. */
export function wrapPipeline(pipeline: FramePipeline, env: Record<string, string | undefined>): FramePipeline {
  return extensions.reduce((p, e) => (e.wrapPipeline ? e.wrapPipeline(p, env) : p), pipeline);
}

/** Runs every extension's `beforeProbeTry`. */
export function beforeProbeTry(key: string | undefined, env: Record<string, string | undefined>): void {
  for (const e of extensions) e.beforeProbeTry?.(key, env);
}

/** The crash probe's entry an extension set (the last one added wins), if any. */
export function probeEntry(): string | undefined {
  return extensions.findLast((e) => e.probeEntry)?.probeEntry;
}
