/** S3 adapter: fetches frame bytes and end-of-stream markers, and lists a video's frames. */
import { GetObjectCommand, ListObjectsV2Command, NoSuchKey, type S3Client } from '@aws-sdk/client-s3';
import { FRAME_PREFIX } from '../config.ts';
import { parseFrameKey } from '../keys.ts';
import type { FrameRef } from '../sequencer.ts';

export class ObjectMissingError extends Error {
  override name = 'ObjectMissingError';
}

export class FrameStore {
  private readonly s3: S3Client;

  constructor(s3: S3Client) {
    this.s3 = s3;
  }

  /** Reads an object; {@link ObjectMissingError} when it no longer exists (deleted after upload). */
  async get(bucket: string, key: string): Promise<Uint8Array> {
    try {
      const r = await this.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      if (!r.Body) throw new ObjectMissingError(`s3://${bucket}/${key} has no body`);
      return await r.Body.transformToByteArray();
    } catch (e) {
      if (e instanceof NoSuchKey || (e instanceof Error && (e.name === 'NoSuchKey' || e.name === 'NotFound'))) {
        throw new ObjectMissingError(`s3://${bucket}/${key} does not exist`);
      }
      throw e;
    }
  }

  async getText(bucket: string, key: string): Promise<string> {
    return new TextDecoder().decode(await this.get(bucket, key));
  }

  /**
   * Lists the frames of a video that exist at or after `fromFrame` (S3 LIST is strongly
   * consistent: this is the truth, notifications are hints). Listing order is
   * lexicographic, so with zero-padded keys of a known width (`padWidth`) the listing
   * starts right at `fromFrame` and one page covers 1,000 frames; unpadded keys
   * (`7.jpg`) have no such order, and the whole prefix is listed, one request per 1,000
   * objects. `complete` is false when the listing stopped at `maxPages`.
   */
  async listFrames(bucket: string, videoId: string, fromFrame: number, padWidth?: number, maxPages = 1): Promise<{ frames: FrameRef[]; complete: boolean; requests: number }> {
    const prefix = `${FRAME_PREFIX}${videoId}/`;
    const seekable = padWidth !== undefined && String(fromFrame).length <= padWidth;
    const startAfter = seekable && fromFrame > 0 ? `${prefix}${String(fromFrame).padStart(padWidth, '0')}` : undefined;
    const frames: FrameRef[] = [];
    let token: string | undefined;
    let requests = 0;
    let complete = true;
    do {
      const r = await this.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, StartAfter: token ? undefined : startAfter, ContinuationToken: token }));
      requests++;
      for (const o of r.Contents ?? []) {
        const parsed = o.Key ? parseFrameKey(o.Key) : undefined;
        if (parsed?.kind === 'frame' && parsed.frame >= fromFrame) frames.push({ frame: parsed.frame, bucket, key: o.Key!, sizeBytes: Number(o.Size ?? 0) });
      }
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
      // Seekable listings need one page; unpadded ones must see every key to be complete.
      if (token && (seekable || requests >= maxPages)) {
        complete = false;
        break;
      }
    } while (token);
    return { frames, complete, requests };
  }
}

/** The zero-padding width a key shows (`000041.jpg` → 6), or undefined for unpadded keys (`41.jpg`). */
export function padWidthOf(key: string): number | undefined {
  const digits = /\/(\d+)\.[^./]+$/.exec(key)?.[1];
  return digits && digits.length > 1 && digits.startsWith('0') ? digits.length : undefined;
}
