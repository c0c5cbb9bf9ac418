/**
 * Timeouts and retries of the AWS clients (core/aws/clients.ts): a call to a server
 * that never answers fails with a TimeoutError after the configured attempts instead of
 * hanging; long polls get their wait; explicit configuration overrides the defaults.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAwsClients, createAwsClientsFrom, s3RequestTimeoutMs, sqsRequestTimeoutMs } from '../../../core/aws/clients.ts';
import { AWS_CALL_POLICY, DEFAULT_TUNABLES } from '../../../core/config.ts';
import { closeFakeServers, startFakeServer } from '../../support/fake-aws-server.ts';

const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
afterEach(() => {
  vi.unstubAllEnvs();
  closeFakeServers();
});

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as Error & { $metadata?: { attempts?: number } },
  );

describe('AWS clients against a server that never answers', () => {
  it('fail a DynamoDB call (the heartbeat case) with a TimeoutError after the configured attempts', async () => {
    // Prepare: the worker's way of building clients, endpoint from the SDK's own variable
    const hung = await startFakeServer();
    vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', hung.url);
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
    const clients = hung.track(createAwsClients({ AWS_REGION: 'us-east-1' }));
    // Act
    const e = await failure(clients.dynamodb.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'slot#0' } } })));
    // Assess
    expect(e?.name).toBe('TimeoutError');
    expect(e?.$metadata?.attempts).toBe(AWS_CALL_POLICY.dynamodb.maxAttempts);
    expect(hung.requests()).toBe(AWS_CALL_POLICY.dynamodb.maxAttempts);
  });

  it('honour explicit timeouts and attempts, as the local stack and CLI pass them', async () => {
    // Prepare
    const hung = await startFakeServer();
    const fast = { requestHandler: { requestTimeout: 200 }, maxAttempts: 1 };
    const clients = hung.track(
      createAwsClientsFrom({
        s3: { region: 'us-east-1', endpoint: hung.url, forcePathStyle: true, credentials, ...fast },
        sqs: { region: 'us-east-1', endpoint: hung.url, credentials, ...fast },
        dynamodb: { region: 'us-east-1', endpoint: hung.url, credentials, ...fast },
      }),
    );
    // Act
    const s3 = await failure(clients.s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'frames/v/0.jpg' })));
    const sqs = await failure(clients.sqs.send(new SendMessageCommand({ QueueUrl: `${hung.url}/000000000000/q.fifo`, MessageBody: 'x', MessageGroupId: 'g', MessageDeduplicationId: 'd' })));
    const ddb = await failure(clients.ddb.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'x' } } })));
    // Assess
    expect([s3?.name, sqs?.name, ddb?.name]).toEqual(['TimeoutError', 'TimeoutError', 'TimeoutError']);
    expect(hung.requests()).toBe(3);
  });

  it('honour AWS_MAX_ATTEMPTS in the environment', async () => {
    // Prepare
    const hung = await startFakeServer();
    vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', hung.url);
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
    const clients = hung.track(createAwsClients({ AWS_REGION: 'us-east-1', AWS_MAX_ATTEMPTS: '1' }));
    // Act
    const e = await failure(clients.dynamodb.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'x' } } })));
    // Assess
    expect(e?.name).toBe('TimeoutError');
    expect(hung.requests()).toBe(1);
  });

  it('fail an S3 download whose body stops arriving (socket idle timeout)', async () => {
    // Prepare: headers and a first chunk, then nothing
    const stalls = await startFakeServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': '1000' });
      res.write(Buffer.alloc(10));
    });
    const clients = stalls.track(
      createAwsClientsFrom({
        s3: { region: 'us-east-1', endpoint: stalls.url, forcePathStyle: true, credentials, requestHandler: { socketTimeout: 300 }, maxAttempts: 1 },
        sqs: { region: 'us-east-1' },
        dynamodb: { region: 'us-east-1' },
      }),
    );
    // Act
    const object = await clients.s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'frames/v/0.jpg' }));
    const e = await failure(object.Body!.transformToByteArray());
    // Assess
    expect(e?.name).toBe('TimeoutError');
  });
});

describe('SQS long polls', () => {
  it('get their wait on top of the request timeout, while other SQS calls keep the short one', async () => {
    // Prepare: a server that answers every request after 1.2 s
    const slow = await startFakeServer((req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        res.end(req.headers['x-amz-target'] === 'AmazonSQS.ReceiveMessage' ? '{"Messages":[]}' : '{}');
      }, 1_200);
    });
    const clients = slow.track(
      createAwsClientsFrom({
        s3: { region: 'us-east-1' },
        sqs: { region: 'us-east-1', endpoint: slow.url, credentials, requestHandler: { requestTimeout: 400 }, maxAttempts: 1 },
        dynamodb: { region: 'us-east-1' },
      }),
    );
    const queueUrl = `${slow.url}/000000000000/q.fifo`;
    // Act
    const received = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }));
    const sent = await failure(clients.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', MessageGroupId: 'g', MessageDeduplicationId: 'd' })));
    // Assess
    expect(received.Messages ?? []).toEqual([]);
    expect(sent?.name).toBe('TimeoutError');
  });

  it('computes request timeouts per request: long polls and uploads get more time', () => {
    const target = (t: string) => ({ 'x-amz-target': t, 'content-type': 'application/x-amz-json-1.0' });
    expect(sqsRequestTimeoutMs({ headers: target('AmazonSQS.ReceiveMessage'), body: '{"WaitTimeSeconds":20}' }, 5_000)).toBe(20_000 + AWS_CALL_POLICY.sqs.longPollMarginMs);
    expect(sqsRequestTimeoutMs({ headers: target('AmazonSQS.ReceiveMessage'), body: new TextEncoder().encode('{"WaitTimeSeconds":3}') }, 5_000)).toBe(3_000 + AWS_CALL_POLICY.sqs.longPollMarginMs);
    expect(sqsRequestTimeoutMs({ headers: target('AmazonSQS.ReceiveMessage'), body: '{"WaitTimeSeconds":0}' }, 5_000)).toBe(Math.max(5_000, AWS_CALL_POLICY.sqs.longPollMarginMs));
    // No WaitTimeSeconds: the queue's default applies, which may be up to 20 s.
    expect(sqsRequestTimeoutMs({ headers: target('AmazonSQS.ReceiveMessage'), body: '{}' }, 5_000)).toBe(20_000 + AWS_CALL_POLICY.sqs.longPollMarginMs);
    expect(sqsRequestTimeoutMs({ headers: target('AmazonSQS.SendMessageBatch'), body: '{}' }, 5_000)).toBe(5_000);
    expect(s3RequestTimeoutMs({ headers: { 'content-length': String(20 * 1024 * 1024) } }, 5_000)).toBe(5_000 + 20 * AWS_CALL_POLICY.s3.uploadMsPerMiB);
    expect(s3RequestTimeoutMs({ headers: {} }, 5_000)).toBe(5_000);
  });
});

describe('AWS_CALL_POLICY', () => {
  it('lets a hung heartbeat give up within one interval, and a worker cut off from DynamoDB stop before its lease ends', () => {
    // Prepare
    const { dynamodb } = AWS_CALL_POLICY;
    const intervalMs = DEFAULT_TUNABLES.heartbeatIntervalSeconds * 1000;
    const ttlMs = DEFAULT_TUNABLES.slotLeaseTtlSeconds * 1000;
    // Standard retry backoff before retry n (0-based) is at most 2^n × 25 ms for DynamoDB; allow 50 ms.
    const backoffMs = Array.from({ length: dynamodb.maxAttempts - 1 }, (_, n) => 2 ** n * 50).reduce((a, b) => a + b, 0);
    const oneCallMs = dynamodb.maxAttempts * dynamodb.requestTimeoutMs + backoffMs;
    // Assess: renewal alone, and renewal plus the confirming re-read
    expect(oneCallMs).toBeLessThan(intervalMs);
    expect(2 * oneCallMs).toBeLessThan(ttlMs - intervalMs);
    expect(dynamodb.connectionTimeoutMs).toBeLessThanOrEqual(dynamodb.requestTimeoutMs);
  });

  it('lets the longest SQS long poll (20 s) finish', () => {
    expect(AWS_CALL_POLICY.sqs.socketTimeoutMs).toBeGreaterThan(20_000);
    expect(AWS_CALL_POLICY.sqs.longPollMarginMs).toBeGreaterThan(0);
  });
});
