/**
 * Decodes one encoded segment (H.264 / H.265 in MP4, MPEG-TS or Matroska) into frames,
 * with FFmpeg through node-av (docs/decisions.md 48: why this binding and not the
 * `ffmpeg` binary, and the numbers).
 *
 * {@link decodeSegment} is an async generator of {@link SegmentItem}s: the frames of the
 * segment in presentation order, numbered `firstFrame + i`, then exactly one `end` item
 * that says how many frames the segment covers (`k`, core/ingest/segment-keys.ts), which
 * decoder ran and, when the segment could not be read to its end, why, and which frames
 * it could not yield.
 *
 * - **Memory is bounded by the consumer.** Nothing is decoded ahead of the consumer's
 *   `next()`: one decoded frame (plus FFmpeg's own reference and reorder frames) lives
 *   at a time, whatever the segment's length. {@link readAhead} runs a bounded number of
 *   frames ahead where decoding should overlap the model.
 * - **Frames are packed RGB** (`channels: 3`, `width * height * 3` bytes, row-major), what
 *   sharp's `{ raw: { width, height, channels: 3 } }` and gpu-worker/vision's letterbox
 *   take.
 * - **Time** comes from the stream: `ptsMs` is the frame's presentation timestamp in the
 *   stream's time line (B-frames reordered, variable frame rates kept), `null` when the
 *   stream carries none.
 * - **Failures never throw.** An empty object, an unreadable container, no video stream,
 *   another codec, a frame over the pixel limit, or a decode or demux error mid-stream
 *   ends the segment with `failure`: the frames decoded before it were yielded, and
 *   `failure.from`/`failure.to` are the frames it cannot yield (from the uploader's
 *   declared count or the container's, when either is known). A segment that ends
 *   cleanly but short of that count fails the rest as `truncated`.
 * - **CPU by default, NVDEC on request** (`hardware: 'cuda' | 'auto'`): when no CUDA
 *   device opens, or the hardware decoder fails before the segment's end, the segment
 *   is decoded on the CPU instead (frames already yielded are not yielded again), and
 *   `decoder` says so.
 */
import { Decoder, Demuxer, HardwareContext, Scaler } from 'node-av/api';
import { Log } from 'node-av/lib';
import { AV_CODEC_ID_H264, AV_CODEC_ID_HEVC, AV_HWDEVICE_TYPE_CUDA, AV_LOG_FATAL, AV_NOPTS_VALUE } from 'node-av/constants';
import { segmentFrameCount, type FrameCountSource, type SourceContainer } from '../../core/ingest/segment-keys.ts';

/** Why a segment's frames could not all be yielded (the `failed` record's reason). */
export type SegmentFailureReason =
  | 'empty-object'
  | 'unreadable-container'
  | 'no-video-stream'
  | 'unsupported-codec'
  | 'frame-too-large'
  | 'decode-error'
  | 'truncated';

export interface DecodedFrame {
  readonly kind: 'frame';
  /** `firstFrame + index`. */
  readonly frame: number;
  /** Position in the segment, presentation order. */
  readonly index: number;
  /** Presentation time in the stream's time line, ms (fractions kept to the µs); null when the stream has none. */
  readonly ptsMs: number | null;
  /** Size of `data`: the source's, or `resize` when given. */
  readonly width: number;
  readonly height: number;
  /** The frame's size in the stream (what detections map back to). */
  readonly sourceWidth: number;
  readonly sourceHeight: number;
  readonly channels: 3;
  /** Packed RGB, `width * height * 3` bytes. */
  readonly data: Buffer;
}

export interface SegmentEnd {
  readonly kind: 'end';
  /** Frames yielded. */
  readonly decoded: number;
  /** `k`: the frames `[firstFrame, firstFrame + k)` the segment covers (segment-keys.ts). */
  readonly frameCount: number;
  readonly frameCountSource: FrameCountSource;
  /** The decoder that produced the frames, e.g. `h264 cpu` or `hevc nvdec (cuda)`; `none` when nothing opened. */
  readonly decoder: string;
  /** Frames decoded past a declared count, dropped (they would be numbered into the next segment). */
  readonly surplus: number;
  readonly failure?: {
    readonly reason: SegmentFailureReason;
    /** FFmpeg's message, or what was wrong. */
    readonly detail: string;
    /** Frames `[from, to)` that get `failed` records with this reason; empty when the count is unknown. */
    readonly from: number;
    readonly to: number;
  };
}

