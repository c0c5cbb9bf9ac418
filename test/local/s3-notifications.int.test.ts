import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { decodeS3EventKey } from '../../core/ingest/keys.ts';
import { startFauxqsEmulator, type FauxqsHandle } from '../../local/emulators.ts';
import { S3Notifier, encodeS3EventKey, objectCreatedEventName, type NotificationFault } from '../../local/s3-notifications.ts';
import { startTestStack, type TestStack } from '../../harness/pipeline.ts';

const region = 'eu-central-1';
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const bucket = 'notify-test';

describe('encodeS3EventKey', () => {
  it.each([
    ['frames/v1/000001.jpg', 'frames/v1/000001.jpg'],
    ['frames/my video/000001.jpg', 'frames/my+video/000001.jpg'],
    ['frames/a+b=c/x(1)!.jpg', 'frames/a%2Bb%3Dc/x%281%29%21.jpg'],
    ['frames/caméra/é.png', 'frames/cam%C3%A9ra/%C3%A9.png'],
    ['frames/a*b_c-d.e~f', 'frames/a*b_c-d.e%7Ef'],
  ])('encodes %s as S3 does', (key, encoded) => {
    // Act
    const out = encodeS3EventKey(key);

    // Assess
    expect(out).toBe(encoded);
    expect(decodeS3EventKey(out)).toBe(key);
  });
});

describe('objectCreatedEventName', () => {
  const base = { routeUrl: '/:bucket/*', headers: {}, key: 'frames/v/1.jpg' };
  it.each([
    [{ ...base, method: 'PUT', query: {} }, 'ObjectCreated:Put'],
    [{ ...base, method: 'PUT', query: {}, headers: { 'x-amz-copy-source': 'b/k' } }, 'ObjectCreated:Copy'],
    [{ ...base, method: 'POST', query: { uploadId: 'u' } }, 'ObjectCreated:CompleteMultipartUpload'],
    [{ ...base, method: 'PUT', query: { uploadId: 'u', partNumber: '1' } }, undefined],
    [{ ...base, method: 'POST', query: { uploads: '' } }, undefined],
    [{ ...base, method: 'DELETE', query: {} }, undefined],
    [{ ...base, method: 'PUT', query: {}, key: '' }, undefined],
    [{ ...base, method: 'PUT', query: {}, routeUrl: '/:bucket' }, undefined],
  ])('classifies %j', (request, expected) => {
    expect(objectCreatedEventName(request)).toBe(expected);
  });
});

