/**
 * An in-memory twin of the S3 calls the frame source makes, at the level of the SDK's
 * commands: the production FrameStore (core/ingest/s3/frame-store.ts) runs on it unchanged, as
 * SlotQueues runs on the SQS FIFO model. What it answers, as S3 does:
 *  - PutObject (ETag = MD5 of the body, quoted), GetObject with `IfMatch` (412
 *    `PreconditionFailed`) and `IfNoneMatch` (304 `NotModified`), a missing key as
 *    `NoSuchKey`, HeadObject, DeleteObject (idempotent);
 *  - ListObjectsV2: keys in UTF-8 binary order, `Prefix`, `StartAfter`, `MaxKeys` (at most
 *    1,000), `ContinuationToken`/`NextContinuationToken`, `IsTruncated`; strongly
 *    consistent, as S3 has been since December 2020;
 *  - a missing bucket as `NoSuchBucket`.
 * Not modelled: versions, multipart uploads, delimiters, ranges, storage classes, events
 * (the harness sends slot messages itself). {@link MemoryS3.intercept} injects faults.
 */
import { createHash } from 'node:crypto';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchBucket,
  NoSuchKey,
  PutObjectCommand,
  S3ServiceException,
  type S3Client,
} from '@aws-sdk/client-s3';

interface StoredObject {
  readonly bytes: Uint8Array;
  /** Quoted, as S3 answers it. */
  readonly eTag: string;
  readonly lastModified: Date;
  /** User metadata (`x-amz-meta-*`), keys lower case. */
  readonly metadata: Readonly<Record<string, string>>;
}

/** What {@link MemoryS3.intercept} sees of a call, and runs it with. */
export type S3Interceptor = (operation: string, input: Record<string, unknown>, run: () => Promise<unknown>) => Promise<unknown>;

const LIST_MAX_KEYS = 1000;

export class MemoryS3 {
  private readonly buckets = new Map<string, Map<string, StoredObject>>();
  /** Wraps every call (fault injection: throw before `run()`, delay it, or change its answer). */
  intercept: S3Interceptor | undefined;
  /** Operations called, in order. */
  readonly calls: string[] = [];

  createBucket(name: string): this {
    if (!this.buckets.has(name)) this.buckets.set(name, new Map());
    return this;
  }

  /** This twin typed as the S3 client the adapters take (they only call `send` with the commands above). */
  asClient(): S3Client {
    return this as unknown as S3Client;
  }

