/**
 * The onnxruntime session on its own thread (gpu-worker/vision/inference-thread.ts):
 * same outputs as on the main thread, an event loop that keeps turning while the model
 * runs (onnxruntime-node's own `run` blocks it), and failures that reject instead of
 * hanging.
 */
import { existsSync, readdirSync } from 'node:fs';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDemoModelBytes } from '../../../gpu-worker/vision/demo-model/build-model.ts';
import {
  createThreadedSession,
  FAULT_EXIT_CODE,
  InferenceThreadDiedError,
  type InferenceSessionLike,
  type InferenceThreadFault,
  type ThreadOptions,
} from '../../../gpu-worker/vision/inference-thread.ts';
import { BARE_SESSION_OPTIONS, WORKER_SESSION_OPTIONS, loadModel } from '../../../gpu-worker/vision/model.ts';
import { ensureDemoModel } from '../../../gpu-worker/vision/index.ts';

const SIZE = 320;

/** A deterministic non-trivial input of `batch` images. */
function input(batch: number): ort.Tensor {
  const data = Float32Array.from({ length: batch * 3 * SIZE * SIZE }, (_, i) => ((i * 2654435761) >>> 0) / 2 ** 32);
  return new ort.Tensor('float32', data, [batch, 3, SIZE, SIZE]);
}

describe('threaded inference session', () => {
  let bytes: Uint8Array;
  let threaded: InferenceSessionLike;
  let onMain: ort.InferenceSession;

  beforeAll(async () => {
    bytes = await buildDemoModelBytes();
    threaded = await createThreadedSession(bytes, ['cpu'], WORKER_SESSION_OPTIONS);
    onMain = await ort.InferenceSession.create(bytes, { ...BARE_SESSION_OPTIONS, executionProviders: ['cpu'] });
  });
  afterAll(async () => {
    await threaded?.release();
    await onMain?.release();
  });

  it('describes the model and returns the same outputs as a session on the main thread', async () => {
    // Act
    const [fromThread, fromMain] = [await threaded.run({ [threaded.inputNames[0]!]: input(2) }), await onMain.run({ [onMain.inputNames[0]!]: input(2) })];
    // Assess
    expect([threaded.inputNames, threaded.outputNames]).toEqual([onMain.inputNames, onMain.outputNames]);
    expect(threaded.inputMetadata).toEqual(onMain.inputMetadata);
    const name = onMain.outputNames[0]!;
    expect(fromThread[name]!.dims).toEqual(fromMain[name]!.dims);
    expect(fromThread[name]!.type).toBe('float32');
    expect(Array.from(fromThread[name]!.data as Float32Array)).toEqual(Array.from(fromMain[name]!.data as Float32Array));
  });

  it('leaves the event loop free while the model runs, where onnxruntime-node on the main thread blocks it', async () => {
    // Which settles first: the run, or a setImmediate queued right after it was started.
    const race = async (session: InferenceSessionLike) => {
      const order: string[] = [];
      const run = session.run({ [session.inputNames[0]!]: input(4) }).then(() => order.push('run'));
      setImmediate(() => order.push('event loop'));
      await run;
      await new Promise((r) => setImmediate(r));
      return order;
    };
    // Act
    const threadOrder = await race(threaded);
    const mainOrder = await race(onMain);
    // Assess
    expect(threadOrder).toEqual(['event loop', 'run']);
    expect(mainOrder).toEqual(['run', 'event loop']);
  });

  it('rejects a model onnxruntime cannot load, with its reason, and leaves no thread behind', async () => {
    // Act
    const garbage = await createThreadedSession(new TextEncoder().encode('not a model'), ['cpu']).catch((e: unknown) => e);
    // Assess: were a thread left running, the file would not finish.
    expect(garbage).toBeInstanceOf(Error);
    expect(String(garbage)).toMatch(/protobuf|parse|model/i);
  });

  it('rejects runs after release, naming why', async () => {
    // Prepare
    const session = await createThreadedSession(bytes, ['cpu']);
    await session.run({ [session.inputNames[0]!]: input(1) });
    // Act
    await session.release();
    const after = await session.run({ [session.inputNames[0]!]: input(1) }).catch((e: unknown) => e);
    // Assess
    expect(String(after)).toMatch(/inference session released/);
  });

  it('rejects a run onnxruntime refuses, and serves the next one', async () => {
    // Act: a wrongly shaped input, then a good one.
    const bad = await threaded.run({ [threaded.inputNames[0]!]: new ort.Tensor('float32', new Float32Array(3), [1, 3]) }).catch((e: unknown) => e);
    const good = await threaded.run({ [threaded.inputNames[0]!]: input(1) });
    // Assess
    expect(bad).toBeInstanceOf(Error);
    expect(Object.keys(good)).toEqual(threaded.outputNames);
  });

  it('gives onnxruntime the inferenceThreads the worker is configured with', async (ctx) => {
    if (!existsSync('/proc/self/task')) {
      ctx.skip('counts threads through /proc/self/task (Linux only)');
      return;
    }
    // Prepare
    const uri = await ensureDemoModel();
    const threadsAdded = async (inferenceThreads: number): Promise<number> => {
      const before = readdirSync('/proc/self/task').length;
      const model = await loadModel({ uri, preferCuda: false, inferenceThreads });
      const added = readdirSync('/proc/self/task').length - before;
      await model.session.release();
      return added;
    };
    // Act
    const one = await threadsAdded(1);
    const four = await threadsAdded(4);
    // Assess: the inference thread itself runs the model's first thread; each more is a pool thread.
    expect(four - one).toBe(3);
  });
});