describe('S3Notifier on fauxqs', () => {
  let fauxqs: FauxqsHandle;
  let s3: S3Client;
  let sqs: SQSClient;
  let queueUrl: string;
  let notifier: S3Notifier;
  const errors: string[] = [];

  beforeAll(async () => {
    // No endpoint and a silent logger: requests must reach fauxqs through the queue URL
    // alone (the SDK's default useQueueUrlAsEndpoint), which only works if the URL resolves.
    const silent = { debug() {}, info() {}, warn() {}, error() {} };
    sqs = new SQSClient({ region, credentials, logger: silent });
    notifier = new S3Notifier({ region, sqs, onError: (e, d) => errors.push(`${d}: ${String(e)}`) });
    fauxqs = await startFauxqsEmulator({ region, configure: (app) => notifier.attach(app) });
    s3 = new S3Client({ region, credentials, endpoint: fauxqs.endpoint, forcePathStyle: true });
    queueUrl = (await new SQSClient({ region, credentials, endpoint: fauxqs.endpoint }).send(new CreateQueueCommand({ QueueName: 'ingest' })))
      .QueueUrl!;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(async () => {
    await fauxqs?.stop();
  });

  async function receiveAll(expected: number): Promise<unknown[]> {
    const bodies: unknown[] = [];
    const deadline = Date.now() + 5_000;
    while (bodies.length < expected && Date.now() < deadline) {
      const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      for (const m of r.Messages ?? []) {
        bodies.push(JSON.parse(m.Body!));
        await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
      }
    }
    return bodies;
  }

  it('serves queue URLs on 127.0.0.1 so a client without an endpoint can use them', () => {
    expect(queueUrl).toBe(`${fauxqs.endpoint}/000000000000/ingest`);
  });

  it('sends an s3:TestEvent when the configuration is added', async () => {
    // Act
    await notifier.addQueueConfiguration({ bucket, configurationId: 'cfg-1', queueUrl, queueArn: 'arn:x', prefix: 'frames/' });

    // Assess
    const [event] = await receiveAll(1);
    expect(event).toMatchObject({ Service: 'Amazon S3', Event: 's3:TestEvent', Bucket: bucket });
    expect(Date.parse((event as { Time: string }).Time)).not.toBeNaN();
  });

  it('notifies PutObject under the prefix in the AWS shape with the encoded key and real size, and ignores other keys', async () => {
    // Prepare
    const body = Buffer.alloc(4321, 7);
    const key = 'frames/my video/000001.jpg';

    // Act
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'other/000001.jpg', Body: body }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    await notifier.flush();

    // Assess
    const events = await receiveAll(1);
    expect(events).toHaveLength(1);
    const record = (events[0] as { Records: Record<string, unknown>[] }).Records[0]!;
    expect(record).toMatchObject({
      eventVersion: '2.1',
      eventSource: 'aws:s3',
      awsRegion: region,
      eventName: 'ObjectCreated:Put',
      s3: {
        s3SchemaVersion: '1.0',
        configurationId: 'cfg-1',
        bucket: { name: bucket, arn: `arn:aws:s3:::${bucket}` },
        object: { key: 'frames/my+video/000001.jpg', size: 4321 },
      },
    });
    const object = (record.s3 as { object: { eTag: string; sequencer: string } }).object;
    expect(object.eTag).toMatch(/^[0-9a-f]{32}$/);
    expect(object.sequencer).toMatch(/^[0-9A-F]{16,}$/);
    expect(new Date(record.eventTime as string).toISOString()).toBe(record.eventTime);
    expect(errors).toEqual([]);
  });

  it('notifies uploads from any HTTP client, not only the SDK (unsigned PUT like curl)', async () => {
    // Act
    const res = await fetch(`${fauxqs.endpoint}/${bucket}/frames/v2/000007.png`, { method: 'PUT', body: new Uint8Array(99) });
    await notifier.flush();

    // Assess
    expect(res.status).toBe(200);
    const [event] = (await receiveAll(1)) as { Records: { eventName: string; s3: { object: { key: string; size: number } } }[] }[];
    expect(event!.Records[0]!.eventName).toBe('ObjectCreated:Put');
    expect(event!.Records[0]!.s3.object).toMatchObject({ key: 'frames/v2/000007.png', size: 99 });
  });

  it('notifies CopyObject and CompleteMultipartUpload (with the assembled size), not the parts', async () => {
    // Prepare
    const partSize = 5 * 1024 * 1024;
    const key = 'frames/v3/000002.jpg';
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const p1 = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: Buffer.alloc(partSize, 1) }));
    const p2 = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 2, Body: Buffer.alloc(10, 2) }));

    // Act
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag }, { PartNumber: 2, ETag: p2.ETag }] },
      }),
    );
    await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'frames/v3/000003.jpg', CopySource: `${bucket}/${key}` }));
    await notifier.flush();

    // Assess
    const events = (await receiveAll(2)) as { Records: { eventName: string; s3: { object: { key: string; size: number; eTag: string } } }[] }[];
    const summary = events.map((e) => [e.Records[0]!.eventName, e.Records[0]!.s3.object.key, e.Records[0]!.s3.object.size]);
    expect(summary).toEqual([
      ['ObjectCreated:CompleteMultipartUpload', key, partSize + 10],
      ['ObjectCreated:Copy', 'frames/v3/000003.jpg', partSize + 10],
    ]);
    expect(events[0]!.Records[0]!.s3.object.eTag).toMatch(/-2$/);
  });

  it('gives later events of the same key a greater sequencer', async () => {
    // Act
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'frames/v4/000001.jpg', Body: 'a' }));
    await notifier.flush();
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'frames/v4/000001.jpg', Body: 'bb' }));
    await notifier.flush();

    // Assess
    const events = (await receiveAll(2)) as { Records: { s3: { object: { size: number; sequencer: string } } }[] }[];
    const objects = events.map((e) => e.Records[0]!.s3.object).sort((a, b) => a.size - b.size);
    expect(BigInt(`0x${objects[1]!.sequencer}`)).toBeGreaterThan(BigInt(`0x${objects[0]!.sequencer}`));
  });

  describe('fault injection', () => {
    type Event = { Records: { eventName: string; s3: { object: { key: string; sequencer: string } } }[] };
    const keysOf = (events: unknown[]) => (events as Event[]).map((e) => e.Records[0]!.s3.object.key).sort();
    const faults = new Map<string, NotificationFault>();

    beforeAll(() => {
      notifier.setNotificationFault((key) => faults.get(key));
    });
    afterAll(() => {
      notifier.setNotificationFault(undefined);
    });

    /** Everything in the queue now (after a short wait), deleted. */
    async function receiveNow(waitMs = 1_500): Promise<unknown[]> {
      const bodies: unknown[] = [];
      const deadline = Date.now() + waitMs;
      while (Date.now() < deadline) {
        const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
        for (const m of r.Messages ?? []) {
          bodies.push(JSON.parse(m.Body!));
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
        }
        if ((r.Messages ?? []).length === 0) await new Promise((res) => setTimeout(res, 100));
      }
      return bodies;
    }

    it('drops the notification of a dropped key: the object exists, its event never comes', async () => {
      // Prepare
      faults.set('frames/f1/000002.jpg', { kind: 'drop' });
      const before = notifier.counts;

      // Act
      for (const n of [1, 2, 3]) await s3.send(new PutObjectCommand({ Bucket: bucket, Key: `frames/f1/00000${n}.jpg`, Body: 'x' }));
      await notifier.flush({ delayed: true });

      // Assess
      expect(keysOf(await receiveNow())).toEqual(['frames/f1/000001.jpg', 'frames/f1/000003.jpg']);
      const after = notifier.counts;
      expect(after.events - before.events).toBe(3);
      expect(after.sent - before.sent).toBe(2);
      expect(after.dropped - before.dropped).toBe(1);
    });

    it('sends the same event twice for a duplicated key', async () => {
      // Prepare
      faults.set('frames/f2/000001.jpg', { kind: 'duplicate' });
      const before = notifier.counts;

      // Act
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'frames/f2/000001.jpg', Body: 'x' }));
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'frames/f2/000002.jpg', Body: 'x' }));
      await notifier.flush({ delayed: true });

      // Assess
      const events = (await receiveNow()) as Event[];
      expect(keysOf(events)).toEqual(['frames/f2/000001.jpg', 'frames/f2/000001.jpg', 'frames/f2/000002.jpg']);
      const copies = events.filter((e) => e.Records[0]!.s3.object.key === 'frames/f2/000001.jpg');
      expect(copies[0]).toEqual(copies[1]);
      const after = notifier.counts;
      expect(after.sent - before.sent).toBe(3);
      expect(after.duplicated - before.duplicated).toBe(1);
    });

    it('sends the second copy of a duplicate later when asked', async () => {
      // Prepare
      faults.set('frames/f3/000001.jpg', { kind: 'duplicate', afterMs: 1_000 });

      // Act
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'frames/f3/000001.jpg', Body: 'x' }));
      await notifier.flush();
      const first = await receiveNow(300);
      await notifier.flush({ delayed: true });
      const second = await receiveNow(500);

      // Assess
      expect(keysOf(first)).toEqual(['frames/f3/000001.jpg']);
      expect(second).toEqual(first);
    });

    it('delivers a delayed key after its delay, later than keys put after it', async () => {
      // Prepare
      const delayMs = 2_000;
      faults.set('frames/f4/000001.jpg', { kind: 'delay', ms: delayMs });
      const arrivals: { key: string; atMs: number }[] = [];
      const t0 = Date.now();

      // Act
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'frames/f4/000001.jpg', Body: 'x' }));
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'frames/f4/000002.jpg', Body: 'x' }));
      await notifier.flush();
      const deadline = Date.now() + delayMs + 5_000;
      while (arrivals.length < 2 && Date.now() < deadline) {
        for (const e of (await receiveNow(200)) as Event[]) arrivals.push({ key: e.Records[0]!.s3.object.key, atMs: Date.now() - t0 });
      }

      // Assess
      expect(arrivals.map((a) => a.key)).toEqual(['frames/f4/000002.jpg', 'frames/f4/000001.jpg']);
      expect(arrivals[0]!.atMs).toBeLessThan(delayMs);
      expect(arrivals[1]!.atMs).toBeGreaterThanOrEqual(delayMs);
      expect(notifier.counts.delayed).toBeGreaterThanOrEqual(1);
    });

    it('does not hold flush() for a delayed notification, and cancelDelayed() drops it', async () => {
      // Prepare
      faults.set('frames/f5/000001.jpg', { kind: 'delay', ms: 60_000 });
      const before = notifier.counts;

      // Act
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'frames/f5/000001.jpg', Body: 'x' }));
      const t0 = Date.now();
      await notifier.flush();
      notifier.cancelDelayed();
      await notifier.flush({ delayed: true });

      // Assess
      expect(Date.now() - t0).toBeLessThan(2_000);
      expect(await receiveNow(500)).toEqual([]);
      expect(notifier.counts.cancelled - before.cancelled).toBe(1);
      expect(notifier.counts.sent - before.sent).toBe(0);
    });
  });
});

