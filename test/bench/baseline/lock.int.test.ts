/**
 * The baseline's per-video lock (bench/baseline/lock.ts) against DynamoDB Local: one
 * holder at a time, takeover only after the lease runs out, heartbeats and releases that
 * touch only the holder's own record version. The clock is injected, so nothing waits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { dynamoDbForFile, type FileDynamoDb } from '../../../harness/shared-dynamodb.ts';
import { BaselineLockClient } from '../../../bench/baseline/lock.ts';

const TABLE = 'baseline-locks';
const LEASE_MS = 60_000;
let dynamo: FileDynamoDb;
let raw: DynamoDBClient;
let ddb: DynamoDBDocumentClient;
let now = 1_000_000;
const client = (owner: string) => new BaselineLockClient({ ddb, table: TABLE, owner, leaseDurationMs: LEASE_MS, now: () => now });
const item = async (key: string) => (await ddb.send(new GetCommand({ TableName: TABLE, Key: { pk: key }, ConsistentRead: true }))).Item;

beforeAll(async () => {
  dynamo = await dynamoDbForFile('us-east-1');
  raw = new DynamoDBClient({ region: 'us-east-1', endpoint: dynamo.endpoint, credentials: { ...dynamo.credentials } });
  ddb = DynamoDBDocumentClient.from(raw);
  await raw.send(
    new CreateTableCommand({
      TableName: TABLE,
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}, 60_000);

afterAll(async () => {
  raw?.destroy();
  await dynamo?.stop();
});

describe('baseline lock (lock-client pattern, no fencing)', () => {
  it('lets one worker hold a video; another cannot take it until the lease has run out', async () => {
    const a = client('A');
    const b = client('B');
    expect(await a.tryAcquire('lock:v1')).toBe(true);
    const first = await item('lock:v1');
    expect(first).toMatchObject({ owner: 'A', leaseDurationMs: LEASE_MS, expiresAtMs: now + LEASE_MS });
    expect(await b.tryAcquire('lock:v1')).toBe(false);
    now += LEASE_MS; // exactly at expiry: still A's
    expect(await b.tryAcquire('lock:v1')).toBe(false);
    now += 1;
    expect(await b.tryAcquire('lock:v1')).toBe(true);
    const taken = await item('lock:v1');
    expect(taken?.owner).toBe('B');
    expect(taken?.recordVersionNumber).not.toBe(first?.recordVersionNumber);
  });

  it('renews with a new record version, which keeps others out past the first lease', async () => {
    const a = client('A');
    const b = client('B');
    expect(await a.tryAcquire('lock:v2')).toBe(true);
    const before = (await item('lock:v2'))?.recordVersionNumber;
    now += 50_000;
    expect(await a.renew('lock:v2')).toBe(true);
    expect((await item('lock:v2'))?.recordVersionNumber).not.toBe(before);
    now += 20_000; // 70 s after the acquire: past the first lease, inside the renewed one
    expect(await b.tryAcquire('lock:v2')).toBe(false);
    now += 40_001;
    expect(await b.tryAcquire('lock:v2')).toBe(true);
  });

  it('does not let an old holder renew or release a lock someone took over, and forgets it', async () => {
    const a = client('A');
    const b = client('B');
    const c = client('C');
    expect(await a.tryAcquire('lock:v3')).toBe(true);
    now += LEASE_MS + 1;
    expect(await b.tryAcquire('lock:v3')).toBe(true);
    expect(await a.release('lock:v3')).toBe(false);
    expect(await a.renew('lock:v3')).toBe(false);
    expect(a.held.has('lock:v3')).toBe(false);
    expect((await item('lock:v3'))?.owner).toBe('B');
    expect(await c.tryAcquire('lock:v3')).toBe(false);
  });

  it('lets the next worker in at once after a release', async () => {
    const a = client('A');
    const b = client('B');
    expect(await a.tryAcquire('lock:v4')).toBe(true);
    expect(await a.tryAcquire('lock:v4')).toBe(true); // already held: no second item
    expect(await a.release('lock:v4')).toBe(true);
    expect(await item('lock:v4')).toBeUndefined();
    expect(await b.tryAcquire('lock:v4')).toBe(true);
  });
});