describe('an inference thread that dies', () => {
  let bytes: Uint8Array;
  beforeAll(async () => {
    bytes = await buildDemoModelBytes();
  });

  /** Thread heap small enough that the `oom` fault reaches ERR_WORKER_OUT_OF_MEMORY at once. */
  const SMALL_HEAP: ThreadOptions['resourceLimits'] = { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 };

  it.each([
    { kind: 'exit', reason: 'thread-exit', detail: `exit code ${FAULT_EXIT_CODE}` },
    { kind: 'throw', reason: 'thread-error', detail: 'uncaught exception' },
    { kind: 'oom', reason: 'out-of-memory', detail: 'out of memory' },
  ] as const)('rejects the run in flight and every queued run when it dies by $kind, names why, and rejects later runs at once', async ({ kind, reason, detail }) => {
    // Prepare: the thread dies on its first run; two more are queued behind it.
    const fault: InferenceThreadFault = { kind, onRun: 1 };
    const session = await createThreadedSession(bytes, ['cpu'], {}, { fault, ...(kind === 'oom' ? { resourceLimits: SMALL_HEAP } : {}) });
    const feeds = () => ({ [session.inputNames[0]!]: input(1) });
    // Act
    const runs = await Promise.all([session.run(feeds()), session.run(feeds()), session.run(feeds())].map((r) => r.catch((e: unknown) => e)));
    const death = await session.died!;
    const later = await session.run(feeds()).catch((e: unknown) => e);
    // Assess
    expect(death.reason).toBe(reason);
    expect(death.detail.toLowerCase()).toContain(detail);
    for (const e of [...runs, later]) {
      expect(e).toBeInstanceOf(InferenceThreadDiedError);
      expect((e as InferenceThreadDiedError).death).toEqual(death);
      expect(String(e)).toContain(`inference thread died (${reason})`);
    }
    await expect(session.release()).resolves.toBeUndefined();
  });

  it('serves runs until the faulty one, and a released thread is no death', async () => {
    // Prepare
    const dying = await createThreadedSession(bytes, ['cpu'], {}, { fault: { kind: 'exit', onRun: 3 } });
    const healthy = await createThreadedSession(bytes, ['cpu']);
    const feeds = (s: InferenceSessionLike) => ({ [s.inputNames[0]!]: input(1) });
    // Act
    const first = await dying.run(feeds(dying));
    const second = await dying.run(feeds(dying));
    const third = await dying.run(feeds(dying)).catch((e: unknown) => e);
    await healthy.run(feeds(healthy));
    await healthy.release();
    const settled = await Promise.race([healthy.died!.then(() => 'died'), new Promise((r) => setImmediate(() => r('alive')))]);
    // Assess
    expect(Object.keys(first)).toEqual(dying.outputNames);
    expect(Object.keys(second)).toEqual(dying.outputNames);
    expect(third).toBeInstanceOf(InferenceThreadDiedError);
    expect(settled).toBe('alive');
    await dying.release();
  });
});
