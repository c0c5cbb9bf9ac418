/**
 * The DynamoDB rules middleware (dynamodb-rules.ts): a transaction that names one item
 * twice is refused as a ValidationException before it is sent, whatever the operations;
 * distinct items pass through.
 */
import { describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { installDynamoDbRules, itemsNamedTwice } from '../../harness/dynamodb-rules.ts';

const KEYS = { leases: ['pk'], results: ['videoId', 'frame'] };

describe('itemsNamedTwice', () => {
  it.each([
    { name: 'distinct frames', items: [{ Put: { TableName: 'results', Item: { videoId: 'v', frame: 1 } } }, { Put: { TableName: 'results', Item: { videoId: 'v', frame: 2 } } }], twice: 0 },
    { name: 'a gap and a late record of one frame', items: [{ Put: { TableName: 'results', Item: { videoId: 'v', frame: 3, status: 'gap' } } }, { Put: { TableName: 'results', Item: { videoId: 'v', frame: 3, status: 'late' } } }], twice: 1 },
    { name: 'a condition check and an update of one item', items: [{ ConditionCheck: { TableName: 'leases', Key: { pk: 'slot#1' } } }, { Update: { TableName: 'leases', Key: { pk: 'slot#1' } } }], twice: 1 },
    { name: 'the same key in two tables', items: [{ Update: { TableName: 'leases', Key: { pk: 'x' } } }, { Delete: { TableName: 'other', Key: { pk: 'x' } } }], twice: 0 },
  ])('$name', ({ items, twice }) => {
    expect(itemsNamedTwice(items, KEYS)).toHaveLength(twice);
  });
});

describe('installDynamoDbRules', () => {
  it('refuses the transaction with a ValidationException before anything is sent', async () => {
    // Prepare: a client whose requests would fail to connect if they were sent
    const client = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1 });
    installDynamoDbRules(client, KEYS);
    const doc = DynamoDBDocumentClient.from(client);
    const twice = [{ Put: { TableName: 'results', Item: { videoId: 'v', frame: 3 } } }, { Put: { TableName: 'results', Item: { videoId: 'v', frame: 3 } } }];
    // Act
    const refused = await doc.send(new TransactWriteCommand({ TransactItems: twice })).catch((e: Error) => e);
    const sent = await doc.send(new TransactWriteCommand({ TransactItems: [twice[0]!] })).catch((e: Error) => e);
    // Assess
    expect(refused).toMatchObject({ name: 'ValidationException' });
    expect(sent).toBeInstanceOf(Error);
    expect((sent as Error).name).not.toBe('ValidationException');
    client.destroy();
  });
});
