/** Reads of the analytics events outbox (issue 22), shared by `affinity events`, `affinity counts` and the demo. */
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { EventItem } from '../core/analytics/event-schema.ts';
import { REDELIVERY_ATTRIBUTE } from '../core/analytics/event-delivery.ts';
import { eventsOfItem, unpackEvents, type StoredEventItem } from '../core/analytics/event-packing.ts';
import { allEvents as readAllEvents, storedEventPages, storedEventsFrom } from '../core/analytics/dynamodb/events-reader.ts';
import type { Target } from './target.ts';

type EventsTarget = Pick<Target, 'clients' | 'eventsTable'>;

const ddbOf = (target: EventsTarget) => target.clients.ddb as DynamoDBDocumentClient;

/**
 * A video's events in id order (by frame, then kind, rule, track), one Query page at a
 * time, rule events unpacked from their batches: all of them, those stored after
 * `afterKey` (the `lastKey` of an earlier page: `--follow`), or those from `fromFrame`
 * on (a batch that starts before the frame and runs into it included).
 */
export async function* queryEvents(target: EventsTarget, videoId: string, o: { afterKey?: string; fromFrame?: number } = {}): AsyncGenerator<{ events: EventItem[]; lastKey: string }> {
  if (o.afterKey === undefined && o.fromFrame !== undefined) {
    const from = o.fromFrame;
    const items = await storedEventsFrom(ddbOf(target), target.eventsTable, videoId, from);
    if (items.length > 0) yield { events: unpackEvents(items).filter((e) => e.frame >= from), lastKey: items.at(-1)!.eventId };
    return;
  }
  for await (const page of storedEventPages(ddbOf(target), target.eventsTable, videoId, o.afterKey !== undefined ? { afterKey: o.afterKey } : {})) {
    yield { events: unpackEvents(page), lastKey: page.at(-1)!.eventId };
  }
}

/** Every event of a video, in id order. */
export async function allEvents(target: EventsTarget, videoId: string): Promise<EventItem[]> {
  return readAllEvents(ddbOf(target), target.eventsTable, videoId);
}

/**
 * Touches each stored item (ADD redelivery 1, only if the item exists) so the pipe, or the
 * local relay, delivers it again as a MODIFY that passes its filter: a batch of rule
 * events goes again whole. Returns how many events that delivers again.
 */
export async function redeliverEvents(target: EventsTarget, videoId: string, fromFrame?: number): Promise<number> {
  const items: StoredEventItem[] = [];
  if (fromFrame !== undefined) items.push(...(await storedEventsFrom(ddbOf(target), target.eventsTable, videoId, fromFrame)));
  else for await (const page of storedEventPages(ddbOf(target), target.eventsTable, videoId)) items.push(...page);
  let n = 0;
  for (const e of items) {
    await target.clients.ddb.send(
      new UpdateCommand({
        TableName: target.eventsTable,
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
