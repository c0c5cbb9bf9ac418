/**
 * Any input FFmpeg can read goes in through `affinity upload <file>` (issue 41), run through
 * the CLI's `main` against fauxqs S3: sources ffmpeg makes here in MJPEG, MPEG-4 Part 2,
 * MS-MPEG4, Cinepak, VP8, VP9 and AV1 are transcoded to H.264 in process (said on the
 * console) and every frame FFmpeg's own decoder outputs from the source comes out of the
 * uploaded segments, through the worker's decoder, at the source's time (a variable frame
 * rate included), in each segment container; H.264 / H.265 are stream-copied; open GOPs
 * are transcoded instead of refused; a file with no video, or video that cannot be
 * decoded, is refused before anything is sent, naming the codec and what to do.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../cli/main.ts';
import { memoryIo } from '../../../cli/io.ts';
import { parseSourceKey } from '../../../core/ingest/segment-keys.ts';
import { decodeSegment } from '../../../gpu-worker/video/segment-decoder.ts';
import { ffmpegFrameTimes, makeSource, type SourceCodec } from '../../support/make-video.ts';
import { startS3Stack, type S3Stack } from '../../support/s3-stack.ts';

const run = promisify(execFile);
let stack: S3Stack;
let work: string;

beforeAll(async () => {
  stack = await startS3Stack();
  work = mkdtempSync(path.join(tmpdir(), 'upload-codecs-'));
});

afterAll(async () => {
  await stack?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

async function cli(args: string[]) {
  const io = memoryIo();
  const code = await main([...args, '--state-dir', stack.stateDir], io);
  return { code, out: io.lines.join('\n'), err: io.errors.join('\n') };
}

/** Every uploaded segment of `videoId` through the worker's decoder: the ok frames' numbers and times. */
async function okFrames(videoId: string): Promise<{ frames: number[]; times: number[] }> {
  const frames: number[] = [];
  const times: number[] = [];
  for (const o of await stack.objects(videoId)) {
    const p = parseSourceKey(o.key);
    if (p.kind !== 'source' || p.container === 'image') continue;
    for await (const item of decodeSegment(await stack.body(o.key), { firstFrame: p.firstFrame, container: p.container, declaredFrames: o.frames! })) {
      if (item.kind === 'frame') {
        frames.push(item.frame);
        times.push(item.ptsMs!);
      } else if (item.kind === 'lost') expect.fail(`${o.key}: frame ${item.frame} lost: ${item.detail}`);
      else expect(item.failure, `${o.key}: ${item.failure?.detail}`).toBeUndefined();
    }
  }
  return { frames, times };
}

// Cinepak and AV1 are slow to encode with ffmpeg: smaller pictures keep the test short.
const CASES: readonly { codec: SourceCodec; source: string; container: 'ts' | 'mp4' | 'mkv'; vfr?: boolean; size?: string }[] = [
  { codec: 'mjpeg', source: 'avi', container: 'ts' },
  { codec: 'mpeg4', source: 'avi', container: 'mp4' },
  { codec: 'msmpeg4', source: 'avi', container: 'mkv' },
  { codec: 'cinepak', source: 'avi', container: 'ts', size: '160x120' },
  { codec: 'vp8', source: 'webm', container: 'mkv' },
  { codec: 'vp9', source: 'webm', container: 'mp4', vfr: true },
  { codec: 'av1', source: 'mkv', container: 'ts', size: '160x120' },
  { codec: 'mpeg4', source: 'mkv', container: 'ts', vfr: true },
  { codec: 'h264', source: 'mkv', container: 'mp4', vfr: true },
  { codec: 'hevc', source: 'mp4', container: 'mkv' },
];

