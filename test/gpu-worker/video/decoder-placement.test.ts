/**
 * Where a segment's frames were decoded, read off the frames (issue 43, item 2): the
 * `placement` of gpu-worker/video/segment-decoder.ts, and why NVDEC cannot take a stream
 * ({@link nvdecRefusal}). There is no GPU here: a simulated CUDA device "opens" and its
 * decoder hands out software frames, which is what FFmpeg does when NVDEC cannot take a
 * stream (it retries get_format() without the hardware format). Before issue 43 the label
 * came from the device alone, so this read `h264 nvdec (cuda)`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Decoder, type HardwareContext } from 'node-av/api';
import { describe, expect, it } from 'vitest';
import {
  DECODER_PLACEMENTS,
  decodeSegment,
  describeDecoderChoice,
  nvdecRefusal,
  SILENT_FALLBACK_REASON,
  type DecodeDevice,
  type SegmentDecodeOptions,
  type SegmentEnd,
} from '../../../gpu-worker/video/segment-decoder.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(path.join(FIXTURES, name)));

/** A CUDA device that "opens": never handed to FFmpeg by the simulated decoder below. */
const SIMULATED_CUDA = Object.freeze({ deviceTypeName: 'cuda (simulated)' }) as unknown as HardwareContext;

/** A GPU whose NVDEC is unusable: the device opens, and the decoder given it decodes in software. */
function nvdecUnusable(): DecodeDevice & { readonly asked: (HardwareContext | null | undefined)[] } {
  const asked: (HardwareContext | null | undefined)[] = [];
  return {
    asked,
    cuda: () => ({ hw: SIMULATED_CUDA, why: '' }),
    createDecoder: (stream, options) => {
      asked.push(options.hardware);
      return Decoder.create(stream, { ...options, hardware: null });
    },
  };
}

/** No CUDA device at all. */
const noCuda: DecodeDevice = { cuda: () => ({ hw: null, why: 'no CUDA device opened' }), createDecoder: (stream, options) => Decoder.create(stream, options) };

async function endOf(bytes: Uint8Array, options: SegmentDecodeOptions): Promise<{ frames: number; end: SegmentEnd }> {
  let frames = 0;
  for await (const item of decodeSegment(bytes, options)) {
    if (item.kind === 'end') return { frames, end: item };
    frames++;
  }
  throw new Error('no end item');
}

