/**
 * The two ends of an inference call in the model's layout (decision 32): a frame
 * prepared for the model, the batch tensor made of such frames, and the decoding of the
 * model's output for one frame of the batch. `uint8-nhwc` is the rewritten graph's
 * (graph-rewrite.ts), `float32-nchw` the model as exported (the fallback).
 */
import type { DecodedPixels } from '../../core/ports.ts';
import ort from 'onnxruntime-node';
import type { BufferPool } from './buffer-pool.ts';
import type { InferenceSessionLike } from './inference-thread.ts';
import type { LoadedModel, ModelInfo } from './model.ts';
import { postprocess, postprocessBestClass, type DecodeOptions, type RawDetection } from './postprocess.ts';
import { prepareFrame, prepareFrameUint8, releaseDecoded, type LetterboxGeometry, type PreparedFrame, type PreparedFrameUint8 } from './preprocess.ts';

/** A decoded, letterboxed frame in either layout. */
export type Prepared = PreparedFrame | PreparedFrameUint8;

/** Decodes and letterboxes a frame in the layout the model takes, into a buffer of `pool` when given. */
export function prepareForModel(info: ModelInfo, image: Uint8Array | DecodedPixels, maxSourcePixels: number, pool?: BufferPool): Promise<Prepared> {
  const { inputWidth, inputHeight } = info;
  return info.layout === 'uint8-nhwc'
    ? prepareFrameUint8(image, inputWidth, inputHeight, maxSourcePixels, pool)
    : prepareFrame(image, inputWidth, inputHeight, maxSourcePixels, pool);
}

/** A prepared frame's pixels, in either layout. */
export function preparedPixels(frame: Prepared): Uint8Array | Float32Array {
  return 'hwc' in frame ? frame.hwc : frame.chw;
}

/**
 * One input tensor for a group of frames in the model's layout. A batch of one is its
 * frame's own buffer, moved to the inference thread without a copy; stacking copies
 * (1.2 MB of uint8 per 640x640 frame, 4.9 MB of float32 on the fallback path). With
 * `pool` (decision 37), the stacked batch is a pooled buffer and each frame's buffer goes
 * back to the pool once copied: the frames must not be used afterwards, and whoever ends
 * the tensor's use releases its buffer.
 */
export function batchTensor(info: ModelInfo, frames: readonly Prepared[], pool?: BufferPool): ort.Tensor {
  const { inputWidth: w, inputHeight: h } = info;
  const pixels = frames.map(preparedPixels);
  const dims = info.layout === 'uint8-nhwc' ? [pixels.length, h, w, 3] : [pixels.length, 3, h, w];
  if (pixels.length === 1) return info.layout === 'uint8-nhwc' ? new ort.Tensor('uint8', pixels[0] as Uint8Array, dims) : new ort.Tensor('float32', pixels[0] as Float32Array, dims);
  const values = pixels.length * h * w * 3;
  let tensor: ort.Tensor;
  if (info.layout === 'uint8-nhwc') {
    tensor = new ort.Tensor('uint8', stack(pixels as Uint8Array[], pool ? new Uint8Array(pool.acquire(values)) : new Uint8Array(values)), dims);
  } else {
    const bytes = values * Float32Array.BYTES_PER_ELEMENT;
    tensor = new ort.Tensor('float32', stack(pixels as Float32Array[], pool ? new Float32Array(pool.acquire(bytes)) : new Float32Array(values)), dims);
  }
  // Copied into the batch: each frame's buffer is free again.
  if (pool) for (const p of pixels) pool.release(p.buffer as ArrayBuffer);
  return tensor;
}

/**
 * One run whose input buffer goes back to `pool` once the run is over: the buffer the
 * inference thread moves back, or, from a session that never moved it, the buffer
 * itself. A run that fails leaves a moved buffer to the garbage collector.
 */
export async function runPooled(session: InferenceSessionLike, inputName: string, input: ort.Tensor, pool: BufferPool | undefined): Promise<ort.InferenceSession.ReturnType> {
  const lent = (input.data as Uint8Array | Float32Array).buffer as ArrayBuffer;
  const feeds = { [inputName]: input };
  if (!pool) return session.run(feeds);
  try {
    if (!session.runReturningInputs) return await session.run(feeds);
    const { outputs, inputs } = await session.runReturningInputs(feeds);
    const back = inputs[inputName];
    if (back) pool.releaseMoved(lent, back);
    return outputs;
  } finally {
    // Still attached: the run never moved it (a session on this thread, or one that failed before sending).
    if (lent.byteLength > 0) pool.release(lent);
  }
}

/** Detections of frame `image` of a batch output, in source pixels. */
export function decodeOutput(info: ModelInfo, data: Float32Array, image: number, anchors: number, geometry: LetterboxGeometry, options: DecodeOptions): RawDetection[] {
  return info.layout === 'uint8-nhwc'
    ? postprocessBestClass(data, image, anchors, geometry, options)
    : postprocess(data, image, info.classNames.length, anchors, geometry, options);
}

/**
 * The raw detections of each prepared frame, in source pixels: one inference call for a
 * model with a dynamic batch, one per frame otherwise. The frames' buffers go back to
 * `pool` (see {@link batchTensor}).
 */
export async function detectBatch(model: LoadedModel, frames: readonly Prepared[], options: DecodeOptions, pool: BufferPool | undefined): Promise<RawDetection[][]> {
  const { info, session } = model;
  const groups = info.dynamicBatch ? [frames] : frames.map((f) => [f]);
  const raw: RawDetection[][] = [];
  for (const group of groups) {
    const out = await runPooled(session, info.inputName, batchTensor(info, group, pool), pool);
    const tensor = out[info.outputName]!;
    const data = tensor.data as Float32Array;
    const anchors = tensor.dims[2]!;
    group.forEach((f, i) => raw.push(decodeOutput(info, data, i, anchors, f.geometry, options)));
    // An output that crossed from the inference thread is this call's alone: freed now, it
    // never counts against the main heap's external memory (decision 43), as sharp's
    // frames no longer do (decision 40). A session on this thread keeps its outputs.
    if (session.runReturningInputs) for (const tensor of Object.values(out)) releaseDecoded(tensor.data as ArrayBufferView);
  }
  return raw;
}

/** Concatenates equal-sized frames into `into`. */
function stack<T extends Uint8Array | Float32Array>(frames: readonly T[], into: T): T {
  let offset = 0;
  for (const f of frames) {
    into.set(f, offset);
    offset += f.length;
  }
  return into;
}
