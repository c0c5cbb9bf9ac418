/**
 * Rule events stored in batches (issue 44, core/analytics/event-packing.ts): packing is
 * deterministic and gives back exactly the events it was given; the commit writes one
 * batch per unit through the production adapter on the lease table's twin; readers unpack;
 * a replay from a frame inside a batch trims it; the bus event of a batch carries them.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  BATCH_SUFFIX,
  MAX_BATCH_BYTES,
  RULE_EVENTS_DETAIL_TYPE,
  eventsOfItem,
  isRuleEventsItem,
  packEvents,
  replayCut,
  unpackEvents,
  type RuleEventsItem,
} from '../../../core/analytics/event-packing.ts';
import { DETAIL_TYPE, eventId, type EventItem, type EventKind } from '../../../core/analytics/event-schema.ts';
import { busEventOf, eventItemsOf, type ImageJson } from '../../../core/analytics/event-delivery.ts';
import { allEvents, storedEventsFrom } from '../../../core/analytics/dynamodb/events-reader.ts';
import { DynamoDbResultsAdmin } from '../../../core/commit/dynamodb/results-admin.ts';
import { emptyCheckpoint } from '../../../core/commit/checkpoint.ts';
import type { CommitUnit } from '../../../core/commit/commit-packing.ts';
import { MemoryLeaseTable } from '../../../core/leases/memory/memory-lease-table.ts';
import { marshallValue } from '../../../core/leases/memory/item-values.ts';

const ev = (frame: number, kind: EventKind, o: { ruleId?: string; trackId?: number; detail?: Record<string, string | number | boolean>; token?: number; videoId?: string } = {}): EventItem => ({
  videoId: o.videoId ?? 'v',
  eventId: eventId({ frame, kind, ...(o.ruleId ? { ruleId: o.ruleId } : {}), ...(o.trackId !== undefined ? { trackId: o.trackId } : {}) }),
  kind,
  detailType: DETAIL_TYPE[kind],
  frame,
  ...(o.ruleId ? { ruleId: o.ruleId } : {}),
  ...(o.trackId !== undefined ? { trackId: o.trackId, label: 'person' } : {}),
  ...(o.detail ? { detail: o.detail } : {}),
  token: o.token ?? 3,
  atMs: 1_800_000_000_000,
});
const byId = (a: EventItem, b: EventItem) => (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);

/** A unit's events as the rule engine raises them: a zone exit before a crossing at the same frame, frames ascending. */
function unitEvents(first: number, frames: number, o: { token?: number } = {}): EventItem[] {
  const out: EventItem[] = [];
  for (let f = first; f < first + frames; f++) {
    out.push(ev(f, 'zone.exited', { ruleId: 'bay', trackId: f, ...o }));
    out.push(ev(f, 'line.crossed', { ruleId: 'door', trackId: f, detail: { direction: f % 2 ? 'in' : 'out' }, ...o }));
  }
  return out;
}