describe('S3Notifier with other async onSend hooks on the app', () => {
  it('still notifies a successful PUT whose reply fastify tried to send twice', async () => {
    // Prepare: two async onSend hooks delay fauxqs's `reply.send()` past its async handler's
    // return, and fastify then sends the reply a second time: the client gets 200, but the
    // reply reads 500 by onResponse.
    const sqs = new SQSClient({ region, credentials, logger: { debug() {}, info() {}, warn() {}, error() {} } });
    const notifier = new S3Notifier({ region, sqs });
    const f = await startFauxqsEmulator({
      region,
      configure: (app) => {
        app.addHook('onSend', async (_request, _reply, payload) => payload);
        app.addHook('onSend', async (_request, _reply, payload) => payload);
        notifier.attach(app);
      },
    });
    try {
      const client = new S3Client({ region, credentials, endpoint: f.endpoint, forcePathStyle: true });
      const q = new SQSClient({ region, credentials, endpoint: f.endpoint });
      const queueUrl = (await q.send(new CreateQueueCommand({ QueueName: 'ingest-2' }))).QueueUrl!;
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      await notifier.addQueueConfiguration({ bucket, configurationId: 'c', queueUrl, queueArn: 'arn:x', prefix: 'frames/' });

      // Act
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: 'frames/d/000001.jpg', Body: 'x' }));
      await notifier.flush();

      // Assess
      expect(notifier.counts).toMatchObject({ events: 1, sent: 1 });
    } finally {
      await f.stop();
    }
  });
});

