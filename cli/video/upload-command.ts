/**
 * `affinity upload <file> --video <id> [--end] [--segment-seconds N] [--container ts|mp4|mkv]`
 *
 * The video-file half of `affinity upload` (cli/commands/upload.ts hands a file here, a
 * folder stays a folder of frames): cuts the file at keyframes without re-encoding
 * (cli/video/segment-file.ts), plans against one listing of the video's prefix
 * (cli/video/upload-plan.ts) and PUTs each segment as `frames/{id}/{n}.{ext}` with its
 * frame count in `x-amz-meta-frames` (cli/video/segment-upload.ts). The cut is
 * deterministic, so re-running after an interruption sends only what did not land.
 * The segments are written to a temporary folder, removed afterwards.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FRAME_PREFIX } from '../../core/config.ts';
import type { SourceContainer } from '../../core/ingest/segment-keys.ts';
import { formatBytes } from '../format.ts';
import { CliError, type Io } from '../io.ts';
import type { Target } from '../target.ts';
import { progressReporter } from '../commands/upload.ts';
import { CutError } from './segment-file.ts';
import { UploadConflictError, uploadVideoFile } from './segment-upload.ts';
import { SourceError } from './transcode.ts';

/** Container names the command accepts, by the key extension they produce. */
export const CONTAINER_FLAGS: Readonly<Record<string, Exclude<SourceContainer, 'image'>>> = { ts: 'mpegts', mpegts: 'mpegts', mp4: 'mp4', mkv: 'matroska', matroska: 'matroska' };

/** Parses `--container`; throws a usage error for anything else. Pure. */
export function parseContainer(raw: string | undefined): Exclude<SourceContainer, 'image'> {
  if (raw === undefined) return 'mpegts';
  const c = CONTAINER_FLAGS[raw.toLowerCase()];
  if (!c) throw new CliError(`--container must be one of ts, mp4, mkv (got "${raw}")`, 2);
  return c;
}

/** Parses a positive number of seconds (`--segment-seconds`). Pure. */
export function parseSeconds(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !(n > 0) || n > 600) throw new CliError(`--${name} must be a number of seconds in (0, 600] (got "${raw}")`, 2);
  return n;
}

/** Parses `--bitrate`: kbit/s, or with a unit (`2M`, `800k`); 50 kbit/s to 200 Mbit/s. Pure. */
export function parseBitrate(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(raw.trim());
  const kbps = m ? Number(m[1]) * (m[2]!.toLowerCase() === 'm' ? 1000 : 1) : NaN;
  if (!(kbps >= 50 && kbps <= 200_000)) throw new CliError(`--bitrate must be kbit/s between 50 and 200000, or with a unit like 2M or 800k (got "${raw}")`, 2);
  return Math.round(kbps);
}

export interface UploadFileOptions {
  readonly file: string;
  readonly videoId: string;
  readonly end?: boolean;
  readonly concurrency?: number;
  readonly firstFrame?: number;
  readonly segmentSeconds?: number;
  readonly container?: Exclude<SourceContainer, 'image'>;
  /** Average bit rate of a transcode (kbit/s); absent: constant quality. */
  readonly bitrateKbps?: number;
}

export interface UploadFileSummary {
  readonly segments: number;
  readonly uploaded: number;
  readonly skipped: number;
  readonly frames: number;
  readonly bytes: number;
  readonly lastFrame: number | undefined;
  readonly endMarker: boolean;
}

export async function uploadFileCommand(target: Target, o: UploadFileOptions, io: Io): Promise<UploadFileSummary> {
  const outDir = await mkdtemp(path.join(tmpdir(), 'affinity-upload-'));
  const reporter = progressReporter(io, o.videoId);
  const startMs = Date.now();
  const segmentSeconds = o.segmentSeconds ?? 2;
  const rate = o.bitrateKbps !== undefined ? `${o.bitrateKbps} kbit/s` : 'constant quality (CRF 20; --bitrate sets a rate)';
  try {
    const r = await uploadVideoFile(o.file, {
      s3: target.clients.s3,
      bucket: target.bucket,
      videoId: o.videoId,
      outDir,
      segmentSeconds,
      // -1 (automatic: a video starts at its lowest frame) numbers a file from 0
      firstFrame: o.firstFrame ?? Math.max(0, target.firstFrameNumber),
      container: o.container ?? 'mpegts',
      ...(o.bitrateKbps !== undefined ? { bitrateKbps: o.bitrateKbps } : {}),
      onSource: (note) => {
        if (note.transcode === null) io.err(`cut ${o.file} (${note.codec}) into ~${segmentSeconds}-s segments (stream copy) for s3://${target.bucket}/${FRAME_PREFIX}${o.videoId}/`);
        else {
          const why = note.transcode === 'codec' ? `its video is ${note.codec}, which the worker does not decode` : `its ${note.codec} has open GOPs, which cannot be cut without re-encoding`;
          io.err(`transcoding ${o.file} to H.264 (${why}) at its own resolution and timestamps, ${rate}; then cutting into ~${segmentSeconds}-s segments for s3://${target.bucket}/${FRAME_PREFIX}${o.videoId}/`);
        }
      },
      concurrency: o.concurrency ?? 4,
      end: Boolean(o.end),
      onProgress: (p) => reporter.update({ done: p.done, total: p.total, bytes: p.bytesSent, elapsedMs: Date.now() - startMs, lastKey: '' }),
    });
    reporter.finish();
    const summary: UploadFileSummary = {
      segments: r.plan.upload.length + r.plan.skip.length,
      uploaded: r.plan.upload.length,
      skipped: r.plan.skip.length,
      frames: r.frames,
      bytes: r.plan.bytesToUpload,
      lastFrame: r.lastFrame,
      endMarker: r.endWritten,
    };
    io.out(
      `uploaded ${summary.uploaded} segment(s) (${formatBytes(summary.bytes)}), skipped ${summary.skipped}, ${summary.frames} frame(s)` +
        (r.lastFrame !== undefined ? ` up to frame ${r.lastFrame}` : '') +
        (r.endWritten ? `, end marker at frame ${r.lastFrame}` : ''),
    );
    return summary;
  } catch (e) {
    reporter.finish();
    if (e instanceof CutError || e instanceof UploadConflictError || e instanceof SourceError) throw new CliError(e.message);
    throw e;
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}
