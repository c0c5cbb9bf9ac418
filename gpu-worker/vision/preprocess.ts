/**
 * Decode + letterbox, the way Ultralytics prepares an image: scale to fit the
 * model input keeping aspect, pad the rest with grey 114 split evenly around the
 * image, and normalise to float32 NCHW in [0, 1].
 */
import sharp from 'sharp';
import type { DecodedPixels } from '../../core/ports.ts';
import type { BufferPool } from './buffer-pool.ts';
import { declaredImageSize } from './image-header.ts';

/** Ultralytics' letterbox padding value. */
export const LETTERBOX_PAD_VALUE = 114;

/** How a source image was placed into the model input; enough to map boxes back. */
export interface LetterboxGeometry {
  readonly sourceWidth: number;
  readonly sourceHeight: number;
  /** Model pixels per source pixel. */
  readonly scale: number;
  /** Left padding in model pixels. */
  readonly padLeft: number;
  /** Top padding in model pixels. */
  readonly padTop: number;
  /** Size of the resized image inside the input, in model pixels. */
  readonly resizedWidth: number;
  readonly resizedHeight: number;
}

/**
 * Placement of a `sourceWidth` x `sourceHeight` image in a `inputWidth` x
 * `inputHeight` input. Mirrors Ultralytics `LetterBox` (center=True): the
 * resized size is Python's `round()` (half to even), and padding is
 * `round(d/2 -/+ 0.1)` so an odd remainder puts the extra pixel bottom/right.
 */
export function letterboxGeometry(sourceWidth: number, sourceHeight: number, inputWidth: number, inputHeight: number): LetterboxGeometry {
  const scale = Math.min(inputWidth / sourceWidth, inputHeight / sourceHeight);
  const resizedWidth = Math.max(1, roundHalfToEven(sourceWidth * scale));
  const resizedHeight = Math.max(1, roundHalfToEven(sourceHeight * scale));
  const dw = (inputWidth - resizedWidth) / 2;
  const dh = (inputHeight - resizedHeight) / 2;
  // Python rounds half to even; after the -0.1 the argument is never at .5, so Math.round matches. max(0, .) turns -0 into 0.
  const padLeft = Math.max(0, Math.round(dw - 0.1));
  const padTop = Math.max(0, Math.round(dh - 0.1));
  return { sourceWidth, sourceHeight, scale, padLeft, padTop, resizedWidth, resizedHeight };
}

/** Python 3's `round(x)`: to the nearest integer, ties to the even one (2.5 -> 2, 3.5 -> 4). */
export function roundHalfToEven(x: number): number {
  const floor = Math.floor(x);
  const fraction = x - floor;
  if (fraction !== 0.5) return Math.round(x);
  return floor % 2 === 0 ? floor : floor + 1;
}

/** A decoded, letterboxed frame ready to be stacked into a batch. */
export interface PreparedFrame {
  /** 3 x inputHeight x inputWidth, channel-major, values in [0, 1]. */
  readonly chw: Float32Array;
  readonly geometry: LetterboxGeometry;
}

/** Outcome reasons of a frame the decoder refuses. */
export type ImageRejectReason = 'corrupt-image' | 'image-too-large';

/** Thrown for bytes that are not a decodable image, or one too large to decode; `reason` is the outcome code. */
export class ImageDecodeError extends Error {
  override name = 'ImageDecodeError';
  readonly reason: ImageRejectReason;

  constructor(message: string, reason: ImageRejectReason = 'corrupt-image') {
    super(message);
    this.reason = reason;
  }
}

/** 4K UHD (3840 x 2160): the least any model allows, so every common camera resolution decodes whatever the model. */
export const MIN_SOURCE_PIXEL_LIMIT = 3840 * 2160;
/** 8K UHD (7680 x 4320): the most any model allows. */
export const MAX_SOURCE_PIXEL_LIMIT = 7680 * 4320;
/**
 * Source pixels allowed per model input pixel: 64, i.e. 8 times the model's side. A frame
 * larger than that is shrunk more than 8-fold per axis, so the model sees at most 1 in 64
 * of its pixels, while its decode costs CPU time in proportion to all of them.
 */
