/**
 * What the in-memory DynamoDB (core/leases/memory/memory-dynamodb.ts) does beyond the lease
 * contract: TTL as lazy garbage collection on a clock passed in, the reads the results
 * reader makes (backward queries, counts), BatchGetItem's limits, and refusing what it
 * does not speak. The rules DynamoDB Local can check too are in the contract suite.
 */
import { describe, expect, it } from 'vitest';
import { BatchGetCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { MemoryDynamoDb } from '../../../core/leases/memory/memory-dynamodb.ts';
import { MemoryLeaseTable } from '../../../core/leases/memory/memory-lease-table.ts';
import { countResults, nearestProcessed } from '../../../core/commit/dynamodb/results-reader.ts';
import { LEASES_TABLE } from '../../../core/resources.ts';

describe('MemoryDynamoDb', () => {
  it('keeps an expired item readable until a TTL sweep, which compares against the clock it was given', async () => {
    // Prepare
    let nowMs = Date.UTC(2026, 10, 27);
    const db = new MemoryDynamoDb({ now: () => nowMs }).createTable('leases', LEASES_TABLE);
    const ddb = db.asDocumentClient();
    await ddb.send(new PutCommand({ TableName: 'leases', Item: { pk: 'video#a', ttlEpochSeconds: nowMs / 1000 - 1 } }));
    await ddb.send(new PutCommand({ TableName: 'leases', Item: { pk: 'video#b', ttlEpochSeconds: nowMs / 1000 + 60 } }));
    // Act, assess: expired but there, until the sweep
    expect((await ddb.send(new GetCommand({ TableName: 'leases', Key: { pk: 'video#a' } }))).Item).toBeDefined();
    expect(db.sweepExpired()).toBe(1);
    expect((await ddb.send(new GetCommand({ TableName: 'leases', Key: { pk: 'video#a' } }))).Item).toBeUndefined();
    nowMs += 61_000;
    expect(db.sweepExpired()).toBe(1);
  });

  it('answers the results reader: a backward BETWEEN query for the nearest processed frame, and a count', async () => {
    // Prepare
    const twin = new MemoryLeaseTable();
    const source = { ddb: twin.ddb, resultsTable: twin.wiring.resultsTable };
    for (const [frame, status] of [[1, 'ok'], [2, 'gap'], [3, 'late'], [5, 'ok'], [-1, 'summary']] as const) {
      await twin.ddb.send(new PutCommand({ TableName: source.resultsTable, Item: { videoId: 'v', frame, status, detections: [] } }));
    }
    // Act, assess
    expect((await nearestProcessed(source, 'v', 4, 'before'))?.frame).toBe(3);
    expect((await nearestProcessed(source, 'v', 3, 'after'))?.frame).toBe(5);
    expect(await nearestProcessed(source, 'v', 0, 'before')).toBeUndefined();
    expect(await countResults(source, 'v')).toBe(4);
    await expect(
      twin.ddb.send(new QueryCommand({ TableName: source.resultsTable, KeyConditionExpression: 'videoId = :v AND #f BETWEEN :lo AND :hi', ExpressionAttributeNames: { '#f': 'frame' }, ExpressionAttributeValues: { ':v': 'v', ':lo': 5, ':hi': 1 } })),
    ).rejects.toMatchObject({ name: 'ValidationException' });
  });

  it('refuses a BatchGetItem with duplicate keys or over 100 keys, and a low-level client command', async () => {
    const twin = new MemoryLeaseTable();
    const table = twin.wiring.leasesTable;
    await expect(twin.ddb.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: [{ pk: 'a' }, { pk: 'a' }] } } }))).rejects.toMatchObject({ name: 'ValidationException' });
    const keys = Array.from({ length: 101 }, (_, i) => ({ pk: `k${i}` }));
    await expect(twin.ddb.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: keys } } }))).rejects.toMatchObject({ name: 'ValidationException' });
    await expect(twin.db.send(new GetItemCommand({ TableName: table, Key: { pk: { S: 'a' } } }))).rejects.toMatchObject({ name: 'ValidationException' });
  });

  it('lets an interceptor lose an answer after the write applied', async () => {
    const twin = new MemoryLeaseTable();
    const table = twin.wiring.leasesTable;
    twin.db.intercept = async (_operation, _input, run) => {
      await run();
      throw Object.assign(new Error('answer lost'), { name: 'TimeoutError' });
    };
    await expect(twin.ddb.send(new PutCommand({ TableName: table, Item: { pk: 'x' } }))).rejects.toMatchObject({ name: 'TimeoutError' });
    twin.db.intercept = undefined;
    expect((await twin.ddb.send(new GetCommand({ TableName: table, Key: { pk: 'x' } }))).Item).toEqual({ pk: 'x' });
  });
});

describe('MemoryLeaseTable', () => {
  it("records a write that lowers a video's token or a slot's epoch (DynamoDB would take it; the protocol never makes it)", async () => {
    // Prepare
    const twin = new MemoryLeaseTable();
    const set = (pk: string, attribute: string, value: number) =>
      twin.ddb.send(new UpdateCommand({ TableName: twin.wiring.leasesTable, Key: { pk }, UpdateExpression: 'SET #a = :v', ExpressionAttributeNames: { '#a': attribute }, ExpressionAttributeValues: { ':v': value } }));
    // Act
    await set('video#v', 'token', 2);
    await set('video#v', 'token', 3);
    await set('video#v', 'token', 1);
    await set('slot#0', 'epoch', 4);
    await set('slot#0', 'epoch', 4);
    await set('slot#0', 'epoch', 3);
    // Assess
    expect(twin.violations).toEqual(['video#v: token went from 3 to 1', 'slot#0: epoch went from 4 to 3']);
  });

  it('sees none in the lease contract\'s protocol: claims, pins, adoptions, commits and releases only raise counters', async () => {
    const twin = new MemoryLeaseTable();
    const leases = twin.leases();
    const t0 = Date.now();
    const a = await leases.claimSlot(0, 'A', t0, 5_000);
    await leases.pinVideo('v', 0, t0);
    const v = await leases.adoptVideo('v', { slot: 0, workerId: 'A', epoch: a!.epoch }, t0);
    if (typeof v === 'string') throw new Error(v);
    await leases.releaseVideo('v', { slot: 0, workerId: 'A', epoch: a!.epoch }, v.token, v.checkpoint.seq, t0, 1);
    await leases.forceReleaseVideo('v', v.token, t0, 1);
    await leases.claimSlot(0, 'B', t0 + 6_000, 5_000);
    expect(twin.violations).toEqual([]);
  });
});