export type SegmentItem = DecodedFrame | SegmentEnd;

export type HardwarePreference = 'cpu' | 'cuda' | 'auto';

export interface SegmentDecodeOptions {
  /** `n`, from the key. */
  readonly firstFrame: number;
  /** How the object is packed, from the key; only a hint, FFmpeg probes the bytes. */
  readonly container?: Exclude<SourceContainer, 'image'>;
  /** The uploader's declared frame count (`x-amz-meta-frames`), when there is one. */
  readonly declaredFrames?: number;
  /** @default 'cpu' */
  readonly hardware?: HardwarePreference;
  /** Largest `width * height` decoded. @default 7680 * 4320 (8K) */
  readonly maxSourcePixels?: number;
  /** FFmpeg decoder threads per segment; 1 spends the least CPU per frame, segments of other videos run side by side. @default 1 */
  readonly threads?: number;
  /**
   * Scale every frame to this size while converting to RGB (bilinear, FFmpeg's swscale, or
   * on the GPU with NVDEC): the letterbox's `resizedWidth` x `resizedHeight`, so a 1080p
   * frame never exists as full-size RGB. @default the source's size
   */
  readonly resize?: FrameSize | ((sourceWidth: number, sourceHeight: number) => FrameSize | undefined);
}

export interface FrameSize {
  readonly width: number;
  readonly height: number;
}

const DEFAULT_MAX_SOURCE_PIXELS = 7680 * 4320;
const CODEC_NAMES = new Map<number, string>([
  [AV_CODEC_ID_H264 as number, 'h264'],
  [AV_CODEC_ID_HEVC as number, 'hevc'],
]);

let logLevelSet = false;
/** FFmpeg logs every concealed macroblock to stderr; failures reach the caller as `failure.detail` instead. */
function quietFfmpeg(): void {
  if (logLevelSet) return;
  Log.setLevel(AV_LOG_FATAL);
  logLevelSet = true;
}

/** One CUDA device per process, opened at first use; `null` with the reason when there is none. */
let cuda: { readonly hw: HardwareContext | null; readonly why: string } | undefined;
function cudaDevice(): { readonly hw: HardwareContext | null; readonly why: string } {
  if (cuda === undefined) {
    try {
      const hw = HardwareContext.create(AV_HWDEVICE_TYPE_CUDA);
      cuda = hw ? { hw, why: '' } : { hw: null, why: 'no CUDA device opened' };
    } catch (e) {
      cuda = { hw: null, why: `CUDA device failed: ${message(e)}` };
    }
  }
  return cuda;
}

/**
 * Which decoder `hardware` gets on this machine, for the worker's start-up log and metric
 * (as the execution provider is reported): `nvdec (cuda)` or `cpu`, with the reason
 * NVDEC was not taken when it was asked for.
 */
export function describeDecoderChoice(hardware: HardwarePreference): { readonly decoder: 'nvdec (cuda)' | 'cpu'; readonly note?: string } {
  if (hardware === 'cpu') return { decoder: 'cpu' };
  const { hw, why } = cudaDevice();
  return hw ? { decoder: 'nvdec (cuda)' } : { decoder: 'cpu', note: why };
}

class StopDecoding extends Error {
  readonly reason: SegmentFailureReason;

  constructor(reason: SegmentFailureReason, detail: string) {
    super(detail);
    this.reason = reason;
  }
}

/** A hardware decoder's failure, to retry the segment on the CPU. */
class HardwareFailed extends Error {}

/**
 * Decodes `input` (the segment's bytes, or a file path) as frames `firstFrame, firstFrame + 1, ...`.
 * See the module comment for the contract.
 */