export const SOURCE_PIXELS_PER_INPUT_PIXEL = 64;

/**
 * Most source pixels (width x height) a frame may declare for a model with this input:
 * {@link SOURCE_PIXELS_PER_INPUT_PIXEL} times the input's area, kept between 4K UHD and
 * 8K UHD (640 x 640: 26.2 MP; the 320 x 320 demo model: 8.3 MP; 1280 x 1280: 33.2 MP).
 * It replaces sharp's default of 268 MP, under which a decompression bomb is decoded in
 * full: a 420 KB PNG of 12000 x 12000 took 1.1 s of a core to decode and shrink (libvips
 * streams it, so memory rose only 60 MB), time taken from inference and the other frames.
 */
export function sourcePixelLimit(inputWidth: number, inputHeight: number): number {
  return Math.min(MAX_SOURCE_PIXEL_LIMIT, Math.max(MIN_SOURCE_PIXEL_LIMIT, SOURCE_PIXELS_PER_INPUT_PIXEL * inputWidth * inputHeight));
}

/** sharp's message when an image is over `limitInputPixels` (a backstop; the header check comes first). */
const SHARP_PIXEL_LIMIT_MESSAGE = /exceeds pixel limit/i;

/**
 * Decodes JPEG/PNG bytes and letterboxes them to the model input (`chw` from `pool` when
 * given: decision 37). sharp runs on
 * libuv's thread pool, so several of these overlap each other and a running
 * inference.
 *
 * The image's size is read from its header first: one that declares more than
 * `maxSourcePixels` (default {@link sourcePixelLimit} of the input) is refused as
 * `image-too-large` before a single pixel is decoded, and sharp's own
 * `limitInputPixels` is set to the same value as a backstop.
 */
export async function prepareFrame(
  image: Uint8Array | DecodedPixels,
  inputWidth: number,
  inputHeight: number,
  maxSourcePixels: number = sourcePixelLimit(inputWidth, inputHeight),
  pool?: BufferPool,
): Promise<PreparedFrame> {
  const { rgb, geometry } = await decodeForLetterbox(image, inputWidth, inputHeight, maxSourcePixels);
  const { resizedWidth, resizedHeight, padLeft, padTop } = geometry;
  // Padding and normalisation are written straight into the CHW planes: cheaper than a
  // padded copy from sharp and a second pass, and on a CPU every ms here is taken from
  // inference, which already uses every core.
  const plane = inputWidth * inputHeight;
  // Every value is written below (padding, then the image), so a pooled buffer's old contents never show.
  const chw = pool ? new Float32Array(pool.acquire(plane * 3 * Float32Array.BYTES_PER_ELEMENT)) : new Float32Array(plane * 3);
  fillPadding(chw, plane, inputWidth, geometry);
  for (let y = 0, q = 0; y < resizedHeight; y++) {
    let p = (padTop + y) * inputWidth + padLeft;
    for (let x = 0; x < resizedWidth; x++, p++, q += 3) {
      chw[p] = UNIT[rgb[q]!]!;
      chw[plane + p] = UNIT[rgb[q + 1]!]!;
      chw[2 * plane + p] = UNIT[rgb[q + 2]!]!;
    }
  }
  releaseDecoded(rgb);
  return { chw, geometry };
}

/**
 * Writes the grey pad value only where the image does not go (the bands above and
 * below, and each row's left and right margins): a whole-tensor fill would first
 * write the 4.9 MB of a 640x640 input that the image then overwrites.
 */