describe('affinity upload <file>: any codec FFmpeg decodes', () => {
  it.each(CASES)('$codec in .$source (vfr: $vfr) into $container segments: every frame FFmpeg decodes, at its own time', async ({ codec, source, container, vfr, size }) => {
    // Prepare: 2 s at 15 fps, made by ffmpeg
    const file = path.join(work, `${codec}${vfr ? '-vfr' : ''}.${source}`);
    await makeSource(file, codec, { seconds: 2, fps: 15, ...(vfr ? { vfr } : {}), ...(size ? { size } : {}) });
    const reference = await ffmpegFrameTimes(file);
    const videoId = `${codec}-${source}-${container}${vfr ? '-vfr' : ''}`;

    // Act
    const r = await cli(['upload', file, '--video', videoId, '--segment-seconds', '1', '--container', container, '--end']);

    // Assert: the transcode is said (or the stream copy), and the frames are FFmpeg's, at FFmpeg's times
    expect(r.code, r.err).toBe(0);
    if (codec === 'h264' || codec === 'hevc') expect(r.err).toMatch(new RegExp(`^cut .* \\(${codec}\\) into ~1-s segments \\(stream copy\\)`, 'm'));
    else expect(r.err).toMatch(new RegExp(`^transcoding .* to H\\.264 \\(its video is ${codec === 'msmpeg4' ? 'msmpeg4v3' : codec}, which the worker does not decode\\) at its own resolution and timestamps`, 'm'));
    const { frames, times } = await okFrames(videoId);
    console.log(`upload: ${JSON.stringify({ codec, source, container, vfr: Boolean(vfr), ffmpegFrames: reference.length, okFrames: frames.length })}`);
    expect(frames).toEqual(reference.map((_, i) => i));
    times.forEach((t, i) => expect(Math.abs(t - reference[i]!), `frame ${i} at ${t} ms, FFmpeg's at ${reference[i]} ms`).toBeLessThan(1.5));
    expect(new TextDecoder().decode(await stack.body(`frames/${videoId}/_end`))).toBe(String(reference.length - 1));
  });

  it('transcodes H.264 with open GOPs (which stream copy cannot cut) instead of refusing it, at a set bit rate', async () => {
    const file = path.join(work, 'opengop.mkv');
    // x264's open GOPs: B-frames after a keyframe that are shown before it
    await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30:duration=2', '-c:v', 'libx264', '-preset', 'ultrafast', '-x264-params', 'open-gop=1:keyint=15:min-keyint=15:bframes=3:b-pyramid=0:scenecut=0', file]);
    const reference = await ffmpegFrameTimes(file);
    const r = await cli(['upload', file, '--video', 'opengop', '--segment-seconds', '0.5', '--bitrate', '800k']);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/transcoding .* to H\.264 \(its h264 has open GOPs, which cannot be cut without re-encoding\) .*800 kbit\/s/);
    const { frames } = await okFrames('opengop');
    expect(frames).toEqual(reference.map((_, i) => i));
  });

  it('refuses before sending anything: no video stream, undecodable video, and a bad --bitrate', async () => {
    const audio = path.join(work, 'audio.m4a');
    await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'sine=duration=1', audio]);
    const a = await cli(['upload', audio, '--video', 'refused-1']);
    expect(a.code).toBe(1);
    expect(a.err).toMatch(/audio\.m4a holds no video stream \(only aac\): there is nothing to analyse/);

    // an MJPEG AVI whose frames are garbage: the container opens, no frame decodes
    const mjpeg = path.join(work, 'garbage.avi');
    await makeSource(mjpeg, 'mjpeg', { seconds: 1, fps: 5 });
    const bytes = Buffer.from(await import('node:fs').then((fs) => fs.readFileSync(mjpeg)));
    for (let i = 4096; i < bytes.length - 1024; i++) bytes[i] = (i * 7919) & 0xff;
    writeFileSync(mjpeg, bytes);
    const g = await cli(['upload', mjpeg, '--video', 'refused-2']);
    expect(g.code, g.err).toBe(1);
    expect(g.err).toMatch(/garbage\.avi: its mjpeg video cannot be decoded here \(.+\)\. Convert it to H\.264 first, e\.g\. ffmpeg -i /);

    const b = await cli(['upload', audio, '--video', 'refused-3', '--bitrate', 'fast']);
    expect(b.code).toBe(2);
    expect(b.err).toContain('--bitrate must be kbit/s');
    for (const v of ['refused-1', 'refused-2', 'refused-3']) expect(await stack.objects(v)).toEqual([]);
  });
});
