/**
 * Damage costs only the damaged frames (issue 41): segments that ffmpeg itself damages
 * here (`-bsf:v noise` bit errors, `noise=dropamount` packets cut out, bytes cut off),
 * decoded by the worker's decoder, side by side with what FFmpeg's own decoder (ffprobe,
 * which decodes as `ffmpeg` does) outputs from the same object: every frame FFmpeg
 * outputs is yielded (an ok record in the worker) at its own timestamp, the frames after
 * a damaged one still come, and each frame that cannot be produced is a `lost` item with
 * the decoder's reason. The counts are printed for bench/README.md's table.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import type { FrameSource } from '../../../core/ingest/port.ts';
import { nullMetrics } from '../../../core/ports.ts';
import { decodeSegment, frameSlots, type DecodedFrame, type LostFrame, type SegmentEnd } from '../../../gpu-worker/video/segment-decoder.ts';
import { SegmentReader } from '../../../gpu-worker/sources/segment/segment-reader.ts';

const run = promisify(execFile);
let work: string;
const FRAMES = 90;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'segment-damage-'));
  // 3 s at 30 fps, a keyframe a second, B-frames: one 90-frame segment as the uploader would send it
  for (const ext of ['ts', 'mp4', 'mkv']) {
    await run('ffmpeg', [
      '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30:duration=3',
      '-c:v', 'libx264', '-preset', 'ultrafast', '-threads', '1', '-pix_fmt', 'yuv420p', '-g', '30', '-keyint_min', '30', '-sc_threshold', '0', '-bf', '2',
      path.join(work, `clean.${ext}`),
    ]);
  }
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Stream copy through one of ffmpeg's bitstream filters (deterministic: the same bytes every run). */
async function damage(ext: string, bsf: string): Promise<string> {
  const out = path.join(work, `${bsf.replace(/\W/g, '_')}.${ext}`);
  await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-i', path.join(work, `clean.${ext}`), '-c', 'copy', '-bsf:v', bsf, out]);
  return out;
}

/** The presentation times (ms) of the frames FFmpeg's own decoder outputs from the file. */
async function ffmpegFrameTimes(file: string): Promise<number[]> {
  const { stdout } = await run('ffprobe', ['-v', 'quiet', '-select_streams', 'v:0', '-show_entries', 'frame=pts_time', '-of', 'csv=p=0', file]);
  return stdout
    .split('\n')
    .map((l) => l.split(',')[0]!.trim())
    .filter((l) => /^-?\d/.test(l))
    .map((l) => Number(l) * 1000);
}

async function decode(file: string, declaredFrames: number) {
  const frames: DecodedFrame[] = [];
  const lost: LostFrame[] = [];
  let end: SegmentEnd | undefined;
  for await (const item of decodeSegment(readFileSync(file), { firstFrame: 1000, declaredFrames })) {
    if (item.kind === 'frame') frames.push(item);
    else if (item.kind === 'lost') lost.push(item);
    else end = item;
  }
  return { frames, lost, end: end! };
}

/** Every frame FFmpeg outputs has an ok frame at the same time; returns the side-by-side counts. */
async function compare(file: string, declaredFrames = FRAMES) {
  const reference = await ffmpegFrameTimes(file);
  const { frames, lost, end } = await decode(file, declaredFrames);
  const ours = frames.map((f) => f.ptsMs!);
  for (const t of reference) expect(ours.some((o) => Math.abs(o - t) < 0.6), `FFmpeg's frame at ${t} ms has an ok frame`).toBe(true);
  // numbering: one item per index in order, frames and lost interleaved, nothing twice
  const indexes = [...frames.map((f) => f.index), ...lost.map((l) => l.index)].sort((a, b) => a - b);
  expect(new Set(indexes).size).toBe(indexes.length);
  expect(indexes).toEqual(indexes.map((_, i) => i));
  for (const l of lost) {
    expect(l.reason).toBe('decode-error');
    expect(l.detail.length).toBeGreaterThan(10);
  }
  const failed = end.failure ? end.failure.to - end.failure.from : 0;
  expect(frames.length + lost.length + failed).toBe(declaredFrames);
  const row = { file: path.basename(file), ffmpegFrames: reference.length, okFrames: frames.length, lost: lost.length, failedAtEnd: failed, concealed: end.concealed ?? 0 };
  console.log(`damage: ${JSON.stringify(row)}`);
  return { reference, frames, lost, end, row };
}

