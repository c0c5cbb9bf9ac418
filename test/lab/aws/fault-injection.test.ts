/**
 * AWS_FAULT_INJECTION (lab/aws/fault-injection.ts), the chaos run's throttling and 5xx: absent,
 * nothing changes; set, the chosen share of request attempts fails before it leaves the
 * process, with errors the SDK's standard retry strategy retries (so a call that draws a
 * fault is retried, and one that draws it on every attempt fails after maxAttempts).
 * AWS_CALL_LOG, the bench's one line per call. Both are installed by the composition roots
 * (core/aws/instrumentation.ts, to which the lab's instrumentation is added here as the
 * local stack and lab/worker-main.ts add it), never by the client factory alone.
 */
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetItemCommand, TransactWriteItemsCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAwsClients, type AwsClients } from '../../../core/aws/clients.ts';
import { instrumentAwsClients } from '../../../core/aws/instrumentation.ts';
import { COMMIT_FAULT_NAMES, faultRng, injectedError, parseFaultInjection } from '../../../lab/aws/fault-injection.ts';
import { installLabInstrumentation } from '../../../lab/aws/instrumentation.ts';
import { AWS_CALL_POLICY } from '../../../core/config.ts';
import { closeFakeServers, startFakeServer, type FakeServer } from '../../support/fake-aws-server.ts';

/** A loopback server standing in for all three services: answers every request with a minimal success. */
function fakeAws(): Promise<FakeServer> {
  return startFakeServer((req, res) => {
    req.once('end', () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      if (target.startsWith('AmazonSQS.')) {
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        res.end(JSON.stringify({ MessageId: 'm-1', MD5OfMessageBody: '9dd4e461268c8034f5c8564e155c67a6', SequenceNumber: '1' }));
      } else if (target.startsWith('DynamoDB_')) {
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        res.end('{}');
      } else {
        // S3 HeadObject
        res.writeHead(200, { 'content-length': '0', etag: '"e"' });
        res.end();
      }
    });
  });
}

installLabInstrumentation();

afterEach(() => {
  vi.unstubAllEnvs();
  closeFakeServers();
});

type SdkError = Error & { $metadata?: { attempts?: number; httpStatusCode?: number } };
const outcome = <T extends { $metadata: { attempts?: number } }>(p: Promise<T>) =>
  p.then(
    (r) => ({ ok: true as const, attempts: r.$metadata.attempts ?? 0 }),
    (e: unknown) => ({ ok: false as const, error: e as SdkError, attempts: (e as SdkError).$metadata?.attempts ?? 0 }),
  );

function stubEndpoints(url: string): void {
  for (const s of ['S3', 'SQS', 'DYNAMODB']) vi.stubEnv(`AWS_ENDPOINT_URL_${s}`, url);
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
}

/** Clients as the worker's main builds them (factory, then instrumentation), pointed at `url` through the SDK's endpoint variables. */
function clientsFor(url: string, extra: Record<string, string> = {}): AwsClients {
  stubEndpoints(url);
  const env = { AWS_REGION: 'us-east-1', S3_FORCE_PATH_STYLE: 'true', ...extra };
  return instrumentAwsClients(createAwsClients(env), env, 'worker');
}

const instrumentation = (c: AwsClients) =>
  [c.dynamodb, c.s3, c.sqs].flatMap((client) => client.middlewareStack.identify().map((m) => m.split(' ')[0]!).filter((m) => m === 'callLog' || m === 'faultInjection'));

const getItem = (c: AwsClients) => c.dynamodb.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'video#v' } } }));

