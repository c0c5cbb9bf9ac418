/**
 * The sending half of `affinity upload <file> --video <id>`: cut the file
 * (cli/video/segment-file.ts), list what the video already has, plan (cli/video/upload-plan.ts),
 * then PUT each segment with its frame count in `x-amz-meta-frames` (the `k` the worker
 * holds the decoder to: core/ingest/segment-keys.ts), in frame order: the lowest one
 * alone until it has landed, then the rest a few at a time.
 * The `affinity` command and its progress bar are wired next to it (issue 34).
 */
import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { endMarkerKey } from '../../core/ingest/keys.ts';
import { FRAME_PREFIX } from '../../core/config.ts';
import { FRAMES_METADATA_KEY, parseSourceKey } from '../../core/ingest/segment-keys.ts';
import { cutFile, OpenGopError, type CutOptions, type CutSegment } from './segment-file.ts';
import { probeSource, transcodeFile } from './transcode.ts';
import { lastFrameOf, planUpload, type RemoteObject, type UploadPlan } from './upload-plan.ts';

const CONTENT_TYPES: Readonly<Record<string, string>> = { mp4: 'video/mp4', m4v: 'video/mp4', ts: 'video/mp2t', mkv: 'video/x-matroska' };

export class UploadConflictError extends Error {
  override name = 'UploadConflictError';
}

export interface SegmentUploadOptions extends CutOptions {
  readonly s3: S3Client;
  readonly bucket: string;
  /** Concurrent PUTs. @default 4 */
  readonly concurrency?: number;
  /** Write the end marker (`_end`, body the last frame) after every segment landed. @default false */
  readonly end?: boolean;
  /** Average bit rate of a transcode, kbit/s; absent: constant quality. */
  readonly bitrateKbps?: number;
  /** Told what the source is and whether it is transcoded, before anything is sent. */
  readonly onSource?: (note: SourceNote) => void;
  /** Called after each segment landed or was skipped. */
  readonly onProgress?: (p: { readonly done: number; readonly total: number; readonly bytesSent: number; readonly bytesTotal: number }) => void;
}

export interface SegmentUploadResult {
  readonly plan: UploadPlan<CutSegment>;
  readonly frames: number;
  readonly lastFrame: number | undefined;
  readonly endWritten: boolean;
}

/** Every object under the video's prefix, with its size (paginated). */
export async function listVideoObjects(s3: S3Client, bucket: string, videoId: string): Promise<RemoteObject[]> {
  const out: RemoteObject[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${FRAME_PREFIX}${videoId}/`, ...(token ? { ContinuationToken: token } : {}) }));
    for (const o of page.Contents ?? []) if (o.Key !== undefined) out.push({ key: o.Key, size: o.Size ?? 0 });
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

/** Why a file is transcoded before it is cut: its codec is not H.264/H.265, or it has open GOPs. */
export interface SourceNote {
  readonly codec: string;
  readonly transcode: 'codec' | 'open-gop' | null;
}

/**
 * Checks the source (cli/video/transcode.ts: a video stream FFmpeg decodes, else
 * {@link SourceError} before anything is sent), transcodes it to H.264 when it is another
 * codec or has open GOPs, and cuts it.
 */
export async function cutSource(file: string, options: CutOptions & Pick<SegmentUploadOptions, 'bitrateKbps' | 'onSource'>): Promise<{ readonly segments: CutSegment[]; readonly frames: number }> {
  const probe = await probeSource(file);
  const transcoded = async (why: 'codec' | 'open-gop') => {
    options.onSource?.({ codec: probe.codec, transcode: why });
    const out = path.join(options.outDir, 'transcoded.mp4');
    mkdirSync(options.outDir, { recursive: true });
    await transcodeFile(file, out, { keyframeSeconds: options.segmentSeconds ?? 2, ...(options.bitrateKbps !== undefined ? { bitrateKbps: options.bitrateKbps } : {}) });
    return cutFile(out, { ...options, outDir: path.join(options.outDir, 'cut') });
  };
  if (!probe.copy) return transcoded('codec');
  try {
    const cut = await cutFile(file, options);
    options.onSource?.({ codec: probe.codec, transcode: null });
    return cut;
  } catch (e) {
    if (e instanceof OpenGopError) return transcoded('open-gop');
    throw e;
  }
}

/** Cuts `file` (transcoding it when it must be: {@link cutSource}), then uploads the segments S3 does not hold yet. Throws {@link UploadConflictError} before sending anything when a key conflicts. */
export async function uploadVideoFile(file: string, options: SegmentUploadOptions): Promise<SegmentUploadResult> {
  const { segments, frames } = await cutSource(file, options);
  const plan = planUpload(segments, await listVideoObjects(options.s3, options.bucket, options.videoId));
  if (plan.conflicts.length > 0) {
    throw new UploadConflictError(`not uploading ${options.videoId}: ${plan.conflicts.map((c) => c.why).join('; ')}`);
  }
  const total = segments.length;
  const bytesTotal = plan.bytesToUpload;
  let done = plan.skip.length;
  let bytesSent = 0;
  options.onProgress?.({ done, total, bytesSent, bytesTotal });
  const send = async (s: CutSegment): Promise<void> => {
    const parsed = parseSourceKey(s.key);
    await options.s3.send(
      new PutObjectCommand({
        Bucket: options.bucket,
        Key: s.key,
        Body: await readFile(s.file),
        ContentLength: s.bytes,
        ContentType: parsed.kind === 'source' ? CONTENT_TYPES[parsed.extension] : undefined,
        Metadata: { [FRAMES_METADATA_KEY]: String(s.frames) },
      }),
    );
    done++;
    bytesSent += s.bytes;
    options.onProgress?.({ done, total, bytesSent, bytesTotal });
  };
  // The lowest segment lands alone first (issue 41): a video starts at the lowest frame the
  // worker's listing sees when the first of its segments is notified (S3 LIST is strongly
  // consistent), so once it has landed no later segment can start the video above it and
  // its frames are never processed `late`. The rest go up `concurrency` at a time.
  if (plan.upload.length > 0) await send(plan.upload[0]!);
  let next = 1;
  const lane = async (): Promise<void> => {
    while (next < plan.upload.length) await send(plan.upload[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 4) }, lane));
  const lastFrame = lastFrameOf(segments);
  let endWritten = false;
  if (options.end && lastFrame !== undefined) {
    await options.s3.send(new PutObjectCommand({ Bucket: options.bucket, Key: endMarkerKey(options.videoId), Body: String(lastFrame) }));
    endWritten = true;
  }
  return { plan, frames, lastFrame, endWritten };
}
