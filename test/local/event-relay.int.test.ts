/**
 * The local event relay (issue 22) on DynamoDB Local's real stream and fauxqs: outbox
 * items reach the queue standing in for the bus once each and in order per video, with
 * the envelope the deployed pipe renders; the pipe's filter holds; a restart resumes
 * from its checkpoint without loss; a failing queue is retried, logged and counted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EVENT_SOURCE, type EventItem } from '../../core/analytics/event-schema.ts';
import { REDELIVERY_ATTRIBUTE, eventItemOf, eventItemsOf, type BusEvent } from '../../core/analytics/event-delivery.ts';
import { packEvents, unpackEvents } from '../../core/analytics/event-packing.ts';
import { EventRelay, fileCheckpoint, memoryCheckpoint, type EventRelayOptions } from '../../local/event-relay.ts';
import { drainBusQueue, sampleEvents, startEventEmulators, writeEvents, type EventEmulators } from '../../harness/event-fixtures.ts';
import { waitFor } from '../../harness/wait.ts';

let emu: EventEmulators;
let streams: DynamoDBStreamsClient;
let dir: string;
/** Each test reads its own table: a relay without a checkpoint reads its stream from the oldest record. */
let table: string;
let tables = 0;
const relays: EventRelay[] = [];

beforeAll(async () => {
  emu = await startEventEmulators();
  streams = new DynamoDBStreamsClient(emu.streamsConfig);
  dir = mkdtempSync(join(tmpdir(), 'event-relay-'));
});
beforeEach(async () => {
  table = await emu.createTable(`EvTest-events-${++tables}`);
});
afterEach(async () => {
  for (const r of relays.splice(0)) await r.stop();
  await drainBusQueue(emu.sqs, emu.queueUrl);
});
afterAll(async () => {
  streams?.destroy();
  await emu?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function relay(options: Partial<EventRelayOptions> = {}): EventRelay {
  const r = new EventRelay({ dynamodb: emu.dynamodb, streams, sqs: emu.sqs, tableName: table, queueUrl: emu.queueUrl, idlePollMs: 50, ...options }).start();
  relays.push(r);
  return r;
}

/** Drains the queue until `count` events arrived (and a little after, to catch extras). */
async function collect(count: number, seen: BusEvent[] = []): Promise<BusEvent[]> {
  await waitFor(`${count} events on the queue`, async () => {
    seen.push(...(await drainBusQueue(emu.sqs, emu.queueUrl)));
    return seen.length >= count;
  }, 30_000);
  await new Promise((r) => setTimeout(r, 300));
  seen.push(...(await drainBusQueue(emu.sqs, emu.queueUrl)));
  return seen;
}

const idsOf = (events: readonly BusEvent[], videoId?: string) => events.filter((e) => !videoId || e.detail.videoId === videoId).map((e) => e.detail.eventId);

describe('event relay', () => {
  it('delivers every outbox item once, in order per video, as the envelope the pipe renders', async () => {
    // Prepare: three videos' events, interleaved as three workers would commit them
    const videos = ['relay-a', 'relay-b', 'relay-c'];
    const byVideo = new Map(videos.map((v) => [v, sampleEvents(v, 20)] as const));
    const interleaved: EventItem[] = [];
    for (let i = 0; i < 20; i++) for (const v of videos) interleaved.push(byVideo.get(v)![i]!);
    const r = relay();

    // Act
    await writeEvents(emu.ddb, table, interleaved);
    const got = await collect(60);

    // Assess
    expect(got).toHaveLength(60);
    for (const v of videos) expect(idsOf(got, v)).toEqual(byVideo.get(v)!.map((e) => e.eventId));
    const first = got.find((e) => e.detail.videoId === 'relay-b' && e.detail.eventId === byVideo.get('relay-b')![0]!.eventId)!;
    expect(first.source).toBe(EVENT_SOURCE);
    expect(first['detail-type']).toBe('Line Crossed');
    expect(eventItemOf(first.detail)).toEqual(byVideo.get('relay-b')![0]);
    expect(r.counts).toMatchObject({ delivered: 60, sendFailures: 0, readFailures: 0 });
  });

  it('a batch of rule events (decision 72) is one message, detail-type Rule Events, whose events are the batch\'s, as DynamoDB Local streams the list', async () => {
    // Prepare: a unit's rule events, packed as the commit packs them
    // A unit's events share the commit's time (commit-events.ts).
    const events = sampleEvents('relay-batch', 12).map((e) => ({ ...e, atMs: 1_700_000_000_000 }));
    const stored = packEvents(events);
    expect(stored.map((i) => i.kind)).toEqual(['rule.events']);
    relay();

    // Act
    await writeEvents(emu.ddb, table, stored as unknown as EventItem[]);
    const got = await collect(1);

    // Assess
    expect(got).toHaveLength(1);
    expect(got[0]!['detail-type']).toBe('Rule Events');
    expect(got[0]!.detail).toMatchObject({ videoId: 'relay-batch', eventId: stored[0]!.eventId, kind: 'rule.events' });
    expect(eventItemsOf(got[0]!.detail)).toEqual(unpackEvents(stored));
    expect(unpackEvents(stored)).toEqual([...events].sort((x, y) => (x.eventId < y.eventId ? -1 : 1)));
  });

  it('delivers no removal and no identical rewrite, and one redelivery per --redeliver touch', async () => {
    // Prepare
    const [a, b] = sampleEvents('relay-filter', 2);
    const r = relay();
    await writeEvents(emu.ddb, table, [a!, b!]);
    await collect(2);

    // Act: TTL-style removal, a worker rewriting the same item, an operator's redelivery
    await emu.ddb.send(new DeleteCommand({ TableName: table, Key: { videoId: a!.videoId, eventId: a!.eventId } }));
    await emu.ddb.send(new PutCommand({ TableName: table, Item: b }));
    await emu.ddb.send(
      new UpdateCommand({ TableName: table, Key: { videoId: b!.videoId, eventId: b!.eventId }, UpdateExpression: 'ADD #r :one', ExpressionAttributeNames: { '#r': REDELIVERY_ATTRIBUTE }, ExpressionAttributeValues: { ':one': 1 } }),
    );
    const again = await collect(1);

    // Assess
    expect(idsOf(again)).toEqual([b!.eventId]);
    expect(eventItemOf(again[0]!.detail)).toEqual(b);
    await waitFor('the removal read and filtered', () => r.counts.filtered >= 1, 10_000);
    expect(r.counts.delivered).toBe(3);
  });

  it('resumes after a restart from its checkpoint: nothing lost, nothing sent twice when it stopped between batches', async () => {
    // Prepare
    const checkpoint = fileCheckpoint(join(dir, 'relay.json'));
    const before = sampleEvents('relay-restart', 15);
    const after = sampleEvents('relay-restart', 15, 15);
    const first = relay({ checkpoint });
    await writeEvents(emu.ddb, table, before);
    const got = await collect(15);
    await first.stop();

    // Act: events committed while no relay runs, then a new relay on the same checkpoint
    await writeEvents(emu.ddb, table, after);
    relay({ checkpoint });
    await collect(30, got);

    // Assess
    expect(idsOf(got)).toEqual([...before, ...after].map((e) => e.eventId));
  });

  it('without a checkpoint a new relay starts at the oldest record: duplicates, which consumers drop by eventId, never loss', async () => {
    // Prepare
    const items = sampleEvents('relay-fresh', 5);
    relay();
    await writeEvents(emu.ddb, table, items);
    await collect(5);

    // Act
    relay({ checkpoint: memoryCheckpoint() });
    const replayed = await collect(5);

    // Assess: the stream again from its oldest record, each id once more
    expect(idsOf(replayed)).toEqual(items.map((e) => e.eventId));
  });

  it('retries a failing queue with backoff, logging and counting each failure, and loses nothing', async () => {
    // Prepare: the first three sends fail
    let failures = 3;
    const flaky = { send: (command: never) => (failures-- > 0 ? Promise.reject(Object.assign(new Error('injected outage'), { name: 'ServiceUnavailable' })) : emu.sqs.send(command)) } as unknown as SQSClient;
    const lines: string[] = [];
    const items = sampleEvents('relay-flaky', 12);
    const r = relay({ sqs: flaky, retryBaseMs: 20, log: (l) => lines.push(l) });

    // Act
    await writeEvents(emu.ddb, table, items);
    const got = await collect(12);

    // Assess
    expect(idsOf(got)).toEqual(items.map((e) => e.eventId));
    expect(r.counts.sendFailures).toBe(3);
    expect(lines.filter((l) => l.includes('SendMessageBatch') && l.includes('ServiceUnavailable: injected outage'))).toHaveLength(3);
  });
});
