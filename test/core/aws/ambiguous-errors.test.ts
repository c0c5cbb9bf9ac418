/**
 * Paths the emulators cannot produce: throttling and errors whose outcome is unknown.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-vitest/extend';
import { ConditionalCheckFailedException, DynamoDBClient, TransactionCanceledException, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { LeaseStore, UnconfirmedError, type CommitOutcome, type CommitUnit } from '../../../core/leases/dynamodb/lease-store.ts';
import { emptyCheckpoint, summaryOf } from '../../../core/commit/checkpoint.ts';
import { FrameRouter } from '../../../core/fleet/router.ts';
import { SlotQueues } from '../../../core/ingest/sqs/slot-queues.ts';
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

describe('slot claim retried by the SDK after its first attempt applied', () => {
  const conditionFailed = () => new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

  it('recognises its own claim (its owner and exact expiry) when the retry fails the condition', async () => {
    ddbMock.on(UpdateCommand).rejects(conditionFailed());
    ddbMock.on(GetCommand).resolves({ Item: { pk: 'slot#0', owner: 'A', epoch: 4, expiresAtMs: 1_000 + 15_000 } });
    expect(await store.claimSlot(0, 'A', 1_000, 15_000)).toEqual({ epoch: 4, expiresAtMs: 16_000, takenOver: true });
  });

  it('reports the slot taken when another worker holds it, or the expiry is not the one it wrote', async () => {
    ddbMock.on(UpdateCommand).rejects(conditionFailed());
    ddbMock.on(GetCommand).resolves({ Item: { pk: 'slot#0', owner: 'B', epoch: 4, expiresAtMs: 16_000 } });
    expect(await store.claimSlot(0, 'A', 1_000, 15_000)).toBeUndefined();
    ddbMock.on(GetCommand).resolves({ Item: { pk: 'slot#0', owner: 'A', epoch: 4, expiresAtMs: 12_000 } });
    expect(await store.claimSlot(0, 'A', 1_000, 15_000)).toBeUndefined();
  });
});

describe('commit with an ambiguous error', () => {
  const ck = emptyCheckpoint();
  const next = { ...ck, seq: 1, framesOk: 1, commitId: 'unit-1' };
  const unitFor = (videoId: string, frames = 1): CommitUnit => ({
    videoId,
    token: 2,
    expectedSeq: 0,
    expectedCommitId: ck.commitId,
    checkpoint: { ...next, commitId: `unit-${videoId}` },
    results: Array.from({ length: frames }, (_, frame) => ({ videoId, frame, status: 'ok' as const, detections: [], token: 2, worker: 'A', committedAtMs: 1 })),
    summary: summaryOf(videoId, next, { token: 2, worker: 'A', slot: 0 }, 1),
  });
  const unit = unitFor('v');
  const liveSlot = () => ddbMock.on(GetCommand, { Key: { pk: 'slot#0' } }).resolves({ Item: { owner: 'A', epoch: 3, expiresAtMs: Date.now() + 10_000 } });
  const storedVideo = (videoId: string, seq: number, commitId: string) =>
    ddbMock.on(GetCommand, { Key: { pk: `video#${videoId}` } }).resolves({ Item: { pk: `video#${videoId}`, owner: 'A', token: 2, pinnedSlot: 0, ckSeq: seq, checkpoint: { ...ck, seq, commitId } } });
  const outcomes = (o: CommitOutcome) => ({ kind: o.kind, units: Object.fromEntries(o.outcomes) });

  it('treats a transaction that landed despite the error as landed (its own commit id is stored), without writing twice', async () => {
    ddbMock.on(TransactWriteCommand).rejects(networkError());
    storedVideo('v', 1, 'unit-v');
    liveSlot();
    const outcome = await store.commit(fence, [unit], Date.now());
    expect(outcomes(outcome)).toEqual({ kind: 'settled', units: { v: 'landed' } });
    expect(outcome.ambiguousRetries).toBe(1);
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
  });

  it('does not call a unit landed because the stored seq equals its seq (ABA): another commit id is stale', async () => {
    ddbMock.on(TransactWriteCommand).rejects(networkError());
    storedVideo('v', 1, 'someone-elses-unit');
    liveSlot();
    expect(outcomes(await store.commit(fence, [unit], Date.now()))).toEqual({ kind: 'settled', units: { v: 'stale' } });
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
  });

  it('retries a transaction that did not land (the stored checkpoint is still the expected one)', async () => {
    ddbMock.on(TransactWriteCommand).rejectsOnce(networkError()).resolves({});
    storedVideo('v', 0, ck.commitId);
    liveSlot();
    expect(outcomes(await store.commit(fence, [unit], Date.now()))).toEqual({ kind: 'settled', units: { v: 'landed' } });
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 2);
  });

  it('reports unknown, without throwing, when the answer is lost and the re-read fails too', async () => {
    ddbMock.on(TransactWriteCommand).rejects(networkError());
    ddbMock.on(GetCommand).rejects(networkError());
    expect(outcomes(await store.commit(fence, [unit], Date.now()))).toEqual({ kind: 'settled', units: { v: 'unknown' } });
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
  });

  it('keeps a landed first group landed when a later group fails with an unknown outcome', async () => {
    // 60 results a unit: two units cannot share a transaction, so each is its own group.
    ddbMock.on(TransactWriteCommand).resolvesOnce({}).rejects(networkError());
    ddbMock.on(GetCommand).rejects(networkError());
    const outcome = await store.commit(fence, [unitFor('g1', 60), unitFor('g2', 60)], Date.now());
    expect(outcomes(outcome)).toEqual({ kind: 'settled', units: { g1: 'landed', g2: 'unknown' } });
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 2);
  });

  it('resolves an unknown unit later by re-reading: landed, at the expected checkpoint, or moved', async () => {
    storedVideo('v', 1, 'unit-v');
    expect(await store.resolveUnit(fence, unit)).toBe('landed');
    storedVideo('v', 0, ck.commitId);
    expect(await store.resolveUnit(fence, unit)).toBe('not-landed');
    ddbMock.on(GetCommand, { Key: { pk: 'video#v' } }).resolves({ Item: { pk: 'video#v', owner: 'B', token: 3, pinnedSlot: 0, ckSeq: 2, checkpoint: { ...ck, seq: 2, commitId: 'adopted' } } });
    expect(await store.resolveUnit(fence, unit)).toBe('fenced');
    ddbMock.on(GetCommand).rejects(networkError());
    await expect(store.resolveUnit(fence, unit)).rejects.toThrow();
  });
});

describe('commit cancelled by a condition', () => {
  const ck = emptyCheckpoint();
  const next = { ...ck, seq: 1, framesOk: 1, commitId: 'unit-v' };
  const unit: CommitUnit = {
    videoId: 'v',
    token: 2,
    expectedSeq: 0,
    expectedCommitId: ck.commitId,
    checkpoint: next,
    results: [{ videoId: 'v', frame: 0, status: 'ok', detections: [], token: 2, worker: 'A', committedAtMs: 1 }],
    summary: summaryOf('v', next, { token: 2, worker: 'A', slot: 0 }, 1),
  };
  /** Items: 0 slot check, 1 video update, 2 the result, 3 the summary. */
  const cancelled = (reasons: { Code: string; Item?: Record<string, AttributeValue> }[]) => new TransactionCanceledException({ message: 'cancelled', $metadata: {}, CancellationReasons: reasons });
  /** The stored video item as ALL_OLD returns it (AttributeValue form). */
  const old = (owner: string, token: number, seq: number, commitId: string): Record<string, AttributeValue> => ({
    pk: { S: 'video#v' },
    owner: { S: owner },
    token: { N: String(token) },
    pinnedSlot: { N: '0' },
    ckSeq: { N: String(seq) },
    checkpoint: { M: { seq: { N: String(seq) }, commitId: { S: commitId } } },
  });
  const none = { Code: 'None' };
  const commit = async () => {
    const o = await store.commit(fence, [unit], Date.now());
    return { kind: o.kind, units: Object.fromEntries(o.outcomes) };
  };

  it.each([
    { name: 'the slot condition: slot lost', reasons: [{ Code: 'ConditionalCheckFailed' }, none, none, none], expected: { kind: 'slot-lost', units: { v: 'fenced' } } },
    { name: 'the video condition, token moved: fenced', reasons: [none, { Code: 'ConditionalCheckFailed', Item: old('B', 3, 2, 'adopted') }, none, none], expected: { kind: 'settled', units: { v: 'fenced' } } },
    { name: 'the video condition, same seq, another commit id (ABA): stale, never landed', reasons: [none, { Code: 'ConditionalCheckFailed', Item: old('A', 2, 1, 'other') }, none, none], expected: { kind: 'settled', units: { v: 'stale' } } },
    { name: 'the video condition, the stored checkpoint is this very unit (an earlier attempt): landed', reasons: [none, { Code: 'ConditionalCheckFailed', Item: old('A', 2, 1, 'unit-v') }, none, none], expected: { kind: 'settled', units: { v: 'landed' } } },
    { name: 'the video condition without the stored item: fenced', reasons: [none, { Code: 'ConditionalCheckFailed' }, none, none], expected: { kind: 'settled', units: { v: 'fenced' } } },
    { name: 'the result condition: a conflict naming the frame', reasons: [none, none, { Code: 'ConditionalCheckFailed' }, none], expected: { kind: 'settled', units: { v: { conflict: 0 } } } },
    { name: 'the summary condition (a newer token wrote it): fenced', reasons: [none, none, none, { Code: 'ConditionalCheckFailed' }], expected: { kind: 'settled', units: { v: 'fenced' } } },
  ])('on $name, without re-reading or retrying', async ({ reasons, expected }) => {
    ddbMock.on(TransactWriteCommand).rejects(cancelled(reasons));
    expect(await commit()).toEqual(expected);
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
    expect(ddbMock).not.toHaveReceivedCommand(GetCommand);
  });

  it('reports not-landed when transaction conflicts outlast the retries (nothing was written)', async () => {
    ddbMock.on(TransactWriteCommand).rejects(cancelled([none, { Code: 'TransactionConflict' }, none, none]));
    expect(await commit()).toEqual({ kind: 'settled', units: { v: 'not-landed' } });
    expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteCommand, 5);
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
