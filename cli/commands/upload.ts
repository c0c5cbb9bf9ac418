/**
 * `affinity upload <dir> --video <id> [--end] [--concurrency N] [--first-frame N]`
 *
 * Uploads a folder of frames under the key contract, in parallel, resumable: objects
 * already in the bucket with the same size are skipped (one ListObjectsV2 pass, not a
 * HEAD per file), so re-running after an interruption only sends what is missing.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { FRAME_PREFIX } from '../../core/config.ts';
import { VIDEO_ID_PATTERN, endMarkerKey, frameKey } from '../../core/ingest/keys.ts';
import { formatBytes, progressLine } from '../format.ts';
import { CliError, type Io } from '../io.ts';
import { listVideoObjects } from '../read.ts';
import type { Target } from '../target.ts';

const IMAGE_EXTENSIONS = new Set(['.jpg', '.jpeg', '.png']);

/** A local file planned for upload. */
export interface PlannedFrame {
  readonly file: string;
  readonly frame: number;
  readonly key: string;
  readonly sizeBytes: number;
}

/** Natural order: `f2.png` before `f10.png`. */
const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

/**
 * Maps file names to frame numbers: the last run of digits in the name when there is
 * one, else the file's position in natural order plus `firstFrame`. Throws when two
 * files would get the same frame number. Pure.
 */
export function planFrameNumbers(names: readonly string[], firstFrame: number): { name: string; frame: number; extension: string }[] {
  const images = names.filter((n) => IMAGE_EXTENSIONS.has(extname(n).toLowerCase())).sort(collator.compare);
  const seen = new Map<number, string>();
  return images.map((name, index) => {
    const stem = name.slice(0, -extname(name).length);
    const digits = stem.match(/(\d+)(?!.*\d)/)?.[1];
    const frame = digits !== undefined ? Number(digits) : index + firstFrame;
    if (!Number.isSafeInteger(frame)) throw new CliError(`frame number in "${name}" is too large`);
    const other = seen.get(frame);
    if (other !== undefined) throw new CliError(`"${other}" and "${name}" both map to frame ${frame}; rename one of them`);
    seen.set(frame, name);
    return { name, frame, extension: extname(name).slice(1).toLowerCase() };
  });
}

/** Sizes of the objects already stored under a video's prefix (for resume). */
export async function existingObjects(target: Pick<Target, 'clients' | 'bucket'>, videoId: string): Promise<Map<string, number>> {
  return new Map((await listVideoObjects(target, videoId)).map((o) => [o.key, o.sizeBytes]));
}

/** One object to put; `body` is read lazily so big folders do not sit in memory. */
export interface UploadItem {
  readonly key: string;
  readonly sizeBytes: number;
  readonly body: () => Promise<Uint8Array>;
  readonly contentType?: string;
}

export interface UploadProgress {
  readonly done: number;
  readonly total: number;
  readonly bytes: number;
  readonly elapsedMs: number;
  readonly lastKey: string;
}

/**
 * Puts objects with at most `concurrency` requests in flight, in the order given
 * (a request starts in order; completions may interleave). Stops at the first error.
 */
export async function putObjects(
  target: Pick<Target, 'clients' | 'bucket'>,
  items: readonly UploadItem[],
  options: { concurrency: number; onProgress?: (p: UploadProgress) => void },
): Promise<{ uploaded: number; bytes: number }> {
  const startMs = Date.now();
  let next = 0;
  let done = 0;
  let bytes = 0;
  let failed: unknown;
  const lane = async () => {
    while (failed === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        const body = await item.body();
        await target.clients.s3.send(
          new PutObjectCommand({ Bucket: target.bucket, Key: item.key, Body: body, ContentType: item.contentType }),
        );
        done++;
        bytes += item.sizeBytes;
        options.onProgress?.({ done, total: items.length, bytes, elapsedMs: Date.now() - startMs, lastKey: item.key });
      } catch (e) {
        failed ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency, items.length)) }, lane));
  if (failed !== undefined) {
    throw new CliError(`upload failed after ${done} of ${items.length} objects: ${(failed as Error).message ?? String(failed)} (re-run to resume)`);
  }
  return { uploaded: done, bytes };
}

