/**
 * Any video FFmpeg can read goes in (issue 41): the worker decodes H.264 and H.265, so
 * `affinity upload` and `affinity stream` stream-copy those and transcode anything else
 * (MJPEG, MPEG-4 Part 2, MS-MPEG4, Cinepak, VP8/VP9, AV1, ...) to H.264 in process, with
 * the libx264 of node-av's FFmpeg (the one cli/video/encode-clip.ts uses), before cutting.
 *
 * - {@link probeSource}: what a source holds, checked before anything is uploaded: a
 *   readable container, a video stream, and a codec this FFmpeg decodes (its first frame
 *   is decoded to prove it). A source that fails is refused with a {@link SourceError}
 *   that names the codec (`mpeg4`, not `codec id 12`) and says what to do.
 * - {@link H264Transcoder}: decoded frames in, H.264 packets out, at the source's
 *   resolution (an odd width or height is rounded down to even: 4:2:0 needs it) and
 *   timestamps (the encoder runs in the source stream's time base, so a variable frame rate
 *   is kept frame for frame), with closed GOPs and no B-frames, a keyframe every
 *   `keyframeSeconds` at the average frame rate (so segments cut at keyframes last about
 *   that long), at
 *   `bitrateKbps` (average bit rate) or, without one, constant quality (CRF 20).
 * - {@link transcodeFile}: a whole file through it into an MP4 file the cutter then cuts
 *   by stream copy (MP4 keeps each frame's time in the source's time base, and its
 *   duration: a segment's last frame needs one in MP4). A frame's duration is the time to
 *   the next one, so one decoded frame is held back until the next.
 */
import { Decoder, Demuxer, Encoder, Muxer, Scaler } from 'node-av/api';
import { Frame, Log, Rational, type CodecContext, type Packet, type Stream } from 'node-av/lib';
import { AV_CODEC_ID_H264, AV_CODEC_ID_HEVC, AV_LOG_ERROR, AV_LOG_FATAL, AV_NOPTS_VALUE, AV_PIX_FMT_YUV420P, FF_ENCODER_LIBX264 } from 'node-av/constants';
import { codecName } from '../../gpu-worker/video/segment-decoder.ts';

/** Codecs the worker decodes: carried by stream copy. */
const COPIED = new Set<number>([AV_CODEC_ID_H264 as number, AV_CODEC_ID_HEVC as number]);

/** Packets read looking for a first decodable frame before a source is refused. */
const PROBE_PACKETS = 120;

export class SourceError extends Error {
  override name = 'SourceError';
}

export interface SourceProbe {
  /** FFmpeg's codec name: `h264`, `hevc`, `mjpeg`, `mpeg4`, `msmpeg4v3`, `vp9`, `av1`, ... */
  readonly codec: string;
  /** H.264 / H.265: stream copy; anything else: transcoded. */
  readonly copy: boolean;
  readonly width: number;
  readonly height: number;
}

/** Whether a codec (FFmpeg's id) is carried as it is. */
export function isCopied(codecId: number): boolean {
  return COPIED.has(codecId);
}

/** What to tell a user whose source cannot go in. Pure. */
export function refusal(shown: string, what: 'unreadable' | 'no-video' | 'undecodable', detail: string, codec?: string): string {
  switch (what) {
    case 'unreadable':
      return `cannot read ${shown}: ${detail}. Check the path or URL; FFmpeg must be able to open it (try: ffprobe ${shown})`;
    case 'no-video':
      return `${shown} holds no video stream${detail ? ` (${detail})` : ''}: there is nothing to analyse. Upload a file with a video track`;
    case 'undecodable':
      return `${shown}: its ${codec ?? 'video'} video cannot be decoded here (${detail}). Convert it to H.264 first, e.g. ffmpeg -i ${shown} -c:v libx264 -g 60 out.mp4, and upload out.mp4`;
  }
}

/**
 * Opens `source` and decodes its first video frame: refuses (throws {@link SourceError})
 * an unreadable source, one without video, and one whose video this FFmpeg cannot
 * decode, naming the codec; nothing has been uploaded when it throws.
 */
export async function probeSource(source: string, shown = source, openOptions: Record<string, string> = {}): Promise<SourceProbe> {
  const level = Log.getLevel();
  Log.setLevel(AV_LOG_FATAL); // a source's first packets may carry errors the probe itself reports
  let demuxer: Demuxer;
  try {
    demuxer = await Demuxer.open(source, { options: openOptions });
  } catch (e) {
    Log.setLevel(level);
    throw new SourceError(refusal(shown, 'unreadable', (e as Error).message));
  }
  try {
    const stream = demuxer.video();
    if (!stream) {
      const others = demuxer.streams.map((s) => codecName(s.codecpar.codecId as number)).join(', ');
      throw new SourceError(refusal(shown, 'no-video', others ? `only ${others}` : ''));
    }
    const id = stream.codecpar.codecId as number;
    const codec = codecName(id);
    const error = await firstFrameError(demuxer, stream);
    if (error !== undefined) throw new SourceError(refusal(shown, 'undecodable', error, codec));
    return { codec, copy: isCopied(id), width: stream.codecpar.width, height: stream.codecpar.height };
  } finally {
    await demuxer.close();
    Log.setLevel(level);
  }
}

