/**
 * Video from the wild, end to end (issue 41): short clips that ffmpeg makes here, in the
 * codecs and containers users bring (MJPEG, MPEG-4 Part 2, MS-MPEG4, Cinepak, VP8, VP9,
 * AV1, H.264, H.265; a variable frame rate; H.264 with open GOPs; an H.264 segment
 * damaged by `-bsf:v noise`), go through `affinity upload <file>` (cli/video: stream copy
 * or transcode, cut, upload, the first segment alone first) into the local stack, where
 * the real router and a real worker decode and record them. Per clip: the frames FFmpeg's
 * own decoder (ffprobe) outputs from the source, against the records the worker wrote
 * (`ok`, `late`, `failed`), and whether every record's `ptsMs` is FFmpeg's time for that
 * frame. The damaged clip is uploaded as it is (one segment, stream copy of the damaged
 * bytes, with its declared count), so the comparison is with FFmpeg on the same object.
 *
 * Run: npx node bench/video-wild.ts
 * Writes bench/results/video-wild.json. A few minutes on 2 cores.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { uploadVideoFile } from '../cli/video/segment-upload.ts';
import { endMarkerKey } from '../core/ingest/keys.ts';
import { FRAMES_METADATA_KEY } from '../core/ingest/segment-keys.ts';
import { results, startTestStack, summary, waitFor } from '../harness/pipeline.ts';
import { ffmpegFrameTimes, makeSource, type SourceCodec } from '../test/support/make-video.ts';

const run = promisify(execFile);
const OUT = join(dirname(fileURLToPath(import.meta.url)), 'results', 'video-wild.json');

interface Clip {
  readonly id: string;
  readonly codec: string;
  readonly source: string;
  readonly container: 'mpegts' | 'mp4' | 'matroska';
  readonly make: (file: string) => Promise<void>;
  /** Uploaded as one segment as it is (no cut): the damaged clip. */
  readonly raw?: { readonly declaredFrames: number };
}

const src = (codec: SourceCodec, o: { vfr?: boolean; size?: string } = {}) => (file: string) => makeSource(file, codec, { seconds: 3, fps: 15, ...o });

/** 90 frames of H.264 (30 fps, B-frames, a keyframe a second), damaged by one of ffmpeg's bitstream filters, uploaded as one segment as it is. */
function damaged(id: string, ext: 'ts' | 'mp4' | 'mkv', bsf: string): Clip {
  return {
    id,
    codec: `h264, -bsf:v ${bsf}`,
    source: ext,
    container: ext === 'ts' ? 'mpegts' : ext === 'mp4' ? 'mp4' : 'matroska',
    raw: { declaredFrames: 90 },
    make: async (f) => {
      const clean = `${f}.clean.${ext}`;
      await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30:duration=3', '-c:v', 'libx264', '-preset', 'ultrafast', '-threads', '1', '-pix_fmt', 'yuv420p', '-g', '30', '-keyint_min', '30', '-sc_threshold', '0', '-bf', '2', clean]);
      await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-i', clean, '-c', 'copy', '-bsf:v', bsf, f]);
    },
  };
}