/** Renders upload progress on one terminal line (or nothing when not interactive). */
export function progressReporter(io: Io, label: string): { update: (p: UploadProgress) => void; finish: () => void } {
  let lastDrawMs = 0;
  let drawn = false;
  return {
    update: (p) => {
      if (!io.interactive) return;
      const now = Date.now();
      if (now - lastDrawMs < 80 && p.done < p.total) return;
      lastDrawMs = now;
      drawn = true;
      const rate = p.elapsedMs > 0 ? (p.done / p.elapsedMs) * 1000 : 0;
      io.progress(`\r${label} ${progressLine(p.done, p.total, `${formatBytes(p.bytes)}  ${rate.toFixed(1)}/s`)}\x1b[K`);
    },
    finish: () => {
      if (drawn) io.progress('\n');
    },
  };
}

export interface UploadOptions {
  readonly dir: string;
  readonly videoId: string;
  readonly end?: boolean;
  readonly concurrency?: number;
  readonly firstFrame?: number;
}

export interface UploadSummary {
  readonly planned: number;
  readonly uploaded: number;
  readonly skipped: number;
  readonly bytes: number;
  readonly firstFrame?: number;
  readonly lastFrame?: number;
  readonly endMarker: boolean;
}

/**
 * What to tell a user whose upload input (a folder of frames or a video file) cannot be
 * read, from the error: in words, never a bare errno. Pure.
 */
export function unreadableInput(path: string, e: Pick<NodeJS.ErrnoException, 'code' | 'message'>): string {
  switch (e.code) {
    case 'ENOENT':
      return `${path} does not exist: give a folder of frames (.jpg, .jpeg, .png) or a video file`;
    case 'ENOTDIR':
      return `${path} is neither a folder of frames nor a video file`;
    case 'EACCES':
    case 'EPERM':
      return `${path} cannot be read: permission denied`;
    default:
      return `cannot read ${path}: ${e.message}`;
  }
}

export async function uploadCommand(target: Target, o: UploadOptions, io: Io): Promise<UploadSummary> {
  if (!VIDEO_ID_PATTERN.test(o.videoId) || o.videoId === '.' || o.videoId === '..') {
    throw new CliError(`invalid video id "${o.videoId}": use 1-128 of A-Z a-z 0-9 . _ -`, 2);
  }
  const concurrency = o.concurrency ?? 8;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 256) throw new CliError('--concurrency must be an integer between 1 and 256', 2);
  let names: string[];
  try {
    names = await readdir(o.dir);
  } catch (e) {
    throw new CliError(unreadableInput(o.dir, e as NodeJS.ErrnoException));
  }
  const plan = planFrameNumbers(names, o.firstFrame ?? target.firstFrameNumber);
  if (plan.length === 0) throw new CliError(`no .jpg, .jpeg or .png files in ${o.dir}`);

  const frames: PlannedFrame[] = await Promise.all(
    plan.map(async (p) => {
      const file = join(o.dir, p.name);
      return { file, frame: p.frame, key: frameKey(o.videoId, p.frame, p.extension), sizeBytes: (await stat(file)).size };
    }),
  );
  const existing = await existingObjects(target, o.videoId);
  const todo = frames.filter((f) => existing.get(f.key) !== f.sizeBytes);
  const skipped = frames.length - todo.length;
  const lastFrame = Math.max(...frames.map((f) => f.frame));
  const firstFrame = Math.min(...frames.map((f) => f.frame));
  io.err(
    `uploading ${todo.length} frame(s) of ${o.videoId} (${firstFrame}..${lastFrame}) to s3://${target.bucket}/${FRAME_PREFIX}${o.videoId}/` +
      (skipped > 0 ? `, skipping ${skipped} already uploaded` : ''),
  );
  const reporter = progressReporter(io, o.videoId);
  let result: { uploaded: number; bytes: number };
  try {
    result = await putObjects(
      target,
      todo.map((f) => ({
        key: f.key,
        sizeBytes: f.sizeBytes,
        body: () => readFile(f.file),
        contentType: f.key.endsWith('.png') ? 'image/png' : 'image/jpeg',
      })),
      { concurrency, onProgress: reporter.update },
    );
  } finally {
    reporter.finish();
  }
  if (o.end) {
    // After every frame, so the marker never announces frames that are not there yet.
    await target.clients.s3.send(new PutObjectCommand({ Bucket: target.bucket, Key: endMarkerKey(o.videoId), Body: String(lastFrame), ContentType: 'text/plain' }));
  }
  const summary: UploadSummary = { planned: frames.length, uploaded: result.uploaded, skipped, bytes: result.bytes, firstFrame, lastFrame, endMarker: Boolean(o.end) };
  io.out(
    `uploaded ${summary.uploaded} frame(s) (${formatBytes(summary.bytes)}), skipped ${skipped}, frames ${firstFrame}..${lastFrame}` +
      (o.end ? `, end marker at frame ${lastFrame}` : ''),
  );
  return summary;
}
