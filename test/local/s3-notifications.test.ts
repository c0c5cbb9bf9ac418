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
import { decodeS3EventKey } from '../../core/keys.ts';
import { startFauxqsEmulator, type FauxqsHandle } from '../../local/emulators.ts';
import { S3Notifier, encodeS3EventKey, objectCreatedEventName } from '../../local/s3-notifications.ts';

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
});
