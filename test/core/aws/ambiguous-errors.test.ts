/**
 * Paths the emulators cannot produce: throttling and errors whose outcome is unknown.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-vitest/extend';
import { DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { LeaseStore, UnconfirmedError, type CommitUnit } from '../../../core/aws/lease-store.ts';
import { emptyCheckpoint, summaryOf } from '../../../core/checkpoint.ts';
import { FrameRouter } from '../../../core/router.ts';
import { SlotQueues } from '../../../core/aws/slot-queues.ts';
import { DEFAULT_TUNABLES } from '../../../core/config.ts';
import { nullMetrics, type LogSink, type MetricSink } from '../../../core/ports.ts';

const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
const ddbMock = mockClient(DynamoDBDocumentClient);
const sqs = new SQSClient({ region: 'us-east-1' });
const sqsMock = mockClient(SQSClient);
const store = new LeaseStore(ddb, { tableName: 'leases', resultsTableName: 'results', pinnedSlotIndex: 'byPinnedSlot' });
const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
const fence = { slot: 0, workerId: 'A', epoch: 3 };

function networkError(): Error {
  return Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} });
}

beforeEach(() => {
  ddbMock.reset();
  sqsMock.reset();
});

describe('heartbeat with an ambiguous error', () => {
  it('re-reads and concludes renewed when the failed-looking write actually landed', async () => {
    const now = 1_000_000;
    ddbMock.on(UpdateCommand).rejects(networkError());
    ddbMock.on(GetCommand).resolves({ Item: { pk: 'slot#0', owner: 'A', epoch: 3, expiresAtMs: now + 15_000, heartbeatAtMs: now } });
    expect(await store.renewSlot(fence, now, 15_000)).toBe('renewed');
    expect(ddbMock).toHaveReceivedCommandWith(GetCommand, { ConsistentRead: true });
  });

  it('concludes lost when the re-read shows another owner', async () => {
    ddbMock.on(UpdateCommand).rejects(networkError());
    ddbMock.on(GetCommand).resolves({ Item: { pk: 'slot#0', owner: 'B', epoch: 4, expiresAtMs: 9e12 } });
    expect(await store.renewSlot(fence, 1, 15_000)).toBe('lost');
  });

  it('refuses to guess when neither the write nor the re-read can be confirmed', async () => {
    ddbMock.on(UpdateCommand).rejects(networkError());
    ddbMock.on(GetCommand).rejects(networkError());
    await expect(store.renewSlot(fence, 1, 15_000)).rejects.toBeInstanceOf(UnconfirmedError);
  });
});

describe('commit with an ambiguous error', () => {
  const ck = emptyCheckpoint();
  const next = { ...ck, seq: 1, framesOk: 1 };
  const unit: CommitUnit = {
    videoId: 'v',
    token: 2,
    expectedSeq: 0,
    checkpoint: next,
    results: [{ videoId: 'v', frame: 0, status: 'ok', detections: [], token: 2, worker: 'A', committedAtMs: 1 }],
    summary: summaryOf('v', next, { token: 2, worker: 'A', slot: 0 }, 1),
  };

  it('treats a transaction that landed despite the error as committed, without writing twice', async () => {
    ddbMock.on(TransactWriteCommand).rejects(networkError());
    ddbMock
      .on(GetCommand, { Key: { pk: 'video#v' } })
      .resolves({ Item: { pk: 'video#v', owner: 'A', token: 2, pinnedSlot: 0, ckSeq: 1, checkpoint: next } });
    ddbMock.on(GetCommand, { Key: { pk: 'slot#0' } }).resolves({ Item: { owner: 'A', epoch: 3, expiresAtMs: Date.now() + 10_000 } });
    const outcome = await store.commit(fence, [unit], Date.now());
    expect(outcome).toEqual({ kind: 'committed', ambiguousRetries: 1 });
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
  });

  it('retries a transaction that did not land', async () => {
    ddbMock.on(TransactWriteCommand).rejectsOnce(networkError()).resolves({});
    ddbMock.on(GetCommand, { Key: { pk: 'video#v' } }).resolves({ Item: { pk: 'video#v', owner: 'A', token: 2, pinnedSlot: 0, ckSeq: 0, checkpoint: ck } });
    ddbMock.on(GetCommand, { Key: { pk: 'slot#0' } }).resolves({ Item: { owner: 'A', epoch: 3, expiresAtMs: Date.now() + 10_000 } });
    expect((await store.commit(fence, [unit], Date.now())).kind).toBe('committed');
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 2);
  });
});

describe('transaction conflicts', () => {
  it('retries a pin cancelled only by a conflicting transaction, and does not retry a failed condition', async () => {
    const conflict = () =>
      new TransactionCanceledException({ message: 'conflict', $metadata: {}, CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }] });
    ddbMock.on(TransactWriteCommand).rejectsOnce(conflict()).resolves({});
    expect(await store.pinVideo('v', 0, 1)).toBe('pinned');
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 2);
    ddbMock.reset();
    ddbMock
      .on(TransactWriteCommand)
      .rejects(new TransactionCanceledException({ message: 'taken', $metadata: {}, CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }] }));
    expect(await store.pinVideo('v', 0, 1)).toBe('taken');
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
  });
});

describe('router under throttling', () => {
  const counted: string[] = [];
  const metrics: MetricSink = { ...nullMetrics, count: (name) => void counted.push(name) };
  const body = (key: string) =>
    JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'bkt' }, object: { key, size: 10 } } }] });
  const router = () =>
    new FrameRouter({
      bucket: 'bkt',
      tunables: DEFAULT_TUNABLES,
      leases: store,
      queues: new SlotQueues(sqs, 'https://sqs/slot-'),
      deadLetter: async (events) => events.map(() => true),
      launcher: () => undefined,
      metrics,
      log: quiet,
    });

  it('fails only the frames whose send was throttled, so only they are retried', async () => {
    ddbMock.on(BatchGetCommand).resolves({ Responses: { leases: [{ pk: 'video#v', pinnedSlot: 1, token: 1 }] } });
    sqsMock.on(SendMessageBatchCommand).resolves({
      Successful: [{ Id: '0', MessageId: 'm', MD5OfMessageBody: '' }],
      Failed: [{ Id: '1', Code: 'ThrottlingException', SenderFault: false, Message: 'Rate exceeded' }],
    });
    const outcomes = await router().route([
      { id: 'r0', body: body('frames/v/0.jpg') },
      { id: 'r1', body: body('frames/v/1.jpg') },
      { id: 'r2', body: body('frames/v/nope.jpg') },
    ]);
    expect(outcomes.get('r0')).toBeUndefined();
    expect(outcomes.get('r1')?.message).toMatch(/ThrottlingException/);
    expect(outcomes.get('r2')).toBeUndefined();
  });

  it('fails routable records but not rejected ones when DynamoDB throttles past the SDK retries', async () => {
    ddbMock.on(BatchGetCommand).rejects(Object.assign(new Error('Throughput exceeded'), { name: 'ProvisionedThroughputExceededException', $metadata: {} }));
    const outcomes = await router().route([
      { id: 'r0', body: body('frames/w/0.jpg') },
      { id: 'r1', body: 'not json' },
    ]);
    expect(outcomes.get('r0')?.name).toBe('ProvisionedThroughputExceededException');
    expect(outcomes.get('r1')).toBeUndefined();
    expect(counted).toContain('EventsRejected');
  });
});
