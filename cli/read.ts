/** Read helpers over the results table, shared by the commands and the demo. */
import { allResults as coreAll, getSummary as coreSummary, queryResults as coreQuery, type ResultsSource } from '../core/commit/dynamodb/results-reader.ts';
import { S3VideoObjects } from '../core/ingest/s3/video-objects.ts';
import type { StoredObject } from '../core/ingest/port.ts';
import { LeaseStore } from '../core/leases/dynamodb/lease-store.ts';
import type { FrameResultItem, VideoSummaryItem } from '../core/commit/results.ts';
import type { Target } from './target.ts';

type ResultsTarget = Pick<Target, 'clients' | 'resultsTable'>;
const sourceOf = (t: ResultsTarget): ResultsSource => ({ ddb: t.clients.ddb, resultsTable: t.resultsTable });

/** Streams a video's per-frame results in frame order (see core/commit/dynamodb/results-reader.ts). */
export function queryResults(
  target: ResultsTarget,
  videoId: string,
  options: { fromFrame?: number; beforeFrame?: number; nonOkOnly?: boolean } = {},
): AsyncGenerator<FrameResultItem[]> {
  return coreQuery(sourceOf(target), videoId, options);
}

/**
 * A video's frame records, page by page in frame order: what `affinity export` reads.
 * Records may carry fields newer than {@link FrameResultItem} (`ptsMs`, the frame's
 * presentation time, where a video segment gave one).
 */
export type FrameRecordPages = (videoId: string) => AsyncIterable<readonly FrameRecord[]>;

/** A stored frame record as read, with the optional presentation time of segment sources. */
export type FrameRecord = FrameResultItem & { readonly ptsMs?: number };

/**
 * Where frame records come from: the results table, one Query page at a time (`pageSize`
 * items, default up to 1 MB), a segment's packed item expanded into its frames in frame
 * order (decision 56), so callers see one record per frame whichever shape stored it.
 */
export function frameRecordPages(target: ResultsTarget, options: { pageSize?: number } = {}): FrameRecordPages {
  return (videoId) => coreQuery(sourceOf(target), videoId, options);
}

/** All results of a video in frame order. */
export function allResults(target: ResultsTarget, videoId: string): Promise<FrameResultItem[]> {
  return coreAll(sourceOf(target), videoId);
}

export function getSummary(target: ResultsTarget, videoId: string): Promise<VideoSummaryItem | undefined> {
  return coreSummary(sourceOf(target), videoId);
}

export function leaseStore(target: Target): LeaseStore {
  return LeaseStore.forWiring(target.clients.ddb, target, target);
}

export type { StoredObject } from '../core/ingest/port.ts';

/** Every object under `frames/{videoId}/` (frames and the end marker), paginated. */
export function listVideoObjects(target: Pick<Target, 'clients' | 'bucket'>, videoId: string): Promise<StoredObject[]> {
  return new S3VideoObjects(target.clients.s3, target.bucket).list(videoId);
}