function fillPadding(chw: Float32Array, plane: number, inputWidth: number, g: LetterboxGeometry): void {
  const pad = LETTERBOX_PAD_VALUE / 255;
  const imageTop = g.padTop * inputWidth;
  const imageBottom = (g.padTop + g.resizedHeight) * inputWidth;
  const rightMargin = inputWidth - g.padLeft - g.resizedWidth;
  for (let c = 0; c < 3; c++) {
    const base = c * plane;
    chw.fill(pad, base, base + imageTop);
    chw.fill(pad, base + imageBottom, base + plane);
    if (g.padLeft === 0 && rightMargin === 0) continue;
    for (let y = g.padTop; y < g.padTop + g.resizedHeight; y++) {
      const row = base + y * inputWidth;
      chw.fill(pad, row, row + g.padLeft);
      chw.fill(pad, row + g.padLeft + g.resizedWidth, row + inputWidth);
    }
  }
}

/** byte / 255 as float32, looked up rather than divided per channel. */
const UNIT = Float32Array.from({ length: 256 }, (_, i) => i / 255);

/**
 * A decoded frame in the layout the rewritten graph takes (graph-rewrite.ts): uint8 RGB,
 * `inputHeight` x `inputWidth` x 3 (HWC), letterbox borders already grey 114.
 */
export interface PreparedFrameUint8 {
  readonly hwc: Uint8Array;
  readonly geometry: LetterboxGeometry;
}

/**
 * {@link prepareFrame} for a model rewritten to take uint8 (graph-rewrite.ts): the same
 * header check, decode, resize and geometry, and no float conversion: the graph divides
 * by 255 itself. Its pixels are exactly the bytes behind `prepareFrame`'s floats
 * (`chw = hwc / 255`, test/gpu-worker/vision/letterbox-uint8.test.ts). 1.2 MB per 640x640
 * frame instead of 4.9 MB, and no per-pixel JS loop.
 *
 * The borders are written here (a fill and one copy per row, or one copy when the image
 * spans the width): libvips' `extend` cost 1.5-2.5 core-ms more per 640x480 JPEG in a
 * side-by-side run, and its output lives in libvips' memory, which postMessage cannot
 * transfer to the inference thread. `hwc` is an ArrayBuffer of V8's own, so a batch of
 * one moves there without a copy (and is detached until the thread hands it back).
 * With `pool`, `hwc` is a pooled buffer (decision 37): whoever ends the frame's use
 * releases it there.
 */
export async function prepareFrameUint8(
  image: Uint8Array | DecodedPixels,
  inputWidth: number,
  inputHeight: number,
  maxSourcePixels: number = sourcePixelLimit(inputWidth, inputHeight),
  pool?: BufferPool,
): Promise<PreparedFrameUint8> {
  const { rgb, geometry } = await decodeForLetterbox(image, inputWidth, inputHeight, maxSourcePixels);
  const bytes = inputWidth * inputHeight * 3;
  // From the pool (decision 37) once decoded, so a corrupt frame never holds one.
  const hwc = pool ? new Uint8Array(pool.acquire(bytes)) : new Uint8Array(bytes);
  letterboxInto(hwc, rgb, inputWidth, geometry);
  releaseDecoded(rgb);
  return { hwc, geometry };
}

/**
 * The uint8 path's decode without the letterbox: the header check, then the RGB pixels at
 * the letterbox's resized size and its geometry (what {@link prepareFrameUint8} and the
 * decode thread letterbox from). The caller hands `rgb` to {@link releaseDecoded} once it
 * has copied the pixels out.
 */
export async function decodeForLetterbox(
  image: Uint8Array | DecodedPixels,
  inputWidth: number,
  inputHeight: number,
  maxSourcePixels: number,
): Promise<{ rgb: Uint8Array; geometry: LetterboxGeometry }> {
  if (!(image instanceof Uint8Array)) return pixelsForLetterbox(image, inputWidth, inputHeight, maxSourcePixels);
  // The size from the header in JS when it is a plain JPEG or PNG (image-header.ts), else from sharp.
  const { width, height } = await checkedSize(image, inputWidth, inputHeight, maxSourcePixels, declaredImageSize(image));
  const geometry = letterboxGeometry(width, height, inputWidth, inputHeight);
  const rgb = await decode(image, width, height, geometry, maxSourcePixels);
  const { resizedWidth, resizedHeight } = geometry;
  if (rgb.length !== resizedWidth * resizedHeight * 3) throw new ImageDecodeError(`decoded ${rgb.length} bytes, expected ${resizedWidth * resizedHeight * 3}`);
  return { rgb, geometry };
}

