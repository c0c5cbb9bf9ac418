/**
 * Encodes frames (packed RGB) into an H.264 MP4 in process, with FFmpeg's libx264 through
 * node-av (docs/decisions.md 48): what the demo's video camera uploads, with no `ffmpeg`
 * binary on the machine. A keyframe every `gopFrames`, no B-frames unless asked, so a cut at
 * keyframes gives segments of `gopFrames` frames.
 */
import { Encoder, Muxer, Scaler } from 'node-av/api';
import { Frame, Log } from 'node-av/lib';
import { AV_LOG_ERROR, AV_PIX_FMT_RGB24, AV_PIX_FMT_YUV420P, FF_ENCODER_LIBX264 } from 'node-av/constants';

export interface EncodeClipOptions {
  readonly width: number;
  readonly height: number;
  readonly fps: number;
  /** Frames between keyframes. */
  readonly gopFrames: number;
  /** libx264's constant rate factor: lower is closer to the source. @default 14 */
  readonly crf?: number;
  /** @default 0 */
  readonly bFrames?: number;
}

/** Writes `frames` (each `width * height * 3` bytes of RGB) to `file` as H.264 in MP4. */
export async function encodeClip(frames: Iterable<Uint8Array> | AsyncIterable<Uint8Array>, file: string, o: EncodeClipOptions): Promise<number> {
  // libx264 reports its statistics at info level; errors still reach stderr.
  Log.setLevel(AV_LOG_ERROR);
  const timeBase = { num: 1, den: o.fps };
  const encoder = await Encoder.create(FF_ENCODER_LIBX264, {
    width: o.width,
    height: o.height,
    pixelFormat: AV_PIX_FMT_YUV420P,
    timeBase,
    frameRate: { num: o.fps, den: 1 },
    gopSize: o.gopFrames,
    options: { preset: 'veryfast', crf: String(o.crf ?? 14), bf: String(o.bFrames ?? 0), 'sc_threshold': '0', 'keyint_min': String(o.gopFrames) },
  } as Parameters<typeof Encoder.create>[1]);
  const muxer = await Muxer.open(file);
  const scaler = new Scaler();
  let count = 0;
  try {
    const stream = muxer.addStream(encoder);
    const write = async (packets: Awaited<ReturnType<Encoder['encodeAll']>>) => {
      for (const p of packets) {
        await muxer.writePacket(p, stream);
        p.free();
      }
    };
    for await (const rgb of frames) {
      if (rgb.byteLength !== o.width * o.height * 3) throw new RangeError(`frame ${count} has ${rgb.byteLength} bytes, expected ${o.width * o.height * 3}`);
      const src = Frame.fromVideoBuffer(Buffer.from(rgb.buffer, rgb.byteOffset, rgb.byteLength), { width: o.width, height: o.height, format: AV_PIX_FMT_RGB24, timeBase });
      const yuv = Frame.fromVideoBuffer(await scaler.toBuffer(src, { format: 'yuv420p' }), { width: o.width, height: o.height, format: AV_PIX_FMT_YUV420P, timeBase });
      yuv.pts = BigInt(count++);
      try {
        await write(await encoder.encodeAll(yuv));
      } finally {
        src.free();
        yuv.free();
      }
    }
    await write(await encoder.encodeAll(null));
  } finally {
    scaler.close();
    await muxer.close();
    encoder.close();
  }
  return count;
}
