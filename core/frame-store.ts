/** S3 adapter: fetches frame bytes and end-of-stream markers. */
import { GetObjectCommand, NoSuchKey, type S3Client } from '@aws-sdk/client-s3';

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
}
