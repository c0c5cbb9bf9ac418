/**
 * `affinity events` over batches of rule events (issue 44, core/analytics/event-packing.ts),
 * on the lease table twin's DynamoDB: every event printed once in id order, `--from-frame`
 * inside a batch prints its events from that frame, `--follow` goes on after the last
 * stored item, not the last event, and `--redeliver` touches each stored item once.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { packEvents } from '../../core/analytics/event-packing.ts';
import { DETAIL_TYPE, eventId, type EventItem, type EventKind } from '../../core/analytics/event-schema.ts';
import { REDELIVERY_ATTRIBUTE } from '../../core/analytics/event-delivery.ts';
import { MemoryLeaseTable } from '../../core/leases/memory/memory-lease-table.ts';
import { eventsCommand } from '../../cli/commands/events.ts';
import { memoryIo } from '../../cli/io.ts';
import type { Target } from '../../cli/target.ts';

const ev = (frame: number, kind: EventKind, trackId?: number): EventItem => ({
  videoId: 'v',
  eventId: eventId({ frame, kind, ...(trackId !== undefined ? { ruleId: 'door', trackId } : {}) }),
  kind,
  detailType: DETAIL_TYPE[kind],
  frame,
  ...(trackId !== undefined ? { ruleId: 'door', trackId, label: 'person' } : {}),
  token: 1,
  atMs: 1,
});
/** A unit of frames [first, first + n): a crossing per frame, packed as the commit packs them. */
const unit = (first: number, n: number) => packEvents(Array.from({ length: n }, (_, i) => ev(first + i, 'line.crossed', first + i)));

function setup() {
  const twin = new MemoryLeaseTable({ prefix: 'evcli' });
  const target = { description: 'the twin', eventsTable: twin.wiring.eventsTable, clients: { ddb: twin.ddb } } as unknown as Target;
  const put = async (items: readonly object[]) => {
    for (const Item of items) await twin.ddb.send(new PutCommand({ TableName: twin.wiring.eventsTable, Item: Item as Record<string, unknown> }));
  };
  return { twin, target, put };
}
const framesOf = (lines: readonly string[]) => lines.map((l) => (JSON.parse(l) as EventItem).frame);

describe('affinity events over batches of rule events', () => {
  it('prints every event once, in id order; --from-frame inside a batch starts at that frame', async () => {
    const { target, put } = setup();
    await put([ev(0, 'video.started'), ...unit(0, 5), ...unit(5, 5), ev(7, 'frame.failed')]);
    const all = memoryIo();
    await eventsCommand(target, { videoId: 'v', json: true, follow: false }, all);
    expect(all.lines.map((l) => (JSON.parse(l) as EventItem).kind)).toEqual(['line.crossed', 'video.started', ...Array(6).fill('line.crossed'), 'frame.failed', 'line.crossed', 'line.crossed', 'line.crossed']);
    expect(framesOf(all.lines)).toEqual([0, 0, 1, 2, 3, 4, 5, 6, 7, 7, 8, 9]);
    const from = memoryIo();
    await eventsCommand(target, { videoId: 'v', json: true, follow: false, fromFrame: 3 }, from);
    expect(framesOf(from.lines)).toEqual([3, 4, 5, 6, 7, 7, 8, 9]);
  });

  it('--follow from a frame inside a batch prints it from there, then only what is stored after the last item', async () => {
    const { target, put } = setup();
    await put(unit(0, 5));
    const io = memoryIo();
    const stop = new AbortController();
    const following = eventsCommand(target, { videoId: 'v', json: true, follow: true, fromFrame: 2, pollMs: 5, signal: stop.signal }, io);
    await new Promise((r) => setTimeout(r, 30));
    await put(unit(5, 3));
    await new Promise((r) => setTimeout(r, 30));
    stop.abort();
    await following;
    expect(framesOf(io.lines)).toEqual([2, 3, 4, 5, 6, 7]);
  });

  it('--redeliver touches each stored item once and counts the events they carry', async () => {
    const { twin, target, put } = setup();
    const items = [...unit(0, 5), ...unit(5, 5)];
    await put(items);
    const io = memoryIo();
    const r = await eventsCommand(target, { videoId: 'v', json: false, follow: false, redeliver: true, fromFrame: 3 }, io);
    expect(r.redelivered).toBe(10);
    for (const item of items) {
      const got = await twin.ddb.send(new GetCommand({ TableName: twin.wiring.eventsTable, Key: { videoId: 'v', eventId: item.eventId } }));
      expect(got.Item?.[REDELIVERY_ATTRIBUTE]).toBe(1);
    }
  });
});
