/** Reads the results contract (core/commit/results.ts): frame records in frame order (packed runs expanded) and the summary. */
import type { RecordReader } from '../port.ts';
import { GetCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SUMMARY_FRAME, type FrameResultItem, type VideoSummaryItem } from '../results.ts';
import { expandStored, isPacked, type PackedRecordsItem, type StoredResultItem } from '../record-packing.ts';

/** Where the results table is. */
export interface ResultsSource {
  readonly ddb: DynamoDBDocumentClient;
  readonly resultsTable: string;
}

/**
 * The packed item whose run covers `frame` from below (its key is under `frame`), if any:
 * one Query for the nearest item below, which is that item when a run covers `frame`
 * (frames inside a run have no item of their own).
 */
async function packCovering(source: ResultsSource, videoId: string, frame: number): Promise<PackedRecordsItem | undefined> {
  if (frame <= 0) return undefined;
  const r = await source.ddb.send(
    new QueryCommand({
      TableName: source.resultsTable,
      KeyConditionExpression: 'videoId = :v AND #f BETWEEN :zero AND :below',
      ExpressionAttributeNames: { '#f': 'frame' },
      ExpressionAttributeValues: { ':v': videoId, ':zero': 0, ':below': frame - 1 },
      ScanIndexForward: false,
      Limit: 1,
      ConsistentRead: true,
    }),
  );
  const item = r.Items?.[0] as StoredResultItem | undefined;
  return item && isPacked(item) && item.frame + item.packedCount > frame ? item : undefined;
}

/**
 * Streams a video's per-frame results in frame order, one page at a time (the summary
 * item at frame -1 is excluded by the key condition), packed items expanded into their
 * frames (record-packing.ts) and clipped to the range: a run that starts below
 * `fromFrame` and covers it is found by one more Query. `nonOkOnly` filters server-side
 * (packed items pass the filter and are filtered once expanded); `pageSize` caps the
 * items a page reads (DynamoDB's `Limit`; default: up to 1 MB a page).
 */
export async function* queryResults(
  source: ResultsSource,
  videoId: string,
  options: { fromFrame?: number; beforeFrame?: number; nonOkOnly?: boolean; pageSize?: number } = {},
): AsyncGenerator<FrameResultItem[]> {
  const from = Math.max(0, options.fromFrame ?? 0);
  const to = options.beforeFrame !== undefined ? options.beforeFrame - 1 : Number.POSITIVE_INFINITY;
  // DynamoDB rejects a BETWEEN whose bounds are reversed: an empty range reads nothing.
  if (to < from) return;
  const wanted = (r: FrameResultItem) => !options.nonOkOnly || r.status !== 'ok';
  const covering = await packCovering(source, videoId, from);
  if (covering) {
    const records = expandStored(covering, from, to).filter(wanted);
    if (records.length > 0) yield records;
  }
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
          ':from': from,
          ...(options.beforeFrame !== undefined ? { ':to': to } : {}),
          ...(options.nonOkOnly ? { ':ok': 'ok' } : {}),
        },
        ConsistentRead: true,
        ...(options.pageSize !== undefined ? { Limit: options.pageSize } : {}),
        ExclusiveStartKey: start,
      }),
    );
    const records = ((r.Items ?? []) as StoredResultItem[]).flatMap((item) => expandStored(item, from, to)).filter(wanted);
    if (records.length > 0) yield records;
    start = r.LastEvaluatedKey;
  } while (start);
}

/** A video's stored result items (summary excluded), page by page in key order; `projection` names the attributes to read. */
async function* storedPages(source: ResultsSource, videoId: string, projection?: { expression: string; names: Record<string, string> }): AsyncGenerator<StoredResultItem[]> {
  let start: Record<string, unknown> | undefined;
  do {
    const r = await source.ddb.send(
      new QueryCommand({
        TableName: source.resultsTable,
        KeyConditionExpression: 'videoId = :v AND #f >= :zero',
        ExpressionAttributeNames: { '#f': 'frame', ...projection?.names },
        ExpressionAttributeValues: { ':v': videoId, ':zero': 0 },
        ...(projection ? { ProjectionExpression: projection.expression } : { ConsistentRead: true }),
        ExclusiveStartKey: start,
      }),
    );
    yield (r.Items ?? []) as StoredResultItem[];
    start = r.LastEvaluatedKey;
  } while (start);
}

/**
 * A video's result items as the table stores them (per-frame records and packed runs, not
 * expanded; summary excluded), in key order, read consistently: for measuring what storage
 * costs, and for tests of the stored shape. Readers of records use {@link queryResults}.
 */
export async function storedResultItems(source: ResultsSource, videoId: string): Promise<StoredResultItem[]> {
  const out: StoredResultItem[] = [];
  for await (const page of storedPages(source, videoId)) out.push(...page);
  return out;
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

/** How many frame records a video has (summary excluded; a packed item counts its frames); reads two attributes per item. */
export async function countResults(source: ResultsSource, videoId: string): Promise<number> {
  let n = 0;
  for await (const page of storedPages(source, videoId, { expression: '#s, packedCount', names: { '#s': 'status' } })) {
    for (const item of page) n += isPacked(item) ? item.packedCount : 1;
  }
  return n;
}

/**
 * One frame's record, read consistently (the source of truth for late vs. duplicate): one
 * Query for the nearest item at or below the frame, which is the frame's own item or the
 * packed run that covers it.
 */
export async function getFrameResult(source: ResultsSource, videoId: string, frame: number): Promise<FrameResultItem | undefined> {
  const item = await storedItemAt(source, videoId, frame, { consistent: true });
  return item ? expandStored(item, frame, frame)[0] : undefined;
}

/**
 * The item as stored (a frame's record or the packed run that covers it, not expanded) at
 * or below `frame`: what a frame's record costs to store and write (`affinity status`'s estimate).
 */
export async function storedItemAt(source: ResultsSource, videoId: string, frame: number, o: { readonly consistent?: boolean } = {}): Promise<StoredResultItem | undefined> {
  if (frame < 0) return undefined;
  const r = await source.ddb.send(
    new QueryCommand({
      TableName: source.resultsTable,
      KeyConditionExpression: 'videoId = :v AND #f BETWEEN :zero AND :frame',
      ExpressionAttributeNames: { '#f': 'frame' },
      ExpressionAttributeValues: { ':v': videoId, ':zero': 0, ':frame': frame },
      ScanIndexForward: false,
      Limit: 1,
      ...(o.consistent ? { ConsistentRead: true } : {}),
    }),
  );
  return r.Items?.[0] as StoredResultItem | undefined;
}

/**
 * The nearest processed record (`ok` or `late`, so with detections) below or above
 * `frame`, looking at most `maxDistance` frames away: the neighbours a late frame's track
 * IDs are associated from. Reads the records of that window (packed runs expanded).
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
  if (hi < lo) return undefined;
  const processed: FrameResultItem[] = [];
  for await (const page of queryResults(source, videoId, { fromFrame: lo, beforeFrame: hi + 1 })) processed.push(...page.filter((it) => it.status === 'ok' || it.status === 'late'));
  return before ? processed[processed.length - 1] : processed[0];
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
