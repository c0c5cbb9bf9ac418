/**
 * Cuts a video file into segments at keyframes without re-encoding, named by their first
 * frame number (core/ingest/segment-keys.ts): the cutting half of `affinity upload <file>
 * --video <id>` (issue 34; decision 48). Stream copy through node-av, the FFmpeg the
 * worker decodes with, so no `ffmpeg` binary is needed (`ffmpeg -c copy -f segment` cuts
 * the same way, but cannot tell how many frames went into each segment).
 *
 * - A segment starts at a keyframe and closes at the first keyframe at least
 *   `segmentSeconds` after its start, so segments hold whole GOPs and their frame counts
 *   vary with where the encoder put keyframes.
 * - Frames are counted as the cutter writes them (one packet is one frame for H.264 and
 *   H.265): segment `i` covers `[n_i, n_i + k_i)`, `n_{i+1} = n_i + k_i`, and `k_i` is what
 *   the uploader declares in `x-amz-meta-frames`.
 * - The source's timestamps are kept (no reset per segment), so a video's segments share
 *   one time line and dwell rules see real time across segment boundaries. (A source whose
 *   decode times start below 0, B-frames before its first shown frame, is shifted once by
 *   that delay for the whole file; a muxer would otherwise shift its first segment only.)
 * - Only the video stream is copied. Frames before the file's first keyframe cannot be
 *   decoded alone and are skipped (counted in `skippedBeforeKeyframe`; numbering starts
 *   at the keyframe).
 * - The same file and settings always give the same cut, so a rerun names every segment
 *   the same way (what makes the upload resumable: cli/video/upload-plan.ts).
 *
 * Only H.264 and H.265 are cut (what the worker decodes). Open GOPs (frames after a
 * keyframe in decode order that are shown before it) would be undecodable at the start of
 * a segment: the cut is refused ({@link OpenGopError}) rather than producing them. The
 * upload transcodes both cases first (cli/video/transcode.ts).
 */
import { mkdirSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Demuxer, Muxer } from 'node-av/api';
import { AV_CODEC_ID_H264, AV_CODEC_ID_HEVC, AV_NOPTS_VALUE } from 'node-av/constants';
import { segmentKey, type SourceContainer } from '../../core/ingest/segment-keys.ts';
import { codecName } from '../../gpu-worker/video/segment-decoder.ts';

export type SegmentContainer = Exclude<SourceContainer, 'image'>;

export interface CutOptions {
  readonly videoId: string;
  /** Where the segment files go (created if missing). */
  readonly outDir: string;
  /** A segment closes at the first keyframe this long after its start. @default 2 */
  readonly segmentSeconds?: number;
  /** Number of the file's first frame. @default 0 */
  readonly firstFrame?: number;
  /** @default 'mpegts' (MPEG-TS: no index to write at the end, any cut of it stays readable) */
  readonly container?: SegmentContainer;
}

export interface CutSegment {
  readonly key: string;
  readonly file: string;
  readonly firstFrame: number;
  readonly frames: number;
  readonly bytes: number;
  /** The first frame's presentation time in the source's time line, ms; null without timestamps. */
  readonly startMs: number | null;
}

export class CutError extends Error {
  override name = 'CutError';
}

/** The source has open GOPs: it cannot be cut by stream copy (cli/video/transcode.ts re-encodes it with closed ones). */
export class OpenGopError extends CutError {
  override name = 'OpenGopError';
}

const MUXER_FORMAT: Readonly<Record<SegmentContainer, string>> = { mp4: 'mp4', mpegts: 'mpegts', matroska: 'matroska' };

/**
 * Cuts `input` (a file path), yielding each segment as soon as its file is closed.
 * Throws {@link CutError} for a file it cannot cut (no video, another codec, open GOPs).
 */
