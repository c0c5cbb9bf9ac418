/**
 * `affinity events` and `affinity counts` (issue 22) on DynamoDB Local through the CLI's
 * own dispatch (`main` with an injected target), and `--redeliver` through the local
 * relay to the bus stand-in queue.
 */
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventItem } from '../../core/analytics/event-schema.ts';
import { eventId } from '../../core/analytics/event-schema.ts';
import { countEvents } from '../../cli/commands/counts.ts';
import { eventsCommand } from '../../cli/commands/events.ts';
import { memoryIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import type { Target } from '../../cli/target.ts';
import { EventRelay } from '../../local/event-relay.ts';
import { drainBusQueue, sampleEvents, startEventEmulators, writeEvents, type EventEmulators } from '../../harness/event-fixtures.ts';
import { waitFor } from '../../harness/wait.ts';

let emu: EventEmulators;
let target: Target;

beforeAll(async () => {
  emu = await startEventEmulators('EvCli');
  // Only what the two commands use; the rest of a target is not read by them.
  target = {
    description: 'test emulators',
    kind: 'local',
    region: 'us-east-1',
    eventsTable: emu.tableName,
    clients: { ddb: emu.ddb as DynamoDBDocumentClient },
    close: () => {},
  } as unknown as Target;
});
afterAll(async () => {
  await emu?.stop();
});

async function cli(args: string[]) {
  const io = memoryIo();
  const code = await main(args, io, async () => target);
  return { code, lines: io.lines, err: io.errors.join('\n') };
}

const line = (videoId: string, frame: number, direction: 'in' | 'out', label = 'person', trackId = frame): EventItem => ({
  videoId,
  eventId: eventId({ frame, kind: 'line.crossed', ruleId: 'door', trackId }),
  kind: 'line.crossed',
  frame,
  ruleId: 'door',
  trackId,
  label,
  detail: { direction },
  token: 1,
  atMs: 1_700_000_000_000 + frame,
});
const zone = (videoId: string, frame: number, kind: 'zone.entered' | 'zone.exited' | 'zone.dwell', trackId: number, label = 'car'): EventItem => ({
  videoId,
  eventId: eventId({ frame, kind, ruleId: 'bay', trackId }),
  kind,
  frame,
  ruleId: 'bay',
  trackId,
  label,
  token: 1,
  atMs: 1_700_000_000_000 + frame,
});

describe('affinity events', () => {
  it('prints a video\'s events in frame order, as text and as NDJSON that reads back as the items', async () => {
    // Prepare: written out of order
    const items = sampleEvents('cli-ev', 12);
    await writeEvents(emu.ddb, emu.tableName, [...items].reverse());

    // Act
    const text = await cli(['events', 'cli-ev']);
    const json = await cli(['events', 'cli-ev', '--json']);
    const from = await cli(['events', 'cli-ev', '--json', '--from-frame', '9']);

    // Assess
    expect(text.code, text.err).toBe(0);
    expect(text.lines).toHaveLength(12);
    expect(text.lines[0]).toMatch(/^\s+0\tline\.crossed\s+\tdoor\ttrack 1\tperson\tdirection=in\ttoken 3$/);
    expect(json.lines.map((l) => JSON.parse(l) as EventItem)).toEqual(items);
    expect(from.lines.map((l) => (JSON.parse(l) as EventItem).frame)).toEqual([9, 10, 11]);
  });

  it('fails clearly for a video without events', async () => {
    // Act
    const r = await cli(['events', 'no-such-video']);

    // Assess
    expect(r.code).toBe(1);
    expect(r.err).toBe('error: no events for video "no-such-video" in test emulators');
  });

  it('--follow prints the events there and then each new one once, until stopped', async () => {
    // Prepare
    const items = sampleEvents('cli-follow', 6);
    await writeEvents(emu.ddb, emu.tableName, items.slice(0, 3));
    const io = memoryIo();
    const stop = new AbortController();

    // Act
    const following = eventsCommand(target, { videoId: 'cli-follow', json: true, follow: true, signal: stop.signal, pollMs: 50 }, io);
    await waitFor('the first three', () => io.lines.length >= 3, 10_000);
    await writeEvents(emu.ddb, emu.tableName, items.slice(3));
    await waitFor('all six', () => io.lines.length >= 6, 10_000);
    await new Promise((r) => setTimeout(r, 200));
    stop.abort();
    const result = await following;

    // Assess
    expect(io.lines.map((l) => (JSON.parse(l) as EventItem).eventId)).toEqual(items.map((e) => e.eventId));
    expect(result.printed).toBe(6);
  });

  it('--redeliver makes the relay deliver a video\'s events again from a frame on', async () => {
    // Prepare
    const items = sampleEvents('cli-redeliver', 5);
    const streams = new DynamoDBStreamsClient(emu.streamsConfig);
    const relay = new EventRelay({ dynamodb: emu.dynamodb, streams, sqs: emu.sqs, tableName: emu.tableName, queueUrl: emu.queueUrl, idlePollMs: 50 }).start();
    try {
      await writeEvents(emu.ddb, emu.tableName, items);
      await waitFor('first delivery', async () => (await drainBusQueue(emu.sqs, emu.queueUrl)).some((e) => e.detail.eventId === items[4]!.eventId) || undefined, 20_000);
      const delivered = relay.counts.delivered;

      // Act
      const r = await cli(['events', 'cli-redeliver', '--redeliver', '--from-frame', '3']);
      const again = await waitFor('redelivery', async () => {
        const got = (await drainBusQueue(emu.sqs, emu.queueUrl)).filter((e) => e.detail.videoId === 'cli-redeliver');
        return got.length > 0 ? got : undefined;
      }, 20_000);
      await waitFor('both redelivered', () => relay.counts.delivered >= delivered + 2, 10_000);
      again.push(...(await drainBusQueue(emu.sqs, emu.queueUrl)));

      // Assess
      expect(r.code, r.err).toBe(0);
      expect(r.lines).toEqual(['redelivered 2 event(s) of cli-redeliver: the pipe delivers them again (consumers drop duplicates by eventId)']);
      expect(again.map((e) => e.detail.eventId)).toEqual([items[3]!.eventId, items[4]!.eventId]);
    } finally {
      await relay.stop();
      streams.destroy();
    }
  });
});

describe('affinity counts', () => {
  it('totals line crossings per class and direction and zone events per class, from the events table', async () => {
    // Prepare
    const v = 'cli-counts';
    await writeEvents(emu.ddb, emu.tableName, [
      line(v, 1, 'in'),
      line(v, 2, 'in'),
      line(v, 3, 'out'),
      line(v, 4, 'in', 'car'),
      zone(v, 5, 'zone.entered', 1),
      zone(v, 6, 'zone.entered', 2),
      zone(v, 9, 'zone.dwell', 1),
      zone(v, 12, 'zone.exited', 1),
      { ...line(v, 13, 'in'), kind: 'video.completed', eventId: eventId({ frame: 13, kind: 'video.completed' }), ruleId: undefined, trackId: undefined },
    ]);

    // Act
    const text = await cli(['counts', v]);
    const json = await cli(['counts', v, '--json']);

    // Assess
    expect(text.code, text.err).toBe(0);
    expect(text.lines).toEqual([
      'Lines (crossings per class)',
      'rule  class   in  out  total',
      '----  ------  --  ---  -----',
      'door  car      1    0      1',
      'door  person   2    1      3',
      '',
      'Zones (per class)',
      'zone  class  entered  exited  inside  dwell',
      '----  -----  -------  ------  ------  -----',
      'bay   car          2       1       1      1',
    ]);
    expect(JSON.parse(json.lines[0]!)).toMatchObject({ videoId: v, events: 8, lines: [{ ruleId: 'door', label: 'car', in: 1, out: 0 }, { ruleId: 'door', label: 'person', in: 2, out: 1 }] });
  });

  it('counts an event id once, however often it is delivered or listed', () => {
    // Act
    const a = line('dup', 1, 'in');
    const counts = countEvents([a, a, { ...a }, line('dup', 2, 'out')]);

    // Assess
    expect(counts.lines).toEqual([{ ruleId: 'door', label: 'person', in: 1, out: 1 }]);
    expect(counts.events).toBe(2);
  });
});