/**
 * A frame a segment decoder already decoded (gpu-worker/video/): the letterbox geometry of
 * its stream size, and its pixels at the resized size: as they are when the decoder
 * scaled them there (the worker asks it to: {@link FrameProcessor.inputSize}), else
 * resized here with the same linear kernel as an image. The source-pixel limit holds as
 * for images.
 */
async function pixelsForLetterbox(p: DecodedPixels, inputWidth: number, inputHeight: number, maxSourcePixels: number): Promise<{ rgb: Uint8Array; geometry: LetterboxGeometry }> {
  if (p.sourceWidth * p.sourceHeight > maxSourcePixels) {
    throw new ImageDecodeError(`${p.sourceWidth}x${p.sourceHeight} = ${p.sourceWidth * p.sourceHeight} px is over the ${maxSourcePixels} px limit for a ${inputWidth}x${inputHeight} model input`, 'image-too-large');
  }
  if (p.data.length !== p.width * p.height * 3) throw new ImageDecodeError(`decoded frame has ${p.data.length} bytes, expected ${p.width * p.height * 3}`);
  const geometry = letterboxGeometry(p.sourceWidth, p.sourceHeight, inputWidth, inputHeight);
  if (p.width === geometry.resizedWidth && p.height === geometry.resizedHeight) return { rgb: p.data, geometry };
  const rgb = await sharp(p.data, { raw: { width: p.width, height: p.height, channels: 3 } })
    .resize(geometry.resizedWidth, geometry.resizedHeight, { fit: 'fill', kernel: 'linear' })
    .raw()
    .toBuffer();
  return { rgb, geometry };
}

/**
 * Frees the memory of sharp's output `rgb` now, instead of at the next major collection
 * (decision 40): detaches its ArrayBuffer (`transfer(0)`), whose backing store V8 then
 * releases at once, and with it the libvips memory behind it. Call it only once the
 * pixels have been copied out and nothing else holds `rgb`.
 *
 * Why: sharp hands each frame's pixels over as a new Buffer (0.9 MB at 640x480) over
 * memory of its own. V8 counts that memory against the heap that received it and cannot
 * know it is dead until it collects, so tens of MB of dead frames pile up and then force
 * a full mark-compact. That heap is the decode thread's (about 11 MB of module code,
 * marked again every time), or the main thread's when the frame decodes there, whose
 * collections also pause the event loop that carries heartbeats and commits. Detached at
 * once, the frames never count: with main-thread decoding, 1-4 major collections per 160
 * frames instead of 12-17, and 1.1-2.7 core-ms less per 640x480 frame in
 * bench/pipeline-cpu.ts; 0.4 less in a near-empty heap (decision 40).
 *
 * Only a buffer that is the whole of its ArrayBuffer is detached: a view into a larger
 * one (Node's pool for small Buffers) shares it with others. Anything that cannot be
 * detached is left to the collector as before, so this never fails a frame.
 */
export function releaseDecoded(rgb: ArrayBufferView): void {
  // ES2024's ArrayBuffer.prototype.transfer and .detached (Node 22+), beyond the project's TS lib.
  const buffer = rgb.buffer as ArrayBuffer & { readonly detached?: boolean; transfer?: (length: number) => ArrayBuffer };
  if (!(buffer instanceof ArrayBuffer) || typeof buffer.transfer !== 'function') return;
  if (rgb.byteOffset !== 0 || rgb.byteLength !== buffer.byteLength || buffer.detached) return;
  try {
    buffer.transfer(0);
  } catch {
    // Not detachable (a buffer Node marked so): the collector frees it, as before.
  }
}

