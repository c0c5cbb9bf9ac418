/**
 * `affinity stream` takes what `affinity upload` takes (issue 41; issue 40 defect 4), run
 * as the real binary against fauxqs S3:
 *
 * - files at real pace (`--realtime`) in MJPEG, VP9 at a variable frame rate, and H.264
 *   with open GOPs are transcoded to H.264 first (said on the console): every frame
 *   FFmpeg decodes from the file comes out of the uploaded segments at its own time, and
 *   the open-GOP file no longer gives segments that do not decode;
 * - a file with no video is refused before anything is sent;
 * - a live source (UDP MPEG-TS from ffmpeg) with open GOPs: the segment being cut is
 *   dropped, unnumbered, the reason is logged, the source is transcoded from then on (an
 *   ffmpeg child: decision 74), and no uploaded segment fails to decode;
 * - a real RTSP camera in VP8 is transcoded to H.264, said with its codec; one whose codec
 *   changes after a reconnect (H.264, then VP8, then H.264) is cut by stream copy, then
 *   transcoded, then cut again, numbering continuing, every segment decoding whole.
 *   (test/cli/video/stream-live-transcode.int.test.ts: MJPEG and MPEG-4 Part 2 cameras
 *   through the worker, and a transcoder that dies.)
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSourceKey } from '../../../core/ingest/segment-keys.ts';
import { decodeSegment } from '../../../gpu-worker/video/segment-decoder.ts';
import { ffmpegFrameTimes, makeSource } from '../../support/make-video.ts';
import { startRtspCamera, type RtspCamera } from '../../support/rtsp-camera.ts';
import { startS3Stack, type S3Stack } from '../../support/s3-stack.ts';
import { checkedChain, spawnStream } from '../../support/stream-child.ts';
import { freePort } from '../../../local/emulators.ts';

const run = promisify(execFile);
let stack: S3Stack;
let work: string;

beforeAll(async () => {
  stack = await startS3Stack();
  work = mkdtempSync(path.join(tmpdir(), 'stream-codecs-'));
});

afterAll(async () => {
  await stack?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

const UPLOADED = /^uploaded frames\//;
const args = (source: string, videoId: string, extra: string[] = []): string[] => [
  source, '--video', videoId, '--segment-seconds', '1', '--state-file', path.join(work, `${videoId}.json`), '--state-dir', stack.stateDir, ...extra,
];

/** Every uploaded segment through the worker's decoder: the ok frames' times, in frame order; fails on any frame not ok. */
async function okTimes(videoId: string): Promise<number[]> {
  const times: number[] = [];
  for (const o of await stack.objects(videoId)) {
    const p = parseSourceKey(o.key);
    if (p.kind !== 'source' || p.container === 'image') continue;
    expect(p.firstFrame, `${o.key} continues the chain`).toBe(times.length);
    for await (const item of decodeSegment(await stack.body(o.key), { firstFrame: p.firstFrame, container: p.container, declaredFrames: o.frames! })) {
      if (item.kind === 'frame') times.push(item.ptsMs!);
      else if (item.kind === 'lost') expect.fail(`${o.key}: frame ${item.frame} lost: ${item.detail}`);
      else expect(item.failure, `${o.key}: ${item.failure?.detail}`).toBeUndefined();
    }
  }
  return times;
}

describe('affinity stream <file> --realtime: any codec, open GOPs, variable frame rates', () => {
  it.each([
    { name: 'mjpeg', make: (f: string) => makeSource(f, 'mjpeg', { seconds: 2, fps: 15 }), ext: 'avi', said: /its video is mjpeg, which the worker does not decode/ },
    { name: 'vp9-vfr', make: (f: string) => makeSource(f, 'vp9', { seconds: 2, fps: 15, vfr: true }), ext: 'webm', said: /its video is vp9, which the worker does not decode/ },
    // stream copy at a variable frame rate: the time line keeps the file's own timestamps
    { name: 'h264-vfr', make: (f: string) => makeSource(f, 'h264', { seconds: 2, fps: 15, vfr: true }), ext: 'mkv', said: null },
    {
      name: 'h264-open-gop',
      // x264's open GOPs, cut every 0.5 s: issue 40's defect 4 (the second segment decoded nothing)
      make: (f: string) => run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30:duration=2', '-c:v', 'libx264', '-preset', 'ultrafast', '-x264-params', 'open-gop=1:keyint=15:min-keyint=15:bframes=3:b-pyramid=0:scenecut=0', f]).then(() => undefined),
      ext: 'mkv',
      said: /its h264 has open GOPs, which cannot be cut without re-encoding/,
    },
  ])('$name: transcoded, and every frame FFmpeg decodes lands at its own time', async ({ name, make, ext, said }) => {
    const file = path.join(work, `${name}.${ext}`);
    await make(file);
    const reference = await ffmpegFrameTimes(file);
    const s = spawnStream(args(file, `file-${name}`, ['--realtime', '--end']));
    expect(await s.exited, s.lines.join('\n')).toBe(0);
    if (said) expect(s.lines.some((l) => /^transcoding .* to H\.264 \(/.test(l) && said.test(l)), s.lines.join('\n')).toBe(true);
    else expect(s.lines.some((l) => /^transcoding /.test(l)), s.lines.join('\n')).toBe(false);
    const times = await okTimes(`file-${name}`);
    console.log(`stream --realtime: ${JSON.stringify({ name, ffmpegFrames: reference.length, okFrames: times.length })}`);
    expect(times).toHaveLength(reference.length);
    times.forEach((t, i) => expect(Math.abs(t - reference[i]!), `frame ${i} at ${t} ms, FFmpeg's at ${reference[i]} ms`).toBeLessThan(1.5));
  }, 60_000);

  it('refuses a file with no video before anything is sent', async () => {
    const audio = path.join(work, 'audio.m4a');
    await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'sine=duration=1', audio]);
    const s = spawnStream(args(audio, 'file-audio'));
    expect(await s.exited).toBe(1);
    expect(s.lines.join('\n')).toMatch(/audio\.m4a holds no video stream \(only aac\): there is nothing to analyse/);
    expect(await stack.objects('file-audio')).toEqual([]);
  });
});