describe('a damaged segment costs only its damaged frames', () => {
  it.each(['ts', 'mp4', 'mkv'])('bit errors (-bsf:v noise) in %s: every frame FFmpeg decodes is ok, and frames after the damage come', async (ext) => {
    const file = await damage(ext, 'noise=amount=3000');
    const { frames, lost, row } = await compare(file);
    // the noise did damage: some frame needed concealment or was lost ...
    expect(row.concealed + row.lost + row.failedAtEnd).toBeGreaterThan(0);
    // ... and did not cost the rest of the segment: most frames, including the last ones, are ok
    expect(frames.length).toBeGreaterThan(FRAMES / 2);
    if (lost.length > 0) expect(frames.some((f) => f.index > lost[0]!.index)).toBe(true);
  });

  it('packets cut out of an MPEG-TS (noise=dropamount): the frames after each hole keep their numbers and times', async () => {
    const file = await damage('ts', 'noise=dropamount=12');
    const { frames, lost, row } = await compare(file);
    expect(row.lost).toBeGreaterThan(0);
    // a constant 30 fps: each ok frame sits where its time says (frame i at i/30 s after the first)
    const t0 = frames[0]!.ptsMs! - (frames[0]!.index * 1000) / 30;
    for (const f of frames) expect(f.ptsMs! - t0).toBeCloseTo((f.index * 1000) / 30, 0);
    expect(lost.some((l) => /no packet for this frame|no frame for this packet|refused/.test(l.detail))).toBe(true);
  });

  it('a segment cut off mid-way: the frames before the cut, FFmpeg\'s too, and the rest fail with the reason', async () => {
    const whole = readFileSync(path.join(work, 'clean.ts'));
    const file = path.join(work, 'cut.ts');
    (await import('node:fs')).writeFileSync(file, whole.subarray(0, Math.floor(whole.length * 0.6)));
    const { end, row } = await compare(file);
    expect(row.okFrames).toBeGreaterThan(30);
    expect(end.failure).toMatchObject({ to: 1000 + FRAMES });
    expect(['truncated', 'decode-error']).toContain(end.failure!.reason);
  });

  it('an undamaged segment: exactly FFmpeg\'s frames, nothing lost or concealed', async () => {
    const { row, end } = await compare(path.join(work, 'clean.ts'));
    expect(row).toMatchObject({ ffmpegFrames: FRAMES, okFrames: FRAMES, lost: 0, failedAtEnd: 0, concealed: 0 });
    expect(end.failure).toBeUndefined();
  });
});

describe('frameSlots', () => {
  it.each([
    ['no declared count: ranks', [0n, 3n, 6n], undefined, [0, 1, 2]],
    ['as many packets as declared: ranks', [0n, 3n, 6n], 3, [0, 1, 2]],
    ['a hole at a constant rate that the declared count accounts for', [0n, 3n, 9n, 12n], 5, [0, 1, 3, 4]],
    ['holes worth more frames than declared: ranks', [0n, 3n, 30n, 33n], 5, [0, 1, 2, 3]],
    ['no constant rate (a 4-tick step among 3s): ranks', [0n, 3n, 7n, 10n], 6, [0, 1, 2, 3]],
  ] as const)('%s', (_name, times, declared, expected) => {
    expect(frameSlots(times, declared)).toEqual(expected);
  });
});

describe('SegmentReader on a damaged segment', () => {
  it('gives a lost frame its failed record with the decoder reason, the frames after it their pixels, and logs the damage once', async () => {
    const b = Buffer.from(readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'bframes-45-faststart.mp4')));
    for (let i = 8000; i < 20000; i += 7) b[i]! ^= 0xff;
    const bytes = new Uint8Array(b);
    const warnings: unknown[] = [];
    const frames: Pick<FrameSource, 'head' | 'getVersion'> = {
      head: async () => ({ sizeBytes: bytes.byteLength, eTag: 'e', metadata: { frames: '45' } }),
      getVersion: async () => ({ bytes, eTag: 'e' }),
    };
    const r = new SegmentReader({ frames, log: { debug() {}, info() {}, warn: (m, f) => warnings.push([m, f]), error() {} }, metrics: nullMetrics, maxSegmentBytes: 1 << 30, hardware: 'cpu' });
    try {
      const key = 'frames/v/000000.mp4';
      const statuses: string[] = [];
      for (let f = 0; f < 45; f++) {
        const got = await r.frame({ frame: f, bucket: 'b', key, sizeBytes: bytes.byteLength });
        statuses.push('pixels' in got ? 'ok' : `${got.failed.status}:${'reason' in got.failed ? got.failed.reason : ''}`);
        if (f === 5) expect('failed' in got && 'detail' in got.failed ? got.failed.detail : '').toMatch(/decoder/);
      }
      // the same frames as decodeSegment (and ffprobe): 27 ok, 18 failed at their own numbers, none truncated
      expect(statuses.filter((x) => x === 'ok')).toHaveLength(27);
      expect(statuses.filter((x) => x === 'failed:decode-error')).toHaveLength(18);
      expect(statuses.slice(30)).toEqual(Array(15).fill('ok'));
      expect(warnings).toEqual([['segment decoded past damage', expect.objectContaining({ key, framesLost: 18, decoded: 27 })]]);
    } finally {
      await r.closeAll();
    }
  });
});