describe('notification faults through the local stack (startTestStack)', () => {
  let stack: TestStack | undefined;
  afterAll(async () => {
    await stack?.stop();
  });

  it('threads notificationFault to the notifier: a dropped key sends no ingest message, a duplicated key two', async () => {
    // Prepare: no router, so the ingest queue keeps what the notifier sent.
    stack = await startTestStack({
      routerHandler: false,
      janitorHandler: false,
      notificationFault: (key) => (key.endsWith('/000001.jpg') ? { kind: 'drop' } : key.endsWith('/000002.jpg') ? { kind: 'duplicate' } : undefined),
    });
    const q = stack.resources.ingest.url;
    const bodies: string[] = [];
    const drain = async () => {
      for (let i = 0; i < 10; i++) {
        const r = await stack!.clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: q, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
        if (!r.Messages?.length) break;
        for (const m of r.Messages) {
          bodies.push(m.Body!);
          await stack!.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: q, ReceiptHandle: m.ReceiptHandle! }));
        }
      }
    };
    await drain(); // the s3:TestEvent
    bodies.length = 0;

    // Act
    for (const n of [1, 2, 3]) await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: `frames/sv/00000${n}.jpg`, Body: 'x' }));
    await stack.notifier.flush({ delayed: true });
    await drain();

    // Assess
    const keys = bodies.map((b) => (JSON.parse(b) as { Records: { s3: { object: { key: string } } }[] }).Records[0]!.s3.object.key).sort();
    expect(keys).toEqual(['frames/sv/000002.jpg', 'frames/sv/000002.jpg', 'frames/sv/000003.jpg']);
    expect(stack.notifier.counts).toMatchObject({ events: 3, sent: 3, dropped: 1, duplicated: 1 });
  });
});
