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
 * - **Damage costs only the damaged frames** (issue 41). The decoder goes on past a bad
 *   packet as FFmpeg's own `ffmpeg` does: libavcodec conceals what it can (a frame with
 *   concealed macroblocks is yielded, as `ffmpeg` outputs it, and counted in `concealed`),
 *   and a frame it cannot produce at all is a `lost` item at its own index, with the
 *   decoder's reason, while the frames after it keep theirs. A frame's index is its
 *   packet's rank in presentation order (the segment's packet timestamps, read by a
 *   demux-only pass first), so one missing frame does not renumber the rest; a stream
 *   whose packets carry no distinct timestamps is numbered in output order instead.
 * - **Failures never throw.** An empty object, an unreadable container, no video stream,
 *   another codec, a frame over the pixel limit, or a demux error mid-stream ends the
 *   segment with `failure`: the frames decoded before it were yielded, and
 *   `failure.from`/`failure.to` are the frames it cannot yield (from the uploader's
 *   declared count or the container's, when either is known). A segment that ends
 *   short of that count fails the rest as `truncated` (or `decode-error`, with the
 *   decoder's reason, when its last packets were the damaged ones).
 * - **CPU by default, NVDEC on request** (`hardware: 'cuda' | 'auto'`): when no CUDA
 *   device opens, or the hardware decoder fails before the segment's end, the segment
 *   is decoded on the CPU instead (frames already yielded are not yielded again), and
 *   `decoder` says so.
 * - **Where frames were decoded is read off the frames** (issue 43): NVDEC initialises
 *   while frames decode, not when the decoder opens, and when it cannot take a stream
 *   FFmpeg quietly retries without it ("Format cuda not usable, retrying get_format()
 *   without it") and hands out software frames. So `placement` comes from the first
 *   decoded frame (`isHwFrame()`): `nvdec`, `cpu` (as configured: `cpu`, or `auto` where no
 *   CUDA device opens) or `cpu-fallback` (NVDEC expected: `cuda`, or `auto` with a CUDA
 *   device; the CPU decoded), with `fallbackReason` saying why ({@link nvdecRefusal}:
 *   4:4:4, 4:2:2, 10-bit H.264, too large; no device; a failure mid-segment).
 */
import { Decoder, Demuxer, HardwareContext, Scaler, type DecoderOptions } from 'node-av/api';
import { avGetCodecName, avGetPixFmtName, FFmpegError, Frame, Log, type Stream } from 'node-av/lib';
import { AV_CODEC_ID_H264, AV_CODEC_ID_HEVC, AV_HWDEVICE_TYPE_CUDA, AV_LOG_FATAL, AV_FRAME_FLAG_CORRUPT, AV_NOPTS_VALUE, AVERROR_EAGAIN, AVERROR_EOF, type AVPixelFormat } from 'node-av/constants';
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
  /**
   * Where the frames were decoded, read off the first decoded frame (hardware frame or
   * not): one of a small fixed set, the `Decoder` dimension of the worker's metrics.
   * `none` when no frame was decoded.
   */
  readonly placement: DecoderPlacement | 'none';
  /** `h264` or `hevc`, once the stream was read. */
  readonly codec?: string;
  /** With `placement: 'cpu-fallback'`: why NVDEC was not used (no device, the stream's format, a failure mid-segment). */
  readonly fallbackReason?: string;
  /** Frames decoded past a declared count, dropped (they would be numbered into the next segment). */
  readonly surplus: number;
  /** `lost` items yielded: frames inside the segment the decoder could not produce. Absent when none. */
  readonly lost?: number;
  /** Frames yielded with macroblocks the decoder concealed (damage it repaired, as `ffmpeg` does). Absent when none. */
  readonly concealed?: number;
  readonly failure?: {
    readonly reason: SegmentFailureReason;
    /** FFmpeg's message, or what was wrong. */
    readonly detail: string;
    /** Frames `[from, to)` that get `failed` records with this reason; empty when the count is unknown. */
    readonly from: number;
    readonly to: number;
  };
}

/**
 * A frame of the segment the decoder could not produce (its packet was damaged, or it
 * refers to a damaged frame), at its own index: the frames after it are still yielded.
 */
export interface LostFrame {
  readonly kind: 'lost';
  /** `firstFrame + index`. */
  readonly frame: number;
  readonly index: number;
  readonly reason: 'decode-error';
  /** FFmpeg's error for the frame's packet, or why there is no frame. */
  readonly detail: string;
}

export type SegmentItem = DecodedFrame | LostFrame | SegmentEnd;

export type HardwarePreference = 'cpu' | 'cuda' | 'auto';

/**
 * Where a segment's frames were decoded, the only values the `Decoder` metric dimension
 * takes (never error text or counts: each distinct value is a CloudWatch metric of its own):
 * `nvdec` (hardware frames), `cpu` (the CPU, as `videoDecoder: cpu` asks) and
 * `cpu-fallback` (NVDEC was asked for and the CPU decoded: the `WorkerDecodingOnCpu` alarm).
 */
export type DecoderPlacement = 'nvdec' | 'cpu' | 'cpu-fallback';
export const DECODER_PLACEMENTS: readonly DecoderPlacement[] = ['nvdec', 'cpu', 'cpu-fallback'];

/**
 * The CUDA device and the decoder factory decodeSegment uses: node-av's by default. A test
 * swaps in a device that "opens" and a factory that ignores it, which is what FFmpeg does
 * when NVDEC cannot take a stream (software frames from a decoder given a CUDA device).
 */
export interface DecodeDevice {
  /** The CUDA device NVDEC decodes on, opened once; `hw: null` with the reason when there is none. */
  cuda(): { readonly hw: HardwareContext | null; readonly why: string; readonly context?: 'primary' | 'own' };
  /** Opens a decoder for `stream` (node-av's `Decoder.create`). */
  createDecoder(stream: Stream, options: DecoderOptions): Promise<Decoder>;
}

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
  /** @default {@link nodeAvDevice} */
  readonly device?: DecodeDevice;
}

export interface FrameSize {
  readonly width: number;
  readonly height: number;
}

const DEFAULT_MAX_SOURCE_PIXELS = 7680 * 4320;
/**
 * Frames held past a hole in the numbering, waiting for it to fill: H.264's largest
 * decoded picture buffer. Only a damaged stream holds any (frames come out in order
 * otherwise), and a hole still open beyond it is lost.
 */
const HELD_FRAMES = 16;
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

/**
 * FFmpeg's CUDA device options: `primary_ctx` makes FFmpeg retain the GPU's primary context
 * (cuDevicePrimaryCtxRetain) instead of creating a context of its own. ONNX Runtime's CUDA
 * execution provider runs on the CUDA runtime, which uses that same primary context, so
 * decode and inference share one context instead of two that the GPU time-slices, and the
 * context's memory (a few hundred MiB) is paid once (issue 43, item 3).
 *
 * FFmpeg wants the primary context with CU_CTX_SCHED_BLOCKING_SYNC and refuses it ("Primary
 * context already active with incompatible flags") when something else activated it first
 * with other flags, as ONNX Runtime's session does. So the worker opens the device before
 * its model loads (gpu-worker/main.ts), and {@link cudaDevice} falls back to a context of
 * FFmpeg's own rather than lose NVDEC; `describeDecoderChoice` says which it got.
 */
export const CUDA_DEVICE_OPTIONS: Readonly<Record<string, string>> = { primary_ctx: '1' };

/** One CUDA device per process, opened at first use; `null` with the reason when there is none. */
let cuda: { readonly hw: HardwareContext | null; readonly why: string; readonly context?: 'primary' | 'own' } | undefined;
function cudaDevice(): { readonly hw: HardwareContext | null; readonly why: string; readonly context?: 'primary' | 'own' } {
  if (cuda === undefined) {
    try {
      const primary = HardwareContext.create(AV_HWDEVICE_TYPE_CUDA, undefined, { ...CUDA_DEVICE_OPTIONS });
      // The primary context refused (active with other flags): a context of FFmpeg's own keeps NVDEC.
      const hw = primary ?? HardwareContext.create(AV_HWDEVICE_TYPE_CUDA);
      cuda = hw ? { hw, why: '', context: primary ? 'primary' : 'own' } : { hw: null, why: 'no CUDA device opened' };
    } catch (e) {
      cuda = { hw: null, why: `CUDA device failed: ${message(e)}` };
    }
  }
  return cuda;
}

/** node-av's CUDA device (opened once per process) and `Decoder.create`. */
export const nodeAvDevice: DecodeDevice = { cuda: cudaDevice, createDecoder: (stream, options) => Decoder.create(stream, options) };

/**
 * Which decoder `hardware` is expected to get on this machine, before any frame: for the
 * worker's start-up log and metric (as the execution provider is reported). `nvdec` when
 * a CUDA device opened (the frames then say whether NVDEC really decodes: see
 * `placement`), `cpu` when the CPU was asked for or `auto` found no CUDA device (with the
 * reason), `cpu-fallback` with the reason when `cuda` was asked for and no device opened.
 */
export function describeDecoderChoice(hardware: HardwarePreference, device: DecodeDevice = nodeAvDevice): { readonly decoder: DecoderPlacement; readonly note?: string } {
  if (hardware === 'cpu') return { decoder: 'cpu' };
  const { hw, why, context } = device.cuda();
  if (hw && context === 'own') return { decoder: 'nvdec', note: 'FFmpeg has a CUDA context of its own: the primary one was active with other flags (decode and inference time-slice two contexts)' };
  if (hw) return { decoder: 'nvdec' };
  // `auto` means "the CPU where there is no CUDA device": as configured, not a fallback.
  return { decoder: hardware === 'cuda' ? 'cpu-fallback' : 'cpu', note: why };
}

/** What {@link nvdecRefusal} reads of a stream. */
export interface StreamFormat {
  readonly codec: string;
  /** FFmpeg's pixel format name (`yuv420p`, `yuv444p`, `yuv420p10le`); undefined when unknown. */
  readonly pixelFormat: string | undefined;
  readonly width: number;
  readonly height: number;
}

/**
 * Why NVDEC cannot decode a stream, from its format, or undefined when it can (as far as
 * the format says: libnvcuvid or GPU memory may still be missing). NVIDIA's decode support
 * matrix for the GPUs the stack allows (Turing T4, Ampere A10G/A100, Ada L4/L40S, Hopper):
 * H.264 is 8-bit 4:2:0 only, at most 4096x4096; HEVC takes 4:2:0 and 4:4:4 at 8 to 12
 * bits up to 8192x8192, but 4:2:2 only from Blackwell on.
 */
export function nvdecRefusal(f: StreamFormat): string | undefined {
  const pf = f.pixelFormat ?? '';
  const chroma = /444/.test(pf) ? '4:4:4' : /422/.test(pf) ? '4:2:2' : undefined;
  const deep = /p(9|10|12|14|16)(le|be)?$/.test(pf);
  if (f.codec === 'h264') {
    if (chroma) return `H.264 ${chroma} (${pf}): NVDEC decodes H.264 in 4:2:0 only; encode the camera's stream as 4:2:0 (yuv420p)`;
    if (deep) return `10-bit H.264 (${pf}): NVDEC decodes 8-bit H.264 only; encode 8-bit (High profile) or HEVC Main 10`;
    if (f.width > 4096 || f.height > 4096) return `H.264 ${f.width}x${f.height}: NVDEC decodes H.264 up to 4096x4096; send HEVC for larger frames`;
  }
  if (f.codec === 'hevc') {
    if (chroma === '4:2:2') return `HEVC 4:2:2 (${pf}): NVDEC before Blackwell decodes HEVC in 4:2:0 and 4:4:4 only`;
    if (f.width > 8192 || f.height > 8192) return `HEVC ${f.width}x${f.height}: NVDEC decodes HEVC up to 8192x8192`;
  }
  return undefined;
}

/** Why FFmpeg decoded in software although a CUDA device opened, when the stream's format does not say. */
export const SILENT_FALLBACK_REASON =
  'FFmpeg decoded in software although a CUDA device opened: NVDEC is unusable here (libnvcuvid not mounted: NVIDIA_DRIVER_CAPABILITIES lacks video; too little GPU memory; a profile this GPU lacks)';

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
  /** The next index to yield (frame or lost): every index below it has had its item. */
  let next = 0;
  let lost = 0;
  let concealed = 0;
  let surplus = 0;
  let containerFrames: number | undefined;
  let decoder = 'none';
  let codec: string | undefined;
  let placement: DecoderPlacement | 'none' = 'none';
  let fallbackReason: string | undefined;
  let failure: { reason: SegmentFailureReason; detail: string } | undefined;
  /** The last packet error, for frames missing at the end of the segment. */
  let lastError: string | undefined;

  const device = options.device ?? nodeAvDevice;
  const wantHw = (options.hardware ?? 'cpu') !== 'cpu';
  let hwNote = '';
  let hw: HardwareContext | null = null;
  /** Why NVDEC cannot take this stream, from its format (set when the stream is read). */
  let refusal: string | undefined;
  if (wantHw) {
    const cudaDev = device.cuda();
    hw = cudaDev.hw;
    if (!hw) {
      fallbackReason = cudaDev.why;
      hwNote = ` (${options.hardware} asked: ${cudaDev.why})`;
    }
  }
  // NVDEC is expected where `cuda` asks for it, or `auto` found a CUDA device: CPU frames then are a fallback
  // (alarmed). `auto` without a device decodes on the CPU as configured (the start log says why).
  const nvdecExpected = options.hardware === 'cuda' || (options.hardware === 'auto' && hw !== null);

  type Raw = Extract<RawItem, { kind: 'raw' }>;
  /** Frames decoded past a hole, by index: a damaged stream may still hand out the frames of the hole. */
  const held: { index: number; item: Raw }[] = [];
  /** Yields frame `index`, each frame of the hole before it as `lost`. */
  const emit = function* (index: number, item: Raw): Generator<SegmentItem, void, undefined> {
    for (; next < index; next++, lost++) {
      yield { kind: 'lost', frame: n + next, index: next, reason: 'decode-error', detail: item.missing(next) };
    }
    if (item.concealed) concealed++;
    yield { ...item.frame, frame: n + index, index };
    decoded++;
    next = index + 1;
  };
  /** Yields the held frames that are due: those that close up with `next`, and beyond {@link HELD_FRAMES} (or `all`) the lowest. */
  const release = function* (all: boolean): Generator<SegmentItem, void, undefined> {
    while (held.length > 0 && (all || held[0]!.index === next || held.length > HELD_FRAMES)) {
      const h = held.shift()!;
      yield* emit(h.index, h.item);
    }
  };

  if (typeof input !== 'string' && input.byteLength === 0) {
    failure = { reason: 'empty-object', detail: 'the object has no bytes' };
  } else {
    for (;;) {
      try {
        for await (const item of decodeOnce(input, options, hw, next, device)) {
          if (item.kind === 'opened') {
            codec = item.codec;
            refusal = wantHw ? nvdecRefusal(item.format) : undefined;
            decoder = `${item.codec} ${hw ? 'nvdec (cuda)' : 'cpu'}${hwNote}`;
            containerFrames = item.containerFrames;
            continue;
          }
          if (item.kind === 'placed') {
            // The truth: a CUDA frame or not. A decoder given a CUDA device may still hand out software frames.
            placement = item.hardware ? 'nvdec' : nvdecExpected ? 'cpu-fallback' : 'cpu';
            if (placement === 'cpu-fallback' && hw) {
              fallbackReason = refusal ?? SILENT_FALLBACK_REASON;
              hwNote = ` (${options.hardware} asked: ${fallbackReason})`;
            }
            decoder = `${item.codec} ${item.hardware ? 'nvdec (cuda)' : 'cpu'}${hwNote}`;
            continue;
          }
          if (item.kind === 'packet-error') {
            lastError = item.detail;
            continue;
          }
          const index = item.rank ?? next;
          // Below `next`: yielded or declared lost already (a hardware pass's frames, or a frame out of order past the hold).
          if (index < next) continue;
          if (options.declaredFrames !== undefined && index >= options.declaredFrames) {
            surplus++;
            continue;
          }
          if (index === next) {
            yield* emit(index, item);
            yield* release(false);
          } else if (!held.some((h) => h.index === index)) {
            // Past a hole: a damaged stream can hand frames out of order, so the hole may still fill. Held, bounded.
            held.push({ index, item });
            held.sort((a, b) => a.index - b.index);
            yield* release(false);
          }
        }
        yield* release(true);
      } catch (e) {
        if (e instanceof HardwareFailed && hw) {
          // Decode the segment again on the CPU; the frames already yielded are skipped, those held decode again.
          fallbackReason = `nvdec failed after ${decoded} frames: ${e.message}`;
          hwNote = ` (${fallbackReason})`;
          hw = null;
          held.length = 0;
          continue;
        }
        // What was decoded before the failure still goes out, in order.
        yield* release(true);
        failure = e instanceof StopDecoding ? { reason: e.reason, detail: e.message } : { reason: 'decode-error', detail: message(e) };
      }
      break;
    }
  }

  const { frameCount, source } = segmentFrameCount({ container, declared: options.declaredFrames, containerFrames, decoded: next });
  if (!failure && next < frameCount) {
    failure = lastError
      ? { reason: 'decode-error', detail: `the decoder produced ${decoded} of the ${frameCount} frames: ${lastError}` }
      : { reason: 'truncated', detail: `the decoder yielded ${decoded} of the ${frameCount} frames the ${source === 'declared' ? 'uploader declared' : 'container states'}` };
  }
  const end: SegmentEnd = {
    kind: 'end',
    decoded,
    frameCount: Math.max(frameCount, next),
    frameCountSource: source,
    decoder,
    placement,
    ...(codec !== undefined ? { codec } : {}),
    ...(placement === 'cpu-fallback' && fallbackReason !== undefined ? { fallbackReason } : {}),
    surplus,
    ...(lost > 0 ? { lost } : {}),
    ...(concealed > 0 ? { concealed } : {}),
    ...(failure ? { failure: { ...failure, from: n + next, to: n + Math.max(frameCount, next) } } : {}),
  };
  yield end;
}