describe('decodeSegment: the placement comes from the first decoded frame', () => {
  it('H.264 4:4:4 with a CUDA device asked for and NVDEC unusable: CPU decode (cpu-fallback) with the reason, not nvdec', async () => {
    const device = nvdecUnusable();
    const { frames, end } = await endOf(fixture('h264-444-30.mp4'), { firstFrame: 0, hardware: 'cuda', device });
    expect(frames).toBe(30);
    expect(device.asked).toEqual([SIMULATED_CUDA]); // the decoder was opened with the CUDA device
    expect(end).toMatchObject({ placement: 'cpu-fallback', codec: 'h264', decoded: 30 });
    expect(end.fallbackReason).toMatch(/^H\.264 4:4:4 \(yuv444p\): NVDEC decodes H\.264 in 4:2:0 only/);
    expect(end.decoder).toMatch(/^h264 cpu \(cuda asked: H\.264 4:4:4/);
    expect(end.decoder).not.toMatch(/nvdec/);
  });

  it('a 4:2:0 stream NVDEC could take, software frames all the same (libnvcuvid missing): cpu-fallback, the silent-fallback reason', async () => {
    const { end } = await endOf(fixture('bframes-45.mp4'), { firstFrame: 0, hardware: 'auto', device: nvdecUnusable() });
    expect(end).toMatchObject({ placement: 'cpu-fallback', fallbackReason: SILENT_FALLBACK_REASON, decoded: 45 });
  });

  it('the CPU as configured is `cpu`, and `auto` without a CUDA device too; `cuda` without one is a fallback', async () => {
    expect((await endOf(fixture('bframes-45.mp4'), { firstFrame: 0, hardware: 'cpu', device: nvdecUnusable() })).end).toMatchObject({ placement: 'cpu', decoder: 'h264 cpu' });
    const auto = (await endOf(fixture('bframes-45.mp4'), { firstFrame: 0, hardware: 'auto', device: noCuda })).end;
    expect(auto.placement).toBe('cpu');
    expect(auto.fallbackReason).toBeUndefined();
    expect((await endOf(fixture('bframes-45.mp4'), { firstFrame: 0, hardware: 'cuda', device: noCuda })).end).toMatchObject({ placement: 'cpu-fallback', fallbackReason: 'no CUDA device opened' });
  });

  it('no frame decoded: placement none, and the metric dimension is never error text', async () => {
    const { end } = await endOf(fixture('mpeg4-5.mkv'), { firstFrame: 0, hardware: 'cuda', device: nvdecUnusable() });
    expect(end.placement).toBe('none');
    expect(DECODER_PLACEMENTS).toEqual(['nvdec', 'cpu', 'cpu-fallback']);
  });

  it('describeDecoderChoice: the expected choice at start, from the device', () => {
    expect(describeDecoderChoice('cpu', nvdecUnusable())).toEqual({ decoder: 'cpu' });
    expect(describeDecoderChoice('auto', nvdecUnusable())).toEqual({ decoder: 'nvdec' });
    expect(describeDecoderChoice('auto', noCuda)).toEqual({ decoder: 'cpu', note: 'no CUDA device opened' });
    expect(describeDecoderChoice('cuda', noCuda)).toEqual({ decoder: 'cpu-fallback', note: 'no CUDA device opened' });
  });
});

describe('nvdecRefusal: what NVDEC cannot decode, by format', () => {
  const cases: [string, Parameters<typeof nvdecRefusal>[0], RegExp | undefined][] = [
    ['H.264 4:2:0 8-bit 1080p', { codec: 'h264', pixelFormat: 'yuv420p', width: 1920, height: 1080 }, undefined],
    ['H.264 full-range 4:2:0 (yuvj420p)', { codec: 'h264', pixelFormat: 'yuvj420p', width: 1920, height: 1080 }, undefined],
    ['H.264 4:4:4', { codec: 'h264', pixelFormat: 'yuv444p', width: 1280, height: 720 }, /^H\.264 4:4:4/],
    ['H.264 4:2:2 10-bit', { codec: 'h264', pixelFormat: 'yuv422p10le', width: 1280, height: 720 }, /^H\.264 4:2:2/],
    ['H.264 10-bit 4:2:0', { codec: 'h264', pixelFormat: 'yuv420p10le', width: 1920, height: 1080 }, /^10-bit H\.264/],
    ['H.264 at 4096x2160', { codec: 'h264', pixelFormat: 'yuv420p', width: 4096, height: 2160 }, undefined],
    ['H.264 8K', { codec: 'h264', pixelFormat: 'yuv420p', width: 7680, height: 4320 }, /^H\.264 7680x4320: NVDEC decodes H\.264 up to 4096x4096/],
    ['HEVC 10-bit 8K', { codec: 'hevc', pixelFormat: 'yuv420p10le', width: 7680, height: 4320 }, undefined],
    ['HEVC 4:4:4', { codec: 'hevc', pixelFormat: 'yuv444p', width: 1920, height: 1080 }, undefined],
    ['HEVC 4:2:2', { codec: 'hevc', pixelFormat: 'yuv422p10le', width: 1920, height: 1080 }, /^HEVC 4:2:2/],
    ['HEVC over 8192 px', { codec: 'hevc', pixelFormat: 'yuv420p', width: 8200, height: 4320 }, /up to 8192x8192/],
    ['unknown pixel format', { codec: 'h264', pixelFormat: undefined, width: 640, height: 480 }, undefined],
  ];
  it.each(cases)('%s', (_name, format, expected) => {
    const why = nvdecRefusal(format);
    if (expected) expect(why).toMatch(expected);
    else expect(why).toBeUndefined();
  });
});