export async function* cutSegments(input: string, options: CutOptions): AsyncGenerator<CutSegment, { readonly frames: number; readonly skippedBeforeKeyframe: number }, undefined> {
  const segmentSeconds = options.segmentSeconds ?? 2;
  if (!(segmentSeconds > 0)) throw new RangeError(`segmentSeconds ${segmentSeconds} must be positive`);
  const container = options.container ?? 'mpegts';
  mkdirSync(options.outDir, { recursive: true });
  let demuxer: Demuxer;
  try {
    demuxer = await Demuxer.open(input);
  } catch (e) {
    throw new CutError(`cannot read ${input}: ${e instanceof Error ? e.message : String(e)}`);
  }
  let muxer: Muxer | undefined;
  try {
    const stream = demuxer.video();
    if (!stream) throw new CutError(`${input} holds no video stream`);
    const codecId = stream.codecpar.codecId as number;
    if (codecId !== (AV_CODEC_ID_H264 as number) && codecId !== (AV_CODEC_ID_HEVC as number)) {
      throw new CutError(`${input}: its video is ${codecName(codecId)}; only H.264 and H.265 are cut by stream copy (affinity upload transcodes other codecs first)`);
    }
    const tb = stream.timeBase;
    const toMs = (ts: bigint): number | null => (ts === AV_NOPTS_VALUE || tb.den === 0 ? null : Math.round((Number(ts) * tb.num * 1_000_000) / tb.den) / 1000);

    let next = options.firstFrame ?? 0;
    let skippedBeforeKeyframe = 0;
    let current: { file: string; firstFrame: number; frames: number; startTs: bigint; outIndex: number; minPts: bigint } | undefined;

    const close = async (): Promise<CutSegment | undefined> => {
      if (!muxer || !current) return undefined;
      await muxer.close();
      muxer = undefined;
      const done = current;
      current = undefined;
      const { size } = await stat(done.file);
      return { key: segmentKey(options.videoId, done.firstFrame, container), file: done.file, firstFrame: done.firstFrame, frames: done.frames, bytes: size, startMs: toMs(done.minPts) };
    };

    // A muxer shifts a segment whose decode times start below 0 (B-frames before the first
    // shown frame), and would do so segment by segment: one shift for the whole file instead,
    // with the decode times a container left out (Matroska's first packets) filled in.
    const { leadingMissing, firstDts, step } = await decodeTimes(input, stream.index);
    const shift = firstDts === undefined ? 0n : bigMax(0n, -(firstDts - BigInt(leadingMissing) * step));
    let seen = 0;
    for await (const packet of demuxer.packets(stream.index)) {
      if (!packet) continue;
      if (seen < leadingMissing && packet.dts === AV_NOPTS_VALUE && firstDts !== undefined) packet.dts = firstDts - BigInt(leadingMissing - seen) * step;
      seen++;
      if (shift !== 0n) {
        if (packet.pts !== AV_NOPTS_VALUE) packet.pts += shift;
        if (packet.dts !== AV_NOPTS_VALUE) packet.dts += shift;
      }
      const ts = packet.pts !== AV_NOPTS_VALUE ? packet.pts : packet.dts;
      const due = current === undefined || (ts !== AV_NOPTS_VALUE && current.startTs !== AV_NOPTS_VALUE && (Number(ts - current.startTs) * tb.num) / tb.den >= segmentSeconds - 1e-9);
      if (packet.isKeyframe && due) {
        const closed = await close();
        if (closed) yield closed;
        const file = path.join(options.outDir, path.basename(segmentKey(options.videoId, next, container)));
        muxer = await Muxer.open(file, { format: MUXER_FORMAT[container] });
        const outIndex = muxer.addStream(stream);
        current = { file, firstFrame: next, frames: 0, startTs: ts, outIndex, minPts: packet.pts };
      }
      if (!current || !muxer) {
        skippedBeforeKeyframe++;
        continue;
      }
      if (packet.pts !== AV_NOPTS_VALUE && current.startTs !== AV_NOPTS_VALUE && packet.pts < current.startTs) {
        throw new OpenGopError(`${input} has open GOPs (a frame shown before its keyframe at ${toMs(current.startTs)} ms): re-encode with closed GOPs to cut it`);
      }
      await muxer.writePacket(packet, current.outIndex);
      current.frames++;
      next++;
    }
    const last = await close();
    if (last) yield last;
    return { frames: next - (options.firstFrame ?? 0), skippedBeforeKeyframe };
  } finally {
    if (muxer) await muxer.close().catch(() => undefined);
    await demuxer.close();
  }
}

/** The stream's first decode time, how many packets before it carry none, and a frame's duration (stream time base). */
async function decodeTimes(input: string, index: number): Promise<{ leadingMissing: number; firstDts: bigint | undefined; step: bigint }> {
  const demuxer = await Demuxer.open(input);
  try {
    let leadingMissing = 0;
    let step = 0n;
    for await (const packet of demuxer.packets(index)) {
      if (!packet) continue;
      if (step === 0n && packet.duration > 0n) step = packet.duration;
      if (packet.dts !== AV_NOPTS_VALUE) return { leadingMissing, firstDts: packet.dts, step: step > 0n ? step : 1n };
      if (++leadingMissing > 64) break;
    }
    return { leadingMissing: 0, firstDts: undefined, step: 1n };
  } finally {
    await demuxer.close();
  }
}

const bigMax = (a: bigint, b: bigint): bigint => (a > b ? a : b);

/** Cuts the whole file; the segments in order. */
export async function cutFile(input: string, options: CutOptions): Promise<{ readonly segments: CutSegment[]; readonly frames: number; readonly skippedBeforeKeyframe: number }> {
  const segments: CutSegment[] = [];
  const it = cutSegments(input, options);
  for (;;) {
    const r = await it.next();
    if (r.done) return { segments, ...r.value };
    segments.push(r.value);
  }
}