describe('AWS_FAULT_INJECTION', () => {
  it('adds nothing when unset: calls reach the service and no middleware is installed', async () => {
    // Prepare
    const aws = await fakeAws();
    const clients = aws.track(clientsFor(aws.url));
    // Act
    const r = await outcome(getItem(clients));
    // Assess
    expect(r).toEqual({ ok: true, attempts: 1 });
    expect(aws.requests()).toBe(1);
    expect(clients.dynamodb.middlewareStack.identify().some((m) => m.startsWith('faultInjection'))).toBe(false);
  });

  it('fails every attempt at rate 1 with retryable errors of each service, none reaching the service', async () => {
    // Prepare
    const aws = await fakeAws();
    const log = join(mkdtempSync(join(tmpdir(), 'fault-')), 'faults.log');
    const clients = aws.track(clientsFor(aws.url, { AWS_FAULT_INJECTION: JSON.stringify({ rate: 1, seed: 3, log }) }));
    // Act
    const [ddb, s3, sqs] = await Promise.all([
      outcome(getItem(clients)),
      outcome(clients.s3.send(new HeadObjectCommand({ Bucket: 'b', Key: 'frames/v/000001.jpg' }))),
      outcome(clients.sqs.send(new SendMessageCommand({ QueueUrl: `${aws.url}/000000000000/q.fifo`, MessageBody: 'x', MessageGroupId: 'g', MessageDeduplicationId: 'd' }))),
    ]);
    // Assess: retried up to maxAttempts (a non-retryable error stops after 1 attempt)
    expect(ddb.ok || s3.ok || sqs.ok).toBe(false);
    expect(ddb.attempts).toBe(AWS_CALL_POLICY.dynamodb.maxAttempts);
    expect(s3.attempts).toBe(AWS_CALL_POLICY.s3.maxAttempts);
    expect(sqs.attempts).toBe(AWS_CALL_POLICY.sqs.maxAttempts);
    expect(['ThrottlingException', 'InternalServerError']).toContain(!ddb.ok && ddb.error.name);
    expect(['SlowDown', 'InternalError']).toContain(!s3.ok && s3.error.name);
    expect(['RequestThrottled', 'ServiceUnavailable']).toContain(!sqs.ok && sqs.error.name);
    expect(aws.requests()).toBe(0);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(ddb.attempts + s3.attempts + sqs.attempts);
    expect(lines.filter((l) => l.startsWith('worker\tdynamodb\tGetItemCommand\t'))).toHaveLength(ddb.attempts);
  });

  it('at a partial rate, faulted attempts are retried and the call succeeds; every other attempt reaches the service', async () => {
    // Prepare
    const aws = await fakeAws();
    const log = join(mkdtempSync(join(tmpdir(), 'fault-')), 'faults.log');
    const clients = aws.track(clientsFor(aws.url, { AWS_FAULT_INJECTION: JSON.stringify({ rate: 0.4, seed: 11, services: ['dynamodb'], log }) }));
    // Act
    const results = await Promise.all(Array.from({ length: 20 }, () => outcome(getItem(clients))));
    // Assess
    const injected = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').length : 0;
    const attempts = results.reduce((n, r) => n + r.attempts, 0);
    expect(injected).toBeGreaterThan(0);
    expect(results.some((r) => r.ok && r.attempts > 1)).toBe(true);
    expect(aws.requests()).toBe(attempts - injected);
    for (const r of results) if (!r.ok) expect(r.attempts).toBe(AWS_CALL_POLICY.dynamodb.maxAttempts);
  });

  it('leaves services outside `services` alone', async () => {
    // Prepare
    const aws = await fakeAws();
    const clients = aws.track(clientsFor(aws.url, { AWS_FAULT_INJECTION: JSON.stringify({ rate: 1, services: ['s3'] }) }));
    // Act
    const r = await outcome(getItem(clients));
    // Assess
    expect(r).toEqual({ ok: true, attempts: 1 });
    expect(aws.requests()).toBe(1);
  });

  it('refuses malformed settings instead of running without faults', () => {
    expect(() => parseFaultInjection('rate=0.1')).toThrow(/not JSON/);
    expect(() => parseFaultInjection('{"seed":1}')).toThrow(/rate/);
    expect(() => parseFaultInjection('{"rate":1.5}')).toThrow(/rate/);
    expect(() => parseFaultInjection('{"rate":0.1,"services":["lambda"]}')).toThrow(/services/);
    expect(() => parseFaultInjection('{"rate":0.1,"seed":0.5}')).toThrow(/seed/);
    const env = { AWS_REGION: 'us-east-1', AWS_FAULT_INJECTION: '[1]' };
    expect(() => instrumentAwsClients(createAwsClients(env), env, 'worker')).toThrow(/object/);
    expect(parseFaultInjection('{"rate":0.02,"seed":7}')).toEqual({ rate: 0.02, seed: 7, services: ['dynamodb', 's3', 'sqs'], throttleShare: 0.5, lostAnswerRate: 0, laterGroupRate: 0, doubtWindows: [] });
    expect(() => parseFaultInjection('{"rate":0,"lostAnswerRate":2}')).toThrow(/lostAnswerRate/);
    expect(() => parseFaultInjection('{"rate":0,"laterGroupRate":"x"}')).toThrow(/laterGroupRate/);
  });

  it('makes errors the SDK classifies as throttling or transient server errors', () => {
    for (const service of ['dynamodb', 's3', 'sqs'] as const) {
      const throttle = injectedError(service, 'throttle') as SdkError;
      const server = injectedError(service, '5xx') as SdkError;
      expect(server.$metadata?.httpStatusCode).toBeGreaterThanOrEqual(500);
      expect(['ThrottlingException', 'SlowDown', 'RequestThrottled']).toContain(throttle.name);
    }
  });

  it('draws the same sequence for the same seed and salt, a different one for another salt', () => {
    const a = faultRng(7, 'worker:w1');
    const b = faultRng(7, 'worker:w1');
    const c = faultRng(7, 'worker:w2');
    const seqA = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(seqA);
    expect(Array.from({ length: 5 }, c)).not.toEqual(seqA);
    for (const x of seqA) expect(x >= 0 && x < 1).toBe(true);
  });
});

