/**
 * Rule events as stored (issue 44): a commit unit's rule events (line crossings, zone
 * entries, exits, dwells) are one outbox item per unit, a batch, not one item per event;
 * life events (video started, completed, frame failed, ...) stay one item each. Pure.
 *
 * Why: every outbox item is a write in the fenced transaction (2 write units per KB,
 * rounded up per item), a Pipes request and an EventBridge event. A busy scene raises
 * about 1.9 rule events a second per camera, ~$13 a camera-month as single items; a
 * 2-s segment's 3-4 events fit one 1-KB item, one Pipes request and one bus event
 * (docs/decisions.md 70, bench/README.md "Cost per camera-month").
 *
 * What stays: every event exists iff the commit that caused it landed (the batch is in
 * the same transaction), and every event keeps its deterministic id; readers
 * ({@link unpackEvents}) give back exactly the events that were packed. The batch's own
 * key is its last event's id with {@link BATCH_SUFFIX}: it starts with its highest frame,
 * so a range of keys from a frame's id prefix finds every batch holding an event of that
 * frame or later (a unit's events may reach back before its own frames: a rules change
 * exits tracks at the frame they were last seen); it never equals an event id (one more
 * `#` field), and a re-run of the same frames writes the same batch under the same key.
 */
import { DETAIL_TYPE, framePrefix, type EventItem, type EventKind, type RuleEventKind } from './event-schema.ts';

/** The `kind` of a batch item (not an event kind: readers unpack it). */
export const RULE_EVENTS_KIND = 'rule.events';
/** The bus event's `detail-type` of a batch (stored on the item, as every outbox item's). */
export const RULE_EVENTS_DETAIL_TYPE = 'Rule Events';
/** Appended to the last event's id to make the batch's key. */
export const BATCH_SUFFIX = '#batch';
/**
 * Largest batch, as the estimated bytes of its JSON: a unit with more rule events writes
 * several batches. The pipe delivers a batch as one bus event whose detail carries the
 * item in DynamoDB JSON (about twice the plain JSON), and puts up to 10 records in one
 * PutEvents call, whose request must stay under 256 KB in all: 10 full batches must fit
 * it (each also under 64 KB, Pipes' and EventBridge's billing chunk). A camera's batch is
 * 0.6-2 KB (bench/checkpoint-scene.ts).
 */
export const MAX_BATCH_BYTES = 10_000;

const RULE_KINDS: ReadonlySet<string> = new Set<RuleEventKind>(['line.crossed', 'zone.entered', 'zone.exited', 'zone.dwell']);

/** Whether an event is a rule event (packed) rather than a life event (stored alone). */
export function isRuleEvent(e: { readonly kind: string }): boolean {
  return RULE_KINDS.has(e.kind);
}

/** One rule event inside a batch: the event without what the batch holds once (video, token, time, detail type). */
export type PackedRuleEvent = Omit<EventItem, 'videoId' | 'detailType' | 'token' | 'atMs' | 'ttlEpochSeconds'>;

/** A batch of one unit's rule events, as stored in the outbox table and carried by the stream. */
export interface RuleEventsItem {
  readonly videoId: string;
  /** Sort key: the last event's id + {@link BATCH_SUFFIX} (it starts with the batch's highest frame). */
  readonly eventId: string;
  readonly kind: typeof RULE_EVENTS_KIND;
  readonly detailType: typeof RULE_EVENTS_DETAIL_TYPE;
  /** The first and last frame of its events (a replay from a frame inside it trims it). */
  readonly frame: number;
  readonly lastFrame: number;
  /** Ascending by frame; within a frame, in the order the rule engine raised them. */
  readonly events: readonly PackedRuleEvent[];
  readonly token: number;
  readonly atMs: number;
  /** TTL garbage collection (epoch seconds), when the unit's events carry one. */
  readonly ttlEpochSeconds?: number;
}

/** An item of the outbox table: a life event, or a batch of rule events. */
export type StoredEventItem = EventItem | RuleEventsItem;

