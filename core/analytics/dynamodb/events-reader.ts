/**
 * Reads a video's events from the outbox table (issue 22), in event-id order (ids sort by
 * frame), rule events unpacked from their batches (event-packing.ts). For tests, benches,
 * tools and the operator's commands; delivery to consumers goes through the table's stream.
 */
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { framePrefix, type EventItem } from '../event-schema.ts';
import { isRuleEventsItem, unpackEvents, type StoredEventItem } from '../event-packing.ts';

/** A video's stored items (life events and batches) in key order, one Query page at a time; from `afterKey` on when given. */
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
 * The stored items that hold events of `fromFrame` or later: those keyed at or after the
 * frame, and the one batch before it that runs into it (a unit's batch starts before the
 * next unit's frames, so only the last batch keyed before the frame can).
 */
export async function storedEventsFrom(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string, fromFrame: number): Promise<StoredEventItem[]> {
  const from = framePrefix(fromFrame);
  const out: StoredEventItem[] = [];
  let start: Record<string, unknown> | undefined;
  // Newest first below the frame, until the first batch (life events may come between).
  search: do {
    const r = await ddb.send(
      new QueryCommand({
        TableName: eventsTable,
        KeyConditionExpression: 'videoId = :v AND eventId BETWEEN :lo AND :hi',
        // Frame ids start with a digit; '-' (frame -1's prefix) sorts before them.
        ExpressionAttributeValues: { ':v': videoId, ':lo': '0', ':hi': from },
        ScanIndexForward: false,
        ConsistentRead: true,
        Limit: 25,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of (r.Items ?? []) as StoredEventItem[]) {
      if (item.eventId >= from) continue;
      if (isRuleEventsItem(item)) {
        if (item.lastFrame >= fromFrame) out.push(item);
        break search;
      }
    }
    start = r.LastEvaluatedKey;
  } while (start);
  for await (const page of storedEventPages(ddb, eventsTable, videoId, { fromKey: from })) out.push(...page);
  return out;
}

/** Every event of a video, ascending by event id (strongly consistent), batches unpacked. */
export async function allEvents(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string): Promise<EventItem[]> {
  const out: StoredEventItem[] = [];
  for await (const page of storedEventPages(ddb, eventsTable, videoId)) out.push(...page);
  return unpackEvents(out);
}