/** A loopback DynamoDB that answers every request `{}` and keeps the TransactItems of each request it got. */
async function recordingDynamo(): Promise<FakeServer & { sent: unknown[][] }> {
  const sent: unknown[][] = [];
  const server = await startFakeServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.once('end', () => {
      sent.push((JSON.parse(body) as { TransactItems?: unknown[] }).TransactItems ?? []);
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end('{}');
    });
  });
  return Object.assign(server, { sent });
}

/** A fenced commit as core/leases/dynamodb/video-commit.ts sends it: the slot check, then per video its checkpoint update, results and summary. */
function commitItems(videos: readonly string[]): TransactWriteItem[] {
  const items: TransactWriteItem[] = [{ ConditionCheck: { TableName: 'leases', Key: { pk: { S: 'slot#0' } }, ConditionExpression: 'epoch = :e', ExpressionAttributeValues: { ':e': { N: '1' } } } }];
  for (const v of videos) {
    items.push({ Update: { TableName: 'leases', Key: { pk: { S: `video#${v}` } }, UpdateExpression: 'SET checkpoint = :ck', ExpressionAttributeValues: { ':ck': { S: v } } } });
    items.push({ Put: { TableName: 'results', Item: { videoId: { S: v }, frame: { N: '1' } } } });
    items.push({ Put: { TableName: 'results', Item: { videoId: { S: v }, frame: { N: '-1' } } } });
  }
  return items;
}

