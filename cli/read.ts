/** Read helpers over the results table, shared by the commands and the demo. */
import { allResults as coreAll, getSummary as coreSummary, queryResults as coreQuery, type ResultsSource } from '../core/results-reader.ts';
import { LeaseStore } from '../core/lease-store.ts';
import type { FrameResultItem, VideoSummaryItem } from '../core/results.ts';
import type { Target } from './target.ts';

type ResultsTarget = Pick<Target, 'clients' | 'resultsTable'>;
const sourceOf = (t: ResultsTarget): ResultsSource => ({ ddb: t.clients.ddb, resultsTable: t.resultsTable });

/** Streams a video's per-frame results in frame order (see core/results-reader.ts). */
export function queryResults(
  target: ResultsTarget,
  videoId: string,
  options: { fromFrame?: number; beforeFrame?: number; nonOkOnly?: boolean } = {},
): AsyncGenerator<FrameResultItem[]> {
  return coreQuery(sourceOf(target), videoId, options);
}

/** All results of a video in frame order. */
export function allResults(target: ResultsTarget, videoId: string): Promise<FrameResultItem[]> {
  return coreAll(sourceOf(target), videoId);
}

export function getSummary(target: ResultsTarget, videoId: string): Promise<VideoSummaryItem | undefined> {
  return coreSummary(sourceOf(target), videoId);
}

export function leaseStore(target: Target): LeaseStore {
  return new LeaseStore(target.clients.ddb, {
    tableName: target.leasesTable,
    resultsTableName: target.resultsTable,
    pinnedSlotIndex: target.pinnedSlotIndex,
    firstFrameNumber: target.firstFrameNumber,
  });
}