const CLIPS: Clip[] = [
  { id: 'h264-mp4-ts', codec: 'h264', source: 'mp4', container: 'mpegts', make: src('h264') },
  { id: 'h264-vfr-mkv-mp4', codec: 'h264 (vfr)', source: 'mkv', container: 'mp4', make: src('h264', { vfr: true }) },
  { id: 'hevc-mp4-mkv', codec: 'hevc', source: 'mp4', container: 'matroska', make: src('hevc') },
  { id: 'mjpeg-avi-ts', codec: 'mjpeg', source: 'avi', container: 'mpegts', make: src('mjpeg') },
  { id: 'mpeg4-avi-mp4', codec: 'mpeg4', source: 'avi', container: 'mp4', make: src('mpeg4') },
  { id: 'mpeg4-vfr-mkv-ts', codec: 'mpeg4 (vfr)', source: 'mkv', container: 'mpegts', make: src('mpeg4', { vfr: true }) },
  { id: 'msmpeg4-avi-mkv', codec: 'msmpeg4v3', source: 'avi', container: 'matroska', make: src('msmpeg4') },
  { id: 'cinepak-avi-ts', codec: 'cinepak', source: 'avi', container: 'mpegts', make: src('cinepak', { size: '160x120' }) },
  { id: 'vp8-webm-mkv', codec: 'vp8', source: 'webm', container: 'matroska', make: src('vp8') },
  { id: 'vp9-vfr-webm-mp4', codec: 'vp9 (vfr)', source: 'webm', container: 'mp4', make: src('vp9', { vfr: true }) },
  { id: 'av1-mkv-ts', codec: 'av1', source: 'mkv', container: 'mpegts', make: src('av1', { size: '160x120' }) },
  {
    id: 'h264-opengop-mkv-ts',
    codec: 'h264 (open GOPs)',
    source: 'mkv',
    container: 'mpegts',
    make: (f) =>
      run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=15:duration=3', '-c:v', 'libx264', '-preset', 'ultrafast', '-x264-params', 'open-gop=1:keyint=15:min-keyint=15:bframes=3:b-pyramid=0:scenecut=0', f]).then(() => undefined),
  },
  damaged('h264-noise-ts', 'ts', 'noise=amount=3000'),
  damaged('h264-noise-mp4', 'mp4', 'noise=amount=3000'),
  damaged('h264-noise-mkv', 'mkv', 'noise=amount=3000'),
  damaged('h264-dropped-ts', 'ts', 'noise=dropamount=12'),
];

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'video-wild-'));
  const stack = await startTestStack({ tunables: { slotCount: 2 } });
  const rows: Record<string, unknown>[] = [];
  try {
    for (const clip of CLIPS) {
      const file = join(work, `${clip.id}.${clip.source}`);
      await clip.make(file);
      const reference = await ffmpegFrameTimes(file);
      const t0 = Date.now();
      let lastFrame: number;
      if (clip.raw) {
        await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: `frames/${clip.id}/000000.${clip.source}`, Body: readFileSync(file), Metadata: { [FRAMES_METADATA_KEY]: String(clip.raw.declaredFrames) } }));
        lastFrame = clip.raw.declaredFrames - 1;
        await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: endMarkerKey(clip.id), Body: String(lastFrame) }));
      } else {
        const up = await uploadVideoFile(file, { s3: stack.clients.s3, bucket: stack.wiring.bucket, videoId: clip.id, outDir: join(work, clip.id), segmentSeconds: 1, container: clip.container, end: true });
        lastFrame = up.lastFrame!;
      }
      const records = await waitFor(`${clip.id} complete`, async () => ((await summary(stack, clip.id))?.status === 'complete' ? results(stack, clip.id) : undefined), 180_000);
      const ok = records.filter((r) => r.status === 'ok');
      // every record at FFmpeg's time for its frame (first frame's offset removed: an MPEG-TS muxer may start its clock above 0)
      // (a damaged clip is the object FFmpeg read: the same clock, and its frame numbers are not positions in FFmpeg's list)
      const base = clip.raw ? 0 : (ok[0]?.ptsMs ?? 0) - (reference[ok[0]?.frame ?? 0] ?? 0);
      const maxPtsErrorMs = Math.max(0, ...ok.map((r) => Math.abs((r.ptsMs ?? NaN) - base - (reference[r.frame] ?? NaN))));
      const ffmpegTimesOk = clip.raw ? reference.every((t) => ok.some((r) => Math.abs((r.ptsMs ?? NaN) - base - t) < 1)) : undefined;
      const row = {
        clip: clip.id,
        codec: clip.codec,
        source: clip.source,
        segments: clip.container,
        ffmpegFrames: reference.length,
        records: records.length,
        ok: ok.length,
        late: records.filter((r) => r.status === 'late').length,
        failed: records.filter((r) => r.status === 'failed').length,
        maxPtsErrorMs: clip.raw ? null : Math.round(maxPtsErrorMs * 1000) / 1000,
        ...(clip.raw ? { everyFfmpegFrameOk: ffmpegTimesOk } : {}),
        lastFrame,
        seconds: Math.round((Date.now() - t0) / 100) / 10,
      };
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  } finally {
    await stack.stop();
    rmSync(work, { recursive: true, force: true });
  }
  await mkdir(dirname(OUT), { recursive: true });
  writeFileSync(OUT, `${JSON.stringify({ bench: 'video-wild', date: new Date().toISOString(), command: 'npx node bench/video-wild.ts', rows }, null, 2)}\n`);
  console.log(`wrote ${OUT}`);
}

await main();