export function isRuleEventsItem(item: { readonly kind: string }): item is RuleEventsItem {
  return item.kind === RULE_EVENTS_KIND;
}

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

function packed(e: EventItem): PackedRuleEvent {
  const { videoId: _v, detailType: _d, token: _t, atMs: _a, ttlEpochSeconds: _x, ...rest } = e;
  return rest;
}

/**
 * A unit's events as stored: its life events one item each, its rule events in batches of
 * at most {@link MAX_BATCH_BYTES}. Deterministic: the same events give the same items.
 * All events of a unit share its video, token, time and expiry (commit-events.ts).
 */
export function packEvents(events: readonly EventItem[], maxBatchBytes = MAX_BATCH_BYTES): StoredEventItem[] {
  const life = events.filter((e) => !isRuleEvent(e));
  // Stable by frame: the engine's order within a frame is kept.
  const rules = events
    .map((e, i) => ({ e, i }))
    .filter(({ e }) => isRuleEvent(e))
    .sort((a, b) => a.e.frame - b.e.frame || a.i - b.i)
    .map(({ e }) => e);
  const out: StoredEventItem[] = [...life];
  let chunk: EventItem[] = [];
  let chunkBytes = 0;
  const flush = () => {
    if (chunk.length === 0) return;
    const first = chunk[0]!;
    out.push({
      videoId: first.videoId,
      eventId: chunk.at(-1)!.eventId + BATCH_SUFFIX,
      kind: RULE_EVENTS_KIND,
      detailType: RULE_EVENTS_DETAIL_TYPE,
      frame: first.frame,
      lastFrame: chunk.at(-1)!.frame,
      events: chunk.map(packed),
      token: first.token,
      atMs: first.atMs,
      ...(first.ttlEpochSeconds !== undefined ? { ttlEpochSeconds: first.ttlEpochSeconds } : {}),
    });
    chunk = [];
    chunkBytes = 0;
  };
  for (const e of rules) {
    const b = bytes(packed(e));
    if (chunk.length > 0 && chunkBytes + b > maxBatchBytes) flush();
    chunk.push(e);
    chunkBytes += b;
  }
  flush();
  return out;
}

/** The events of one stored item (a batch's rule events, or the life event itself). */
export function eventsOfItem(item: StoredEventItem): EventItem[] {
  if (!isRuleEventsItem(item)) return [item];
  return item.events.map((e) => ({
    ...e,
    videoId: item.videoId,
    detailType: DETAIL_TYPE[e.kind as EventKind] ?? e.kind,
    token: item.token,
    atMs: item.atMs,
    ...(item.ttlEpochSeconds !== undefined ? { ttlEpochSeconds: item.ttlEpochSeconds } : {}),
  }));
}

/** Stored items back to events, ascending by event id (ids sort by frame), each once. */
export function unpackEvents(items: readonly StoredEventItem[]): EventItem[] {
  const out = items.flatMap(eventsOfItem);
  return out.sort((a, b) => (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0));
}

/**
 * What a replay from `fromFrame` leaves of a stored item: all of it (`keep`), none of it
 * (`delete`), or a batch trimmed to its events before the frame (`trim`), under a new key
 * (its new last event's, before the frame: the re-run's batches, all from the frame on,
 * can never be written over it). A life event is at its key's frame; a batch keyed at or
 * after the frame may hold events before it.
 */
export function replayCut(item: StoredEventItem, fromFrame: number): { readonly action: 'keep' } | { readonly action: 'delete' } | { readonly action: 'trim'; readonly item: RuleEventsItem; readonly removed: number } {
  if (!isRuleEventsItem(item)) return item.eventId >= framePrefix(fromFrame) ? { action: 'delete' } : { action: 'keep' };
  if (item.frame >= fromFrame) return { action: 'delete' };
  const kept = item.events.filter((e) => e.frame < fromFrame);
  if (kept.length === item.events.length) return { action: 'keep' };
  return { action: 'trim', item: { ...item, eventId: kept.at(-1)!.eventId + BATCH_SUFFIX, events: kept, lastFrame: kept.at(-1)!.frame }, removed: item.events.length - kept.length };
}
