/**
 * Reads a video's events from the outbox table (issue 22), in event-id order (ids sort by
 * frame), rule events unpacked from their batches (event-packing.ts). For tests, benches,
 * tools and the operator's commands; delivery to consumers goes through the table's stream.
 */
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { framePrefix, type EventItem } from '../event-schema.ts';
import { unpackEvents, type StoredEventItem } from '../event-packing.ts';

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
 * The stored items that hold events of `fromFrame` or later: those keyed from the frame's
 * id prefix on. A batch's key starts with its highest frame (event-packing.ts), so a batch
 * with an event of the frame or later is among them; it may hold earlier events too.
 */
export async function storedEventsFrom(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string, fromFrame: number): Promise<StoredEventItem[]> {
  const out: StoredEventItem[] = [];
  for await (const page of storedEventPages(ddb, eventsTable, videoId, { fromKey: framePrefix(fromFrame) })) out.push(...page);
  return out;
}

/** Every event of a video, ascending by event id (strongly consistent), batches unpacked. */
export async function allEvents(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string): Promise<EventItem[]> {
  const out: StoredEventItem[] = [];
  for await (const page of storedEventPages(ddb, eventsTable, videoId)) out.push(...page);
  return unpackEvents(out);
}
