/** A video's objects in S3 ({@link VideoObjects}): one LIST, paginated, and a HEAD per segment asked about. */
import { HeadObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { FRAME_PREFIX } from '../../config.ts';
import type { StoredObject, VideoObjects } from '../port.ts';
import { declaredFrameCount } from '../segment-keys.ts';

export class S3VideoObjects implements VideoObjects {
  private readonly s3: Pick<S3Client, 'send'>;
  private readonly bucket: string;

  constructor(s3: Pick<S3Client, 'send'>, bucket: string) {
    this.s3 = s3;
    this.bucket = bucket;
  }

  async list(videoId: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    let token: string | undefined;
    do {
      const r = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${FRAME_PREFIX}${videoId}/`, ContinuationToken: token }));
      for (const o of r.Contents ?? []) if (o.Key) out.push({ key: o.Key, sizeBytes: Number(o.Size ?? 0), eTag: (o.ETag ?? '').replace(/"/g, '') });
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async declaredFrames(key: string): Promise<number | undefined> {
    return declaredFrameCount((await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }))).Metadata);
  }
}
