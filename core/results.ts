/**
 * The results contract: what users, operator tooling and tests read.
 *
 * Results table: partition key `videoId` (S), sort key `frame` (N).
 *   - one item per frame (frame >= 0) with `status` ok | failed | gap;
 *   - one summary item per video at frame = {@link SUMMARY_FRAME} (-1), readable with one GetItem.
 */
import type { Detection } from './ports.ts';

export type FrameStatus = 'ok' | 'failed' | 'gap';

/** Sort key of the per-video summary item. */
export const SUMMARY_FRAME = -1;

export interface FrameResultItem {
  readonly videoId: string;
  readonly frame: number;
  readonly status: FrameStatus;
  readonly detections: readonly Detection[];
  /** Fencing token of the lease under which this result was committed. */
  readonly token: number;
  /** Worker id (task id / process id) that committed it. */
  readonly worker: string;
  /** Present when status is not ok: a short machine-readable code. */
  readonly reason?: string;
  /** Human-readable detail for failures. */
  readonly detail?: string;
  /** Commit time, epoch ms. */
  readonly committedAtMs: number;
  /** For a long gap written as one item: the last missing frame of the run (frame..throughFrame). */
  readonly throughFrame?: number;
  /** S3 key of the frame, when one existed. */
  readonly key?: string;
}

export type VideoStatus = 'active' | 'complete';

export interface VideoSummaryItem {
  readonly videoId: string;
  readonly frame: typeof SUMMARY_FRAME;
  readonly kind: 'summary';
  readonly status: VideoStatus;
  readonly framesOk: number;
  readonly framesFailed: number;
  readonly framesGap: number;
  readonly firstFrame?: number;
  /** Highest frame committed so far. */
  readonly lastFrame?: number;
  /** Last frame announced by the end-of-stream marker, once seen. */
  readonly endFrame?: number;
  /** How many times the video changed owner (first adoption included). */
  readonly ownerChanges: number;
  readonly token: number;
  readonly worker: string;
  readonly slot: number;
  readonly updatedAtMs: number;
  /** Owner history, oldest first: one entry per adoption. */
  readonly owners: readonly { readonly worker: string; readonly token: number; readonly sinceMs: number; readonly fromFrame?: number }[];
}
