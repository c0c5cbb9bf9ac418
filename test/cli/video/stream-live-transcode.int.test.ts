/**
 * A live camera in a codec the worker does not decode is transcoded, not refused (issue
 * 41; docs/decisions.md 70): `affinity stream` against real RTSP cameras (GStreamer's
 * RTSP server: test/support/rtsp-camera.ts) serving Motion JPEG, MPEG-4 Part 2 and H.264
 * with open GOPs, run as the real binary against fauxqs S3.
 *
 * - The connection line names the codec and says it is transcoded by an ffmpeg process;
 *   the child gets the camera's packets on its stdin, never its URL (a password in it
 *   reaches no command line and no log).
 * - Every frame captured lands once: the segments in S3 form a contiguous chain from
 *   frame 0, each decodes on its own into exactly the frames it declares (H.264), and
 *   their sum is the frame count the stream reports.
 * - The transcoder's death (the ffmpeg child SIGKILLed mid-stream) is an outage like a
 *   stalled camera: logged with the child's end, reconnected with backoff, counted in the
 *   summary, and the chain stays contiguous (the frame the child was writing is not cut).
 * - Through the real worker (in process, on the twins), every frame gets exactly one
 *   record, ok.
 * - Without the `ffmpeg` program such a camera is refused at its first connection, with
 *   the codec's name and how to install it, and nothing is sent.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerHarness } from '../../../harness/worker-harness.ts';
import { startRtspCamera, type RtspCamera } from '../../support/rtsp-camera.ts';
import { startS3Stack, type S3Stack } from '../../support/s3-stack.ts';
import { checkedChain, spawnAffinity, spawnStream, type LandedSegment } from '../../support/stream-child.ts';

let stack: S3Stack;
let work: string;
const cameras: RtspCamera[] = [];

beforeAll(async () => {
  stack = await startS3Stack();
  work = mkdtempSync(path.join(tmpdir(), 'stream-live-transcode-'));
});

afterAll(async () => {
  await Promise.all(cameras.map((c) => c.stop()));
  await stack?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

const UPLOADED = /^uploaded frames\//;
const args = (source: string, videoId: string): string[] => [
  source, '--video', videoId, '--segment-seconds', '1', '--read-timeout', '3', '--state-file', path.join(work, `${videoId}.json`), '--state-dir', stack.stateDir,
];

/** The pids of `pid`'s children named `comm` (the stream's ffmpeg transcoder). */
function childrenNamed(pid: number, comm: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid && name === comm) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

async function codecOf(key: string): Promise<string | undefined> {
  const f = path.join(work, path.basename(key));
  writeFileSync(f, await stack.body(key));
  return execFileSync('ffprobe', ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=codec_name', '-of', 'csv=p=0', f]).toString().split(/\s+/).find(Boolean);
}

/** The chain through the real worker on the twins: the records, `frame:status`, in frame order. */
async function workerRecords(video: string, chain: readonly LandedSegment[]): Promise<string[]> {
  const frames = chain.reduce((n, c) => n + c.frames, 0);
  const h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 300 } });
  try {
    const worker = h.createWorker(0).start();
    await h.pinVideo(video, 0);
    for (const c of chain) await h.putSegment(video, c.firstFrame, await stack.body(c.key), { frames: c.frames, container: 'mpegts' });
    await h.putEnd(video, frames - 1);
    for (const c of chain) await h.sendSegment(0, video, c.firstFrame, 'mpegts');
    await h.sendEnd(0, video);
    await h.waitForSummary(video, (s) => s.status === 'complete', 90_000);
    const records = (await h.frameResults(video)).map((r) => `${r.frame}:${r.status}`);
    await worker.stop();
    return records;
  } finally {
    await h.stop();
  }
}

/** `stream <id> stopped: N frame(s) this run, ...`: N. */
function framesReported(lines: readonly string[]): number {
  const m = lines.map((l) => /^stream \S+ (?:stopped|ended): (\d+) frame\(s\) this run/.exec(l)).find(Boolean);
  expect(m, lines.join('\n')).toBeTruthy();
  return Number(m![1]);
}

