/**
 * The janitor's run lock (core/fleet/dynamodb/janitor-run-lock.ts) against DynamoDB Local (issue 35,
 * item 1): one holder at a time; an expired lock is taken over by comparing the item's
 * own expiry (TTL is lazy: the expired item is still there, as here); a release touches
 * only the releaser's own lock. The clock is injected, so nothing waits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { dynamoDbForFile, type FileDynamoDb } from '../../../../harness/shared-dynamodb.ts';
import { JANITOR_RUN_LOCK_KEY, JanitorRunLock } from '../../../../core/fleet/dynamodb/janitor-run-lock.ts';
import { LEASE_ATTR } from '../../../../core/resources.ts';

const TABLE = 'leases-run-lock';
const HOLD_MS = 65_000;
let dynamo: FileDynamoDb;
let raw: DynamoDBClient;
let ddb: DynamoDBDocumentClient;
const lock = () => new JanitorRunLock(ddb, { tableName: TABLE, holdMs: HOLD_MS });
const item = async () => (await ddb.send(new GetCommand({ TableName: TABLE, Key: { [LEASE_ATTR.pk]: JANITOR_RUN_LOCK_KEY }, ConsistentRead: true }))).Item;

beforeAll(async () => {
  dynamo = await dynamoDbForFile('us-east-1');
  raw = new DynamoDBClient({ region: 'us-east-1', endpoint: dynamo.endpoint, credentials: { ...dynamo.credentials } });
  ddb = DynamoDBDocumentClient.from(raw);
  await raw.send(
    new CreateTableCommand({
      TableName: TABLE,
      AttributeDefinitions: [{ AttributeName: LEASE_ATTR.pk, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: LEASE_ATTR.pk, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}, 60_000);

afterAll(async () => {
  raw?.destroy();
  await dynamo?.stop();
});

describe('janitor run lock on DynamoDB', () => {
  it('lets one run take it, refuses a second until the first gives it back', async () => {
    // Act
    const a = await lock().acquire(1_000_000);
    const b = await lock().acquire(1_000_500);
    await lock().release(a!);
    const c = await lock().acquire(1_001_000);

    // Assess
    expect(a).toBeDefined();
    expect(b).toBeUndefined();
    expect(c).toBeDefined();
    expect(c).not.toBe(a);
    await lock().release(c!);
  });

  it('takes over an expired lock by its own expiry, though the item is still there (TTL is lazy)', async () => {
    // Prepare: a holder that died; its item stays, with a TTL long past
    const t0 = 2_000_000;
    const dead = await lock().acquire(t0);
    expect((await item())?.[LEASE_ATTR.ttl]).toBeGreaterThan(Math.ceil((t0 + HOLD_MS) / 1000));

    // Act
    const early = await lock().acquire(t0 + HOLD_MS - 1);
    const late = await lock().acquire(t0 + HOLD_MS);

    // Assess
    expect(dead).toBeDefined();
    expect(early).toBeUndefined();
    expect(late).toBeDefined();
    expect((await item())?.token).toBe(late);
    await lock().release(late!);
  });

  it('does not give back a lock that another run took over after it expired', async () => {
    // Prepare
    const t0 = 3_000_000;
    const slow = await lock().acquire(t0);
    const next = await lock().acquire(t0 + HOLD_MS + 1);

    // Act: the slow run finishes late and releases
    await lock().release(slow!);

    // Assess
    expect((await item())?.token).toBe(next);
    expect(await lock().acquire(t0 + HOLD_MS + 2)).toBeUndefined();
    await lock().release(next!);
    expect(await item()).toBeUndefined();
  });

  it('never touches slot items of the same table', async () => {
    // Prepare
    await ddb.send(new PutCommand({ TableName: TABLE, Item: { [LEASE_ATTR.pk]: 'slot#0', owner: 'w' } }));

    // Act
    const t = await lock().acquire(4_000_000);
    await lock().release(t!);

    // Assess
    const slot = await ddb.send(new GetCommand({ TableName: TABLE, Key: { [LEASE_ATTR.pk]: 'slot#0' } }));
    expect(slot.Item).toEqual({ [LEASE_ATTR.pk]: 'slot#0', owner: 'w' });
  });
});
