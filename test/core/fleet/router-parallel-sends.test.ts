/**
 * The router sends a batch's frames to different slot queues in parallel while each queue
 * gets its frames in the order the router got them (one queue's SendMessageBatch calls in
 * sequence), and a failed entry or call fails exactly the ingest records it carried
 * (decision 33). Partial SendMessageBatch failures cannot be produced by the emulator, so
 * the SQS client is mocked (aws-sdk-client-mock) under the real SlotQueues.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { SendMessageBatchCommand, SQSClient, type SendMessageBatchCommandInput } from '@aws-sdk/client-sqs';
import { FrameRouter } from '../../../core/fleet/router.ts';
import { DEFAULT_TUNABLES, validateTunables, type Tunables } from '../../../core/config.ts';
import { emptySlotRecord, type SlotRecord } from '../../../core/leases/lease-logic.ts';
import type { LeaseTable } from '../../../core/leases/port.ts';
import { SEND_BATCH_MAX_BYTES, SlotQueues, sendBatchChunks } from '../../../core/ingest/sqs/slot-queues.ts';
import { nullMetrics, type LogSink } from '../../../core/ports.ts';
import { sleep } from '../../../core/async.ts';

const NOW = 1_000_000_000;
const sqsMock = mockClient(SQSClient);
const log: LogSink = { debug() {}, info() {}, warn() {}, error() {} };

/** A router over the real SlotQueues on a mocked SQS client; videos are pinned by `pins`. */
function routerWith(pins: Record<string, number>, tunables: Partial<Tunables> = {}) {
  const slot = (n: number): SlotRecord => ({ ...emptySlotRecord(n), owner: `w${n}`, expiresAtMs: NOW + 60_000, heartbeatAtMs: NOW });
  const leases = {
    getPins: async (ids: readonly string[]) => new Map(ids.flatMap((id) => (pins[id] !== undefined ? [[id, { pinnedSlot: pins[id], token: 1 }] as const] : []))),
    getSlots: async (count: number) => Array.from({ length: count }, (_, n) => slot(n)),
    getSlotsNumbered: async (numbers: readonly number[]) => numbers.map(slot),
    pinVideo: async () => 'pinned',
  } as unknown as LeaseTable;
  return new FrameRouter({
    bucket: 'bkt',
    tunables: validateTunables({ ...DEFAULT_TUNABLES, slotCount: 8, ...tunables }),
    leases,
    queues: new SlotQueues(new SQSClient({ region: 'us-east-1' }), 'https://sqs.local/q-'),
    deadLetter: async (events) => events.map(() => true),
    launcher: () => undefined,
    metrics: nullMetrics,
    log,
    now: () => NOW,
  });
}

const frame = (video: string, n: number) => ({
  id: `${video}-${n}`,
  body: JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'bkt' }, object: { key: `frames/${video}/${n}.jpg`, size: 10 } } }] }),
});

/** Frames of `videos`, interleaved as uploads of parallel cameras arrive: v0-0, v1-0, ..., v0-1, ... */
function interleaved(videos: readonly string[], framesEach: number) {
  return Array.from({ length: framesEach }, (_, n) => videos.map((v) => frame(v, n))).flat();
}

const bodiesOf = (input: SendMessageBatchCommandInput) => (input.Entries ?? []).map((e) => JSON.parse(e.MessageBody!) as { videoId: string; frame: number });

beforeEach(() => sqsMock.reset());