describe('affinity stream <live source>', () => {
  it('a live stream with open GOPs uploads no segment that does not decode: the segment being cut is dropped, the reason logged, and the source transcoded from then on (issue 40 defect 4)', async () => {
    const port = await freePort();
    const s = spawnStream(args(`udp://127.0.0.1:${port}`, 'live-open-gop', ['--read-timeout', '3']));
    // ffmpeg as a live encoder with open GOPs, sending MPEG-TS to the stream's port at real pace
    const feeder = spawn('ffmpeg', [
      '-hide_banner', '-loglevel', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=15',
      '-c:v', 'libx264', '-preset', 'ultrafast', '-x264-params', 'open-gop=1:keyint=15:min-keyint=15:bframes=3:b-pyramid=0:scenecut=0',
      '-f', 'mpegts', `udp://127.0.0.1:${port}?pkt_size=1316`,
    ], { stdio: 'ignore' });
    try {
      await s.waitCount(/sends h264 with open GOPs .* the segment being cut \(\d+ frame\(s\), not numbered\) is dropped, and from now on the source is transcoded to H\.264 with closed GOPs by ffmpeg$/, 1, 40_000);
      await s.waitCount(/^connected to .* \(h264: transcoded to H\.264 by an ffmpeg process, CRF 20, as its h264 has open GOPs, which cannot be cut\)$/, 1, 40_000);
      await s.waitCount(UPLOADED, 3, 40_000);
    } finally {
      // stopped while its source still sends: a stop while a UDP source is silent ends the
      // process with SIGSEGV after its summary, in stream copy too (node-av; not fixed yet)
      const code = await s.stop();
      feeder.kill('SIGKILL');
      await once(feeder, 'exit');
      expect(code, s.lines.join('\n')).toBe(0);
    }
    // whatever went up decodes whole: no segment with frames that need another segment's GOP
    const chain = await checkedChain(stack, 'live-open-gop');
    expect(chain.length).toBeGreaterThanOrEqual(3);
    // said once: the transcoded connections do not meet open GOPs again
    expect(s.count(/sends h264 with open GOPs/)).toBe(1);
  }, 90_000);

  let camera: RtspCamera | undefined;
  afterAll(async () => {
    await camera?.stop();
  });

  it('an RTSP camera in VP8 is transcoded to H.264, said with its codec, and every segment decodes whole', async () => {
    camera = await startRtspCamera({ fps: 15, gop: 15 });
    await camera.kill();
    await camera.start('vp8');
    const s = spawnStream(args(camera.url, 'cam-vp8'));
    try {
      await s.waitCount(/^connected to .* \(vp8: transcoded to H\.264 by an ffmpeg process, CRF 20, as the worker decodes H\.264 and H\.265, not vp8\)$/, 1, 30_000);
      await s.waitCount(UPLOADED, 2, 30_000);
    } finally {
      expect(await s.stop(), s.lines.join('\n')).toBe(0);
    }
    expect((await checkedChain(stack, 'cam-vp8')).length).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('an RTSP camera whose codec changes after a reconnect (H.264, VP8, H.264): stream copy, then transcoded, then stream copy, numbering continuing, every segment decoding whole', async () => {
    camera ??= await startRtspCamera({ fps: 15, gop: 15 });
    await camera.kill();
    await camera.start('h264');
    const s = spawnStream(args(camera.url, 'cam-codec', ['--read-timeout', '3']));
    try {
      await s.waitCount(/^connected to .* \(h264\)$/, 1, 30_000);
      await s.waitCount(UPLOADED, 2, 30_000);
      await camera.kill();
      await camera.start('vp8');
      await s.waitCount(/^reconnected to .* \(vp8: transcoded to H\.264 by an ffmpeg process/, 1, 40_000);
      const before = s.count(UPLOADED);
      await s.waitCount(UPLOADED, before + 2, 30_000);
      const during = s.count(UPLOADED);
      await camera.kill();
      await camera.start('h264');
      await s.waitCount(/^reconnected to .* \(h264\)$/, 1, 40_000);
      await s.waitCount(UPLOADED, during + 2, 30_000);
    } finally {
      expect(await s.stop(), s.lines.join('\n')).toBe(0);
    }
    // Each of the two camera kills may cut the frame on the wire: the segment it closed may end in one cut frame.
    const chain = await checkedChain(stack, 'cam-codec', 0, { drops: 2 });
    expect(chain.length).toBeGreaterThanOrEqual(4);
  }, 150_000);
});
