/** S3 adapter: fetches frame bytes and end-of-stream markers, and lists a video's frames. */
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, NoSuchKey, type S3Client } from '@aws-sdk/client-s3';
import { FRAME_PREFIX } from '../../config.ts';
import { parseSourceKey } from '../segment-keys.ts';
import { coveredThrough, frameStem, stemOfKey } from '../../ordering/listing-coverage.ts';
import type { FrameRef } from '../../ordering/sequencer.ts';
import { ObjectMissingError, type FrameListing, type FrameSource, type ObjectHead } from '../port.ts';

export { ObjectMissingError } from '../port.ts';
export { padWidthOf } from '../keys.ts';

/** Frames on S3 (the ingest port's {@link FrameSource}); built by composition roots only. */
export class FrameStore implements FrameSource {
  private readonly s3: S3Client;

  constructor(s3: S3Client) {
    this.s3 = s3;
  }

  /**
   * The object's bytes; {@link ObjectMissingError} when it no longer exists (deleted after
   * upload). With `ifMatch` (an ETag), only that version: an object overwritten since fails
   * with S3's PreconditionFailed instead of answering other bytes.
   */
  async get(bucket: string, key: string, ifMatch?: string): Promise<Uint8Array> {
    return (await this.read(bucket, key, ifMatch)).bytes;
  }

  /**
   * The object's bytes and its ETag (quotes removed, as S3 events write it), unconditionally:
   * for a read ahead by predicted key (decision 39), whose bytes are used only once a
   * message brings the same ETag. {@link ObjectMissingError} when there is no such object.
   */
  getVersion(bucket: string, key: string): Promise<{ bytes: Uint8Array; eTag: string | undefined }> {
    return this.read(bucket, key, undefined);
  }

  private async read(bucket: string, key: string, ifMatch: string | undefined): Promise<{ bytes: Uint8Array; eTag: string | undefined }> {
    try {
      const r = await this.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, ...(ifMatch ? { IfMatch: ifMatch.startsWith('"') ? ifMatch : `"${ifMatch}"` } : {}) }));
      if (!r.Body) throw new ObjectMissingError(`s3://${bucket}/${key} has no body`);
      return { bytes: await r.Body.transformToByteArray(), eTag: r.ETag?.replace(/"/g, '') };
    } catch (e) {
      if (e instanceof NoSuchKey || (e instanceof Error && (e.name === 'NoSuchKey' || e.name === 'NotFound'))) {
        throw new ObjectMissingError(`s3://${bucket}/${key} does not exist`);
      }
      throw e;
    }
  }

  async head(bucket: string, key: string): Promise<ObjectHead> {
    try {
      const r = await this.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      return { sizeBytes: Number(r.ContentLength ?? 0), eTag: r.ETag?.replace(/"/g, ''), metadata: r.Metadata ?? {} };
    } catch (e) {
      if (e instanceof Error && (e.name === 'NotFound' || e.name === 'NoSuchKey')) throw new ObjectMissingError(`s3://${bucket}/${key} does not exist`);
      throw e;
    }
  }

  async getText(bucket: string, key: string): Promise<string> {
    return new TextDecoder().decode(await this.get(bucket, key));
  }

  /**
   * Lists the frames of a video that exist at or after `fromFrame` (S3 LIST is strongly
   * consistent: this is the truth, notifications are hints). Listing order is
   * lexicographic: with zero-padded keys (`padWidth`) the listing seeks to `fromFrame`
   * (at its natural width once it outgrows the pad) and one page covers up to 1,000 frames;
   * unpadded keys (`7.jpg`) are listed from the start of the prefix. At most `maxPages`
   * requests (one more for an unpadded listing that proved nothing), fewer once the
   * listing covers `throughFrame`.
   *
   * `coveredThrough` is what the listing proves (core/ordering/listing-coverage.ts): every existing
   * frame from `fromFrame` up to it is in `frames`. Pass it to the sequencer. `complete`
   * is the older, coarser flag (the listing reached its end); it over-claims for keys wider
   * than the pad or of mixed widths, so use `coveredThrough` to decide absence.
   */
  async listFrames(
    bucket: string,
    videoId: string,
    fromFrame: number,
    padWidth?: number,
    maxPages = 1,
    throughFrame?: number,
  ): Promise<FrameListing> {
    const prefix = `${FRAME_PREFIX}${videoId}/`;
    const frames = new Map<number, FrameRef>();
    let requests = 0;
    const list = async (startAfterName: string | undefined, pad: number | undefined, pages: number) => {
      let token: string | undefined;
      let lastName: string | undefined;
      let done = 0;
      let forms = true;
      do {
        const r = await this.s3.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, StartAfter: token || startAfterName === undefined ? undefined : prefix + startAfterName, ContinuationToken: token }),
        );
        requests++;
        done++;
        for (const o of r.Contents ?? []) {
          if (!o.Key) continue;
          lastName = o.Key.slice(prefix.length);
          // A segment is listed as its first frame (its key's n); the worker learns the rest from the object.
          const parsed = parseSourceKey(o.Key);
          if (parsed.kind !== 'source') continue;
          if (stemOfKey(o.Key) !== frameStem(parsed.firstFrame, pad)) forms = false;
          if (parsed.firstFrame < fromFrame) continue;
          if (!frames.has(parsed.firstFrame)) frames.set(parsed.firstFrame, { frame: parsed.firstFrame, bucket, key: o.Key, sizeBytes: Number(o.Size ?? 0) });
        }
        token = r.IsTruncated ? r.NextContinuationToken : undefined;
        const covered = coveredThrough({ fromFrame, padWidth: pad, startAfterName, lastName: token ? lastName : undefined });
        if (!token || done >= pages || (throughFrame !== undefined && covered >= throughFrame)) return { covered, reachedEnd: !token, forms };
      } while (token);
      return { covered: Number.MAX_SAFE_INTEGER, reachedEnd: true, forms };
    };
    let result;
    if (padWidth !== undefined && fromFrame > 0) {
      result = await list(frameStem(fromFrame, padWidth), padWidth, maxPages);
      // Keys in another form (`41.jpg` among `000041.jpg`) sort outside the seek: only a
      // listing from the start, judged by the widest form, can vouch for them.
      if (!result.forms) result = await list(undefined, undefined, maxPages);
    } else {
      result = await list(undefined, padWidth, maxPages);
      if (!result.forms && padWidth !== undefined) result = await list(undefined, undefined, maxPages);
      // A long unpadded video proves little from its first pages (`10.jpg` sorts before
      // `5.jpg`): one page sought to `fromFrame` covers its own width onwards.
      if (result.covered < fromFrame && fromFrame > 0) result = await list(frameStem(fromFrame, undefined), undefined, 1);
    }
    return { frames: [...frames.values()].sort((a, b) => a.frame - b.frame), complete: result.reachedEnd, coveredThrough: result.covered, requests };
  }
}