describe('router sends to slot queues', () => {
  it('keeps each video in order on its queue while queues are sent to in parallel', async () => {
    // Prepare: 8 videos on 4 slots, 25 frames each (200 records; 5 calls per queue)
    const videos = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const pins = Object.fromEntries(videos.map((v, i) => [v, i % 4]));
    const perQueue = new Map<string, { videoId: string; frame: number }[]>();
    let inFlight = 0;
    let maxInFlight = 0;
    const inFlightPerQueue = new Map<string, number>();
    let maxPerQueue = 0;
    sqsMock.on(SendMessageBatchCommand).callsFake(async (input: SendMessageBatchCommandInput) => {
      const url = input.QueueUrl!;
      inFlight++;
      inFlightPerQueue.set(url, (inFlightPerQueue.get(url) ?? 0) + 1);
      maxInFlight = Math.max(maxInFlight, inFlight);
      maxPerQueue = Math.max(maxPerQueue, inFlightPerQueue.get(url)!);
      await sleep(5 + Math.random() * 10);
      perQueue.set(url, [...(perQueue.get(url) ?? []), ...bodiesOf(input)]);
      inFlight--;
      inFlightPerQueue.set(url, inFlightPerQueue.get(url)! - 1);
      return { Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id!, MessageId: `m-${e.Id}`, MD5OfMessageBody: '' })), Failed: [] };
    });

    // Act
    const outcomes = await routerWith(pins).route(interleaved(videos, 25));

    // Assess: nothing failed; queues overlapped, one queue's calls never did
    expect([...outcomes.values()].filter(Boolean)).toEqual([]);
    expect(maxInFlight).toBeGreaterThan(1);
    expect(maxPerQueue).toBe(1);
    expect(perQueue.size).toBe(4);
    for (const v of videos) {
      const got = perQueue.get(`https://sqs.local/q-${pins[v]}.fifo`)!.filter((m) => m.videoId === v).map((m) => m.frame);
      expect(got).toEqual(Array.from({ length: 25 }, (_, n) => n));
    }
  });

  it('sends one queue after another with routerSendConcurrency 1 (the sequential baseline)', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    sqsMock.on(SendMessageBatchCommand).callsFake(async (input: SendMessageBatchCommandInput) => {
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      await sleep(2);
      inFlight--;
      return { Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id!, MessageId: 'm', MD5OfMessageBody: '' })), Failed: [] };
    });
    await routerWith({ a: 0, b: 1, c: 2 }, { routerSendConcurrency: 1 }).route(interleaved(['a', 'b', 'c'], 12));
    expect(maxInFlight).toBe(1);
  });

  it.each([
    ['a refused entry fails that record only', 'entry'],
    ['a failed call fails the records of that call only', 'call'],
  ] as const)('%s, with the right itemIdentifiers, while other queues go through', async (_name, mode) => {
    // Prepare: video a on slot 0 (12 frames: calls of 10 + 2), video b on slot 1.
    // On slot 0's first call, frame a-3 is refused (entry) or the whole call throttled (call).
    let slot0Calls = 0;
    sqsMock.on(SendMessageBatchCommand).callsFake(async (input: SendMessageBatchCommandInput) => {
      const entries = input.Entries ?? [];
      if (input.QueueUrl!.endsWith('q-0.fifo') && slot0Calls++ === 0) {
        if (mode === 'call') throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } });
        const bad = entries.find((e) => bodiesOf({ QueueUrl: '', Entries: [e] })[0]!.frame === 3)!;
        return {
          Successful: entries.filter((e) => e !== bad).map((e) => ({ Id: e.Id!, MessageId: 'm', MD5OfMessageBody: '' })),
          Failed: [{ Id: bad.Id!, Code: 'InternalError', SenderFault: false, Message: 'try again' }],
        };
      }
      return { Successful: entries.map((e) => ({ Id: e.Id!, MessageId: 'm', MD5OfMessageBody: '' })), Failed: [] };
    });
    const records = [...interleaved(['a', 'b'], 12)];

    // Act
    const outcomes = await routerWith({ a: 0, b: 1 }, { routerSendConcurrency: 8 }).route(records);

    // Assess
    const failed = [...outcomes].filter(([, e]) => e !== undefined).map(([id]) => id).sort();
    const expected = mode === 'entry' ? ['a-3'] : Array.from({ length: 10 }, (_, n) => `a-${n}`).sort();
    expect(failed).toEqual(expected);
    for (const id of failed) expect(outcomes.get(id)).toBeInstanceOf(Error);
  });
});

describe('SendMessageBatch chunks', () => {
  const entry = (bytes: number) => ({ MessageBody: 'x'.repeat(bytes), MessageGroupId: 'g', MessageDeduplicationId: 'd' });
  it.each([
    ['10 small entries', [10, 10, 10, 10, 10, 10, 10, 10, 10, 10], [10]],
    ['11 small entries', Array.from({ length: 11 }, () => 10), [10, 1]],
    ['bodies that overflow 256 KiB together', [100_000, 100_000, 100_000], [2, 1]],
    ['exactly 256 KiB', [SEND_BATCH_MAX_BYTES / 2, SEND_BATCH_MAX_BYTES / 2, 1], [2, 1]],
    ['an entry alone over the limit', [SEND_BATCH_MAX_BYTES + 1, 5], [1, 1]],
  ])('splits %s into chunks of %j in order', (_name, sizes, expected) => {
    const entries = sizes.map(entry);
    const chunks = sendBatchChunks(entries);
    expect(chunks.map((c) => c.length)).toEqual(expected);
    expect(chunks.flat()).toEqual(entries);
  });
});
