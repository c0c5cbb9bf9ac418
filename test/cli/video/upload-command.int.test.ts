/**
 * `affinity upload <file> --video <id>` through the CLI's `main`, against fauxqs S3 (an
 * S3-only stack.json: test/support/s3-stack.ts) with real H.264 that ffmpeg encodes here:
 * each segment lands as frames/{id}/{n}.ts covering [n, n + k) with k in
 * x-amz-meta-frames, the chain is contiguous and decodes to every frame, a rerun sends
 * nothing, `--end` writes the last frame, and a folder still uploads as frames.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../cli/main.ts';
import { memoryIo } from '../../../cli/io.ts';
import { decodeSegment } from '../../../gpu-worker/video/segment-decoder.ts';
import { jpeg } from '../../../harness/pipeline.ts';
import { makeH264 } from '../../support/make-video.ts';
import { startS3Stack, type S3Stack } from '../../support/s3-stack.ts';

let stack: S3Stack;
let work: string;

beforeAll(async () => {
  stack = await startS3Stack();
  work = mkdtempSync(path.join(tmpdir(), 'upload-file-'));
  // 4 s at 15 fps with a keyframe every 15 frames: 60 frames, a GOP a second
  await makeH264(path.join(work, 'cam.mp4'), { seconds: 4, fps: 15, gop: 15 });
  await makeH264(path.join(work, 'cam.mov'), { seconds: 2, fps: 10, gop: 10 });
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

async function decodedFrames(key: string, firstFrame: number, declared: number): Promise<number[]> {
  const out: number[] = [];
  for await (const item of decodeSegment(await stack.body(key), { firstFrame, declaredFrames: declared })) {
    if (item.kind === 'frame') out.push(item.frame);
    else if (item.kind === 'lost') expect.fail(`frame ${item.frame} lost: ${item.detail}`);
    else expect(item.failure, item.failure?.detail).toBeUndefined();
  }
  return out;
}

describe('affinity upload <file>', () => {
  it('cuts an MP4 at keyframes, uploads contiguous segments with their frame counts, and resumes without re-sending', async () => {
    const first = await cli(['upload', path.join(work, 'cam.mp4'), '--video', 'file-1', '--segment-seconds', '2', '--end']);
    expect(first.code, first.err).toBe(0);
    expect(first.out).toContain('uploaded 2 segment(s)');
    const objects = await stack.objects('file-1');
    expect(objects.map((o) => [o.key, o.frames])).toEqual([
      ['frames/file-1/000000.ts', 30],
      ['frames/file-1/000030.ts', 30],
      ['frames/file-1/_end', undefined],
    ]);
    expect(new TextDecoder().decode(await stack.body('frames/file-1/_end'))).toBe('59');
    const frames: number[] = [];
    for (const o of objects.filter((x) => x.frames !== undefined)) frames.push(...(await decodedFrames(o.key, Number(path.basename(o.key, '.ts')), o.frames!)));
    expect(frames).toEqual(Array.from({ length: 60 }, (_, i) => i));

    const again = await cli(['upload', path.join(work, 'cam.mp4'), '--video', 'file-1', '--segment-seconds', '2']);
    expect(again.code, again.err).toBe(0);
    expect(again.out).toContain('uploaded 0 segment(s)');
    expect(again.out).toContain('skipped 2');
  });

  it('takes any container FFmpeg demuxes (MOV here), --first-frame and --container mp4', async () => {
    const r = await cli(['upload', path.join(work, 'cam.mov'), '--video', 'file-2', '--segment-seconds', '1', '--first-frame', '100', '--container', 'mp4']);
    expect(r.code, r.err).toBe(0);
    expect((await stack.objects('file-2')).map((o) => [o.key, o.frames])).toEqual([
      ['frames/file-2/000100.mp4', 10],
      ['frames/file-2/000110.mp4', 10],
    ]);
  });

  it('still uploads a folder as frames, and refuses segment flags on a folder', async () => {
    const dir = path.join(work, 'frames');
    mkdirSync(dir);
    const body = await jpeg();
    for (let f = 0; f < 3; f++) {
      writeFileSync(path.join(dir, `f${f}.jpg`), body);
    }
    copyFileSync(path.join(work, 'cam.mov'), path.join(dir, 'ignored.mov'));
    const ok = await cli(['upload', dir, '--video', 'folder-1']);
    expect(ok.code, ok.err).toBe(0);
    expect((await stack.objects('folder-1')).map((o) => o.key)).toEqual(['frames/folder-1/000000.jpg', 'frames/folder-1/000001.jpg', 'frames/folder-1/000002.jpg']);
    const bad = await cli(['upload', dir, '--video', 'folder-1', '--segment-seconds', '2']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--segment-seconds, --container and --bitrate apply to a video file');
  });

  it('fails clearly on a file FFmpeg cannot read and on a bad flag', async () => {
    writeFileSync(path.join(work, 'junk.mp4'), 'not a video');
    const junk = await cli(['upload', path.join(work, 'junk.mp4'), '--video', 'file-3']);
    expect(junk.code).toBe(1);
    expect(junk.err).toMatch(/error: cannot read .*junk\.mp4/);
    const flag = await cli(['upload', path.join(work, 'cam.mp4'), '--video', 'file-3', '--segment-seconds', 'soon']);
    expect(flag.code).toBe(2);
    expect(flag.err).toContain('--segment-seconds must be a number');
    expect(await stack.objects('file-3')).toEqual([]);
  });
});
