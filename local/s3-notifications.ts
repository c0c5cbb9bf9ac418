/**
 * S3 event notifications for fauxqs, which has none: after every successful object
 * creation (PutObject, CopyObject, CompleteMultipartUpload) made by ANY client through
 * the endpoint, an event in the exact AWS shape is sent to the configured queue.
 *
 * Like S3, delivery is asynchronous (after the response) and carries the object's real
 * size and ETag, read back from the store with an in-process HEAD.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { FauxqsApp } from './emulators.ts';

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

/** Increases across restarts (time-based) and within one process (counter), like S3's per-key sequencer. */
class Sequencer {
  #last = BigInt(Date.now()) * 1_000_000n;
  next(): string {
    const now = BigInt(Date.now()) * 1_000_000n;
    this.#last = now > this.#last ? now : this.#last + 1n;
    return this.#last.toString(16).toUpperCase().padStart(18, '0');
  }
}

export interface S3NotifierOptions {
  readonly region: string;
  /** Client used to deliver to the destination queue. */
  readonly sqs: SQSClient;
  /** Called when a delivery fails (S3 itself would retry; locally we log). */
  readonly onError?: (err: unknown, detail: string) => void;
}

/**
 * Adds S3 bucket notifications (ObjectCreated:* to SQS) to a fauxqs app.
 * Call {@link attach} before the app listens; add configurations at any time.
 */
export class S3Notifier {
  readonly #options: S3NotifierOptions;
  readonly #configs: QueueNotificationConfig[] = [];
  readonly #sequencer = new Sequencer();
  readonly #pending = new Set<Promise<void>>();
  #app: FauxqsApp | undefined;
  #delivered = 0;

  constructor(options: S3NotifierOptions) {
    this.#options = options;
  }

  /** Events delivered so far (TestEvents excluded). */
  get deliveredCount(): number {
    return this.#delivered;
  }

  /** Installs the hook; must run before the Fastify app is ready. */
  attach(app: FauxqsApp): void {
    this.#app = app;
    app.addHook('onResponse', async (request, reply) => {
      if (reply.statusCode !== 200 || this.#configs.length === 0) return;
      const params = (request.params ?? {}) as Record<string, string | undefined>;
      const key = params['*'] ?? '';
      const bucket = params.bucket ?? '';
      const eventName = objectCreatedEventName({
        method: request.method,
        routeUrl: request.routeOptions.url,
        query: (request.query ?? {}) as Record<string, unknown>,
        headers: request.headers,
        key,
      });
      if (!eventName) return;
      const configs = this.#configs.filter(
        (c) => c.bucket === bucket && key.startsWith(c.prefix ?? '') && key.endsWith(c.suffix ?? ''),
      );
      if (configs.length === 0) return;
      const eventTime = new Date();
      const sequencer = this.#sequencer.next();
      const delivery = this.#deliver(configs, { bucket, key, eventName, eventTime, sequencer, sourceIp: request.ip });
      this.#pending.add(delivery);
      void delivery.finally(() => this.#pending.delete(delivery));
    });
  }

  /**
   * Adds a queue configuration and, as S3 does when a notification configuration is
   * put, sends an `s3:TestEvent` to the queue.
   */
  async addQueueConfiguration(config: QueueNotificationConfig): Promise<void> {
    this.#configs.push(config);
    await this.#options.sqs.send(
      new SendMessageCommand({ QueueUrl: config.queueUrl, MessageBody: JSON.stringify(buildTestEvent(config.bucket)) }),
    );
  }

  /** Waits for deliveries already under way (used on shutdown and in tests). */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
  }

  async #deliver(
    configs: QueueNotificationConfig[],
    e: {
      bucket: string;
      key: string;
      eventName: ObjectCreatedEventName;
      eventTime: Date;
      sequencer: string;
      sourceIp: string;
    },
  ): Promise<void> {
    const detail = `${e.eventName} s3://${e.bucket}/${e.key}`;
    try {
      const head = await this.#app!.inject({
        method: 'HEAD',
        url: `/${encodeURIComponent(e.bucket)}/${e.key.split('/').map(encodeURIComponent).join('/')}`,
      });
      // Overwritten or deleted in between: S3 would still have notified, but with no
      // object to describe there is nothing useful to send.
      if (head.statusCode !== 200) throw new Error(`HEAD after ${detail} answered ${head.statusCode}`);
      const sizeBytes = Number(head.headers['content-length']);
      const eTag = String(head.headers.etag ?? '').replace(/"/g, '');
      for (const c of configs) {
        const body = buildObjectCreatedEvent({
          region: this.#options.region,
          bucket: e.bucket,
          key: e.key,
          sizeBytes,
          eTag,
          eventName: e.eventName,
          eventTime: e.eventTime,
          sequencer: e.sequencer,
          configurationId: c.configurationId,
          sourceIp: e.sourceIp,
        });
        await this.#options.sqs.send(new SendMessageCommand({ QueueUrl: c.queueUrl, MessageBody: JSON.stringify(body) }));
        this.#delivered++;
      }
    } catch (err) {
      this.#options.onError?.(err, detail);
    }
  }
}

/** A configuration id like the ones the S3 console generates. */
export function newConfigurationId(): string {
  return randomUUID();
}
