/**
 * The adapters behind the operator operations' ports (core/commit/operations/ports.ts), on
 * the in-memory twins (the lease table's DynamoDB twin, the S3 twin), which answer the SDK's
 * commands as the services do; the ingest re-send on a capturing client (the SQS model has
 * FIFO queues only, and the ingest queue is a standard one). And `objectRanges`, pure.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { eventId } from '../../../../core/analytics/event-schema.ts';
import { DynamoDbResultsAdmin } from '../../../../core/commit/dynamodb/results-admin.ts';
import { objectRanges } from '../../../../core/ingest/object-ranges.ts';
import { S3VideoObjects } from '../../../../core/ingest/s3/video-objects.ts';
import { SqsUploadResender } from '../../../../core/ingest/sqs/upload-resender.ts';
import { MemoryS3 } from '../../../../core/ingest/memory/memory-s3.ts';
import { MemoryLeaseTable } from '../../../../core/leases/memory/memory-lease-table.ts';
import { FRAMES_METADATA_KEY, segmentKey } from '../../../../core/ingest/segment-keys.ts';
import { endMarkerKey, frameKey } from '../../../../core/ingest/keys.ts';

describe('DynamoDbResultsAdmin (on the lease table twin)', () => {
  const twin = new MemoryLeaseTable({ prefix: 'ops' });
  const admin = new DynamoDbResultsAdmin({ ddb: twin.ddb, resultsTable: twin.wiring.resultsTable, eventsTable: twin.wiring.eventsTable });
  const putRecord = (frame: number, token: number) =>
    twin.ddb.send(new PutCommand({ TableName: twin.wiring.resultsTable, Item: { videoId: 'v', frame, status: 'ok', detections: [], token, worker: 'w', committedAtMs: 1 } }));
  const putEvent = (frame: number, token: number) =>
    twin.ddb.send(new PutCommand({ TableName: twin.wiring.eventsTable, Item: { videoId: 'v', eventId: eventId({ frame, kind: 'frame.failed' }), token } }));

  it('deletes a record under the token or older, keeps a newer one, and says when there was none', async () => {
    // Prepare
    await putRecord(0, 3);
    await putRecord(1, 4);
    // Act
    const outcomes = [await admin.deleteRecord('v', 0, 3), await admin.deleteRecord('v', 1, 3), await admin.deleteRecord('v', 2, 3)];
    const left: number[] = [];
    for await (const page of admin.pages('v')) left.push(...page.map((r) => r.frame));
    // Assess
    expect(outcomes).toEqual(['deleted', 'newer', 'absent']);
    expect(left).toEqual([1]);
  });

  it('deletes the events of frames from a frame on, under the token or older; life events of no frame stay', async () => {
    // Prepare
    for (const [frame, token] of [[-1, 1], [4, 2], [5, 2], [6, 9]] as const) await putEvent(frame, token);
    // Act
    const deleted = await admin.deleteEventsFrom('v', 5, 2);
    const again = await admin.deleteEventsFrom('v', 0, 2);
    // Assess
    expect([deleted, again]).toEqual([1, 1]);
  });

  it('reopens a summary unless a newer token wrote it, or it does not exist', async () => {
    // Prepare
    await twin.ddb.send(new PutCommand({ TableName: twin.wiring.resultsTable, Item: { videoId: 'v', frame: -1, kind: 'summary', status: 'complete', token: 3 } }));
    const counts = { framesOk: 1, framesLate: 0, framesFailed: 0, framesGap: 0 };
    // Act / Assess
    expect(await admin.reopenSummary('v', counts, 2, 10)).toBe(false);
    expect(await admin.reopenSummary('v', counts, 4, 10)).toBe(true);
    expect(await admin.reopenSummary('nobody', counts, 4, 10)).toBe(false);
  });
});

describe('S3VideoObjects (on the S3 twin)', () => {
  it('lists every object of a video across pages, and reads a segment\'s declared count', async () => {
    // Prepare: 1,005 frames (two LIST pages), a declared segment, an undeclared one, another video
    const s3 = new MemoryS3().createBucket('b');
    for (let f = 0; f < 1_005; f++) s3.putObject('b', frameKey('v', f), 'x');
    s3.putObject('b', segmentKey('v', 2_000), 'seg', { [FRAMES_METADATA_KEY]: '30' });
    s3.putObject('b', segmentKey('v', 2_030), 'seg');
    s3.putObject('b', frameKey('w', 0), 'x');
    const objects = new S3VideoObjects(s3.asClient(), 'b');
    // Act
    const listed = await objects.list('v');
    // Assess
    expect(listed).toHaveLength(1_007);
    expect(listed[0]).toMatchObject({ key: frameKey('v', 0), sizeBytes: 1 });
    expect(listed[0]!.eTag).not.toContain('"');
    expect([await objects.declaredFrames(segmentKey('v', 2_000)), await objects.declaredFrames(segmentKey('v', 2_030))]).toEqual([30, undefined]);
  });
});

describe('SqsUploadResender', () => {
  function capturing(failIds: readonly string[] = []) {
    const sent: { QueueUrl: string; Entries: { Id: string; MessageBody: string; MessageAttributes: Record<string, { StringValue: string }> }[] }[] = [];
    const client = {
      send: async (command: { input: (typeof sent)[number] }) => {
        sent.push(command.input);
        const failed = command.input.Entries.filter((e) => failIds.includes(e.Id)).map((e) => ({ Id: e.Id, Code: 'InvalidParameterValue', Message: 'refused', SenderFault: true }));
        return { Successful: [], Failed: failed };
      },
    } as unknown as SQSClient;
    return { sent, client };
  }
  const objects = Array.from({ length: 12 }, (_, i) => ({ key: frameKey('v', i), sizeBytes: 100 + i, eTag: `e${i}` }));

  it('sends S3 ObjectCreated events in batches of 10, each with the replay tag', async () => {
    // Prepare
    const { sent, client } = capturing();
    const resender = new SqsUploadResender(client, { ingestQueueUrl: 'q', region: 'us-east-1', bucket: 'b', now: () => 1_000 });
    // Act
    const r = await resender.resend(objects, 'replay-1', 'affinity-replay');
    // Assess
    expect(r).toEqual({ sent: 12 });
    expect(sent.map((b) => b.Entries.length)).toEqual([10, 2]);
    const first = JSON.parse(sent[0]!.Entries[0]!.MessageBody) as { Records: { s3: { object: { key: string; size: number; eTag: string }; configurationId: string }; eventTime: string }[] };
    expect(first.Records[0]!.s3.object).toMatchObject({ key: frameKey('v', 0), size: 100, eTag: 'e0' });
    expect(first.Records[0]!.s3.configurationId).toBe('affinity-replay');
    expect(first.Records[0]!.eventTime).toBe(new Date(1_000).toISOString());
    expect(sent.flatMap((b) => b.Entries.map((e) => e.MessageAttributes.replayTag!.StringValue))).toEqual(Array(12).fill('replay-1'));
  });

  it('stops at a refused entry and says how many went before it', async () => {
    // Prepare: the fourth entry of the first batch is refused
    const { sent, client } = capturing(['3']);
    const resender = new SqsUploadResender(client, { ingestQueueUrl: 'q', region: 'us-east-1', bucket: 'b' });
    // Act
    const r = await resender.resend(objects, 'reconcile-1', 'affinity-reconcile');
    // Assess
    expect(r).toEqual({ sent: 3, failure: 'refused' });
    expect(sent).toHaveLength(1);
  });
});

describe('objectRanges', () => {
  const ob = (key: string) => ({ key, sizeBytes: 1, eTag: 'e' });
  it.each([
    { name: 'an image covers its frame, declared', keys: [frameKey('v', 3)], declared: {}, want: [[3, 1, true]] },
    { name: 'a declared segment covers its declaration', keys: [segmentKey('v', 0), frameKey('v', 50)], declared: { [segmentKey('v', 0)]: 45 }, want: [[0, 45, true], [50, 1, true]] },
    { name: 'an undeclared segment covers up to the next object, as an upper bound', keys: [segmentKey('v', 0), frameKey('v', 50)], declared: {}, want: [[0, 50, false], [50, 1, true]] },
    { name: 'an undeclared last segment covers one frame, as an upper bound', keys: [segmentKey('v', 10)], declared: {}, want: [[10, 1, false]] },
    { name: 'the end marker covers none', keys: [endMarkerKey('v'), frameKey('v', 0)], declared: {}, want: [[0, 1, true]] },
  ])('$name', async ({ keys, declared, want }) => {
    const ranges = await objectRanges(keys.map(ob), async (key) => (declared as Record<string, number>)[key]);
    expect(ranges.map((r) => [r.first, r.count, r.declared])).toEqual(want);
  });
});
