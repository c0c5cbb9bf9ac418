/**
 * CPU per frame to decode a 2-s, 30-fps H.264 segment (issue 34, decision 48), beside
 * today's per-frame JPEG decode, on the same frames in the same run:
 *
 * - `node-av`: gpu-worker/video/segment-decoder.ts as the worker will run it (FFmpeg in
 *   process through node-av, 1 decoder thread, frames converted to packed RGB);
 * - `ffmpeg-binary`: Debian's `ffmpeg` spawned per segment, `-threads 1 -f rawvideo
 *   -pix_fmt rgb24` on stdout, read by this process (its CPU counted with the child's);
 * - `sharp-jpeg`: the same 60 frames as JPEGs (quality 95, what bench/pipeline-cpu.ts
 *   uploads) decoded one by one to raw RGB by sharp, as the worker decodes a frame today
 *   before its letterbox;
 * - `node-av-letterbox` / `sharp-jpeg-letterbox`: the same, scaled while decoding to the
 *   size the 640x640 letterbox needs (FFmpeg's swscale, bilinear; sharp's linear resize
 *   with shrink-on-load, as gpu-worker/vision/preprocess.ts does). At 640x480 nothing is
 *   scaled, so they repeat the first pair.
 *
 * The frames are the bench's synthetic clip (gpu-worker/vision/synthetic/generate.ts: coloured squares on
 * a slightly noisy background, seed 500, 6 objects) at 640x480 and 1920x1080, encoded once
 * per run by the `ffmpeg` binary with libx264 (`-preset veryfast -g 30 -bf 2`, so B-frames),
 * at two rates: `crf23` (what x264 needs for this simple picture: 0.2-0.8 Mbit/s) and
 * `camera` (a camera's bitrate, which sets the decoder's work: 1.5 Mbit/s at 640x480,
 * 4 Mbit/s at 1080p, the top of issue 34's 2-4).
 * Core-ms per frame = the process's (and for the binary its child's) user + system CPU
 * over the frames decoded; rounds alternate the variants, so the machine's load falls on
 * all; medians are reported.
 *
 * Needs the `ffmpeg` binary to make the segments (apt-get install ffmpeg).
 * Run: npx node bench/video-decode.ts [--rounds 5] [--sizes 640x480,1920x1080] [--rates crf23,camera] [--out bench/results/video-decode.json]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { decodeSegment } from '../gpu-worker/video/segment-decoder.ts';
import { letterboxGeometry } from '../gpu-worker/vision/preprocess.ts';
import { generateClip } from '../gpu-worker/vision/synthetic/generate.ts';
import { numberOption } from './support.ts';

const FPS = 30;
const FRAMES = 2 * FPS;
const VARIANTS = ['node-av', 'ffmpeg-binary', 'sharp-jpeg', 'node-av-letterbox', 'sharp-jpeg-letterbox'] as const;
/** The model's input side: `-letterbox` variants scale to the letterbox's inner size (1080p: 640x360). */
const INPUT = 640;
type Variant = (typeof VARIANTS)[number];
const RATES = ['crf23', 'camera'] as const;
type Rate = (typeof RATES)[number];

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    sizes: { type: 'string', default: '640x480,1920x1080' },
    rates: { type: 'string', default: RATES.join(',') },
    out: { type: 'string' },
  },
});
const rounds = numberOption(values, 'rounds', 1, 100);

if (spawnSync('ffmpeg', ['-version']).status !== 0) {
  console.error('bench/video-decode.ts needs the ffmpeg binary to make its segments: apt-get install ffmpeg');
  process.exit(2);
}

const cameraKbps = (height: number): number => (height > 720 ? 4000 : 1500);

