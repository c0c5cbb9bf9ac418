/**
 * The replayed model of bench/pipeline-cpu.ts `--model replay` (decision 43): it answers a
 * frame with exactly the outputs the model gave that frame, in any batch composition, moves
 * the input back as the inference thread does, and refuses a frame it never recorded.
 */
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelRecording } from '../../../bench/harness/replay-session.ts';
import { buildDemoModelBytes } from '../../../gpu-worker/vision/demo-model/build-model.ts';
import { createThreadedSession, type InferenceSessionLike } from '../../../gpu-worker/vision/inference-thread.ts';
import { WORKER_SESSION_OPTIONS } from '../../../gpu-worker/vision/model.ts';

const SIZE = 320;
/** Frame `n`'s input: distinct pixels per frame. */
const frame = (n: number): Float32Array => Float32Array.from({ length: 3 * SIZE * SIZE }, (_, i) => (((i + 1) * (n + 7) * 2654435761) >>> 0) / 2 ** 32);
const batchOf = (frames: number[]): ort.Tensor => {
  const data = new Float32Array(frames.length * 3 * SIZE * SIZE);
  frames.forEach((n, i) => data.set(frame(n), i * 3 * SIZE * SIZE));
  return new ort.Tensor('float32', data, [frames.length, 3, SIZE, SIZE]);
};

describe('ModelRecording', () => {
  let model: InferenceSessionLike;
  beforeAll(async () => {
    model = await createThreadedSession(buildDemoModelBytes(), ['cpu'], WORKER_SESSION_OPTIONS);
  });
  afterAll(async () => {
    await model?.release();
  });

  it('replays each frame\'s recorded outputs bit for bit, whatever batch it comes in, and refuses an unrecorded frame', async () => {
    // Prepare: frames 0 and 1 recorded in one batch, frame 2 alone.
    const recording = new ModelRecording();
    const recorder = recording.record(model);
    const name = model.inputNames[0]!;
    const out = model.outputNames[0]!;
    await recorder.runReturningInputs!({ [name]: batchOf([0, 1]) });
    await recorder.run({ [name]: batchOf([2]) });
    const expected = (await model.run({ [name]: batchOf([2, 0]) }))[out]!;
    const replayed = recording.replay(model);
    // Act: the frames again, in another batch and order.
    const sent = batchOf([2, 0]);
    const lent = (sent.data as Float32Array).buffer;
    const { outputs, inputs } = await replayed.runReturningInputs!({ [name]: sent });
    // Assess
    expect(recording.size).toBe(3);
    expect(outputs[out]!.dims).toEqual(expected.dims);
    expect(Array.from(outputs[out]!.data as Float32Array)).toEqual(Array.from(expected.data as Float32Array));
    expect(lent.byteLength).toBe(0); // moved, as the thread moves it
    expect(new Float32Array(inputs[name]!)).toEqual(new Float32Array([...frame(2), ...frame(0)]));
    await expect(replayed.run({ [name]: batchOf([9]) })).rejects.toThrow('a frame that was not recorded');
  });
});