describe('AWS_FAULT_INJECTION commit modes', () => {
  const commit = (c: AwsClients, videos: readonly string[]) => outcome(c.dynamodb.send(new TransactWriteItemsCommand({ TransactItems: commitItems(videos) })));

  it('lostAnswerRate 1: the commit reaches the server once, then every attempt fails with a retryable 500, logged once', async () => {
    // Prepare
    const aws = await recordingDynamo();
    const log = join(mkdtempSync(join(tmpdir(), 'fault-')), 'faults.log');
    const clients = aws.track(clientsFor(aws.url, { AWS_FAULT_INJECTION: JSON.stringify({ rate: 0, lostAnswerRate: 1, seed: 2, log }) }));
    // Act
    const r = await commit(clients, ['a', 'b']);
    // Assess: applied by the server (sent once, whole), answered as a failure after the SDK's retries
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.name).toBe('InternalServerError');
    expect(r.attempts).toBe(AWS_CALL_POLICY.dynamodb.maxAttempts);
    expect(aws.sent).toHaveLength(1);
    expect(aws.sent[0]).toHaveLength(7);
    expect(readFileSync(log, 'utf8')).toBe(`worker\tdynamodb\tTransactWriteItemsCommand\t${COMMIT_FAULT_NAMES.lostAnswer}\n`);
  });

  it('laterGroupRate 1: the first video (with the slot check) lands as its own transaction, the rest is never sent and the call fails', async () => {
    // Prepare
    const aws = await recordingDynamo();
    const log = join(mkdtempSync(join(tmpdir(), 'fault-')), 'faults.log');
    const clients = aws.track(clientsFor(aws.url, { AWS_FAULT_INJECTION: JSON.stringify({ rate: 0, laterGroupRate: 1, seed: 2, log }) }));
    // Act
    const r = await commit(clients, ['a', 'b', 'c']);
    // Assess
    expect(r.ok).toBe(false);
    expect(r.attempts).toBe(AWS_CALL_POLICY.dynamodb.maxAttempts);
    expect(aws.sent).toEqual([commitItems(['a'])]);
    expect(readFileSync(log, 'utf8')).toBe(`worker\tdynamodb\tTransactWriteItemsCommand\t${COMMIT_FAULT_NAMES.laterGroup}\n`);
  });

  it('leaves a one-video commit to laterGroupRate alone, and other calls (other transactions, reads) to both modes', async () => {
    // Prepare
    const aws = await recordingDynamo();
    const clients = aws.track(clientsFor(aws.url, { AWS_FAULT_INJECTION: JSON.stringify({ rate: 0, laterGroupRate: 1, seed: 2 }) }));
    const lossy = aws.track(clientsFor(aws.url, { AWS_FAULT_INJECTION: JSON.stringify({ rate: 0, lostAnswerRate: 1, seed: 2 }) }));
    const notACommit: TransactWriteItem[] = [{ Put: { TableName: 'leases', Item: { pk: { S: 'video#a' } } } }];
    // Act
    const one = await commit(clients, ['a']);
    const other = await outcome(lossy.dynamodb.send(new TransactWriteItemsCommand({ TransactItems: notACommit })));
    const read = await outcome(getItem(lossy));
    // Assess
    expect([one, other, read]).toEqual([
      { ok: true, attempts: 1 },
      { ok: true, attempts: 1 },
      { ok: true, attempts: 1 },
    ]);
  });

  it('doubtWindows: the gap commit of the planned frame fails unsent, then the planned reads of its video fail; other commits and reads pass (issue 32)', async () => {
    // Prepare: a window on frame 3 of "a", two reads long
    const aws = await recordingDynamo();
    const log = join(mkdtempSync(join(tmpdir(), 'fault-')), 'faults.log');
    const clients = aws.track(clientsFor(aws.url, { AWS_FAULT_INJECTION: JSON.stringify({ rate: 0, seed: 2, log, doubtWindows: [{ videoId: 'a', frame: 3, reads: 2 }] }) }));
    const withGap = (frame: number): TransactWriteItem[] => [...commitItems(['a']), { Put: { TableName: 'results', Item: { videoId: { S: 'a' }, frame: { N: String(frame) }, status: { S: 'gap' } } } }];
    const read = (pk: string) => outcome(clients.dynamodb.send(new GetItemCommand({ TableName: 'leases', Key: { pk: { S: pk } } })));
    // Act
    const otherGap = await outcome(clients.dynamodb.send(new TransactWriteItemsCommand({ TransactItems: withGap(4) })));
    const readBefore = await read('video#a');
    const planned = await outcome(clients.dynamodb.send(new TransactWriteItemsCommand({ TransactItems: withGap(3) })));
    const reads = [await read('video#b'), await read('video#a'), await read('video#a'), await read('video#a')];
    const again = await outcome(clients.dynamodb.send(new TransactWriteItemsCommand({ TransactItems: withGap(3) })));
    // Assess
    expect([otherGap.ok, readBefore.ok, planned.ok, ...reads.map((r) => r.ok), again.ok]).toEqual([true, true, false, true, false, false, true, true]);
    // Sent: the other gap's commit, the three reads that passed, the planned commit's later retry (a new call: the window is spent).
    expect(aws.sent.filter((items) => items.length > 0)).toHaveLength(2);
    expect(aws.sent).toHaveLength(5);
    expect(readFileSync(log, 'utf8')).toBe(`worker\tdynamodb\tTransactWriteItemsCommand\t${COMMIT_FAULT_NAMES.doubt}\ta\t3\n`);
  });

  it('doubtWindows must be well formed', () => {
    expect(() => parseFaultInjection(JSON.stringify({ rate: 0, doubtWindows: [{ videoId: 'a', frame: 'x', reads: 1 }] }))).toThrow(/doubtWindows/);
    expect(parseFaultInjection(JSON.stringify({ rate: 0 })).doubtWindows).toEqual([]);
  });

  it('at a partial rate, strikes some commits and passes the others whole', async () => {
    // Prepare
    const aws = await recordingDynamo();
    const log = join(mkdtempSync(join(tmpdir(), 'fault-')), 'faults.log');
    const clients = aws.track(clientsFor(aws.url, { AWS_FAULT_INJECTION: JSON.stringify({ rate: 0, lostAnswerRate: 0.5, seed: 5, log }) }));
    // Act
    const results = [];
    for (let i = 0; i < 20; i++) results.push(await commit(clients, ['a', 'b']));
    // Assess: every commit was sent exactly once; the failed ones are exactly the logged ones
    const failed = results.filter((r) => !r.ok).length;
    expect(aws.sent).toHaveLength(20);
    expect(failed).toBeGreaterThan(0);
    expect(failed).toBeLessThan(20);
    expect(readFileSync(log, 'utf8').trim().split('\n')).toHaveLength(failed);
  });
});

