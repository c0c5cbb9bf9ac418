/**
 * `affinity stream` as a child process (the real binary, so the tests can SIGKILL it),
 * and the checks every stream test makes on what landed in S3.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { Demuxer } from 'node-av/api';
import { decodeSegment } from '../../gpu-worker/video/segment-decoder.ts';
import { parseSourceKey } from '../../core/ingest/segment-keys.ts';
import type { S3Stack } from './s3-stack.ts';
import { waitFor } from '../../harness/wait.ts';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface StreamChild {
  readonly child: ChildProcess;
  /** stderr and stdout lines so far. */
  readonly lines: string[];
  /** The exit code once it exits. */
  readonly exited: Promise<number | null>;
  count(re: RegExp): number;
  waitCount(re: RegExp, n: number, timeoutMs?: number): Promise<void>;
  /** SIGTERM (a clean stop); resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL. */
  kill9(): Promise<void>;
}

export function spawnStream(args: readonly string[]): StreamChild {
  return spawnAffinity(['stream', ...args]);
}

/** Any `affinity` command as a child process (`affinity edge`: test/cli/edge/), with an environment of its own when given. */
export function spawnAffinity(args: readonly string[], env?: NodeJS.ProcessEnv): StreamChild {
  const child = spawn(process.execPath, ['cli/bin.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], ...(env ? { env } : {}) });
  const lines: string[] = [];
  const collect = (d: Buffer): void => {
    for (const l of d.toString().split('\n')) if (l.trim()) lines.push(l);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const count = (re: RegExp): number => lines.filter((l) => re.test(l)).length;
  return {
    child,
    lines,
    exited,
    count,
    waitCount: (re, n, timeoutMs = 60_000) =>
      waitFor(`${n} line(s) matching ${re} (output so far:\n${lines.slice(-15).join('\n')})`, () => {
        if (child.exitCode !== null && count(re) < n) throw new Error(`stream exited with ${child.exitCode} before ${n} line(s) matching ${re}:\n${lines.join('\n')}`);
        return count(re) >= n;
      }, timeoutMs, 100).then(() => undefined),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
    async kill9() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The video packets of a segment's bytes (demuxed, not decoded). */
async function videoPackets(body: Uint8Array): Promise<number> {
  const demuxer = await Demuxer.open(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  try {
    const stream = demuxer.video();
    if (!stream) return 0;
    let n = 0;
    for await (const p of demuxer.packets(stream.index)) {
      if (!p) continue;
      n++;
      p.free();
    }
    return n;
  } finally {
    await demuxer.close();
  }
}

export interface LandedSegment {
  readonly key: string;
  readonly firstFrame: number;
  readonly frames: number;
  readonly size: number;
  /** Presentation time of the first and last decoded frame, ms. */
  readonly firstMs: number | null;
  readonly lastMs: number | null;
}

/**
 * The video's segments in S3, checked: every one declares its frame count, holds exactly
 * that many video packets (what the edge itself guarantees: it declares the packets it
 * wrote), and decodes on its own into exactly that many frames; the chain starts at
 * `firstFrame` and is contiguous, `[n, n + k)` then `[n + k, ...)`, no hole and no overlap
 * (no frame under two numbers); time only grows from one segment to the next.
 *
 * The decode check also needs the camera to have sent whole frames: a camera that drops
 * RTP packets for a slow client damages frames, which the edge cuts and declares as it
 * received them (the worker then records those as failed, with the decoder's reason). A
 * test camera that did so under CI load once failed this check ("the decoder yielded 19
 * of the 30 frames", an H.265 segment, with a damaged keyframe so two GOPs in one
 * segment): the same cause as a stream SIGSTOPped 5 s against GStreamer's default. The
 * test camera (test/support/rtsp-server.py) therefore never drops for a slow client, and
 * the packet count here tells an edge that declares frames it does not hold (a bug of
 * ours) from frames that arrived damaged.
 */
export async function checkedChain(stack: S3Stack, videoId: string, firstFrame = 0, o2: { readonly drops?: number } = {}): Promise<LandedSegment[]> {
  const objects = (await stack.objects(videoId)).filter((o) => parseSourceKey(o.key).kind === 'source');
  const out: LandedSegment[] = [];
  // A camera killed mid-frame leaves that frame cut: the segment its drop closed may end in
  // one frame the decoder cannot produce (the worker records it failed, with the decoder's
  // reason). At most `drops` segments, and only their last frame.
  let cutLeft = o2.drops ?? 0;
  let expectNext = firstFrame;
  let lastMs = -Infinity;
  for (const o of objects) {
    const parsed = parseSourceKey(o.key);
    if (parsed.kind !== 'source') continue;
    expect(o.frames, `${o.key} declares x-amz-meta-frames`).toBeGreaterThan(0);
    expect(parsed.firstFrame, `${o.key} continues the chain`).toBe(expectNext);
    const body = await stack.body(o.key);
    expect(await videoPackets(body), `${o.key} holds the ${o.frames} frames it declares (video packets)`).toBe(o.frames);
    const frames: number[] = [];
    let firstPts: number | null = null;
    let lastPts: number | null = null;
    for await (const item of decodeSegment(body, { firstFrame: parsed.firstFrame, declaredFrames: o.frames! })) {
      if (item.kind === 'frame') {
        frames.push(item.frame);
        firstPts ??= item.ptsMs;
        lastPts = item.ptsMs;
      } else if (item.kind === 'lost') expect.fail(`${o.key}: frame ${item.frame} lost: ${item.detail}`);
      else if (item.failure && cutLeft > 0 && item.failure.reason === 'decode-error' && item.failure.from === parsed.firstFrame + o.frames! - 1 && item.failure.to === parsed.firstFrame + o.frames!) {
        cutLeft--;
        frames.push(item.failure.from);
      } else expect(item.failure, `${o.key}: ${item.failure?.detail}`).toBeUndefined();
    }
    expect(frames, `${o.key} decodes to its ${o.frames} frames`).toEqual(Array.from({ length: o.frames! }, (_, i) => parsed.firstFrame + i));
    if (firstPts !== null) {
      expect(firstPts, `${o.key} starts after the segment before it`).toBeGreaterThan(lastMs);
      lastMs = lastPts ?? firstPts;
    }
    out.push({ key: o.key, firstFrame: parsed.firstFrame, frames: o.frames!, size: o.size, firstMs: firstPts, lastMs: lastPts });
    expectNext = parsed.firstFrame + o.frames!;
  }
  return out;
}
