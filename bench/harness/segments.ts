/**
 * Encoded segments for the benches (issue 34): real H.264 made at bench time by the
 * `ffmpeg` binary (apt-get install ffmpeg; nothing is downloaded), and the CPU this
 * machine spends decoding them through the worker's own decoder
 * (gpu-worker/video/segment-decoder.ts, node-av, 1 thread, packed RGB), measured alone so
 * that a bench can tell the machine's CPU from the design's limits.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decodeSegment } from '../../gpu-worker/video/segment-decoder.ts';

/** How a bench segment is encoded. */
export interface SegmentSpec {
  readonly width: number;
  readonly height: number;
  readonly fps: number;
  /** Frames in the segment (`k`). */
  readonly frames: number;
  /** Target bitrate, kbit/s (a camera sends 1,500-4,000); undefined: x264's crf 23. */
  readonly kbps?: number;
}

/** Parses `640x480`. */
export function parseSize(text: string): { width: number; height: number } {
  const m = /^(\d{2,4})x(\d{2,4})$/.exec(text);
  if (!m) throw new Error(`size must be WIDTHxHEIGHT (got ${text})`);
  return { width: Number(m[1]), height: Number(m[2]) };
}

/**
 * One MPEG-TS segment of H.264: ffmpeg's `testsrc2` (moving patterns and a counter, so
 * every frame differs), libx264 `veryfast`, a keyframe at the start only (one GOP per
 * segment, as an edge segmenter cuts), B-frames (`-bf 2`), yuv420p.
 */
export function encodeSegment(spec: SegmentSpec): Uint8Array {
  if (spawnSync('ffmpeg', ['-version']).status !== 0) throw new Error('the ffmpeg binary is needed to make the segments (apt-get install ffmpeg)');
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-segment-'));
  const file = path.join(dir, 'segment.ts');
  try {
    const rate = spec.kbps !== undefined ? ['-b:v', `${spec.kbps}k`, '-maxrate', `${spec.kbps}k`, '-bufsize', `${2 * spec.kbps}k`] : ['-crf', '23'];
    const r = spawnSync(
      'ffmpeg',
      ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `testsrc2=size=${spec.width}x${spec.height}:rate=${spec.fps}`, '-frames:v', String(spec.frames),
        '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-bf', '2', '-g', String(spec.frames), '-keyint_min', String(spec.frames), '-sc_threshold', '0', ...rate, '-f', 'mpegts', file],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    if (r.status !== 0) throw new Error(`ffmpeg failed: ${String(r.stderr)}`);
    return new Uint8Array(readFileSync(file));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** This machine's decode of a segment through the worker's decoder, alone: medians over `rounds`. */
export interface DecodeCost {
  readonly rounds: number;
  readonly framesPerSegment: number;
  /** User + system CPU of this process per frame decoded, ms (median of the rounds). */
  readonly coreMsPerFrame: number;
  /** Wall time to decode the whole segment, ms (median). */
  readonly wallMsPerSegment: number;
  readonly decoder: string;
}

/** Decodes `bytes` `rounds` times, one after another, as the worker does (no resize: the simulated GPU has no input size). */
export async function measureDecode(bytes: Uint8Array, rounds: number): Promise<DecodeCost> {
  const cpu: number[] = [];
  const wall: number[] = [];
  let frames = 0;
  let decoder = 'none';
  for (let i = 0; i < rounds; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    let n = 0;
    for await (const item of decodeSegment(bytes, { firstFrame: 0, container: 'mpegts' })) {
      if (item.kind === 'frame') n++;
      else if (item.kind === 'end') decoder = item.decoder;
    }
    const c = process.cpuUsage(c0);
    wall.push(performance.now() - t0);
    cpu.push((c.user + c.system) / 1000 / Math.max(1, n));
    frames = n;
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { rounds, framesPerSegment: frames, coreMsPerFrame: median(cpu), wallMsPerSegment: median(wall), decoder };
}
