/** Read helpers over the results table, shared by the commands and the demo. */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { LeaseStore } from '../core/lease-store.ts';
import type { FrameResultItem, VideoSummaryItem } from '../core/results.ts';
import type { Target } from './target.ts';

/**
 * Streams a video's per-frame results in frame order, one page at a time (the summary
 * item at frame -1 is excluded by the key condition). `nonOkOnly` filters server-side.
 */
export async function* queryResults(
  target: Pick<Target, 'clients' | 'resultsTable'>,
  videoId: string,
  options: { fromFrame?: number; beforeFrame?: number; nonOkOnly?: boolean } = {},
): AsyncGenerator<FrameResultItem[]> {
  let start: Record<string, unknown> | undefined;
  const range = options.beforeFrame !== undefined ? '#f BETWEEN :from AND :to' : '#f >= :from';
  do {
    const r = await target.clients.ddb.send(
      new QueryCommand({
        TableName: target.resultsTable,
        KeyConditionExpression: `videoId = :v AND ${range}`,
        ...(options.nonOkOnly ? { FilterExpression: '#s <> :ok' } : {}),
        ExpressionAttributeNames: { '#f': 'frame', ...(options.nonOkOnly ? { '#s': 'status' } : {}) },
        ExpressionAttributeValues: {
          ':v': videoId,
          ':from': Math.max(0, options.fromFrame ?? 0),
          ...(options.beforeFrame !== undefined ? { ':to': options.beforeFrame - 1 } : {}),
          ...(options.nonOkOnly ? { ':ok': 'ok' } : {}),
        },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    const items = (r.Items ?? []) as FrameResultItem[];
    if (items.length > 0) yield items;
    start = r.LastEvaluatedKey;
  } while (start);
}

/** All results of a video in frame order. */
export async function allResults(target: Pick<Target, 'clients' | 'resultsTable'>, videoId: string): Promise<FrameResultItem[]> {
  const out: FrameResultItem[] = [];
  for await (const page of queryResults(target, videoId)) out.push(...page);
  return out;
}

export async function getSummary(target: Pick<Target, 'clients' | 'resultsTable'>, videoId: string): Promise<VideoSummaryItem | undefined> {
  const r = await target.clients.ddb.send(new GetCommand({ TableName: target.resultsTable, Key: { videoId, frame: -1 }, ConsistentRead: true }));
  return r.Item as VideoSummaryItem | undefined;
}

export function leaseStore(target: Target): LeaseStore {
  return new LeaseStore(target.clients.ddb, {
    tableName: target.leasesTable,
    resultsTableName: target.resultsTable,
    pinnedSlotIndex: target.pinnedSlotIndex,
    firstFrameNumber: target.firstFrameNumber,
  });
}