/** Why no frame of `stream` decodes within its first packets; undefined when one does. */
async function firstFrameError(demuxer: Demuxer, stream: Stream): Promise<string | undefined> {
  let dec: Decoder;
  try {
    dec = await Decoder.create(stream, { exitOnError: false });
  } catch (e) {
    return `no decoder opens: ${(e as Error).message}`;
  }
  try {
    let packets = 0;
    for await (const packet of demuxer.packets(stream.index)) {
      if (!packet) break;
      try {
        for (const f of await dec.decodeAll(packet)) {
          f.free();
          return undefined;
        }
      } finally {
        packet.free();
      }
      if (++packets >= PROBE_PACKETS) break;
    }
    for (const f of await dec.decodeAll(null)) {
      f.free();
      return undefined;
    }
    return packets === 0 ? 'the stream holds no packets' : `no frame decoded from its first ${packets} packet(s)`;
  } catch (e) {
    return (e as Error).message;
  } finally {
    dec.close();
  }
}

export interface TranscodeOptions {
  /** Average bit rate, kbit/s; absent: constant quality (CRF 20). */
  readonly bitrateKbps?: number;
  /** About this long between keyframes (at the average frame rate). @default 2 */
  readonly keyframeSeconds?: number;
}

/**
 * Decodes one source stream and encodes its frames to H.264 (module comment). One
 * instance per connection or file; `push` each packet of the stream, then `flush`.
 */
export class H264Transcoder {
  readonly encoder: Encoder;
  private readonly decoder: Decoder;
  private readonly scaler = new Scaler();
  private readonly width: number;
  private readonly height: number;
  private readonly timeBase: { num: number; den: number };
  private lastPts: bigint | null = null;
  private held: { readonly frame: Frame; readonly pts: bigint } | null = null;
  /** The last frame's duration, the source's frame duration until two frames were seen. */
  private lastDuration: bigint;
  /** Frames encoded. */
  frames = 0;

  private constructor(decoder: Decoder, encoder: Encoder, width: number, height: number, timeBase: { num: number; den: number }, frameTicks: bigint) {
    this.decoder = decoder;
    this.encoder = encoder;
    this.width = width;
    this.height = height;
    this.timeBase = timeBase;
    this.lastDuration = frameTicks;
  }

  static async create(stream: Stream, o: TranscodeOptions = {}): Promise<H264Transcoder> {
    const { width, height } = stream.codecpar;
    const w = width & ~1;
    const h = height & ~1;
    if (w < 2 || h < 2) throw new SourceError(`the video is ${width}x${height}: too small to encode`);
    const timeBase = { num: stream.timeBase.num, den: stream.timeBase.den };
    const rate = stream.avgFrameRate.num > 0 && stream.avgFrameRate.den > 0 ? stream.avgFrameRate : stream.rFrameRate.num > 0 ? stream.rFrameRate : { num: 30, den: 1 };
    const decoder = await Decoder.create(stream, { exitOnError: false });
    const keySeconds = o.keyframeSeconds ?? 2;
    // A keyframe every `keySeconds` at the average rate (node-av's encoder sets every
    // frame's type itself, so keyframes cannot be forced by time): segments cut at
    // keyframes last about that long, however the rate varies.
    const gop = Math.max(1, Math.round((keySeconds * rate.num) / rate.den));
    const options: Record<string, string> = {
      preset: 'veryfast',
      bf: '0',
      // closed GOPs, a keyframe exactly every `gop` frames: no scene-cut keyframes in between
      sc_threshold: '0',
      keyint_min: String(gop),
      ...(o.bitrateKbps === undefined ? { crf: '20' } : {}),
    };
    const encoder = await Encoder.create(FF_ENCODER_LIBX264, {
      width: w,
      height: h,
      pixelFormat: AV_PIX_FMT_YUV420P,
      timeBase,
      frameRate: { num: rate.num, den: rate.den },
      gopSize: gop,
      maxBFrames: 0,
      ...(o.bitrateKbps !== undefined ? { bitrate: o.bitrateKbps * 1000, maxRate: o.bitrateKbps * 1500, bufSize: o.bitrateKbps * 2000 } : {}),
      options,
      // node-av would encode in 1/frame-rate, rounding a variable rate onto a fixed grid: the source's time base keeps every frame's time
      configure: (ctx: CodecContext) => {
        ctx.timeBase = new Rational(timeBase.num, timeBase.den);
      },
    } as Parameters<typeof Encoder.create>[1]);
    const frameTicks = BigInt(Math.max(1, Math.round((rate.den * timeBase.den) / (rate.num * timeBase.num))));
    return new H264Transcoder(decoder, encoder, w, h, timeBase, frameTicks);
  }

