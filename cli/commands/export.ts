/**
 * `affinity export <id> [--format jsonl|mot] [--out FILE] [--first-frame N]`: a video's
 * records as a file other tools load, streamed page by page in frame order (a long video
 * is never held in memory).
 *
 *   jsonl  one JSON object per frame: frame, status, reason and detail where not ok,
 *          ptsMs where the record has one, and its detections (trackId, label = class,
 *          score, box x1 y1 x2 y2 in source pixels). Failed and gap frames are included.
 *   mot    MOTChallenge: `frame,id,bb_left,bb_top,bb_width,bb_height,conf,-1,-1,-1`, one
 *          line per tracked detection (track id > 0) of `ok` and `late` frames; failed and
 *          gap frames have no line. MOT frames are 1-based: MOT frame = our frame -
 *          `firstFrame` + 1. By default firstFrame follows the video's own numbering
 *          ({@link motFirstFrame}): a video with a frame 0 is numbered from 0 (frame 0 is MOT
 *          frame 1), any other already counts from 1 (frame 1 is MOT frame 1), so the rows
 *          match the image numbers of a 0- and of a 1-based folder alike (decisions 50, 57).
 *
 * Boxes are written to 0.01 px and scores to 4 decimals. The formatting is pure
 * ({@link exportLines}); the command only pages, writes and counts.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import type { FrameStatus } from '../../core/commit/results.ts';
import { CliError, type Io } from '../io.ts';
import { frameRecordPages, type FrameRecord, type FrameRecordPages } from '../read.ts';
import type { Target } from '../target.ts';

export type ExportFormat = 'jsonl' | 'mot';
export const EXPORT_FORMATS: readonly ExportFormat[] = ['jsonl', 'mot'];

/** One line of the jsonl format, in its key order. */
export interface ExportFrame {
  readonly frame: number;
  readonly status: FrameStatus;
  readonly reason?: string;
  readonly detail?: string;
  readonly ptsMs?: number;
  readonly detections: readonly { readonly trackId: number; readonly label: string; readonly score: number; readonly box: readonly [number, number, number, number] }[];
}

const round2 = (n: number) => Math.round(n * 100) / 100;
const round4 = (n: number) => Math.round(n * 10_000) / 10_000;

/**
 * The frames a stored record stands for, in frame order: itself, or, for a gap record
 * written before gaps were per frame (`throughFrame`), one gap per frame of its run. Pure.
 */
export function framesOf(r: FrameRecord): ExportFrame[] {
  const last = r.throughFrame ?? r.frame;
  const out: ExportFrame[] = [];
  for (let frame = r.frame; frame <= last; frame++) {
    out.push({
      frame,
      status: r.status,
      ...(r.reason !== undefined ? { reason: r.reason } : {}),
      ...(r.detail !== undefined ? { detail: r.detail } : {}),
      ...(typeof r.ptsMs === 'number' ? { ptsMs: r.ptsMs } : {}),
      detections: r.detections.map((d) => ({
        trackId: d.trackId,
        label: d.label,
        score: round4(d.score),
        box: [round2(d.box[0]), round2(d.box[1]), round2(d.box[2]), round2(d.box[3])] as const,
      })),
    });
  }
  return out;
}

/** The jsonl line of one frame. Pure. */
export function jsonlLine(f: ExportFrame): string {
  return JSON.stringify(f);
}

/**
 * The MOTChallenge lines of one frame: its tracked detections (track id > 0; a late
 * frame's detection that matched no neighbour has id 0) when the frame was processed
 * (`ok` or `late`), none for failed and gap frames or frames below `firstFrame`. Pure.
 */
export function motLines(f: ExportFrame, firstFrame = 0): string[] {
  if ((f.status !== 'ok' && f.status !== 'late') || f.frame < firstFrame) return [];
  const motFrame = f.frame - firstFrame + 1;
  return f.detections
    .filter((d) => d.trackId > 0)
    .map((d) => {
      const [x1, y1, x2, y2] = d.box;
      return [motFrame, d.trackId, x1, y1, round2(x2 - x1), round2(y2 - y1), d.score, -1, -1, -1].join(',');
    });
}

/**
 * Our frame number that is MOT frame 1, from the video's lowest frame record (decision 64):
 * 0 when the video has a frame 0 (a folder or file numbered from 0: MOT frame = frame + 1),
 * else 1 (a folder numbered from 1, as MOT's own `img1/000001.jpg`: MOT frame = frame, so
 * rows and image names agree; a video starting later keeps its numbers too). Pure.
 */
export function motFirstFrame(lowestFrame: number): number {
  return lowestFrame === 0 ? 0 : 1;
}