type RawItem =
  | { readonly kind: 'opened'; readonly codec: string; readonly containerFrames: number | undefined; readonly format: StreamFormat }
  /** The pass's first decoded frame: whether it is a hardware (CUDA) frame. */
  | { readonly kind: 'placed'; readonly codec: string; readonly hardware: boolean }
  /** A packet the decoder refused (FFmpeg's error): its frame, if it never comes, is lost with this reason. */
  | { readonly kind: 'packet-error'; readonly detail: string }
  | {
      readonly kind: 'raw';
      /** The frame's index by its timestamp's rank among the segment's packets; undefined: numbered in output order. */
      readonly rank: number | undefined;
      readonly concealed: boolean;
      readonly frame: Omit<DecodedFrame, 'frame' | 'index'>;
      /** Why the frame at `index` (skipped before this one) was not produced. */
      readonly missing: (index: number) => string;
    };

/**
 * The presentation timestamps of the segment's video packets, sorted: a frame's index is
 * its timestamp's rank. `undefined` when they cannot number frames (a packet without one,
 * or two alike), or the bytes cannot be demuxed (the decoding pass says why).
 */
async function packetTimes(input: Uint8Array | string): Promise<bigint[] | undefined> {
  let demuxer: Demuxer;
  try {
    demuxer = await Demuxer.open(typeof input === 'string' ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength));
  } catch {
    return undefined;
  }
  try {
    const stream = demuxer.video();
    if (!stream) return undefined;
    const times: bigint[] = [];
    try {
      for await (const p of demuxer.packets(stream.index)) {
        if (!p) continue;
        const pts = p.pts;
        p.free();
        if (pts === AV_NOPTS_VALUE) return undefined;
        times.push(pts);
      }
    } catch {
      // A demux error mid-way: the packets read so far still rank their frames.
    }
    times.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (let i = 1; i < times.length; i++) if (times[i] === times[i - 1]) return undefined;
    return times;
  } finally {
    await demuxer.close();
  }
}

