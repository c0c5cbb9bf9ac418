/**
 * The cutter on real H.264 (test/gpu-worker/video/fixtures/): every segment decodes on its
 * own into exactly the frames, pixels and timestamps the whole file has at the same frame
 * numbers. `.int` because it runs FFmpeg (node-av) and writes files.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cutFile, CutError, type SegmentContainer } from '../../../cli/video/segment-file.ts';
import { parseSourceKey } from '../../../core/ingest/segment-keys.ts';
import { decodeSegment } from '../../../gpu-worker/video/segment-decoder.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../gpu-worker/video/fixtures');
const dirs: string[] = [];
const scratch = (): string => {
  const d = mkdtempSync(path.join(tmpdir(), 'segment-file-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Decoded {
  readonly frame: number;
  readonly ptsMs: number | null;
  readonly hash: string;
}

async function decode(file: string, firstFrame: number, declaredFrames?: number): Promise<Decoded[]> {
  const out: Decoded[] = [];
  for await (const item of decodeSegment(file, { firstFrame, ...(declaredFrames === undefined ? {} : { declaredFrames }) })) {
    if (item.kind === 'frame') out.push({ frame: item.frame, ptsMs: item.ptsMs, hash: createHash('sha256').update(item.data).digest('hex') });
    else if (item.kind === 'lost') expect.fail(`${file}: frame ${item.frame} lost: ${item.detail}`);
    else expect(item.failure, `${file}: ${item.failure?.detail}`).toBeUndefined();
  }
  return out;
}

describe('cutFile', () => {
  it.each<[SegmentContainer, string]>([
    ['mpegts', 'ts'],
    ['mp4', 'mp4'],
    ['matroska', 'mkv'],
  ])('cuts at keyframes into %s segments named by first frame; each decodes alone into the file\'s own frames', async (container, ext) => {
    const source = path.join(FIXTURES, 'bframes-45.mp4');
    const whole = await decode(source, 0);
    const { segments, frames, skippedBeforeKeyframe } = await cutFile(source, { videoId: 'cam-1', outDir: scratch(), segmentSeconds: 0.5, container });
    expect([frames, skippedBeforeKeyframe]).toEqual([45, 0]);
    // a keyframe every 15 frames at 30 fps: one segment per GOP
    expect(segments.map((s) => [s.key, s.firstFrame, s.frames])).toEqual([
      [`frames/cam-1/000000.${ext}`, 0, 15],
      [`frames/cam-1/000015.${ext}`, 15, 15],
      [`frames/cam-1/000030.${ext}`, 30, 15],
    ]);
    const pieces: Decoded[] = [];
    for (const s of segments) {
      expect(parseSourceKey(s.key)).toMatchObject({ kind: 'source', videoId: 'cam-1', firstFrame: s.firstFrame });
      expect(s.bytes).toBeGreaterThan(0);
      const got = await decode(s.file, s.firstFrame, s.frames);
      expect(got).toHaveLength(s.frames);
      pieces.push(...got);
    }
    expect(pieces.map((p) => p.hash)).toEqual(whole.map((w) => w.hash));
    expect(pieces.map((p) => p.frame)).toEqual(whole.map((w) => w.frame));
    // the source's time line is kept across segments (one constant offset at most, what a muxer adds)
    const offset = pieces[0]!.ptsMs! - whole[0]!.ptsMs!;
    // (within 1 ms: Matroska keeps milliseconds)
    pieces.forEach((p, i) => expect(Math.abs(p.ptsMs! - whole[i]!.ptsMs! - offset)).toBeLessThanOrEqual(1));
    segments.forEach((s, i) => expect(Math.abs(s.startMs! - offset - i * 500)).toBeLessThanOrEqual(1));
  });

  it('closes a segment at the first keyframe at least segmentSeconds in, so frame counts vary', async () => {
    const { segments } = await cutFile(path.join(FIXTURES, 'bframes-45.mp4'), { videoId: 'v', outDir: scratch(), segmentSeconds: 0.6, firstFrame: 1000 });
    expect(segments.map((s) => [s.firstFrame, s.frames])).toEqual([
      [1000, 30],
      [1030, 15],
    ]);
    expect(segments[0]!.key).toBe('frames/v/001000.ts');
  });

  it('keeps a variable frame rate across the cut', async () => {
    const source = path.join(FIXTURES, 'vfr-20.mkv');
    const whole = await decode(source, 0);
    const { segments } = await cutFile(source, { videoId: 'v', outDir: scratch(), segmentSeconds: 0.3 });
    expect(segments.map((s) => [s.firstFrame, s.frames])).toEqual([
      [0, 15],
      [15, 5],
    ]);
    const second = await decode(segments[1]!.file, 15, 5);
    const offset = (await decode(segments[0]!.file, 0))[0]!.ptsMs! - whole[0]!.ptsMs!;
    second.forEach((f, i) => expect(Math.abs(f.ptsMs! - offset - whole[15 + i]!.ptsMs!)).toBeLessThanOrEqual(1));
    expect(second.map((f) => f.hash)).toEqual(whole.slice(15).map((w) => w.hash));
  });

  it('cuts the same file the same way every time (what makes an upload resumable)', async () => {
    const source = path.join(FIXTURES, 'hevc-15.mkv');
    const a = await cutFile(source, { videoId: 'v', outDir: scratch(), segmentSeconds: 0.2 });
    const b = await cutFile(source, { videoId: 'v', outDir: scratch(), segmentSeconds: 0.2 });
    expect(a.segments.map((s) => [s.key, s.frames, s.bytes])).toEqual(b.segments.map((s) => [s.key, s.frames, s.bytes]));
    expect(a.frames).toBe(15);
  });

  it('refuses to cut inside open GOPs, whose first frames would not decode alone', async () => {
    const source = path.join(FIXTURES, 'opengop-45.mp4');
    await expect(cutFile(source, { videoId: 'v', outDir: scratch(), segmentSeconds: 0.5 })).rejects.toThrow(/open GOPs/);
    // one segment for the whole file is fine
    const { segments } = await cutFile(source, { videoId: 'v', outDir: scratch(), segmentSeconds: 10 });
    expect(segments.map((s) => [s.firstFrame, s.frames])).toEqual([[0, 45]]);
  });

  it('refuses what it cannot cut, with a reason', async () => {
    const junk = path.join(scratch(), 'junk.mp4');
    writeFileSync(junk, 'not a video '.repeat(100));
    await expect(cutFile(junk, { videoId: 'v', outDir: scratch() })).rejects.toThrow(CutError);
    await expect(cutFile(path.join(scratch(), 'missing.mp4'), { videoId: 'v', outDir: scratch() })).rejects.toThrow(/cannot read/);
    await expect(cutFile(path.join(FIXTURES, 'bframes-45.mp4'), { videoId: 'bad id', outDir: scratch() })).rejects.toThrow(RangeError);
  });
});
