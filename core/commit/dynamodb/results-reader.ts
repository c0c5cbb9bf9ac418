/** Reads the results contract (core/commit/results.ts): per-frame items in frame order and the summary. */
import type { RecordReader } from '../port.ts';
import { GetCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SUMMARY_FRAME, type FrameResultItem, type VideoSummaryItem } from '../results.ts';

/** Where the results table is. */
export interface ResultsSource {
  readonly ddb: DynamoDBDocumentClient;
  readonly resultsTable: string;
}

/**
 * Streams a video's per-frame results in frame order, one page at a time (the summary
 * item at frame -1 is excluded by the key condition). `nonOkOnly` filters server-side;
 * `pageSize` caps the items a page reads (DynamoDB's `Limit`; default: up to 1 MB a page).
 */
export async function* queryResults(
  source: ResultsSource,
  videoId: string,
  options: { fromFrame?: number; beforeFrame?: number; nonOkOnly?: boolean; pageSize?: number } = {},
): AsyncGenerator<FrameResultItem[]> {
  let start: Record<string, unknown> | undefined;
  const range = options.beforeFrame !== undefined ? '#f BETWEEN :from AND :to' : '#f >= :from';
  do {
    const r = await source.ddb.send(
      new QueryCommand({
        TableName: source.resultsTable,
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
        ...(options.pageSize !== undefined ? { Limit: options.pageSize } : {}),
        ExclusiveStartKey: start,
      }),
    );
    const items = (r.Items ?? []) as FrameResultItem[];
    if (items.length > 0) yield items;
    start = r.LastEvaluatedKey;
  } while (start);
}

/** All results of a video in frame order. */
export async function allResults(source: ResultsSource, videoId: string): Promise<FrameResultItem[]> {
  const out: FrameResultItem[] = [];
  for await (const page of queryResults(source, videoId)) out.push(...page);
  return out;
}

/** The per-video summary (one GetItem). */
export async function getSummary(source: ResultsSource, videoId: string): Promise<VideoSummaryItem | undefined> {
  const r = await source.ddb.send(new GetCommand({ TableName: source.resultsTable, Key: { videoId, frame: SUMMARY_FRAME }, ConsistentRead: true }));
  return r.Item as VideoSummaryItem | undefined;
}

/** How many per-frame results a video has (summary excluded); reads no item bodies. */
export async function countResults(source: ResultsSource, videoId: string): Promise<number> {
  let n = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const r = await source.ddb.send(
      new QueryCommand({
        TableName: source.resultsTable,
        KeyConditionExpression: 'videoId = :v AND #f >= :zero',
        ExpressionAttributeNames: { '#f': 'frame' },
        ExpressionAttributeValues: { ':v': videoId, ':zero': 0 },
        Select: 'COUNT',
        ExclusiveStartKey: start,
      }),
    );
    n += r.Count ?? 0;
    start = r.LastEvaluatedKey;
  } while (start);
  return n;
}

/** One frame's record, read consistently (the source of truth for late vs. duplicate). */
export async function getFrameResult(source: ResultsSource, videoId: string, frame: number): Promise<FrameResultItem | undefined> {
  const r = await source.ddb.send(new GetCommand({ TableName: source.resultsTable, Key: { videoId, frame }, ConsistentRead: true }));
  return r.Item as FrameResultItem | undefined;
}

/**
 * The nearest processed record (`ok` or `late`, so with detections) below or above
 * `frame`, looking at most `maxDistance` frames away: the neighbours a late frame's track
 * IDs are associated from. One Query (a page of up to `maxDistance` items).
 */
export async function nearestProcessed(
  source: ResultsSource,
  videoId: string,
  frame: number,
  direction: 'before' | 'after',
  maxDistance = 30,
): Promise<FrameResultItem | undefined> {
  const before = direction === 'before';
  const lo = before ? Math.max(0, frame - maxDistance) : frame + 1;
  const hi = before ? frame - 1 : frame + maxDistance;
  // Nothing comes before frame 0; DynamoDB rejects a BETWEEN whose bounds are reversed.
  if (hi < lo) return undefined;
  const r = await source.ddb.send(
    new QueryCommand({
      TableName: source.resultsTable,
      KeyConditionExpression: 'videoId = :v AND #f BETWEEN :lo AND :hi',
      ExpressionAttributeNames: { '#f': 'frame' },
      ExpressionAttributeValues: {
        ':v': videoId,
        ':lo': lo,
        ':hi': hi,
      },
      ScanIndexForward: !before,
      ConsistentRead: true,
    }),
  );
  return ((r.Items ?? []) as FrameResultItem[]).find((it) => it.status === 'ok' || it.status === 'late');
}

/** The records port (core/commit/port.ts) on the results table. */
export class DynamoDbRecords implements RecordReader {
  private readonly source: ResultsSource;

  constructor(source: ResultsSource) {
    this.source = source;
  }

  get(videoId: string, frame: number): Promise<FrameResultItem | undefined> {
    return getFrameResult(this.source, videoId, frame);
  }

  async range(videoId: string, from: number, to: number): Promise<FrameResultItem[]> {
    const out: FrameResultItem[] = [];
    for await (const page of queryResults(this.source, videoId, { fromFrame: from, beforeFrame: to + 1 })) out.push(...page);
    return out;
  }

  nearestProcessed(videoId: string, frame: number, direction: 'before' | 'after', maxDistance: number): Promise<FrameResultItem | undefined> {
    return nearestProcessed(this.source, videoId, frame, direction, maxDistance);
  }
}