  /** Encoded packets for one source packet (none, one or several, as the codecs buffer). */
  async push(packet: Packet): Promise<Packet[]> {
    const out: Packet[] = [];
    for (const f of await this.decoder.decodeAll(packet)) out.push(...(await this.take(f)));
    return out;
  }

  /** The packets still buffered at the end of the stream. */
  async flush(): Promise<Packet[]> {
    const out: Packet[] = [];
    for (const f of await this.decoder.decodeAll(null)) out.push(...(await this.take(f)));
    if (this.held) out.push(...(await this.encode(this.held.frame, this.held.pts, this.lastDuration)));
    this.held = null;
    out.push(...(await this.encoder.encodeAll(null)));
    return out;
  }

  /**
   * One frame is held back until the next one shows how long it lasts: a frame's duration
   * is the time to the next (a variable rate), and MP4 drops a last sample that has none.
   */
  private async take(f: Frame): Promise<Packet[]> {
    let pts = f.pts !== AV_NOPTS_VALUE ? f.pts : f.bestEffortTimestamp !== AV_NOPTS_VALUE ? f.bestEffortTimestamp : this.lastPts === null ? 0n : this.lastPts + 1n;
    // H.264 wants growing timestamps: a source whose clock goes back or stands still is nudged one tick on
    if (this.lastPts !== null && pts <= this.lastPts) pts = this.lastPts + 1n;
    this.lastPts = pts;
    const prev = this.held;
    this.held = { frame: f, pts };
    if (!prev) return [];
    this.lastDuration = pts - prev.pts;
    return this.encode(prev.frame, prev.pts, this.lastDuration);
  }

  private async encode(f: Frame, pts: bigint, duration: bigint): Promise<Packet[]> {
    try {
      const yuv = Frame.fromVideoBuffer(await this.scaler.toBuffer(f, { format: 'yuv420p', ...(f.width !== this.width || f.height !== this.height ? { resize: { width: this.width, height: this.height } } : {}) }), {
        width: this.width,
        height: this.height,
        format: AV_PIX_FMT_YUV420P,
        timeBase: this.timeBase,
      });
      try {
        yuv.pts = pts;
        yuv.duration = duration > 0n ? duration : 1n;
        this.frames++;
        return await this.encoder.encodeAll(yuv);
      } finally {
        yuv.free();
      }
    } finally {
      f.free();
    }
  }

  close(): void {
    this.held?.frame.free();
    this.held = null;
    this.scaler.close();
    this.decoder.close();
    this.encoder.close();
  }
}

/**
 * Transcodes the video stream of `input` to H.264 in an MP4 file `output` (module
 * comment): what `affinity upload` cuts when the source is not H.264 or H.265, or has
 * open GOPs. Returns the frames written.
 */
export async function transcodeFile(input: string, output: string, o: TranscodeOptions = {}): Promise<{ readonly frames: number }> {
  const level = Log.getLevel();
  Log.setLevel(AV_LOG_ERROR);
  const demuxer = await Demuxer.open(input);
  let muxer: Muxer | undefined;
  let t: H264Transcoder | undefined;
  try {
    const stream = demuxer.video();
    if (!stream) throw new SourceError(refusal(input, 'no-video', ''));
    t = await H264Transcoder.create(stream, o);
    muxer = await Muxer.open(output, { format: 'mp4' });
    const index = muxer.addStream(t.encoder);
    const write = async (packets: Packet[]): Promise<void> => {
      for (const p of packets) {
        try {
          await muxer!.writePacket(p, index);
        } finally {
          p.free();
        }
      }
    };
    for await (const packet of demuxer.packets(stream.index)) {
      if (!packet) continue;
      try {
        await write(await t.push(packet));
      } finally {
        packet.free();
      }
    }
    await write(await t.flush());
    return { frames: t.frames };
  } finally {
    if (muxer) await muxer.close();
    t?.close();
    await demuxer.close();
    Log.setLevel(level);
  }
}

/**
 * Whether an H.264 / H.265 file has open GOPs: a frame that follows a keyframe in decode
 * order but is shown before it (it needs the GOP before, so a segment starting at that
 * keyframe would not decode). Reads packets only, the whole file.
 */
export async function hasOpenGops(input: string): Promise<boolean> {
  const demuxer = await Demuxer.open(input);
  try {
    const stream = demuxer.video();
    if (!stream) return false;
    let keyPts: bigint | null = null;
    for await (const p of demuxer.packets(stream.index)) {
      if (!p) continue;
      try {
        if (p.pts === AV_NOPTS_VALUE) continue;
        if (p.isKeyframe) keyPts = p.pts;
        else if (keyPts !== null && p.pts < keyPts) return true;
      } finally {
        p.free();
      }
    }
    return false;
  } finally {
    await demuxer.close();
  }
}