/**
 * Where each packet's frame sits in the segment: its rank, unless the uploader declared
 * more frames than the object holds packets (packets cut out) and the timestamps show
 * where they were: a constant frame rate whose holes (whole multiples of the frame
 * duration) account for no more frames than were declared. Then the frames after a hole
 * keep their own numbers. Pure; `slots[i]` is the index of the packet with `times[i]`.
 */
export function frameSlots(times: readonly bigint[], declared: number | undefined): number[] {
  const ranks = times.map((_, i) => i);
  if (declared === undefined || declared <= times.length || times.length < 3) return ranks;
  const steps = times.slice(1).map((t, i) => Number(t - times[i]!));
  const step = [...steps].sort((a, b) => a - b)[steps.length >> 1]!;
  if (!(step > 0)) return ranks;
  const slots = [0];
  for (const d of steps) {
    const k = Math.round(d / step);
    if (k < 1 || Math.abs(d - k * step) > step * 0.01) return ranks; // not a constant rate: no evidence where a frame is missing
    slots.push(slots[slots.length - 1]! + k);
  }
  return slots[slots.length - 1]! < declared ? slots : ranks;
}

function rankOf(times: readonly bigint[], pts: bigint): number | undefined {
  let lo = 0;
  let hi = times.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const t = times[mid]!;
    if (t === pts) return mid;
    if (t < pts) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/**
 * One pass over the segment with one decoder; skips frames ranked below `skip` (already
 * yielded by a failed hardware pass). Packets go to the codec one by one and a refused
 * packet does not stop the pass (what `ffmpeg` does): its error is reported, and the
 * decoder goes on with the next, concealing what it can. Frames flagged corrupt are
 * yielded as `ffmpeg` outputs them (node-av's Decoder drops them, so the codec context
 * is driven here directly).
 */
async function* decodeOnce(
  input: Uint8Array | string,
  options: SegmentDecodeOptions,
  hw: HardwareContext | null,
  skip: number,
  device: DecodeDevice,
): AsyncGenerator<RawItem, void, undefined> {
  const times = await packetTimes(input);
  const slots = times ? frameSlots(times, options.declaredFrames) : undefined;
  /** The packet timestamp at each slot (a slot without one: the object holds no packet for that frame). */
  const timeAt = new Map<number, bigint>(times?.map((t, i) => [slots![i]!, t]));
  let demuxer: Demuxer;
  try {
    demuxer = await Demuxer.open(typeof input === 'string' ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength));
  } catch (e) {
    throw new StopDecoding('unreadable-container', message(e));
  }
  let dec: Decoder | undefined;
  let scaler: Scaler | undefined;
  const frame = new Frame();
  frame.alloc();
  try {
    const stream = demuxer.video();
    if (!stream) throw new StopDecoding('no-video-stream', 'the object holds no video stream');
    const codec = CODEC_NAMES.get(stream.codecpar.codecId as number);
    if (!codec) throw new StopDecoding('unsupported-codec', `the video is ${codecName(stream.codecpar.codecId as number)}, neither H.264 nor H.265: cut it with \`affinity upload\` or \`affinity stream\`, which transcode it to H.264`);
    const { width, height } = stream.codecpar;
    const maxPixels = options.maxSourcePixels ?? DEFAULT_MAX_SOURCE_PIXELS;
    if (width * height > maxPixels) throw new StopDecoding('frame-too-large', `${width}x${height} is over ${maxPixels} pixels`);
    const nb = Number(stream.nbFrames);
    const tb = stream.timeBase;
    try {
      dec = await device.createDecoder(stream, {
        hardware: hw,
        exitOnError: false,
        context: { threadCount: options.threads ?? 1 },
      });
    } catch (e) {
      if (hw) throw new HardwareFailed(message(e));
      throw new StopDecoding('decode-error', message(e));
    }
    const ctx = dec.getCodecContext();
    if (!ctx) throw new StopDecoding('decode-error', 'the decoder has no codec context');
    const pixelFormat = avGetPixFmtName(stream.codecpar.format as AVPixelFormat) ?? undefined;
    yield { kind: 'opened', codec, containerFrames: nb > 0 ? nb : undefined, format: { codec, pixelFormat, width, height } };
    let placed = false;
    /** FFmpeg's error per refused packet's timestamp, for the frame that then never comes. */
    const refused = new Map<bigint, string>();
    const missing = (index: number): string => {
      const t = timeAt.get(index);
      if (times && t === undefined) return 'the object holds no packet for this frame (a hole in its timestamps)';
      const why = t === undefined ? undefined : refused.get(t);
      const at = t === undefined ? '' : ` (pts ${t})`;
      return why ? `the decoder refused the frame's packet${at}: ${why}` : `the decoder produced no frame for this packet${at}: it is damaged or refers to a damaged frame`;
    };
    let produced = 0;
    const drain = async function* (): AsyncGenerator<RawItem, void, undefined> {
      for (;;) {
        const ret = await ctx.receiveFrame(frame);
        if (ret === AVERROR_EAGAIN || ret === AVERROR_EOF) return;
        if (ret < 0) {
          // An error handing a frame out: that frame is lost; the decoder goes on.
          if (hw) throw new HardwareFailed(ffmpegMessage(ret));
          yield { kind: 'packet-error', detail: ffmpegMessage(ret) };
          continue;
        }
        try {
          if (!placed) {
            placed = true;
            yield { kind: 'placed', codec, hardware: frame.isHwFrame() };
          }
          // Not the decoder's own `rescale`: its frames come out renumbered 0, 1, 2, ... (node-av 6.1), losing the stream's time.
          // A hardware frame is converted on the GPU and only the RGB result is downloaded; software frames (FFmpeg's
          // silent fallback included) go through swscale.
          scaler ??= new Scaler({ hardware: frame.isHwFrame() ? hw : null });
          const pts = frame.pts !== AV_NOPTS_VALUE ? frame.pts : frame.bestEffortTimestamp;
          const at = times && pts !== AV_NOPTS_VALUE ? rankOf(times, pts) : undefined;
          const rank = at === undefined ? undefined : slots![at];
          // Without a rank, frames are numbered in output order (a stream without distinct timestamps).
          const index = rank ?? produced;
          produced++;
          if (index < skip) continue;
          if (frame.width * frame.height > maxPixels) throw new StopDecoding('frame-too-large', `${frame.width}x${frame.height} is over ${maxPixels} pixels`);
          const ts = frame.bestEffortTimestamp !== AV_NOPTS_VALUE ? frame.bestEffortTimestamp : frame.pts;
          const ptsMs = ts === AV_NOPTS_VALUE || tb.den === 0 ? null : Math.round((Number(ts) * tb.num * 1_000_000) / tb.den) / 1000;
          const wanted = typeof options.resize === 'function' ? options.resize(frame.width, frame.height) : options.resize;
          if (wanted && typeof options.resize === 'function') checkSize(wanted);
          const size = wanted ?? { width: frame.width, height: frame.height };
          const data = await scaler!.toBuffer(frame, { format: 'rgb', ...(wanted ? { resize: { width: size.width, height: size.height } } : {}) });
          yield {
            kind: 'raw',
            rank: times ? rank : undefined,
            concealed: frame.decodeErrorFlags !== 0 || frame.hasFlags(AV_FRAME_FLAG_CORRUPT),
            frame: { kind: 'frame', ptsMs, width: size.width, height: size.height, sourceWidth: frame.width, sourceHeight: frame.height, channels: 3, data },
            missing,
          };
        } finally {
          frame.unref();
        }
      }
    };
    try {
      for await (const packet of demuxer.packets(stream.index)) {
        if (!packet) continue;
        try {
          if (packet.size === 0) continue;
          const ret = await ctx.sendPacket(packet);
          if (ret < 0 && ret !== AVERROR_EOF) {
            if (hw) throw new HardwareFailed(ffmpegMessage(ret));
            // What `ffmpeg` does with a packet its decoder refuses: say why, and go on with the next.
            const detail = ffmpegMessage(ret);
            if (packet.pts !== AV_NOPTS_VALUE) refused.set(packet.pts, detail);
            yield { kind: 'packet-error', detail };
          }
        } finally {
          packet.free();
        }
        yield* drain();
      }
      await ctx.sendPacket(null);
      yield* drain();
    } catch (e) {
      if (e instanceof StopDecoding || e instanceof HardwareFailed) throw e;
      if (hw) throw new HardwareFailed(message(e));
      // A demux error mid-stream: what the decoder holds still comes out, the rest is the segment's failure.
      await ctx.sendPacket(null);
      yield* drain();
      throw new StopDecoding('decode-error', message(e));
    }
  } finally {
    frame.free();
    scaler?.close();
    dec?.close();
    await demuxer.close();
  }
}

/** FFmpeg's text for an error code. */
function ffmpegMessage(code: number): string {
  return new FFmpegError(code).message;
}

/** A codec's FFmpeg name (`mpeg4`, `mjpeg`, `vp9`) for messages, never its number. */
export function codecName(codecId: number): string {
  return avGetCodecName(codecId as Parameters<typeof avGetCodecName>[0]) ?? `codec ${codecId}`;
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
