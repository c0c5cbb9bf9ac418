/**
 * The one reader of the events outbox table (issue 22): a video's events in event-id order
 * (ids sort by frame, then kind, rule, track), rule events unpacked from their batches
 * (event-packing.ts, decision 72), and the touch that delivers them again. `affinity events`,
 * `affinity counts`, the demo, the benches, the simulation and the tests read through it;
 * delivery to consumers goes through the table's stream.
 */
import { QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { framePrefix, type EventItem } from '../event-schema.ts';
import { REDELIVERY_ATTRIBUTE } from '../event-delivery.ts';
import { eventsOfItem, unpackEvents, type StoredEventItem } from '../event-packing.ts';

/** A video's stored items (life events and batches) in key order, one Query page at a time; after `afterKey`, or from `fromKey`, when given. */
export async function* storedEventPages(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string, o: { afterKey?: string; fromKey?: string } = {}): AsyncGenerator<StoredEventItem[]> {
  let start: Record<string, unknown> | undefined;
  const values: Record<string, unknown> = { ':v': videoId };
  let condition = 'videoId = :v';
  if (o.afterKey !== undefined) {
    condition += ' AND eventId > :after';
    values[':after'] = o.afterKey;
  } else if (o.fromKey !== undefined) {
    condition += ' AND eventId >= :from';
    values[':from'] = o.fromKey;
  }
  do {
    const r = await ddb.send(
      new QueryCommand({
        TableName: eventsTable,
        KeyConditionExpression: condition,
        ExpressionAttributeValues: values,
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    const items = (r.Items ?? []) as StoredEventItem[];
    if (items.length > 0) yield items;
    start = r.LastEvaluatedKey;
  } while (start);
}

/**
 * The stored items that hold events of `fromFrame` or later: those keyed from the frame's
 * id prefix on. A batch's key starts with its highest frame (event-packing.ts), so a batch
 * with an event of the frame or later is among them; it may hold earlier events too.
 */
export async function storedEventsFrom(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string, fromFrame: number): Promise<StoredEventItem[]> {
  const out: StoredEventItem[] = [];
  for await (const page of storedEventPages(ddb, eventsTable, videoId, { fromKey: framePrefix(fromFrame) })) out.push(...page);
  return out;
}

/** Which of a video's events: all of them, those stored after `afterKey` (the `lastKey` of an earlier page: `--follow`), or those from `fromFrame` on. */
export interface EventsFrom {
  readonly afterKey?: string;
  readonly fromFrame?: number;
}

/**
 * A video's events in id order, one page at a time, rule events unpacked from their
 * batches; each page with the key of its last stored item (to follow on from it).
 */
export async function* queryEvents(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string, o: EventsFrom = {}): AsyncGenerator<{ events: EventItem[]; lastKey: string }> {
  if (o.afterKey === undefined && o.fromFrame !== undefined) {
    const from = o.fromFrame;
    const items = await storedEventsFrom(ddb, eventsTable, videoId, from);
    if (items.length > 0) yield { events: unpackEvents(items).filter((e) => e.frame >= from), lastKey: items.at(-1)!.eventId };
    return;
  }
  for await (const page of storedEventPages(ddb, eventsTable, videoId, o.afterKey !== undefined ? { afterKey: o.afterKey } : {})) {
    yield { events: unpackEvents(page), lastKey: page.at(-1)!.eventId };
  }
}

/** Every event of a video, ascending by event id (strongly consistent), batches unpacked. */
export async function allEvents(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string): Promise<EventItem[]> {
  const out: StoredEventItem[] = [];
  for await (const page of storedEventPages(ddb, eventsTable, videoId)) out.push(...page);
  return unpackEvents(out);
}

/**
 * Touches each stored item (from `fromFrame` on; ADD redelivery 1, only if the item exists)
 * so the pipe, or the local relay, delivers it again as a MODIFY that passes its filter: a
 * batch of rule events goes again whole. Returns how many events that delivers again.
 */
export async function redeliverEvents(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string, fromFrame?: number): Promise<number> {
  const items: StoredEventItem[] = [];
  if (fromFrame !== undefined) items.push(...(await storedEventsFrom(ddb, eventsTable, videoId, fromFrame)));
  else for await (const page of storedEventPages(ddb, eventsTable, videoId)) items.push(...page);
  let n = 0;
  for (const e of items) {
    await ddb.send(
      new UpdateCommand({
        TableName: eventsTable,
        Key: { videoId: e.videoId, eventId: e.eventId },
        UpdateExpression: 'ADD #r :one',
        ConditionExpression: 'attribute_exists(eventId)',
        ExpressionAttributeNames: { '#r': REDELIVERY_ATTRIBUTE },
        ExpressionAttributeValues: { ':one': 1 },
      }),
    );
    n += eventsOfItem(e).length;
  }
  return n;
}
