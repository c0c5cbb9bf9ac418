/**
 * An inference output that crossed from the inference thread is freed as soon as its
 * frames are decoded (decision 43), and decoding it first gives the same detections as a
 * session on the main thread, which keeps its outputs.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectBatch, prepareForModel } from '../../../gpu-worker/vision/batch-input.ts';
import { buildDemoModelBytes } from '../../../gpu-worker/vision/demo-model/build-model.ts';
import type { InferenceSessionLike } from '../../../gpu-worker/vision/inference-thread.ts';
import { loadModel, type LoadedModel } from '../../../gpu-worker/vision/model.ts';
import { DEFAULT_DECODE } from '../../../gpu-worker/vision/postprocess.ts';
import { generateClip } from '../../../gpu-worker/vision/synthetic/generate.ts';

/** `session` with every output it returns kept in `seen`. */
function watched(session: InferenceSessionLike, seen: ort.Tensor[]): InferenceSessionLike {
  const keep = (outputs: ort.InferenceSession.ReturnType) => {
    seen.push(...Object.values(outputs));
    return outputs;
  };
  return {
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    run: async (feeds) => keep(await session.run(feeds)),
    release: () => session.release(),
    ...(session.runReturningInputs && {
      runReturningInputs: async (feeds) => {
        const result = await session.runReturningInputs!(feeds);
        keep(result.outputs);
        return result;
      },
    }),
  } as InferenceSessionLike;
}

describe('inference outputs after decoding (decision 43)', () => {
  let dir: string;
  let threaded: LoadedModel;
  let onMain: LoadedModel;
  const seenThreaded: ort.Tensor[] = [];
  const seenMain: ort.Tensor[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'output-release-'));
    const uri = join(dir, 'demo.onnx');
    await writeFile(uri, await buildDemoModelBytes());
    const t = await loadModel({ uri, preferCuda: false });
    threaded = { ...t, session: watched(t.session, seenThreaded) };
    const m = await loadModel({ uri, preferCuda: false, createSession: (bytes) => ort.InferenceSession.create(bytes) });
    onMain = { ...m, session: watched(m.session, seenMain) };
  });
  afterAll(async () => {
    await threaded?.session.release();
    await onMain?.session.release();
    await rm(dir, { recursive: true, force: true });
  });

  it('frees an output from the inference thread once decoded, and finds what a main-thread session finds', async () => {
    // Prepare: two frames of the synthetic clip, prepared for each model.
    const clip = await generateClip({ frames: 2, seed: 5, format: 'jpeg' });
    const prepare = (model: LoadedModel) => Promise.all(clip.frames.map((f) => prepareForModel(model.info, f.image, 1e8)));
    // Act
    const fromThread = await detectBatch(threaded, await prepare(threaded), DEFAULT_DECODE, undefined);
    const fromMain = await detectBatch(onMain, await prepare(onMain), DEFAULT_DECODE, undefined);
    // Assess: the same detections; the thread's outputs are detached, the main thread's are not.
    expect(threaded.session.runReturningInputs).toBeDefined();
    expect(fromThread).toEqual(fromMain);
    expect(fromThread.flat().length).toBeGreaterThan(0);
    expect(seenThreaded.length).toBeGreaterThan(0);
    expect(seenThreaded.every((t) => (t.data as Float32Array).buffer.byteLength === 0)).toBe(true);
    expect(seenMain.length).toBeGreaterThan(0);
    expect(seenMain.every((t) => (t.data as Float32Array).buffer.byteLength > 0)).toBe(true);
  });
});