/** The frames of segments dropped for open GOPs (cut, never numbered). */
function droppedOpenGop(lines: readonly string[]): number {
  return lines.map((l) => /the segment being cut \((\d+) frame\(s\), not numbered\) is dropped/.exec(l)).reduce((n, m) => n + (m ? Number(m[1]) : 0), 0);
}

describe('affinity stream: a live camera in another codec is transcoded to H.264', () => {
  it('Motion JPEG over RTSP: said with its codec, every frame captured lands once and decodes, a killed transcoder is one outage, one ok record per frame', async () => {
    const camera = await startRtspCamera({ fps: 15, gop: 15 });
    cameras.push(camera);
    await camera.kill();
    await camera.start('mjpeg');
    // a password in the URL (the test camera asks for none): it must reach no child's command line and no log
    const secret = 'n0t-in-argv';
    const s = spawnStream(args(camera.url.replace('rtsp://', `rtsp://viewer:${secret}@`), 'cam-mjpeg'));
    try {
      await s.waitCount(/^connected to .* \(mjpeg: transcoded to H\.264 by an ffmpeg process, CRF 20, as the worker decodes H\.264 and H\.265, not mjpeg\)$/, 1, 30_000);
      await s.waitCount(UPLOADED, 3, 30_000);
      // the transcoder dies mid-stream: an outage of this camera, not of the process
      const [ffmpeg] = childrenNamed(s.child.pid!, 'ffmpeg');
      expect(ffmpeg, 'the stream runs an ffmpeg child').toBeDefined();
      const cmdline = readFileSync(`/proc/${ffmpeg}/cmdline`, 'utf8').split('\0').join(' ');
      expect(cmdline).toMatch(/-f nut -i pipe:0/); // the camera's packets come on stdin
      expect(cmdline).not.toContain(secret);
      process.kill(ffmpeg!, 'SIGKILL');
      await s.waitCount(/^reconnect: the transcoder \(ffmpeg\) was killed by SIGKILL[;:] .*attempt 1 in /, 1, 20_000);
      await s.waitCount(/^reconnected to .* after 1 attempt\(s\) \(mjpeg: transcoded/, 1, 30_000);
      const after = s.count(UPLOADED);
      await s.waitCount(UPLOADED, after + 2, 30_000);
    } finally {
      expect(await s.stop(), s.lines.join('\n')).toBe(0);
    }
    expect(s.lines.join('\n')).toMatch(/, 1 outage\(s\) \(1 reconnect attempt\(s\)\)/);
    expect(s.lines.join('\n')).not.toContain(secret);
    const chain = await checkedChain(stack, 'cam-mjpeg');
    const frames = chain.reduce((n, c) => n + c.frames, 0);
    // every frame the stream captured is in S3 once (the stop flushed the transcoder: its last frames too)
    expect(frames).toBe(framesReported(s.lines));
    expect(frames).toBeGreaterThanOrEqual(5 * 14);
    expect(await codecOf(chain[0]!.key)).toBe('h264');
    const records = await workerRecords('cam-mjpeg', chain);
    console.info(`live mjpeg: ${chain.length} segments, ${frames} frames captured, ${records.filter((r) => r.endsWith(':ok')).length} ok records`);
    expect(records).toEqual(Array.from({ length: frames }, (_, i) => `${i}:ok`));
  }, 180_000);

  it('H.264 with open GOPs over RTSP: the segment being cut is dropped, unnumbered, and said; transcoded from then on, every frame captured lands once, one ok record each', async () => {
    const camera = await startRtspCamera({ fps: 15, gop: 15, openGop: true });
    cameras.push(camera);
    const s = spawnStream(args(camera.url, 'cam-open-gop'));
    try {
      await s.waitCount(/sends h264 with open GOPs .* the segment being cut \(\d+ frame\(s\), not numbered\) is dropped, and from now on the source is transcoded to H\.264 with closed GOPs by ffmpeg$/, 1, 30_000);
      await s.waitCount(/^connected to .* \(h264: transcoded to H\.264 by an ffmpeg process, CRF 20, as its h264 has open GOPs, which cannot be cut\)$/, 1, 30_000);
      await s.waitCount(UPLOADED, 3, 30_000);
    } finally {
      expect(await s.stop(), s.lines.join('\n')).toBe(0);
    }
    expect(s.count(/sends h264 with open GOPs/)).toBe(1);
    expect(s.count(/^reconnect: /), s.lines.join('\n')).toBe(0); // not an outage: the camera never went away
    const chain = await checkedChain(stack, 'cam-open-gop');
    const frames = chain.reduce((n, c) => n + c.frames, 0);
    // the dropped segment's frames were never numbered: not in the run's count either
    expect(droppedOpenGop(s.lines)).toBeGreaterThan(0);
    expect(frames).toBe(framesReported(s.lines));
    const records = await workerRecords('cam-open-gop', chain);
    console.info(`live h264 open GOP: ${chain.length} segments, ${frames} frames captured, ${records.filter((r) => r.endsWith(':ok')).length} ok records`);
    expect(records).toEqual(Array.from({ length: frames }, (_, i) => `${i}:ok`));
  }, 180_000);

  it('without the ffmpeg program, a Motion JPEG camera is refused at its first connection, naming the codec and how to install it; nothing is sent', async () => {
    const camera = await startRtspCamera({ fps: 15, gop: 15 });
    cameras.push(camera);
    await camera.kill();
    await camera.start('mjpeg');
    const s = spawnAffinity(['stream', ...args(camera.url, 'cam-no-ffmpeg')], { ...process.env, AFFINITY_FFMPEG: path.join(work, 'no-such-ffmpeg') });
    expect(await s.exited, s.lines.join('\n')).toBe(1);
    expect(s.lines.join('\n')).toMatch(/sends mjpeg video, which is transcoded to H\.264 by the ffmpeg program, and \S*no-such-ffmpeg cannot be run \(.*ENOENT.*\)\. Install FFmpeg \(apt-get install ffmpeg; the edge image has it\) or set AFFINITY_FFMPEG to its path/);
    expect(await stack.objects('cam-no-ffmpeg')).toEqual([]);
  }, 60_000);

  it('MPEG-4 Part 2 over RTSP, stalling once: the stall is the camera\'s outage with its reason, the frames the transcoder held are flushed; every frame captured lands once, decodes, and gets one ok record', async () => {
    const camera = await startRtspCamera({ fps: 15, gop: 15, codec: 'mpeg4' });
    cameras.push(camera);
    const s = spawnStream(args(camera.url, 'cam-mpeg4'));
    try {
      await s.waitCount(/^connected to .* \(mpeg4: transcoded to H\.264 by an ffmpeg process/, 1, 30_000);
      await s.waitCount(UPLOADED, 3, 30_000);
      camera.freeze(true); // silent, its connection open
      await s.waitCount(/^reconnect: .*timed out/, 1, 30_000);
      camera.freeze(false);
      await s.waitCount(/^reconnected to .* \(mpeg4: transcoded/, 1, 40_000);
      const after = s.count(UPLOADED);
      await s.waitCount(UPLOADED, after + 2, 30_000);
    } finally {
      camera.freeze(false);
      expect(await s.stop(), s.lines.join('\n')).toBe(0);
    }
    expect(s.lines.join('\n')).not.toMatch(/reconnect: the transcoder/); // the camera's outage, not the transcoder's
    const chain = await checkedChain(stack, 'cam-mpeg4');
    const frames = chain.reduce((n, c) => n + c.frames, 0);
    expect(frames).toBe(framesReported(s.lines));
    expect(await codecOf(chain.at(-1)!.key)).toBe('h264');
    const records = await workerRecords('cam-mpeg4', chain);
    console.info(`live mpeg4: ${chain.length} segments, ${frames} frames captured, ${records.filter((r) => r.endsWith(':ok')).length} ok records`);
    expect(records).toEqual(Array.from({ length: frames }, (_, i) => `${i}:ok`));
  }, 180_000);
});
