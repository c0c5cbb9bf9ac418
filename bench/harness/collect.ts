/**
 * Result collection: what the pipeline left for each video (records, summary, objects in
 * S3), and the one records-count formula the watch loops use (a summary's counts, not a
 * query over the records: counting items would load DynamoDB Local, and so the run, more
 * as the tables grow).
 */
import { allResults, getSummary } from '../../core/commit/dynamodb/results-reader.ts';
import type { FrameResultItem, VideoSummaryItem } from '../../core/commit/results.ts';
import { listVideoObjects } from '../../cli/read.ts';
import type { LocalStack } from '../../local/stack.ts';

/** Where a video's results are read from. */
export type ResultsSource = Parameters<typeof getSummary>[0];

/** The stack's results table (or another table of the same shape, as the baseline's). */
export function resultsSource(stack: Pick<LocalStack, 'clients' | 'wiring'>, resultsTable: string = stack.wiring.resultsTable): ResultsSource {
  return { ddb: stack.clients.ddb, resultsTable };
}

/** Records a summary counts (ok + late + failed + gap frames); 0 without a summary. */
export function summaryRecords(s: VideoSummaryItem | undefined): number {
  return s ? s.framesOk + (s.framesLate ?? 0) + s.framesFailed + s.framesGap : 0;
}

/** Each video's summary, in order; a read that fails (an injected fault) reads as none. */
export function readSummaries(source: ResultsSource, videoIds: readonly string[]): Promise<(VideoSummaryItem | undefined)[]> {
  return Promise.all(videoIds.map((id) => getSummary(source, id).catch(() => undefined)));
}

/** Records of all the summaries together. */
export function totalRecords(summaries: readonly (VideoSummaryItem | undefined)[]): number {
  return summaries.reduce((n, s) => n + summaryRecords(s), 0);
}

/** Summaries that say `complete`. */
export function completeCount(summaries: readonly (VideoSummaryItem | undefined)[]): number {
  return summaries.filter((s) => s?.status === 'complete').length;
}

/** Frame numbers of a video whose objects exist in the bucket now (one LIST per 1,000 keys). */
export async function framesInS3(stack: Pick<LocalStack, 'clients' | 'wiring'>, videoId: string): Promise<Set<number>> {
  const objects = await listVideoObjects({ clients: stack.clients, bucket: stack.wiring.bucket }, videoId);
  return new Set(objects.map((o) => Number(/\/(\d+)\.[a-z]+$/i.exec(o.key)?.[1] ?? Number.NaN)).filter((f) => Number.isFinite(f)));
}

/** Frames whose record is a gap (old gap runs, `frame..throughFrame`, expanded). */
export function gapFrames(results: readonly FrameResultItem[]): Set<number> {
  const out = new Set<number>();
  for (const r of results) if (String(r.status) === 'gap') for (let f = r.frame; f <= (r.throughFrame ?? r.frame); f++) out.add(f);
  return out;
}

/** What the pipeline left for one video at the end of a run. */
export interface VideoLeft {
  readonly videoId: string;
  readonly records: FrameResultItem[];
  readonly summary: VideoSummaryItem | undefined;
  /** Frames whose object exists in S3. */
  readonly inS3: Set<number>;
}

/** Reads what the pipeline left for each video, one video at a time (DynamoDB Local is on the same cores). */
export async function collectVideos(stack: LocalStack, videoIds: readonly string[]): Promise<VideoLeft[]> {
  const source = resultsSource(stack);
  const out: VideoLeft[] = [];
  for (const videoId of videoIds) {
    out.push({ videoId, records: await allResults(source, videoId), summary: await getSummary(source, videoId), inS3: await framesInS3(stack, videoId) });
  }
  return out;
}

/** Records by status; `other` for a status this bench does not know. Gap runs count their frames. */
export function statusCounts(records: readonly FrameResultItem[]): { ok: number; late: number; gap: number; failed: number; other: number } {
  const status = { ok: 0, late: 0, gap: 0, failed: 0, other: 0 };
  for (const r of records) {
    const s = String(r.status);
    if (s === 'ok' || s === 'late' || s === 'gap' || s === 'failed') status[s]++;
    else status.other++;
    if (s === 'gap' && r.throughFrame !== undefined) status.gap += r.throughFrame - r.frame;
  }
  return status;
}

/** Count of each key. */
export function countBy<T>(items: Iterable<T>, key: (item: T) => string): Record<string, number> {
  const m: Record<string, number> = {};
  for (const i of items) m[key(i)] = (m[key(i)] ?? 0) + 1;
  return m;
}
