/**
 * A recorded model on a simulated GPU, for measuring the CPU around the model as it is
 * beside a GPU (bench/pipeline-cpu.ts `--model replay`). On this 2-core machine the real
 * model takes one core at 100% and ~125 ms per frame, so the pipeline beside it shares
 * caches with it, and V8's time-driven work (memory-reducer and idle-task collections) is
 * spread over 8 frames a second instead of the hundreds a GPU runs. Neither is the
 * production case, where the model's work is on the GPU.
 *
 * `record` wraps the real session: every run goes to the model, and each frame's outputs
 * are kept under a key sampled from that frame's input pixels. `replay` then answers runs
 * of the same frames from those outputs, bit for bit, after the simulated GPU's batch
 * time (2 ms + 1 ms per frame, as `SimulatedGpuProcessor`), so decoding, NMS and tracking
 * do the same work as with the model. What it leaves out: the postMessage to and from the
 * inference thread (about 0.07 core-ms per frame in a CPU profile); the input buffer is
 * moved back as the thread moves it, so the buffer pool behaves the same.
 */
import ort from 'onnxruntime-node';
import type { InferenceSessionLike, RunWithInputs } from '../../gpu-worker/vision/inference-thread.ts';
import { DEFAULT_SIMULATED_GPU } from '../../lab/worker/simulated-gpu.ts';

/** Bytes between the pixels a frame's key is sampled from: ~1,200 samples of a 640x640x3 frame. */
const KEY_STRIDE_BYTES = 997;

/** One frame's outputs, by output name: its slice of each batched output, or the whole of an unbatched one. */
type FrameOutputs = Map<string, { readonly data: Float32Array | BigInt64Array | Int32Array | Uint8Array; readonly dims: readonly number[]; readonly batched: boolean }>;

/** The outputs of every frame a recording session ran, by pixel key. */
export class ModelRecording {
  private readonly frames = new Map<string, FrameOutputs>();

  get size(): number {
    return this.frames.size;
  }

  /** Wraps `session`: runs go to it, and each frame's outputs are recorded. */
  record(session: InferenceSessionLike): InferenceSessionLike {
    // Keys before the run: the thread's run moves the input's buffer away.
    const recorded = async <T>(feeds: ort.InferenceSession.FeedsType, run: () => Promise<T>, outputsOf: (result: T) => ort.InferenceSession.ReturnType): Promise<T> => {
      const input = feeds[session.inputNames[0]!]!;
      const keys = frameKeys(input);
      const batch = input.dims[0]!;
      const result = await run();
      keys.forEach((key, image) => this.frames.set(key, sliceOutputs(outputsOf(result), image, batch)));
      return result;
    };
    return {
      ...pick(session),
      run: (feeds) => recorded(feeds, () => session.run(feeds), (outputs) => outputs),
      release: () => session.release(),
      ...(session.runReturningInputs && {
        runReturningInputs: (feeds: ort.InferenceSession.FeedsType): Promise<RunWithInputs> => recorded(feeds, () => session.runReturningInputs!(feeds), (r) => r.outputs),
      }),
    } as InferenceSessionLike;
  }

  /**
   * A session with `session`'s names that answers from the recording after the simulated
   * GPU's batch time; a frame it never recorded is an error (the bench fed other frames).
   */
  replay(session: InferenceSessionLike): InferenceSessionLike {
    const answer = async (feeds: ort.InferenceSession.FeedsType) => {
      const input = feeds[session.inputNames[0]!]!;
      const recorded = frameKeys(input).map((key) => {
        const outputs = this.frames.get(key);
        if (!outputs) throw new Error('replayed model: a frame that was not recorded');
        return outputs;
      });
      const outputs = joinOutputs(recorded);
      await new Promise((resolve) => setTimeout(resolve, DEFAULT_SIMULATED_GPU.batchFixedMs + DEFAULT_SIMULATED_GPU.perFrameMs * recorded.length));
      return { input, outputs };
    };
    return {
      ...pick(session),
      run: async (feeds) => (await answer(feeds)).outputs,
      release: () => session.release(),
      runReturningInputs: async (feeds: ort.InferenceSession.FeedsType): Promise<RunWithInputs> => {
        const { input, outputs } = await answer(feeds);
        // As the inference thread does: the input's buffer leaves and comes back moved.
        const buffer = (input.data as Uint8Array).buffer as ArrayBuffer & { transfer(): ArrayBuffer };
        return { outputs, inputs: { [session.inputNames[0]!]: buffer.transfer() } };
      },
    } as InferenceSessionLike;
  }
}

function pick(session: InferenceSessionLike) {
  return { inputNames: session.inputNames, outputNames: session.outputNames, inputMetadata: session.inputMetadata, outputMetadata: session.outputMetadata };
}

/** A key per frame of a batched input tensor, from a strided sample of its bytes (FNV-1a). */
function frameKeys(input: ort.Tensor): string[] {
  const view = input.data as Uint8Array | Float32Array;
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  const batch = input.dims[0]!;
  const frameBytes = bytes.length / batch;
  return Array.from({ length: batch }, (_, image) => {
    let hash = 0x811c9dc5;
    for (let i = image * frameBytes; i < (image + 1) * frameBytes; i += KEY_STRIDE_BYTES) hash = Math.imul(hash ^ bytes[i]!, 0x01000193);
    return `${frameBytes}:${hash >>> 0}`;
  });
}

/** Frame `image`'s share of each output: a copy of its slice when the first dimension is the batch. */
function sliceOutputs(outputs: ort.InferenceSession.ReturnType, image: number, batch: number): FrameOutputs {
  const frame: FrameOutputs = new Map();
  for (const [name, tensor] of Object.entries(outputs)) {
    const data = tensor.data as Float32Array;
    const batched = tensor.dims.length > 1 && tensor.dims[0] === batch;
    const per = batched ? data.length / batch : data.length;
    frame.set(name, { data: data.slice(batched ? image * per : 0, batched ? (image + 1) * per : per), dims: tensor.dims, batched });
  }
  return frame;
}

/** Outputs for a batch of recorded frames: batched outputs stacked in order, the others as the first frame's. */
function joinOutputs(frames: readonly FrameOutputs[]): ort.InferenceSession.ReturnType {
  const out: Record<string, ort.Tensor> = {};
  for (const [name, first] of frames[0]!) {
    if (!first.batched) {
      out[name] = new ort.Tensor(first.data.slice() as Float32Array, [...first.dims]);
      continue;
    }
    const per = first.data.length;
    const data = new (first.data.constructor as Float32ArrayConstructor)(per * frames.length);
    frames.forEach((f, i) => data.set(f.get(name)!.data as Float32Array, i * per));
    out[name] = new ort.Tensor(data, [frames.length, ...first.dims.slice(1)]);
  }
  return out;
}