/** The stderr line that says which mapping an export used. Pure. */
export function motMappingNote(firstFrame: number, chosen: boolean): string {
  const rule = firstFrame === 1 ? 'MOT frame = our frame' : `MOT frame = our frame ${firstFrame === 0 ? '+ 1' : `- ${firstFrame - 1}`}`;
  const why = chosen
    ? `--first-frame ${firstFrame}`
    : firstFrame === 0
      ? 'the video has a frame 0: numbered from 0'
      : 'the video has no frame 0: numbered from 1, as MOT; --first-frame 0 shifts by one';
  return `mot frames: ${rule} (${why})`;
}

/** The lines of one stored record in `format`. Pure. */
export function exportLines(r: FrameRecord, format: ExportFormat, options: { firstFrame?: number } = {}): string[] {
  const frames = framesOf(r);
  return format === 'jsonl' ? frames.map(jsonlLine) : frames.flatMap((f) => motLines(f, options.firstFrame ?? 0));
}

export interface ExportOptions {
  readonly videoId: string;
  readonly format: ExportFormat;
  /** A file to write (through a temporary name, renamed when complete); stdout when absent. */
  readonly out?: string;
  /** mot only: our frame number that is MOT frame 1 (default: {@link motFirstFrame} of the video's lowest frame). */
  readonly firstFrame?: number;
}

export interface ExportReport {
  /** Frames read (a legacy gap run counts each of its frames). */
  readonly frames: number;
  readonly lines: number;
  readonly byStatus: Readonly<Record<FrameStatus, number>>;
  /** mot: processed frames below `firstFrame`, which have no MOT frame number. */
  readonly belowFirstFrame: number;
  /** mot: our frame number that was MOT frame 1. */
  readonly firstFrame?: number;
}

/** Writes one line to a stream, waiting while its buffer is full. */
async function writeLine(stream: Writable, line: string): Promise<void> {
  if (!stream.write(`${line}\n`)) {
    await new Promise<void>((resolve, reject) => {
      const onDrain = () => (stream.off('error', onError), resolve());
      const onError = (e: Error) => (stream.off('drain', onDrain), reject(e));
      stream.once('drain', onDrain).once('error', onError);
    });
  }
}

export async function exportCommand(target: Target, o: ExportOptions, io: Io, pages: FrameRecordPages = frameRecordPages(target)): Promise<ExportReport> {
  // Decided by the first record read (records come in frame order), unless given.
  let firstFrame = o.firstFrame;
  const byStatus: Record<FrameStatus, number> = { ok: 0, late: 0, failed: 0, gap: 0 };
  let frames = 0;
  let lines = 0;
  let belowFirstFrame = 0;
  const partial = o.out !== undefined ? `${o.out}.partial-${process.pid}` : undefined;
  const file = partial !== undefined ? createWriteStream(partial) : undefined;
  const fileOpened = file
    ? new Promise<void>((resolve, reject) =>
        file.once('open', () => resolve()).once('error', (e: Error) => reject(new CliError(`cannot write ${o.out}: ${e.message}`))),
      )
    : undefined;
  try {
    await fileOpened;
    for await (const page of pages(o.videoId)) {
      for (const r of page) {
        for (const f of framesOf(r)) {
          firstFrame ??= motFirstFrame(f.frame);
          frames++;
          byStatus[f.status]++;
          if (o.format === 'mot' && f.frame < firstFrame && (f.status === 'ok' || f.status === 'late')) belowFirstFrame++;
          for (const line of o.format === 'jsonl' ? [jsonlLine(f)] : motLines(f, firstFrame)) {
            if (file) await writeLine(file, line);
            else io.out(line);
            lines++;
          }
        }
      }
    }
    if (frames === 0) throw new CliError(`no results for video "${o.videoId}" in ${target.description}`);
    if (file && partial && o.out) {
      await new Promise<void>((resolve, reject) => file.end((e?: Error | null) => (e ? reject(e) : resolve())));
      await rename(partial, o.out);
    }
  } catch (e) {
    if (file && partial) {
      file.destroy();
      await rm(partial, { force: true });
    }
    throw e;
  }
  const counts = (Object.entries(byStatus) as [FrameStatus, number][]).map(([s, n]) => `${n} ${s}`).join(', ');
  io.err(`exported ${frames} frame(s) of ${o.videoId} (${counts}) as ${o.format}: ${lines} line(s)${o.out !== undefined ? ` to ${o.out}` : ''}`);
  if (o.format === 'mot' && firstFrame !== undefined) io.err(motMappingNote(firstFrame, o.firstFrame !== undefined));
  if (belowFirstFrame > 0) io.err(`skipped ${belowFirstFrame} processed frame(s) below --first-frame ${firstFrame}: they have no MOT frame number`);
  return { frames, lines, byStatus, belowFirstFrame, ...(o.format === 'mot' ? { firstFrame } : {}) };
}