export async function* decodeSegment(input: Uint8Array | string, options: SegmentDecodeOptions): AsyncGenerator<SegmentItem, void, undefined> {
  quietFfmpeg();
  const n = options.firstFrame;
  if (options.resize && typeof options.resize !== 'function') checkSize(options.resize);
  const container = options.container ?? 'mp4';
  let decoded = 0;
  let surplus = 0;
  let containerFrames: number | undefined;
  let decoder = 'none';
  let failure: { reason: SegmentFailureReason; detail: string } | undefined;

  const wantHw = (options.hardware ?? 'cpu') !== 'cpu';
  let hwNote = '';
  let hw: HardwareContext | null = null;
  if (wantHw) {
    const device = cudaDevice();
    hw = device.hw;
    if (!hw) hwNote = ` (${options.hardware} asked: ${device.why})`;
  }

  if (typeof input !== 'string' && input.byteLength === 0) {
    failure = { reason: 'empty-object', detail: 'the object has no bytes' };
  } else {
    for (;;) {
      try {
        for await (const item of decodeOnce(input, options, hw, decoded)) {
          if (item.kind === 'opened') {
            decoder = `${item.codec} ${hw ? 'nvdec (cuda)' : 'cpu'}${hwNote}`;
            containerFrames = item.containerFrames;
            continue;
          }
          if (options.declaredFrames !== undefined && decoded >= options.declaredFrames) {
            surplus++;
            continue;
          }
          yield { ...item, frame: n + decoded, index: decoded };
          decoded++;
        }
      } catch (e) {
        if (e instanceof HardwareFailed && hw) {
          // Decode the segment again on the CPU; the frames already yielded are skipped.
          hwNote = ` (nvdec failed after ${decoded} frames: ${e.message})`;
          hw = null;
          continue;
        }
        failure = e instanceof StopDecoding ? { reason: e.reason, detail: e.message } : { reason: 'decode-error', detail: message(e) };
      }
      break;
    }
  }

  const { frameCount, source } = segmentFrameCount({ container, declared: options.declaredFrames, containerFrames, decoded });
  if (!failure && decoded < frameCount) {
    failure = { reason: 'truncated', detail: `the decoder yielded ${decoded} of the ${frameCount} frames the ${source === 'declared' ? 'uploader declared' : 'container states'}` };
  }
  const end: SegmentEnd = {
    kind: 'end',
    decoded,
    frameCount: Math.max(frameCount, decoded),
    frameCountSource: source,
    decoder,
    surplus,
    ...(failure ? { failure: { ...failure, from: n + decoded, to: n + Math.max(frameCount, decoded) } } : {}),
  };
  yield end;
}

type RawItem =
  | { readonly kind: 'opened'; readonly codec: string; readonly containerFrames: number | undefined }
  | Omit<DecodedFrame, 'frame' | 'index'>;

/** One pass over the segment with one decoder; skips the first `skip` frames (already yielded by a failed hardware pass). */
async function* decodeOnce(input: Uint8Array | string, options: SegmentDecodeOptions, hw: HardwareContext | null, skip: number): AsyncGenerator<RawItem, void, undefined> {
  let demuxer: Demuxer;
  try {
    demuxer = await Demuxer.open(typeof input === 'string' ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength));
  } catch (e) {
    throw new StopDecoding('unreadable-container', message(e));
  }
  let dec: Decoder | undefined;
  let scaler: Scaler | undefined;
  try {
    const stream = demuxer.video();
    if (!stream) throw new StopDecoding('no-video-stream', 'the object holds no video stream');
    const codec = CODEC_NAMES.get(stream.codecpar.codecId as number);
    if (!codec) throw new StopDecoding('unsupported-codec', `codec id ${stream.codecpar.codecId} is neither H.264 nor H.265`);
    const { width, height } = stream.codecpar;
    const maxPixels = options.maxSourcePixels ?? DEFAULT_MAX_SOURCE_PIXELS;
    if (width * height > maxPixels) throw new StopDecoding('frame-too-large', `${width}x${height} is over ${maxPixels} pixels`);
    const nb = Number(stream.nbFrames);
    const tb = stream.timeBase;
    try {
      dec = await Decoder.create(stream, {
        hardware: hw,
        exitOnError: true,
        context: { threadCount: options.threads ?? 1 },
      });
    } catch (e) {
      if (hw) throw new HardwareFailed(message(e));
      throw new StopDecoding('decode-error', message(e));
    }
    // Not the decoder's own `rescale`: its frames come out renumbered 0, 1, 2, ... (node-av 6.1), losing the stream's time.
    // A hardware frame is converted on the GPU and only the RGB result is downloaded.
    scaler = new Scaler({ hardware: hw });
    yield { kind: 'opened', codec, containerFrames: nb > 0 ? nb : undefined };
    let index = 0;
    try {
      for await (const f of dec.frames(demuxer.packets(stream.index))) {
        if (!f) continue;
        try {
          if (index++ < skip) continue;
          if (f.width * f.height > maxPixels) throw new StopDecoding('frame-too-large', `${f.width}x${f.height} is over ${maxPixels} pixels`);
          const ts = f.bestEffortTimestamp !== AV_NOPTS_VALUE ? f.bestEffortTimestamp : f.pts;
          const ptsMs = ts === AV_NOPTS_VALUE || tb.den === 0 ? null : Math.round((Number(ts) * tb.num * 1_000_000) / tb.den) / 1000;
          const wanted = typeof options.resize === 'function' ? options.resize(f.width, f.height) : options.resize;
          if (wanted && typeof options.resize === 'function') checkSize(wanted);
          const size = wanted ?? { width: f.width, height: f.height };
          const data = await scaler.toBuffer(f, { format: 'rgb', ...(wanted ? { resize: { width: size.width, height: size.height } } : {}) });
          yield { kind: 'frame', ptsMs, width: size.width, height: size.height, sourceWidth: f.width, sourceHeight: f.height, channels: 3, data };
        } finally {
          f.free();
        }
      }
    } catch (e) {
      if (e instanceof StopDecoding) throw e;
      if (hw) throw new HardwareFailed(message(e));
      throw new StopDecoding('decode-error', message(e));
    }
  } finally {
    scaler?.close();
    dec?.close();
    await demuxer.close();
  }
}

