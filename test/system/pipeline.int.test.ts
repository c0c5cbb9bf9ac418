/**
 * The guarantees of the pipeline, end to end on the local stack: several worker
 * processes, several videos, real DynamoDB Local and fauxqs, the real router and janitor.
 * Workers run the `stats` processor, whose per-video counter (trackId) makes state
 * continuity visible: it equals the number of frames that video's state has seen.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { frameKey } from '../../core/ingest/keys.ts';
import {
  assertNoOverlappingTenure,
  drainQueue,
  jpeg,
  put,
  results,
  shuffled,
  startTestStack,
  summary,
  uploadFrames,
  waitFor,
  waitForFrames,
  type TestStack,
} from '../../harness/pipeline.ts';

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ tunables: { slotCount: 3, videosPerSlot: 1, maxFrameBytes: 60_000 } });
});

afterAll(async () => {
  await stack?.stop();
});

describe('order and affinity', () => {
  it('processes shuffled uploads of several videos in frame order, one owner per video, across several workers', async () => {
    // Prepare
    const videos = ['order-a', 'order-b', 'order-c'];
    const frameCount = 24;
    // Act: upload all three videos interleaved, each in a shuffled order after its frame 0
    // (a video's start is decided at first sight: a frame below it still to come would be
    // `late`, out of line; decision 4)
    const perVideo = videos.map((_, i) => [0, ...shuffled(Array.from({ length: frameCount - 1 }, (_, f) => f + 1), 7 + i)]);
    for (let k = 0; k < frameCount; k++) {
      await Promise.all(videos.map((v, i) => uploadFrames(stack, v, [perVideo[i]![k]!])));
    }
    await Promise.all(videos.map((v) => put(stack, `frames/${v}/_end`, String(frameCount - 1))));
    // Assess
    const workers = new Set<string>();
    for (const v of videos) {
      const done = await waitFor(`${v} complete`, async () => ((await summary(stack, v))?.status === 'complete' ? true : undefined), 90_000);
      expect(done).toBe(true);
      const items = (await results(stack, v)).sort((a, b) => a.frame - b.frame);
      expect(items.map((r) => r.frame)).toEqual(Array.from({ length: frameCount }, (_, f) => f));
      expect(items.every((r) => r.status === 'ok')).toBe(true);
      // The per-video counter saw the frames in exactly frame order.
      expect(items.map((r) => r.detections[0]!.trackId)).toEqual(Array.from({ length: frameCount }, (_, f) => f + 1));
      const tenure = assertNoOverlappingTenure(items);
      expect(tenure.workers).toHaveLength(1);
      workers.add(tenure.workers[0]!);
      const s = await summary(stack, v);
      expect(s).toMatchObject({ framesOk: frameCount, framesFailed: 0, framesGap: 0, firstFrame: 0, lastFrame: frameCount - 1, endFrame: frameCount - 1 });
    }
    // videosPerSlot = 1: the three videos were spread over three worker processes.
    expect(workers.size).toBe(3);
  });

  it('records a frame that never comes as a gap after the bounded wait, and carries on', async () => {
    await uploadFrames(stack, 'gappy', [0, 1, 3, 4], { end: 5 });
    const items = await waitForFrames(stack, 'gappy', 6);
    const byFrame = new Map(items.map((r) => [r.frame, r]));
    expect(byFrame.get(2)).toMatchObject({ status: 'gap', reason: 'missing-frame' });
    expect(byFrame.get(5)).toMatchObject({ status: 'gap', reason: 'missing-frame' });
    expect([0, 1, 3, 4].map((f) => byFrame.get(f)?.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    await waitFor('gappy complete', async () => (await summary(stack, 'gappy'))?.status === 'complete');
    expect(await summary(stack, 'gappy')).toMatchObject({ framesOk: 4, framesGap: 2 });
  });
});

describe('nothing doubled', () => {
  it('gives one result per frame when the same notification is delivered twice and objects are re-uploaded', async () => {
    // Prepare
    await uploadFrames(stack, 'dup', [0, 1, 2, 3]);
    await waitForFrames(stack, 'dup', 4);
    const before = await results(stack, 'dup');
    // Act: the same S3 notification twice, straight onto the ingest queue, and a re-upload
    const event = JSON.stringify({
      Records: [
        {
          eventVersion: '2.1',
          eventSource: 'aws:s3',
          awsRegion: stack.region,
          eventTime: new Date().toISOString(),
          eventName: 'ObjectCreated:Put',
          s3: { s3SchemaVersion: '1.0', bucket: { name: stack.wiring.bucket }, object: { key: frameKey('dup', 2), size: (await jpeg()).length } },
        },
      ],
    });
    await stack.clients.sqs.send(new SendMessageCommand({ QueueUrl: stack.wiring.ingestQueueUrl, MessageBody: event }));
    await stack.clients.sqs.send(new SendMessageCommand({ QueueUrl: stack.wiring.ingestQueueUrl, MessageBody: event }));
    await uploadFrames(stack, 'dup', [1, 3]);
    await uploadFrames(stack, 'dup', [4]);
    await waitForFrames(stack, 'dup', 5);
    // Assess: the earlier results are untouched and nothing was counted twice
    const after = await results(stack, 'dup');
    expect(after).toHaveLength(5);
    for (const r of before) expect(after.find((a) => a.frame === r.frame)).toEqual(r);
    await waitFor('summary counts 5', async () => (await summary(stack, 'dup'))?.framesOk === 5);
    // FIFO deduplication ate those within its 5-minute window. Past it (a fresh dedup id),
    // the worker itself recognises the frame as already committed.
    const slot = (await waitFor('pin', async () => (await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk: 'video#dup' } }))).Item))
      .pinnedSlot as number | undefined;
    const message = { kind: 'frame', videoId: 'dup', frame: 2, bucket: stack.wiring.bucket, key: frameKey('dup', 2), sizeBytes: (await jpeg()).length, eventTime: new Date().toISOString() };
    await stack.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: `${stack.wiring.slotQueueUrlPrefix}${slot ?? 0}.fifo`, MessageBody: JSON.stringify(message), MessageGroupId: 'dup', MessageDeduplicationId: 'dup:2:late-redelivery' }),
    );
    await waitFor('duplicate recognised by the worker', async () => stack.workerLines.some((l) => l.includes('"FramesDuplicate"')), 20_000);
    expect(await results(stack, 'dup')).toEqual(after);
  });
});

describe('bad input is contained', () => {
  it('dead-letters malformed keys and unknown events with a reason, records bad frames as failures, and never stalls the video', async () => {
    // Prepare
    const good = await jpeg();
    const noise = Buffer.alloc(80_000, 7);
    // Act: malformed keys
    for (const key of ['frames/bad id/1.jpg', 'frames/v/abc.jpg', 'other/v/1.jpg', 'frames/badin/1.txt', 'frames/a/b/1.jpg']) await put(stack, key, good);
    // unknown events and non-JSON straight onto the ingest queue
    const remove = JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectRemoved:Delete', s3: { bucket: { name: stack.wiring.bucket }, object: { key: 'frames/badin/0.jpg' } } }] });
    for (const body of [remove, 'not json at all', JSON.stringify({ surprise: true })]) {
      await stack.clients.sqs.send(new SendMessageCommand({ QueueUrl: stack.wiring.ingestQueueUrl, MessageBody: body }));
    }
    // bad frames inside an otherwise good video
    await put(stack, frameKey('badin', 0), good);
    await put(stack, frameKey('badin', 1), new Uint8Array());
    await put(stack, frameKey('badin', 2), Buffer.from('this is not a jpeg'));
    await put(stack, frameKey('badin', 3), noise);
    await put(stack, frameKey('badin', 4), good);
    await put(stack, 'frames/badin/_end', '4');
    // Assess: one failure record per bad frame, later frames still processed
    const items = await waitForFrames(stack, 'badin', 5);
    const status = Object.fromEntries(items.map((r) => [r.frame, `${r.status}:${r.reason ?? ''}`]));
    expect(status).toEqual({ 0: 'ok:', 1: 'failed:empty-object', 2: 'failed:corrupt-image', 3: 'failed:oversized', 4: 'ok:' });
    await waitFor('badin complete', async () => (await summary(stack, 'badin'))?.status === 'complete');
    // ... and every rejected event sits in the ingest DLQ with its reason
    const reasons = await waitFor('rejected events in the DLQ', async () => {
      const seen = (await drainQueue(stack, stack.wiring.ingestDlqUrl)).map((m) => m.attributes.reason);
      collected.push(...seen);
      const want = ['bad-video-id', 'bad-frame-name', 'non-image-extension', 'not-object-created', 'not-json', 'unknown-event'];
      return want.every((w) => collected.includes(w)) ? collected : undefined;
    });
    expect(reasons.filter((r) => r === 'bad-video-id').length).toBeGreaterThanOrEqual(2);
    // The s3:TestEvent of the notification setup is acknowledged, not dead-lettered (quiet-first-run.int.test.ts).
    expect(reasons).not.toContain('s3-test-event');
  });
});

const collected: string[] = [];
