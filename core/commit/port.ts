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
