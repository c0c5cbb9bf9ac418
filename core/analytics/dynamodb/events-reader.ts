/**
 * The one reader of the events outbox table (issue 22): a video's events in event-id order
 * (ids sort by frame, then kind, rule, track), and the touch that delivers them again.
 * `affinity events`, `affinity counts`, the demo, the benches, the simulation and the tests
 * read through it; delivery to consumers goes through the table's stream.
 */
import { QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { eventIdFramePrefix, type EventItem } from '../event-schema.ts';
import { REDELIVERY_ATTRIBUTE } from '../event-delivery.ts';

/** Which of a video's events: all of them, those after `afterEventId`, or those from `fromFrame` on. */
export interface EventsFrom {
  readonly afterEventId?: string;
  readonly fromFrame?: number;
}

/** A video's events in id order, one strongly consistent Query page at a time. */
export async function* queryEvents(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string, o: EventsFrom = {}): AsyncGenerator<EventItem[]> {
  let key: Record<string, unknown> | undefined;
  const values: Record<string, unknown> = { ':v': videoId };
  let condition = 'videoId = :v';
  if (o.afterEventId !== undefined) {
    condition += ' AND eventId > :after';
    values[':after'] = o.afterEventId;
  } else if (o.fromFrame !== undefined) {
    condition += ' AND eventId >= :from';
    values[':from'] = eventIdFramePrefix(o.fromFrame);
  }
  do {
    const r = await ddb.send(
      new QueryCommand({
        TableName: eventsTable,
        KeyConditionExpression: condition,
        ExpressionAttributeValues: values,
        ConsistentRead: true,
        ...(key ? { ExclusiveStartKey: key } : {}),
      }),
    );
    const items = (r.Items ?? []) as EventItem[];
    if (items.length > 0) yield items;
    key = r.LastEvaluatedKey;
  } while (key);
}

/** Every event of a video, ascending by event id (strongly consistent). */
export async function allEvents(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string): Promise<EventItem[]> {
  const out: EventItem[] = [];
  for await (const page of queryEvents(ddb, eventsTable, videoId)) out.push(...page);
  return out;
}

/**
 * Touches each of a video's events (from `fromFrame` on; ADD redelivery 1, only if the item
 * exists) so the pipe, or the local relay, delivers it again as a MODIFY that passes its
 * filter. Returns how many.
 */
export async function redeliverEvents(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string, fromFrame?: number): Promise<number> {
  let n = 0;
  for await (const page of queryEvents(ddb, eventsTable, videoId, fromFrame !== undefined ? { fromFrame } : {})) {
    for (const e of page) {
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
      n++;
    }
  }
  return n;
}