describe('packEvents / unpackEvents', () => {
  it("a unit's rule events are one batch keyed by its last event's id; life events stay one item each; unpacking gives back exactly the events", () => {
    // Prepare
    const events = [ev(10, 'video.started'), ...unitEvents(10, 3), ev(11, 'frame.failed', { detail: { reason: 'decode' } })];
    // Act
    const stored = packEvents(events);
    // Assess
    expect(stored.map((i) => i.kind)).toEqual(['video.started', 'frame.failed', 'rule.events']);
    const batch = stored[2] as RuleEventsItem;
    expect(batch).toMatchObject({ videoId: 'v', eventId: events[6]!.eventId + BATCH_SUFFIX, detailType: RULE_EVENTS_DETAIL_TYPE, frame: 10, lastFrame: 12, token: 3, atMs: 1_800_000_000_000 });
    expect(batch.events).toHaveLength(6);
    expect(batch.events[0]).not.toHaveProperty('videoId');
    expect(unpackEvents(stored)).toEqual([...events].sort(byId));
    expect(packEvents(events)).toEqual(stored);
  });

  it('a batch never has an event id as its key, and sorts with its last frame: a range from any of its frames finds it', () => {
    const stored = packEvents(unitEvents(7, 2));
    const key = stored[0]!.eventId;
    expect(unitEvents(7, 2).map((e) => e.eventId)).not.toContain(key);
    expect(key > eventId({ frame: 8, kind: 'line.crossed', ruleId: 'door', trackId: 8 })).toBe(true);
    expect(key < eventId({ frame: 9, kind: 'frame.failed' })).toBe(true);
    expect(key >= '0000000007' && key >= '0000000008').toBe(true);
  });

  it('frames ascending inside a batch even when the engine raised them out of frame order; within a frame the engine order stays', () => {
    const [a, b, c] = [ev(5, 'zone.exited', { ruleId: 'z', trackId: 1 }), ev(4, 'line.crossed', { ruleId: 'l', trackId: 1 }), ev(5, 'line.crossed', { ruleId: 'l', trackId: 2 })];
    const batch = packEvents([a!, b!, c!])[0] as RuleEventsItem;
    expect(batch.events.map((e) => e.eventId)).toEqual([b!.eventId, a!.eventId, c!.eventId]);
    expect(batch.eventId).toBe(c!.eventId + BATCH_SUFFIX);
    expect([batch.frame, batch.lastFrame]).toEqual([4, 5]);
  });

  it('more events than one batch holds go to several, each under the size, in frame order, each key distinct', () => {
    const events = unitEvents(0, 400);
    const stored = packEvents(events, 4_000) as RuleEventsItem[];
    expect(stored.length).toBeGreaterThan(10);
    for (const b of stored) expect(Buffer.byteLength(JSON.stringify(b.events))).toBeLessThanOrEqual(4_000 + 3 * 200);
    expect(new Set(stored.map((b) => b.eventId)).size).toBe(stored.length);
    for (let i = 1; i < stored.length; i++) expect(stored[i]!.frame).toBeGreaterThanOrEqual(stored[i - 1]!.lastFrame);
    expect(unpackEvents(stored)).toEqual([...events].sort(byId));
  });

  it('ten full batches as the pipe puts them on the bus (one PutEvents call of 10 envelopes, the item in DynamoDB JSON) stay under its 256 KB', () => {
    const stored = packEvents(unitEvents(0, 2_000)) as RuleEventsItem[];
    expect(stored.length).toBeGreaterThan(10);
    const envelopes = stored.slice(0, 10).map((b) => busEventOf({ eventName: 'INSERT', dynamodb: { NewImage: (marshallValue(b as never) as { M: ImageJson }).M } }));
    const request = envelopes.reduce((n, e) => n + Buffer.byteLength(e.source) + Buffer.byteLength(e['detail-type']) + Buffer.byteLength(JSON.stringify(e.detail)), 0);
    expect(request).toBeLessThan(256 * 1024);
    for (const e of envelopes) expect(Buffer.byteLength(JSON.stringify(e.detail))).toBeLessThan(64 * 1024);
    expect(Buffer.byteLength(JSON.stringify(stored[0]))).toBeGreaterThan(MAX_BATCH_BYTES * 0.9);
  });

  it('no rule events, no batch', () => {
    expect(packEvents([ev(1, 'video.completed')]).map((i) => i.kind)).toEqual(['video.completed']);
    expect(packEvents([])).toEqual([]);
  });
});