  /** Every key of a bucket, in S3's order (for a test's or the simulation's oracle). */
  keys(bucket: string): string[] {
    return [...this.bucket(bucket).keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  }

  /** An object's ETag (without quotes) and size, as its notification carries them; undefined when absent. */
  head(bucket: string, key: string): { eTag: string; size: number } | undefined {
    const o = this.bucket(bucket).get(key);
    return o ? { eTag: o.eTag.replace(/"/g, ''), size: o.bytes.byteLength } : undefined;
  }

  /** Stores an object directly (what a PutObject does), returning its ETag without quotes. */
  putObject(bucket: string, key: string, body: Uint8Array | string, metadata?: Readonly<Record<string, string>>): string {
    const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : new Uint8Array(body);
    const eTag = `"${createHash('md5').update(bytes).digest('hex')}"`;
    // S3 returns user-metadata keys in lower case.
    const meta = Object.fromEntries(Object.entries(metadata ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    this.bucket(bucket).set(key, { bytes, eTag, lastModified: new Date(), metadata: meta });
    return eTag.replace(/"/g, '');
  }

  async send(command: { readonly input: object }): Promise<unknown> {
    const operation = operationOf(command);
    const input = command.input as Record<string, unknown>;
    this.calls.push(operation);
    await Promise.resolve();
    const run = async () => this.answer(operation, input);
    return this.intercept ? this.intercept(operation, input, run) : run();
  }

  destroy(): void {}

  private answer(operation: string, input: Record<string, unknown>): unknown {
    const bucket = String(input.Bucket);
    const key = String(input.Key ?? '');
    switch (operation) {
      case 'PutObject': {
        const body = input.Body;
        const bytes = typeof body === 'string' ? body : body instanceof Uint8Array ? body : new Uint8Array();
        const eTag = this.putObject(bucket, key, bytes, input.Metadata as Record<string, string> | undefined);
        return { ETag: `"${eTag}"`, $metadata: {} };
      }
      case 'GetObject':
      case 'HeadObject': {
        const o = this.bucket(bucket).get(key);
        if (!o) throw operation === 'GetObject' ? new NoSuchKey({ message: 'The specified key does not exist.', $metadata: { httpStatusCode: 404 } }) : s3Error('NotFound', 404, 'Not Found');
        const ifMatch = input.IfMatch as string | undefined;
        if (ifMatch !== undefined && unquote(ifMatch) !== unquote(o.eTag)) throw s3Error('PreconditionFailed', 412, 'At least one of the pre-conditions you specified did not hold');
        const ifNoneMatch = input.IfNoneMatch as string | undefined;
        if (ifNoneMatch !== undefined && unquote(ifNoneMatch) === unquote(o.eTag)) throw s3Error('NotModified', 304, 'Not Modified');
        const head = { ETag: o.eTag, ContentLength: o.bytes.byteLength, LastModified: o.lastModified, Metadata: { ...o.metadata }, $metadata: {} };
        if (operation === 'HeadObject') return head;
        const bytes = o.bytes;
        return {
          ...head,
          Body: {
            transformToByteArray: async () => new Uint8Array(bytes),
            transformToString: async (encoding?: string) => Buffer.from(bytes).toString((encoding as BufferEncoding | undefined) ?? 'utf8'),
          },
        };
      }
      case 'DeleteObject':
        this.bucket(bucket).delete(key);
        return { $metadata: {} };
      case 'ListObjectsV2':
        return this.list(bucket, input);
    }
    throw s3Error('NotImplemented', 501, `The in-memory S3 does not answer ${operation}`);
  }

  private list(bucket: string, input: Record<string, unknown>): unknown {
    const prefix = String(input.Prefix ?? '');
    const maxKeys = Math.min(LIST_MAX_KEYS, Number(input.MaxKeys ?? LIST_MAX_KEYS));
    // The continuation token is opaque to callers; here it is the last key returned.
    const after = typeof input.ContinuationToken === 'string' ? Buffer.from(input.ContinuationToken, 'base64url').toString('utf8') : typeof input.StartAfter === 'string' ? input.StartAfter : undefined;
    const keys = [...this.bucket(bucket).keys()].filter((k) => k.startsWith(prefix) && (after === undefined || Buffer.compare(Buffer.from(k), Buffer.from(after)) > 0)).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const page = keys.slice(0, maxKeys);
    const truncated = keys.length > page.length;
    const objects = this.bucket(bucket);
    return {
      Contents: page.map((k) => ({ Key: k, Size: objects.get(k)!.bytes.byteLength, ETag: objects.get(k)!.eTag, LastModified: objects.get(k)!.lastModified })),
      KeyCount: page.length,
      IsTruncated: truncated,
      ...(truncated ? { NextContinuationToken: Buffer.from(page[page.length - 1]!).toString('base64url') } : {}),
      $metadata: {},
    };
  }

  private bucket(name: string): Map<string, StoredObject> {
    const b = this.buckets.get(name);
    if (!b) throw new NoSuchBucket({ message: 'The specified bucket does not exist', $metadata: { httpStatusCode: 404 } });
    return b;
  }
}

const OPERATIONS: readonly [abstract new (...args: never[]) => object, string][] = [
  [PutObjectCommand, 'PutObject'],
  [GetObjectCommand, 'GetObject'],
  [HeadObjectCommand, 'HeadObject'],
  [DeleteObjectCommand, 'DeleteObject'],
  [ListObjectsV2Command, 'ListObjectsV2'],
];

function operationOf(command: object): string {
  const hit = OPERATIONS.find(([cls]) => command instanceof cls);
  if (!hit) throw s3Error('NotImplemented', 501, `The in-memory S3 does not answer ${command.constructor.name}`);
  return hit[1];
}

const unquote = (eTag: string) => eTag.replace(/"/g, '');

function s3Error(name: string, httpStatusCode: number, message: string): S3ServiceException {
  return new S3ServiceException({ name, $fault: httpStatusCode >= 500 ? 'server' : 'client', message, $metadata: { httpStatusCode } });
}
