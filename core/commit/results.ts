/**
 * The results contract: what users, operator tooling and tests read.
 *
 * Results table: partition key `videoId` (S), sort key `frame` (N).
 *   - one item per frame (frame >= 0) with `status` ok | late | failed | gap;
 *   - or, for consecutive frames of one encoded segment committed together, one packed
 *     item at the first frame's key with `status` packed (record-packing.ts); the results
 *     reader expands it, so readers see one record per frame either way;
 *   - one summary item per video at frame = {@link SUMMARY_FRAME} (-1), readable with one GetItem.
 */
import type { Detection } from '../ports.ts';

/**
 * `ok`: processed in order. `late`: processed after the tracker had moved past it (its
 * gap record, if any, was replaced); track IDs come from the neighbouring frames.
 * `failed`: unusable, with a reason. `gap`: no object existed when the watermark passed it.
 */
export type FrameStatus = 'ok' | 'late' | 'failed' | 'gap';

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
  /**
   * When the round that wrote this record began, epoch ms (the worker's clock): the record
   * lands after that round's fetch, inference and transaction, typically 0.1-0.3 s later.
   * Latency to the landed record is the workers' `UploadToRecordMs` (decision 44).
   */
  readonly committedAtMs: number;
  /** Only in records written before gaps were per frame: the last frame of a gap run (frame..throughFrame). */
  readonly throughFrame?: number;
  /** S3 key of the frame, when one existed (a segment's key for each frame it covers). */
  readonly key?: string;
  /** The frame's presentation time in its stream, ms: frames of encoded segments whose stream carries timestamps. */
  readonly ptsMs?: number;
  /**
   * When DynamoDB's TTL may delete the record, epoch seconds: commit time +
   * `resultsRetentionDays`. Absent when that is 0 (never expires) and in records written
   * before the setting existed.
   */
  readonly ttlEpochSeconds?: number;
  /**
   * Set on records read from a packed item (a segment's frames stored as one item,
   * core/commit/record-packing.ts): that item's first frame and how many frames it holds.
   * Never written: the reader adds it. A replay or delete acts on the whole item.
   */
  readonly packed?: { readonly first: number; readonly count: number };
}

export type VideoStatus = 'active' | 'complete';

export interface VideoSummaryItem {
  readonly videoId: string;
  readonly frame: typeof SUMMARY_FRAME;
  readonly kind: 'summary';
  readonly status: VideoStatus;
  readonly framesOk: number;
  /** Frames processed late (their gap record, if any, replaced). */
  readonly framesLate: number;
  readonly framesFailed: number;
  /** Frames whose record is still a gap (goes down when a late frame replaces one). */
  readonly framesGap: number;
  /** First frame of the video: the chosen start, or a lower late frame. */
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
  /**
   * Rule totals (issue 22): line id → label → [in, out]; zone id → label → [entered,
   * exited, dwell]. Absent while the video's rules counted nothing. `affinity counts` reads it.
   */
  readonly ruleTotals?: {
    readonly lines: Readonly<Record<string, Readonly<Record<string, readonly [number, number]>>>>;
    readonly zones: Readonly<Record<string, Readonly<Record<string, readonly [number, number, number]>>>>;
  };
}