describe('AWS_CALL_LOG', () => {
  it('appends one `role service operation` line per call (DynamoDB: and its capacity units), retries not counted', async () => {
    // Prepare
    const aws = await fakeAws();
    const log = join(mkdtempSync(join(tmpdir(), 'calls-')), 'calls.log');
    stubEndpoints(aws.url);
    const env = { AWS_REGION: 'us-east-1', S3_FORCE_PATH_STYLE: 'true', AWS_CALL_LOG: log };
    const clients = aws.track(instrumentAwsClients(createAwsClients(env), env, 'router'));
    // Act
    await getItem(clients);
    await clients.s3.send(new HeadObjectCommand({ Bucket: 'b', Key: 'frames/v/000001.jpg' }));
    // Assess
    // (a DynamoDB line ends with the consumed capacity the answer reports: none from this fake)
    expect(readFileSync(log, 'utf8')).toBe('router\tdynamodb\tGetItemCommand\t\nrouter\ts3\tHeadObjectCommand\n');
  });
});

describe('the client factory alone', () => {
  it('installs no instrumentation, whatever the environment says: no call log, no faults', async () => {
    // Prepare: both variables set, as in a chaos run of the bench
    const aws = await fakeAws();
    const dir = mkdtempSync(join(tmpdir(), 'plain-'));
    stubEndpoints(aws.url);
    const env = {
      AWS_REGION: 'us-east-1',
      S3_FORCE_PATH_STYLE: 'true',
      AWS_CALL_LOG: join(dir, 'calls.log'),
      AWS_FAULT_INJECTION: JSON.stringify({ rate: 1, seed: 3, log: join(dir, 'faults.log') }),
    };
    const clients = aws.track(createAwsClients(env));
    // Act
    const r = await outcome(getItem(clients));
    // Assess: the call reached the service once, nothing was logged or injected
    expect(r).toEqual({ ok: true, attempts: 1 });
    expect(aws.requests()).toBe(1);
    expect(instrumentation(clients)).toEqual([]);
    expect(existsSync(join(dir, 'calls.log'))).toBe(false);
    expect(existsSync(join(dir, 'faults.log'))).toBe(false);
  });

  it('gets both from instrumentAwsClients, on all three clients', async () => {
    const aws = await fakeAws();
    const dir = mkdtempSync(join(tmpdir(), 'inst-'));
    const clients = aws.track(clientsFor(aws.url, { AWS_CALL_LOG: join(dir, 'calls.log'), AWS_FAULT_INJECTION: JSON.stringify({ rate: 0 }) }));
    expect(instrumentation(clients).sort()).toEqual(['callLog', 'callLog', 'callLog', 'faultInjection', 'faultInjection', 'faultInjection']);
  });
});
