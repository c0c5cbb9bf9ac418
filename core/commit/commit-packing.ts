/**
 * Sizing of fenced commits against DynamoDB's limits: an item is at most 400 KB, and a
 * transaction at most 100 items and 4 MB. Sizes are estimated as the UTF-8 length of the
 * item's JSON, which is at least DynamoDB's own count (attribute names and values) for
 * the shapes we store, so the caps below keep a margin.
 */
import type { VideoCheckpoint } from './checkpoint.ts';
import type { FrameResultItem, VideoSummaryItem } from './results.ts';
import type { EventItem } from '../analytics/event-schema.ts';
import { packEvents, type StoredEventItem } from '../analytics/event-packing.ts';
import { storedItemBytes, storedItems, type StoredResultItem } from './record-packing.ts';

/** Items one TransactWriteItems may hold (the first is the slot's ConditionCheck). */
export const MAX_TRANSACT_ITEMS = 100;
/** Bytes one transaction may carry, with a margin under DynamoDB's 4 MB. */
export const MAX_TRANSACTION_BYTES = 3_000_000;
/**
 * Largest checkpoint a video item may hold, with room under the 400 KB item limit for the
 * item's other attributes. The worker compacts tracker state to stay under it.
 */
export const MAX_CHECKPOINT_BYTES = 300_000;

/** Everything one video commits at once: results, the checkpoint that covers them, the summary. */
export interface CommitUnit {
  readonly videoId: string;
  readonly token: number;
  /** The checkpoint's `seq` before this commit; the new checkpoint has seq + 1. */
  readonly expectedSeq: number;
  /**
   * The `commitId` of the checkpoint this commit replaces (the last committed one). The
   * unit's own id is `checkpoint.commitId`: the unit landed iff the stored checkpoint
   * carries it; a stored checkpoint still carrying `expectedCommitId` proves it did not.
   */
  readonly expectedCommitId: string;
  readonly checkpoint: VideoCheckpoint;
  readonly results: readonly FrameResultItem[];
  /** Frames whose result may replace an existing `gap` record (late frames); every other result is create-only. */
  readonly replacesGap?: readonly number[];
  readonly summary: VideoSummaryItem;
  /**
   * Outbox items (issue 22): the events these results and this checkpoint cause, written
   * in the same transaction so that an event exists iff its commit landed.
   */
  readonly events?: readonly EventItem[];
}

const storedShapes = new WeakMap<CommitUnit, readonly StoredResultItem[]>();

/**
 * A unit's results as they are written (record-packing.ts), built once per unit: packing
 * compresses, and a unit is sized for its round, packed into groups and sent (perhaps more
 * than once). Units are immutable; a changed unit is a new object.
 */
export function storedItemsOf(u: CommitUnit): readonly StoredResultItem[] {
  let stored = storedShapes.get(u);
  if (!stored) {
    stored = storedItems(u.results, u.replacesGap);
    storedShapes.set(u, stored);
  }
  return stored;
}

/** Estimated stored size of a value, in bytes. */
export function estimatedBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

const storedEvents = new WeakMap<CommitUnit, readonly StoredEventItem[]>();

/**
 * A unit's events as written to the outbox (core/analytics/event-packing.ts): its rule
 * events in one batch item (more only past the batch's size), its life events one item
 * each. Built once per unit, like {@link storedItemsOf}.
 */
export function storedEventsOf(u: CommitUnit): readonly StoredEventItem[] {
  let stored = storedEvents.get(u);
  if (!stored) {
    stored = packEvents(u.events ?? []);
    storedEvents.set(u, stored);
  }
  return stored;
}

/**
 * Items and bytes a unit adds to a transaction: the checkpoint update, its results as
 * stored (a segment's run packed into one item: record-packing.ts), the summary, its
 * events as stored (rule events batched).
 */
export function unitCost(u: CommitUnit): { items: number; bytes: number } {
  const events = storedEventsOf(u);
  const stored = storedItemsOf(u);
  // The checkpoint's rules document may ride along (stored out of line, decision 76): counted
  // whenever there is one, since whether it is written depends on what the store knows.
  const rules = u.checkpoint.analytics?.rules;
  const bytes = estimatedBytes(u.checkpoint) + estimatedBytes(u.summary) + stored.reduce((n, r) => n + storedItemBytes(r), 0) + events.reduce((n, e) => n + estimatedBytes(e), 0) + (rules ? estimatedBytes(rules) : 0);
  return { items: stored.length + 2 + events.length + (rules ? 1 : 0), bytes };
}

/**
 * Whether a unit fits one transaction by itself (with the slot's ConditionCheck). A unit
 * whose frames raised more events than fit is not committed: the round is rolled back and
 * re-run with fewer frames (round-builder.ts), so a frame and its events are never split.
 */
export function unitFits(u: CommitUnit, maxItems = MAX_TRANSACT_ITEMS - 1, maxBytes = MAX_TRANSACTION_BYTES): boolean {
  const cost = unitCost(u);
  return cost.items <= maxItems && cost.bytes <= maxBytes;
}

/**
 * What makes a unit malformed for DynamoDB before anything is sent, or undefined: a
 * transaction may name each item once (two operations on one item are a
 * ValidationException in DynamoDB; DynamoDB Local reports a condition failure instead,
 * which hid this), so a unit may carry one result per frame and one event per id. The
 * video item and the summary are one each by construction.
 */
export function unitProblem(u: CommitUnit): string | undefined {
  const frames = new Set<number>();
  for (const r of u.results) {
    if (frames.has(r.frame)) return `two results for frame ${r.frame}`;
    frames.add(r.frame);
  }
  const ids = new Set<string>();
  for (const e of u.events ?? []) {
    if (ids.has(e.eventId)) return `two events with id ${e.eventId}`;
    ids.add(e.eventId);
  }
  return undefined;
}

/** Packs commit units, in order, into groups that fit one transaction by item count and by size. */
export function packUnits(units: readonly CommitUnit[], maxItems = MAX_TRANSACT_ITEMS - 1, maxBytes = MAX_TRANSACTION_BYTES): CommitUnit[][] {
  const groups: CommitUnit[][] = [];
  let current: CommitUnit[] = [];
  let items = 0;
  let bytes = 0;
  for (const u of units) {
    const cost = unitCost(u);
    if (cost.items > maxItems) throw new Error(`commit unit for ${u.videoId} has ${cost.items} items; split it before committing`);
    if (cost.bytes > maxBytes) throw new Error(`commit unit for ${u.videoId} is ${cost.bytes} bytes; split it before committing`);
    if ((items + cost.items > maxItems || bytes + cost.bytes > maxBytes) && current.length > 0) {
      groups.push(current);
      current = [];
      items = 0;
      bytes = 0;
    }
    current.push(u);
    items += cost.items;
    bytes += cost.bytes;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