describe('replayCut', () => {
  const batch = packEvents(unitEvents(10, 5))[0]!;
  it.each([
    ['a batch wholly before the frame stays', 15, 'keep'],
    ['a batch from the frame on goes', 10, 'delete'],
    ['a batch from before the frame on goes too', 3, 'delete'],
    ['a batch running into the frame is trimmed', 12, 'trim'],
  ] as const)('%s', (_name, from, action) => {
    const cut = replayCut(batch, from);
    expect(cut.action).toBe(action);
    if (cut.action === 'trim') {
      expect(eventsOfItem(cut.item).map((e) => e.frame)).toEqual([10, 10, 11, 11]);
      // Keyed by its new last event, before the frame: the re-run's batches cannot overwrite it.
      expect(cut.item.eventId).toBe(eventsOfItem(cut.item)[3]!.eventId + BATCH_SUFFIX);
      expect(cut.item.eventId < '0000000012').toBe(true);
      expect(cut.item.lastFrame).toBe(11);
      expect(cut.removed).toBe(6);
    }
  });
  it('a life event goes from its frame on', () => {
    expect(replayCut(ev(12, 'frame.failed'), 12).action).toBe('delete');
    expect(replayCut(ev(11, 'frame.failed'), 12).action).toBe('keep');
  });
});

/** Commits units of a video's frames with their rule events through `LeaseStore.commit` on the twin; what was written. */
async function committed(twin: MemoryLeaseTable, videoId: string, units: readonly { first: number; frames: number; extra?: readonly EventItem[] }[]) {
  const leases = twin.leases({ firstFrameNumber: 0, withEvents: true });
  const claim = await leases.claimSlot(0, 'w', 1_000, 60_000);
  const fence = { slot: 0, workerId: 'w', epoch: claim!.epoch };
  await leases.pinVideo(videoId, 0, 1_000);
  const adopted = await leases.adoptVideo(videoId, fence, 1_000);
  if (typeof adopted === 'string') throw new Error(adopted);
  let ck = adopted.checkpoint;
  const written: EventItem[] = [];
  for (const [i, u] of units.entries()) {
    const frames = Array.from({ length: u.frames }, (_, k) => u.first + k);
    const events = [...unitEvents(u.first, u.frames, { token: adopted.token }), ...(u.extra ?? []).map((e) => ({ ...e, token: adopted.token }))].map((e) => ({ ...e, videoId }));
    const unit: CommitUnit = {
      videoId,
      token: adopted.token,
      expectedSeq: ck.seq,
      expectedCommitId: ck.commitId ?? '',
      checkpoint: { ...emptyCheckpoint(u.first + u.frames), seq: ck.seq + 1, commitId: `c${i}` },
      results: frames.map((frame) => ({ videoId, frame, status: 'ok' as const, detections: [], token: adopted.token, worker: 'w', committedAtMs: 2_000 })),
      summary: { videoId, frame: -1, status: 'active', framesOk: 0, framesFailed: 0, framesGap: 0, token: adopted.token, updatedAtMs: 2_000 } as never,
      events,
    };
    const r = await leases.commit(fence, [unit], 2_000 + i);
    expect(r.outcomes.get(videoId)).toBe('landed');
    ck = unit.checkpoint;
    written.push(...events);
  }
  return { written, token: adopted.token };
}
describe('batches in the outbox table (the lease table twin, production adapters)', () => {


  it('a commit writes one batch per unit; the reader gives back every event in id order', async () => {
    const twin = new MemoryLeaseTable({ prefix: 'pack' });
    const { written } = await committed(twin, 'v', [{ first: 0, frames: 4 }, { first: 4, frames: 4 }]);
    const stored = await storedEventsFrom(twin.ddb, twin.wiring.eventsTable, 'v', 0);
    expect(stored.map((i) => [i.kind, isRuleEventsItem(i) ? i.events.length : 1])).toEqual([['rule.events', 8], ['rule.events', 8]]);
    expect(await allEvents(twin.ddb, twin.wiring.eventsTable, 'v')).toEqual([...written].sort(byId));
    const raw = await twin.ddb.send(new GetCommand({ TableName: twin.wiring.eventsTable, Key: { videoId: 'v', eventId: stored[0]!.eventId }, ConsistentRead: true }));
    expect(raw.Item).toEqual(stored[0]);
  });

  it('a replay from a frame inside a batch trims that batch, deletes the ones after, under the token; the events before the frame stay', async () => {
    const twin = new MemoryLeaseTable({ prefix: 'trim' });
    const { written, token } = await committed(twin, 'v', [{ first: 0, frames: 4 }, { first: 4, frames: 4 }]);
    const admin = new DynamoDbResultsAdmin({ ddb: twin.ddb, resultsTable: twin.wiring.resultsTable, eventsTable: twin.wiring.eventsTable });
    // From frame 6: the second batch (frames 4-7) runs into it.
    expect(await admin.deleteEventsFrom('v', 6, token - 1)).toBe(0);
    const deleted = await admin.deleteEventsFrom('v', 6, token);
    expect(deleted).toBe(4);
    expect(await allEvents(twin.ddb, twin.wiring.eventsTable, 'v')).toEqual(written.filter((e) => e.frame < 6).sort(byId));
    expect(await admin.deleteEventsFrom('v', 6, token)).toBe(0);
    expect(await admin.deleteEventsFrom('v', 2, token)).toBe(8);
    expect((await allEvents(twin.ddb, twin.wiring.eventsTable, 'v')).map((e) => e.frame)).toEqual([0, 0, 1, 1]);
  });
});

