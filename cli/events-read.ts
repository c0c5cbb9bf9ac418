/** Reads of the analytics events outbox (issue 22), shared by `affinity events`, `affinity counts` and the demo. */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { EventItem } from '../core/analytics/event-schema.ts';
import { REDELIVERY_ATTRIBUTE } from '../core/analytics/event-delivery.ts';
import type { Target } from './target.ts';

type EventsTarget = Pick<Target, 'clients' | 'eventsTable'>;

/** The id prefix of a frame (event ids start with the zero-padded frame, core/analytics/event-schema.ts). */
export function framePrefix(frame: number): string {
  return frame < 0 ? `-${String(-frame).padStart(10, '0')}` : String(frame).padStart(10, '0');
}

/**
 * A video's events in id order (by frame, then kind, rule, track), one Query page at a
 * time: all of them, those after `afterEventId`, or those from `fromFrame` on.
 */
export async function* queryEvents(target: EventsTarget, videoId: string, o: { afterEventId?: string; fromFrame?: number } = {}): AsyncGenerator<EventItem[]> {
  let key: Record<string, unknown> | undefined;
  const values: Record<string, unknown> = { ':v': videoId };
  let condition = 'videoId = :v';
  if (o.afterEventId !== undefined) {
    condition += ' AND eventId > :after';
    values[':after'] = o.afterEventId;
  } else if (o.fromFrame !== undefined) {
    condition += ' AND eventId >= :from';
    values[':from'] = framePrefix(o.fromFrame);
  }
  do {
    const r = await target.clients.ddb.send(
      new QueryCommand({ TableName: target.eventsTable, KeyConditionExpression: condition, ExpressionAttributeValues: values, ExclusiveStartKey: key, ConsistentRead: true }),
    );
    const items = (r.Items ?? []) as EventItem[];
    if (items.length > 0) yield items;
    key = r.LastEvaluatedKey;
  } while (key);
}

/** Every event of a video, in id order. */
export async function allEvents(target: EventsTarget, videoId: string): Promise<EventItem[]> {
  const out: EventItem[] = [];
  for await (const page of queryEvents(target, videoId)) out.push(...page);
  return out;
}

/**
 * Touches each event (ADD redelivery 1, only if the item exists) so the pipe, or the local
 * relay, delivers it again as a MODIFY that passes its filter. Returns how many.
 */
export async function redeliverEvents(target: EventsTarget, videoId: string, fromFrame?: number): Promise<number> {
  let n = 0;
  for await (const page of queryEvents(target, videoId, fromFrame !== undefined ? { fromFrame } : {})) {
    for (const e of page) {
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
      n++;
    }
  }
  return n;
}