/**
 * Runs up to `depth` items ahead of the consumer: decoding overlaps whatever the consumer
 * does with a frame (the model), and at most `depth` decoded frames wait at any time.
 * Ending the consumer's loop early stops the source.
 */
export async function* readAhead<T>(source: AsyncIterable<T>, depth: number): AsyncGenerator<T, void, undefined> {
  if (!(depth >= 1)) throw new RangeError(`depth ${depth} must be at least 1`);
  const it = source[Symbol.asyncIterator]();
  const pending: Promise<IteratorResult<T>>[] = [];
  let done = false;
  const fill = (): void => {
    // One pull at a time: an async generator serialises next() anyway, and a pull past the end is harmless.
    while (!done && pending.length < depth) pending.push(it.next());
  };
  try {
    fill();
    while (pending.length > 0) {
      const r = await pending.shift()!;
      if (r.done) {
        done = true;
        return;
      }
      fill();
      yield r.value;
    }
  } finally {
    pending.length = 0;
    await it.return?.();
  }
}

function checkSize(size: FrameSize): void {
  if (!(Number.isInteger(size.width) && Number.isInteger(size.height) && size.width > 0 && size.height > 0)) {
    throw new RangeError(`resize ${size.width}x${size.height} must be positive integers`);
  }
}

/**
 * How many frames a segment holds, without decoding: the container's count when it states
 * one (MP4's sample table), else the video packets the demuxer finds (MPEG-TS, Matroska),
 * each one frame. `undefined` when the bytes are no readable container with a video
 * stream: the decoder then says why (`failed` records). For `k` when the uploader declared
 * none (core/ingest/segment-keys.ts).
 */
export async function countSegmentFrames(input: Uint8Array): Promise<number | undefined> {
  quietFfmpeg();
  if (input.byteLength === 0) return undefined;
  let demuxer: Demuxer;
  try {
    demuxer = await Demuxer.open(Buffer.from(input.buffer, input.byteOffset, input.byteLength));
  } catch {
    return undefined;
  }
  try {
    const stream = demuxer.video();
    if (!stream) return undefined;
    const nb = Number(stream.nbFrames);
    if (nb > 0) return nb;
    let packets = 0;
    try {
      for await (const p of demuxer.packets(stream.index)) {
        if (!p) continue;
        packets++;
        p.free();
      }
    } catch {
      // A demux error mid-way: count what was read; the decoder reports the rest.
    }
    return packets > 0 ? packets : undefined;
  } finally {
    await demuxer.close();
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
