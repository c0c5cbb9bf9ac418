/**
 * The AWS shapes of S3 event notifications (ObjectCreated records, the s3:TestEvent) and
 * which request creates an object, as the local notifier (local/s3-notifications.ts) and the
 * operator operations' re-send (core/ingest/sqs/upload-resender.ts) build them. Pure: no emulator, no SDK; in core/
 * so that the CLI builds them without loading local/.
 */
import { randomBytes } from 'node:crypto';

export type ObjectCreatedEventName = 'ObjectCreated:Put' | 'ObjectCreated:Copy' | 'ObjectCreated:CompleteMultipartUpload';

/** One `QueueConfigurations` entry of a bucket's notification configuration. */
export interface QueueNotificationConfig {
  readonly bucket: string;
  /** Id S3 reports as `configurationId` in each record. */
  readonly configurationId: string;
  readonly queueUrl: string;
  readonly queueArn: string;
  /** Key prefix filter, e.g. `frames/`. */
  readonly prefix?: string;
  readonly suffix?: string;
}

/** The fields of an S3 event record that vary. */
export interface ObjectCreatedFields {
  readonly region: string;
  readonly bucket: string;
  /** The object key as stored (not encoded). */
  readonly key: string;
  readonly sizeBytes: number;
  /** Without quotes. */
  readonly eTag: string;
  readonly eventName: ObjectCreatedEventName;
  readonly eventTime: Date;
  readonly sequencer: string;
  readonly configurationId: string;
  readonly sourceIp?: string;
}

/**
 * Encodes a key the way S3 writes it into event notifications: form-URL encoding
 * (space becomes `+`, everything outside `A-Za-z0-9.-_*` is percent-encoded as UTF-8),
 * except that `/` is kept.
 */
export function encodeS3EventKey(key: string): string {
  return key
    .split('/')
    .map((segment) =>
      encodeURIComponent(segment)
        .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
        .replace(/%20/g, '+'),
    )
    .join('/');
}

const LOCAL_PRINCIPAL = 'AWS:LOCALSTACKUSER';

/** Builds one S3 event message (`{"Records":[...]}`) in the shape AWS sends to SQS. */
export function buildObjectCreatedEvent(f: ObjectCreatedFields): { Records: unknown[] } {
  return {
    Records: [
      {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        awsRegion: f.region,
        eventTime: f.eventTime.toISOString(),
        eventName: f.eventName,
        userIdentity: { principalId: LOCAL_PRINCIPAL },
        requestParameters: { sourceIPAddress: f.sourceIp ?? '127.0.0.1' },
        responseElements: {
          'x-amz-request-id': randomBytes(8).toString('hex').toUpperCase(),
          'x-amz-id-2': randomBytes(32).toString('base64'),
        },
        s3: {
          s3SchemaVersion: '1.0',
          configurationId: f.configurationId,
          bucket: {
            name: f.bucket,
            ownerIdentity: { principalId: LOCAL_PRINCIPAL },
            arn: `arn:aws:s3:::${f.bucket}`,
          },
          object: {
            key: encodeS3EventKey(f.key),
            size: f.sizeBytes,
            eTag: f.eTag,
            sequencer: f.sequencer,
          },
        },
      },
    ],
  };
}

/** The message S3 sends once when a notification configuration is put on a bucket. */
export function buildTestEvent(bucket: string, time: Date = new Date()): Record<string, string> {
  return {
    Service: 'Amazon S3',
    Event: 's3:TestEvent',
    Time: time.toISOString(),
    Bucket: bucket,
    RequestId: randomBytes(8).toString('hex').toUpperCase(),
    HostId: randomBytes(32).toString('base64'),
  };
}

/** Classifies a finished S3 request; undefined when it did not create an object. */
export function objectCreatedEventName(request: {
  method: string;
  routeUrl: string | undefined;
  query: Record<string, unknown>;
  headers: Record<string, unknown>;
  key: string;
}): ObjectCreatedEventName | undefined {
  if (request.routeUrl !== '/:bucket/*' || !request.key) return undefined;
  const q = request.query;
  if (request.method === 'PUT') {
    // UploadPart / UploadPartCopy create parts, not objects; the rest are bucket subresources.
    if ('uploadId' in q || 'partNumber' in q || 'renameObject' in q || 'lifecycle' in q) return undefined;
    return request.headers['x-amz-copy-source'] ? 'ObjectCreated:Copy' : 'ObjectCreated:Put';
  }
  if (request.method === 'POST' && typeof q.uploadId === 'string' && q.uploadId !== '') {
    return 'ObjectCreated:CompleteMultipartUpload';
  }
  return undefined;
}
