/**
 * The product's client instrumentation (core/aws/instrumentation.ts): the call log, and a
 * hook for what a composition root adds. Without the lab added (as in the Lambda bundles
 * and the GPU image), AWS_FAULT_INJECTION and AWS_LATENCY_MODEL change nothing; the lab's
 * own tests (test/lab/aws/) add it as the local stack and lab/worker-main.ts do.
 */
import { describe, expect, it } from 'vitest';
import { createAwsClientsFrom, type AwsClients } from '../../../core/aws/clients.ts';
import { addClientInstrumentation, attributeValueBytes, consumedCapacityUnits, instrumentAwsClients, transactWriteUnits } from '../../../core/aws/instrumentation.ts';

function clients(): AwsClients {
  const common = { region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } };
  return createAwsClientsFrom({ s3: { ...common, forcePathStyle: true }, sqs: common, dynamodb: common });
}

const middleware = (c: AwsClients) => [c.dynamodb, c.s3, c.sqs].flatMap((client) => client.middlewareStack.identify().map((m) => m.split(' ')[0]!));

describe('instrumentAwsClients without the lab', () => {
  it('ignores the lab settings: no fault injection, no latency model, nothing thrown for a malformed one', () => {
    const env = { AWS_FAULT_INJECTION: '{"rate":1}', AWS_LATENCY_MODEL: 'not json' };
    const c = instrumentAwsClients(clients(), env, 'router');
    expect(middleware(c).filter((m) => m === 'faultInjection' || m === 'commitFaultInjection' || m === 'latencyModel')).toEqual([]);
    c.destroy();
  });

  it('installs the call log when asked', () => {
    const c = instrumentAwsClients(clients(), { AWS_CALL_LOG: '/dev/null' }, 'worker');
    expect(middleware(c).filter((m) => m === 'callLog')).toHaveLength(3);
    c.destroy();
  });

  it('applies what a composition root added, once however often added', () => {
    const seen: string[] = [];
    const added = (_c: AwsClients, env: Record<string, string | undefined>, role: string) => void seen.push(`${role}:${env.X ?? ''}`);
    addClientInstrumentation(added);
    addClientInstrumentation(added);
    instrumentAwsClients(clients(), { X: '1' }, 'janitor').destroy();
    expect(seen).toEqual(['janitor:1']);
  });
});

describe('consumedCapacityUnits (the call log\'s DynamoDB units)', () => {
  it.each([
    ['no answer', undefined, undefined],
    ['no ConsumedCapacity', { Item: {} }, undefined],
    ['one entry (PutItem, UpdateItem, GetItem)', { ConsumedCapacity: { TableName: 't', CapacityUnits: 3 } }, 3],
    ['one entry per table (TransactWriteItems, BatchGetItem)', { ConsumedCapacity: [{ TableName: 'a', CapacityUnits: 8 }, { TableName: 'b', CapacityUnits: 4 }] }, 12],
    ['an entry without units', { ConsumedCapacity: [{ TableName: 'a' }] }, 0],
  ])('%s', (_name, output, units) => {
    expect(consumedCapacityUnits(output)).toBe(units);
  });
});

describe('attributeValueBytes (DynamoDB item sizes)', () => {
  it.each([
    ['string: UTF-8 bytes', { S: 'héllo' }, 6],
    ['number: significant digits / 2 + 1', { N: '1764240000123' }, 8],
    ['number: leading and trailing zeros trimmed', { N: '1764240000000' }, 4],
    ['small number', { N: '7' }, 2],
    ['boolean', { BOOL: true }, 1],
    ['list: 3 + 1 per element + elements', { L: [{ S: 'ab' }, { N: '1' }] }, 3 + 1 + 2 + 1 + 2],
    ['map: 3 + 1 per element + names + values', { M: { x: { S: 'abc' } } }, 3 + 1 + 1 + 3],
  ])('%s', (_name, v, bytes) => {
    expect(attributeValueBytes(v)).toBe(bytes);
  });
});

describe('transactWriteUnits (2 per KB per item, from the request)', () => {
  const put = (bytes: number) => ({ Put: { Item: { k: { S: 'x'.repeat(bytes - 1) } } } });
  it.each([
    ['one small put', [put(100)], 2],
    ['a put of exactly 1 KB', [put(1024)], 2],
    ['a put just over 1 KB', [put(1025)], 4],
    ['a condition check and a delete: a KB each', [{ ConditionCheck: {} }, { Delete: {} }], 4],
    ['an update: key + the values it sets', [{ Update: { Key: { pk: { S: 'video#a' } }, ExpressionAttributeValues: { ':ck': { S: 'c'.repeat(2000) } } } }], 4],
    ['the worker\'s commit shape: slot check, checkpoint, 3 results, summary', [{ ConditionCheck: {} }, { Update: { Key: { pk: { S: 'v' } }, ExpressionAttributeValues: { ':ck': { S: 'c'.repeat(1500) } } } }, put(200), put(200), put(200), put(300)], 2 + 4 + 2 + 2 + 2 + 2],
  ])('%s', (_name, items, units) => {
    expect(transactWriteUnits({ TransactItems: items })).toBe(units);
  });
});
