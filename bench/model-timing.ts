/**
 * The bare model, for comparison with the pipeline around it: frames/s of
 * `session.run` alone at a batch size, on letterbox-grey input, with onnxruntime's
 * default options and full graph optimisation (BARE_SESSION_OPTIONS: intra-op threads
 * spin, which is faster for a lone model), called on this thread (CPU). With
 * `inferenceThreads` > 0 the model gets that many intra-op threads, as the worker's
 * `inferenceThreads` tunable gives it. Shared by bench/vision-throughput.ts and
 * bench/worker-throughput.ts.
 */
import { readFile } from 'node:fs/promises';
import * as ort from 'onnxruntime-node';
import { BARE_SESSION_OPTIONS, withInferenceThreads } from '../gpu-worker/vision/model.ts';
import { percentile } from './support.ts';

/** Median frames/s of `runs` calls of `session.run` at `batchSize`, after one warm-up call. */
export async function bareModelFps(uri: string, batchSize: number, inputSize: number, runs = 10, inferenceThreads = 0): Promise<number> {
  // On this thread, as a user's own script would call it: no worker thread in between.
  const options = withInferenceThreads(BARE_SESSION_OPTIONS, inferenceThreads);
  const session = await ort.InferenceSession.create(new Uint8Array(await readFile(uri)), { ...options, executionProviders: ['cpu'] });
  try {
    return (batchSize / (await medianRunMs(session, batchSize, inputSize, runs))) * 1000;
  } finally {
    await session.release();
  }
}

/** Median ms of `runs` calls of `session.run` on a letterbox-grey batch, after one warm-up call. */
export async function medianRunMs(session: ort.InferenceSession, batchSize: number, inputSize: number, runs: number): Promise<number> {
  const input = new ort.Tensor('float32', new Float32Array(batchSize * 3 * inputSize * inputSize).fill(114 / 255), [batchSize, 3, inputSize, inputSize]);
  const feeds = { [session.inputNames[0]!]: input };
  await session.run(feeds);
  const perRunMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await session.run(feeds);
    perRunMs.push(performance.now() - t);
  }
  return percentile(perRunMs, 50);
}