describe('a unit whose rule events reach back before its frames (a rules change exits tracks where they were last seen)', () => {
  it('a replay from a frame both batches hold trims both, and leaves exactly the events before the frame', async () => {
    const twin = new MemoryLeaseTable({ prefix: 'back' });
    const exit: EventItem = { ...ev(2, 'zone.exited', { ruleId: 'gone', trackId: 2, detail: { reason: 'rule-changed' } }), eventId: eventId({ frame: 2, kind: 'zone.exited', ruleId: 'gone', trackId: 2, discriminator: 'etag2' }) };
    const admin = new DynamoDbResultsAdmin({ ddb: twin.ddb, resultsTable: twin.wiring.resultsTable, eventsTable: twin.wiring.eventsTable });
    // Prepare: frames 0-3, then frames 4-7 whose unit also exits a track last seen at frame 2.
    const leases = await committed(twin, 'v', [{ first: 0, frames: 4 }, { first: 4, frames: 4, extra: [exit] }]);
    // Act
    const found = await storedEventsFrom(twin.ddb, twin.wiring.eventsTable, 'v', 3);
    const deleted = await admin.deleteEventsFrom('v', 3, leases.token);
    // Assess: both batches hold events of frame 3 or later and are found; what stays is what came before frame 3.
    expect(found.map((i) => (i as RuleEventsItem).lastFrame)).toEqual([3, 7]);
    expect(deleted).toBe(2 + 8);
    expect(await allEvents(twin.ddb, twin.wiring.eventsTable, 'v')).toEqual(leases.written.filter((e) => e.frame < 3).sort(byId));
    expect(await storedEventsFrom(twin.ddb, twin.wiring.eventsTable, 'v', 3)).toEqual([]);
  });
});

describe('a batch on the bus', () => {
  it("the envelope of a batch's stream record is one bus event, detail-type Rule Events, whose events are the unit's", () => {
    const events = unitEvents(20, 2);
    const batch = packEvents(events)[0]!;
    const image = (marshallValue(batch as never) as { M: ImageJson }).M;
    const bus = busEventOf({ eventName: 'INSERT', dynamodb: { NewImage: image } });
    expect(bus['detail-type']).toBe('Rule Events');
    expect(bus.detail).toMatchObject({ videoId: 'v', eventId: batch.eventId, kind: 'rule.events' });
    expect(eventItemsOf(bus.detail).sort(byId)).toEqual([...events].sort(byId));
    // A life event's envelope is unchanged: one event.
    const life = (marshallValue(ev(3, 'video.completed') as never) as { M: ImageJson }).M;
    expect(eventItemsOf(busEventOf({ eventName: 'INSERT', dynamodb: { NewImage: life } }).detail)).toEqual([ev(3, 'video.completed')]);
  });
});