/** Encodes raw RGB frames to an H.264 MP4 with the ffmpeg binary. */
async function encode(rgbFrames: readonly Buffer[], width: number, height: number, rate: Rate, file: string): Promise<void> {
  const kbps = cameraKbps(height);
  const rateArgs = rate === 'crf23' ? ['-crf', '23'] : ['-b:v', `${kbps}k`, '-minrate', `${kbps}k`, '-maxrate', `${kbps}k`, '-bufsize', `${kbps}k`, '-x264-params', 'nal-hrd=cbr:filler=0'];
  const child = spawn(
    'ffmpeg',
    ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${width}x${height}`, '-r', String(FPS), '-i', 'pipe:0',
      '-c:v', 'libx264', '-preset', 'veryfast', ...rateArgs, '-g', '30', '-bf', '2', '-pix_fmt', 'yuv420p', file],
    { stdio: ['pipe', 'ignore', 'inherit'] },
  );
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  for (const f of rgbFrames) if (!child.stdin.write(f)) await new Promise((r) => child.stdin.once('drain', r));
  child.stdin.end();
  if ((await exited) !== 0) throw new Error('ffmpeg could not encode the segment');
}

/** Decodes with the binary; returns the CPU of this process and the child, ms. */
async function viaBinary(file: string, frameBytes: number): Promise<{ cpuMs: number; frames: number }> {
  const before = process.cpuUsage();
  // `times` prints the CPU of the shell's children (ffmpeg) once it has exited.
  const sh = spawn('/bin/bash', ['-c', 'ffmpeg -nostdin -hide_banner -loglevel error -threads 1 -i "$1" -f rawvideo -pix_fmt rgb24 pipe:1; times >&2', 'sh', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let bytes = 0;
  sh.stdout.on('data', (b: Buffer) => {
    bytes += b.length;
  });
  let err = '';
  sh.stderr.on('data', (b: Buffer) => {
    err += b.toString();
  });
  await new Promise((resolve) => sh.on('close', resolve));
  const m = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(err.trim());
  if (!m) throw new Error(`no CPU times from the shell: ${err}`);
  const childMs = (Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4])) * 1000;
  const used = process.cpuUsage(before);
  return { cpuMs: childMs + (used.user + used.system) / 1000, frames: bytes / frameBytes };
}

async function viaNodeAv(segment: Buffer, resize?: { width: number; height: number }): Promise<{ cpuMs: number; frames: number; decoder: string }> {
  const before = process.cpuUsage();
  let frames = 0;
  let decoder = '';
  for await (const item of decodeSegment(segment, { firstFrame: 0, ...(resize ? { resize } : {}) })) {
    if (item.kind === 'frame') frames++;
    else if (item.kind === 'lost') throw new Error(`frame ${item.frame} lost: ${item.detail}`);
    else {
      decoder = item.decoder;
      if (item.failure) throw new Error(`${item.failure.reason}: ${item.failure.detail}`);
    }
  }
  const used = process.cpuUsage(before);
  return { cpuMs: (used.user + used.system) / 1000, frames, decoder };
}

async function viaSharp(jpegs: readonly Uint8Array[], resize?: { width: number; height: number }): Promise<{ cpuMs: number; frames: number }> {
  const before = process.cpuUsage();
  for (const j of jpegs) {
    let p = sharp(j, { failOn: 'error' }).removeAlpha().toColourspace('srgb');
    if (resize) p = p.resize(resize.width, resize.height, { fit: 'fill', kernel: 'linear', fastShrinkOnLoad: true });
    await p.raw().toBuffer();
  }
  const used = process.cpuUsage(before);
  return { cpuMs: (used.user + used.system) / 1000, frames: jpegs.length };
}

interface Row {
  readonly size: string;
  readonly rate: Rate;
  readonly variant: Variant;
  readonly coreMsPerFrame: number[];
  readonly medianCoreMsPerFrame: number;
  readonly wallMsPerSegment: number[];
  readonly medianWallMsPerSegment: number;
  readonly loadAverage1m: number[];
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const dir = mkdtempSync(path.join(tmpdir(), 'video-decode-'));
const rows: Row[] = [];
const segments: Record<string, { bytes: number; kbitPerSecond: number; jpegBytes: number }> = {};
const rateOf = (r: string): Rate => {
  if (!(RATES as readonly string[]).includes(r)) throw new Error(`--rates: ${r} is not one of ${RATES.join(', ')}`);
  return r as Rate;
};
let decoderName = '';
try {
  console.log(`video decode: ${FRAMES}-frame ${FPS}-fps H.264 segments, ${rounds} rounds, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), sharp ${sharp.versions.sharp}`);
  for (const size of values.sizes.split(',')) {
    const [width, height] = size.split('x').map(Number) as [number, number];
    const g = letterboxGeometry(width, height, INPUT, INPUT);
    const resize = g.resizedWidth !== width || g.resizedHeight !== height ? { width: g.resizedWidth, height: g.resizedHeight } : undefined;
    const clip = await generateClip({ seed: 500, frames: FRAMES, width, height, format: 'jpeg', objects: 6 });
    const jpegs = clip.frames.map((f) => f.image);
    const rgb = await Promise.all(jpegs.map((j) => sharp(j).removeAlpha().raw().toBuffer()));
    for (const rate of values.rates.split(',').map(rateOf)) {
    const file = path.join(dir, `${size}-${rate}.mp4`);
    await encode(rgb, width, height, rate, file);
    const segment = readFileSync(file);
    const jpegBytes = jpegs.reduce((s, j) => s + j.byteLength, 0);
    const key = `${size} ${rate}`;
    segments[key] = { bytes: segment.length, kbitPerSecond: Math.round((segment.length * 8) / 2 / 1000), jpegBytes };
    console.log(`${key}: segment ${segment.length} bytes (${segments[key].kbitPerSecond} kbit/s), the same frames as JPEGs ${jpegBytes} bytes`);
    const results = new Map<Variant, { ms: number[]; wall: number[]; load: number[] }>();
    for (let round = 0; round < rounds; round++) {
      for (const v of VARIANTS) {
        const t0 = performance.now();
        const r =
          v === 'node-av' ? await viaNodeAv(segment)
          : v === 'node-av-letterbox' ? await viaNodeAv(segment, resize)
          : v === 'ffmpeg-binary' ? await viaBinary(file, width * height * 3)
          : v === 'sharp-jpeg-letterbox' ? await viaSharp(jpegs, resize)
          : await viaSharp(jpegs);
        const wall = performance.now() - t0;
        if (r.frames !== FRAMES) throw new Error(`${v} decoded ${r.frames} of ${FRAMES} frames`);
        if ('decoder' in r && typeof r.decoder === 'string') decoderName = r.decoder;
        const acc = results.get(v) ?? { ms: [], wall: [], load: [] };
        acc.ms.push(+(r.cpuMs / FRAMES).toFixed(3));
        acc.wall.push(Math.round(wall));
        acc.load.push(+loadavg()[0]!.toFixed(2));
        results.set(v, acc);
      }
    }
    for (const [variant, r] of results) {
      const row: Row = { size, rate, variant, coreMsPerFrame: r.ms, medianCoreMsPerFrame: median(r.ms), wallMsPerSegment: r.wall, medianWallMsPerSegment: median(r.wall), loadAverage1m: r.load };
      rows.push(row);
      console.log(`${key} ${variant.padEnd(14)} median ${row.medianCoreMsPerFrame.toFixed(2)} core-ms per frame (rounds ${r.ms.join(' / ')}); wall per 2-s segment median ${row.medianWallMsPerSegment} ms; load ${r.load.join(' / ')}`);
    }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (values.out) {
  const command = `npx node bench/video-decode.ts ${process.argv.slice(2).join(' ')}`.trim();
  const ffmpegVersion = spawnSync('ffmpeg', ['-version']).stdout.toString().split('\n')[0];
  writeFileSync(values.out, `${JSON.stringify({ command, date: new Date().toISOString(), cpu: cpus()[0]?.model ?? '?', cores: availableParallelism(), sharp: sharp.versions.sharp, nodeAvDecoder: decoderName, ffmpegBinary: ffmpegVersion, segments, rows }, null, 2)}\n`);
  console.log(`wrote ${values.out}`);
}
