/**
 * Reads a video's events from the outbox table (issue 22), in event-id order (ids sort by
 * frame). For tests, benches and tools; delivery to consumers goes through the table's stream.
 */
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { EventItem } from '../event-schema.ts';

/** Every event of a video, ascending by event id (strongly consistent). */
export async function allEvents(ddb: DynamoDBDocumentClient, eventsTable: string, videoId: string): Promise<EventItem[]> {
  const out: EventItem[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const r = await ddb.send(
      new QueryCommand({
        TableName: eventsTable,
        KeyConditionExpression: 'videoId = :v',
        ExpressionAttributeValues: { ':v': videoId },
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    out.push(...((r.Items ?? []) as EventItem[]));
    start = r.LastEvaluatedKey;
  } while (start);
  return out;
}
