/**
 * The records port: what the worker runtime reads of the results a commit wrote (decision
 * 12: a frame's record is the source of truth for late versus duplicate). Every read is
 * strongly consistent. No SDK here.
 *
 * Implementation: DynamoDB (core/commit/dynamodb/results-reader.ts, `DynamoDbRecords`), built by
 * composition roots only; the same adapter runs over the lease table's twin in tests.
 */
import type { FrameResultItem } from './results.ts';

export interface RecordReader {
  /** One frame's record; undefined when it has none. */
  get(videoId: string, frame: number): Promise<FrameResultItem | undefined>;
  /** The records of frames `from..to` (inclusive) that exist, ascending. */
  range(videoId: string, from: number, to: number): Promise<FrameResultItem[]>;
  /**
   * The nearest record with detections (`ok` or `late`) below or above `frame`, at most
   * `maxDistance` frames away: the neighbours a late frame's track ids come from.
   */
  nearestProcessed(videoId: string, frame: number, direction: 'before' | 'after', maxDistance: number): Promise<FrameResultItem | undefined>;
}

/**
 * What the operator operations (core/commit/operations/: `replay`, `reconcile`) read and
 * remove of a video's records. Every delete is conditional on the record's token, so an
 * operation never removes what a newer owner committed. No SDK here.
 *
 * Implementation: DynamoDB (core/commit/dynamodb/results-admin.ts), over the real table or
 * the lease table's twin (core/leases/memory/).
 */
export interface ResultsAdmin {
  /** A video's records in frame order, page by page (packed items expanded: one record per frame, each with `packed`). */
  pages(videoId: string, range?: { readonly fromFrame?: number; readonly beforeFrame?: number }): AsyncIterable<readonly FrameResultItem[]>;
  /**
   * Deletes the stored item at `frame` (a frame's record, or a packed item at its first
   * frame) when its token is at most `maxToken`: `deleted`, `absent` (nothing there), or
   * `newer` (committed under a newer token: kept).
   */
  deleteRecord(videoId: string, frame: number, maxToken: number): Promise<'deleted' | 'absent' | 'newer'>;
  /** Deletes the video's events of frames from `fromFrame` on whose token is at most `maxToken`; how many. */
  deleteEventsFrom(videoId: string, fromFrame: number, maxToken: number): Promise<number>;
  /**
   * Marks the video's summary active again with the given counts and token, unless a newer
   * token wrote it since or it does not exist; whether it was written.
   */
  reopenSummary(videoId: string, counts: SummaryCounts, token: number, nowMs: number): Promise<boolean>;
}

/** The counts a summary carries. */
export interface SummaryCounts {
  readonly framesOk: number;
  readonly framesLate: number;
  readonly framesFailed: number;
  readonly framesGap: number;
}
