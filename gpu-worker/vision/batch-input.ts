/**
 * The two ends of an inference call in the model's layout (decision 32): a frame
 * prepared for the model, the batch tensor made of such frames, and the decoding of the
 * model's output for one frame of the batch. `uint8-nhwc` is the rewritten graph's
 * (graph-rewrite.ts), `float32-nchw` the model as exported (the fallback).
 */
import ort from 'onnxruntime-node';
import type { ModelInfo } from './model.ts';
import { postprocess, postprocessBestClass, type DecodeOptions, type RawDetection } from './postprocess.ts';
import { prepareFrame, prepareFrameUint8, type LetterboxGeometry, type PreparedFrame, type PreparedFrameUint8 } from './preprocess.ts';

/** A decoded, letterboxed frame in either layout. */
export type Prepared = PreparedFrame | PreparedFrameUint8;

/** Decodes and letterboxes a frame in the layout the model takes. */
export function prepareForModel(info: ModelInfo, image: Uint8Array, maxSourcePixels: number): Promise<Prepared> {
  const { inputWidth, inputHeight } = info;
  return info.layout === 'uint8-nhwc'
    ? prepareFrameUint8(image, inputWidth, inputHeight, maxSourcePixels)
    : prepareFrame(image, inputWidth, inputHeight, maxSourcePixels);
}

/**
 * One input tensor for a group of frames in the model's layout. A batch of one is its
 * frame's own buffer, moved to the inference thread without a copy; stacking copies
 * (1.2 MB of uint8 per 640x640 frame, 4.9 MB of float32 on the fallback path).
 */
export function batchTensor(info: ModelInfo, frames: readonly Prepared[]): ort.Tensor {
  const { inputWidth: w, inputHeight: h } = info;
  if (info.layout === 'uint8-nhwc') {
    const hwc = frames.map((f) => (f as PreparedFrameUint8).hwc);
    return new ort.Tensor('uint8', hwc.length === 1 ? hwc[0]! : stack(hwc, new Uint8Array(hwc.length * h * w * 3)), [hwc.length, h, w, 3]);
  }
  const chw = frames.map((f) => (f as PreparedFrame).chw);
  return new ort.Tensor('float32', chw.length === 1 ? chw[0]! : stack(chw, new Float32Array(chw.length * 3 * h * w)), [chw.length, 3, h, w]);
}

/** Detections of frame `image` of a batch output, in source pixels. */
export function decodeOutput(info: ModelInfo, data: Float32Array, image: number, anchors: number, geometry: LetterboxGeometry, options: DecodeOptions): RawDetection[] {
  return info.layout === 'uint8-nhwc'
    ? postprocessBestClass(data, image, anchors, geometry, options)
    : postprocess(data, image, info.classNames.length, anchors, geometry, options);
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