/**
 * Writes every byte of `hwc` (`inputWidth` x inputHeight x 3): grey 114 where the image
 * does not go (the bands above and below, each row's margins), the decoded `rgb` rows
 * where it does. Nothing is left from before, so a reused buffer's old contents never show.
 */
export function letterboxInto(hwc: Uint8Array, rgb: Uint8Array, inputWidth: number, g: LetterboxGeometry): void {
  const stride = inputWidth * 3;
  const rowBytes = g.resizedWidth * 3;
  const imageStart = g.padTop * stride;
  const imageEnd = (g.padTop + g.resizedHeight) * stride;
  hwc.fill(LETTERBOX_PAD_VALUE, 0, imageStart);
  hwc.fill(LETTERBOX_PAD_VALUE, imageEnd);
  if (g.resizedWidth === inputWidth) {
    hwc.set(rgb.subarray(0, rowBytes * g.resizedHeight), imageStart);
    return;
  }
  const left = g.padLeft * 3;
  for (let y = 0; y < g.resizedHeight; y++) {
    const row = imageStart + y * stride;
    hwc.fill(LETTERBOX_PAD_VALUE, row, row + left);
    hwc.set(rgb.subarray(y * rowBytes, (y + 1) * rowBytes), row + left);
    hwc.fill(LETTERBOX_PAD_VALUE, row + left + rowBytes, row + stride);
  }
}

/**
 * The size an image declares in its header (`header`, when already read in JS), refused as
 * `image-too-large` over `maxSourcePixels` before a single pixel is decoded. The header is read without sharp's
 * pixel limit, so an oversized frame is named as such (with its size) rather than by
 * sharp's message.
 */
async function checkedSize(
  image: Uint8Array,
  inputWidth: number,
  inputHeight: number,
  maxSourcePixels: number,
  header?: { width: number; height: number },
): Promise<{ width: number; height: number }> {
  let width: number;
  let height: number;
  if (header) {
    ({ width, height } = header);
  } else {
    try {
      const meta = await sharp(image, { failOn: 'error', limitInputPixels: false }).metadata();
      if (!meta.width || !meta.height) throw new Error('image has no dimensions');
      width = meta.width;
      height = meta.height;
    } catch (error) {
      throw new ImageDecodeError(error instanceof Error ? error.message : String(error));
    }
  }
  if (width * height > maxSourcePixels) {
    throw new ImageDecodeError(
      `${width}x${height} = ${width * height} px is over the ${maxSourcePixels} px limit for a ${inputWidth}x${inputHeight} model input`,
      'image-too-large',
    );
  }
  return { width, height };
}

/**
 * Decodes and resizes to `g`'s resized size,
 * as raw RGB bytes. sharp's `limitInputPixels` is kept at `maxSourcePixels` as a backstop
 * to the header check. A JPEG at least twice the resized size per axis is decoded at 1/2,
 * 1/4 or 1/8 scale by libjpeg's DCT scaling before the linear resize (sharp's
 * `fastShrinkOnLoad`, its default, stated here because the 1080p figure depends on it:
 * decision 40); the output size is exact either way, since both sides are given.
 */
async function decode(image: Uint8Array, width: number, height: number, g: LetterboxGeometry, maxSourcePixels: number): Promise<Buffer> {
  try {
    let pipeline = sharp(image, { failOn: 'error', limitInputPixels: maxSourcePixels }).removeAlpha().toColourspace('srgb');
    if (g.resizedWidth !== width || g.resizedHeight !== height) {
      // Ultralytics resizes with cv2.INTER_LINEAR.
      pipeline = pipeline.resize(g.resizedWidth, g.resizedHeight, { fit: 'fill', kernel: 'linear', fastShrinkOnLoad: true });
    }
    return await pipeline.raw().toBuffer();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ImageDecodeError(message, SHARP_PIXEL_LIMIT_MESSAGE.test(message) ? 'image-too-large' : 'corrupt-image');
  }
}
