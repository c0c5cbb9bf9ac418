/**
 * `replay`: reprocesses a video from a frame on, from the frames still in S3, so that
 * records, track ids, events and rule totals equal an uninterrupted run (decision 46): the
 * tracker and the rules restart at the video's first frame, and the frames below `from`
 * are re-run silently to rebuild their state.
 *
 *  1. reads the records below `from`. Every frame re-run silently must have a record that
 *     stays, or it would end with none: so `from` moves down to the lowest frame from the
 *     video's first one that has none yet (one still in the reorder buffer, late, or never
 *     uploaded), and to the start of a stored run it falls inside ({@link replayStart});
 *  2. resets the lease ({@link VideoOverrides.resetForReplay}): the checkpoint rewinds to
 *     the video's first frame with a fresh tracker and fresh rule state, frames below
 *     `from` marked silent, and the token goes from T to T+1 (fencing any worker still
 *     holding the video: no result can be committed under T or older from now on), unpinned;
 *  3. deletes the records (and their events) from `from` on, in frame order, each delete
 *     conditional on the record's token being at most T. A live frame committed after the
 *     reset (by whoever adopts the video next, under T+1 or later) is never deleted.
 *     Deleting before the reset would not do: the old owner could still commit between
 *     the deletes and the reset. Then marks the summary active again;
 *  4. re-sends the frames (and the end marker, unless its frame is already known) as S3
 *     events on the ingest queue with a fresh replay tag, so the router gives them fresh
 *     FIFO dedup ids and writes the tag into the slot messages' bodies. Sending after the
 *     deletes covers the one remaining race: a new owner that reached a frame while its
 *     old record still stood settled it as recorded; the re-sent frame, tagged, makes the
 *     worker forget that (gpu-worker/runtime/video-session.ts `forgetRecorded`), finds no
 *     record and processes it (as `late`), so no frame is left without a record.
 *
 * A re-send cannot cover a record whose frame the replay's listing had no object for (a
 * gap, or a frame of a segment uploaded after the listing): a new owner that met such a
 * record before its delete would leave the frame with none. So the owner that adopts a
 * video with a replay in progress first finishes the replay's deletes itself
 * ({@link finishReplayDeletes}, the same conditional deletes): it can then meet no record
 * the replay is about to delete, and the replay's own deletes find nothing left.
 */
import { parseFrameKey } from '../../ingest/keys.ts';
import { objectRanges, type ObjectRange } from '../../ingest/object-ranges.ts';
import type { ReplayKept } from '../../leases/port.ts';
import type { ResultsAdmin } from '../port.ts';
import type { FrameResultItem } from '../results.ts';
import { OperatorError, type OperatorPorts } from './ports.ts';

/** Why the replay starts below the frame asked for. */
export type ReplayWidening =
  /** `from` fell inside a stored run (a gap run of old, or a segment's packed records, decision 56) that cannot be split. */
  | { readonly why: 'inside-run'; readonly from: number }
  /** Frames `from..through` below the frame asked for had no record yet: re-run silently, they would never get one. */
  | { readonly why: 'unrecorded'; readonly from: number; readonly through: number };

/** A replay in progress that the lease's checkpoint remembers: its records from `silentBelow` on under `fencedToken` or older are being deleted. */
export interface PendingReplay {
  readonly silentBelow: number;
  readonly fencedToken?: number;
}

/**
 * Where a replay asked to start at `fromFrame` must start, and the counts of the records
 * that stay (pure). `below` are the video's records below `fromFrame`; `firstFrame` is
 * where the video starts (frames from it on are re-run); `pending` a replay whose deletes
 * may not have landed yet (its records are not records that stay).
 *
 * - A stored run straddling `fromFrame` cannot be split: the replay starts at its first frame.
 * - Every frame from `firstFrame` below the start is re-run silently, so each must have a
 *   record that stays: the replay starts at the lowest frame that has none.
 */
export function replayStart(
  below: readonly FrameResultItem[],
  fromFrame: number,
  firstFrame: number | null,
  pending?: PendingReplay,
): { from: number; kept: ReplayKept; widened: ReplayWidening[] } {
  const doomed = (r: FrameResultItem) => pending?.fencedToken !== undefined && r.frame >= pending.silentBelow && r.token <= pending.fencedToken;
  const records = below.filter((r) => !doomed(r));
  const widened: ReplayWidening[] = [];
  let from = fromFrame;
  for (const r of records) {
    const run = r.packed ? { first: r.packed.first, last: r.packed.first + r.packed.count - 1 } : r.status === 'gap' && r.throughFrame !== undefined ? { first: r.frame, last: r.throughFrame } : undefined;
    if (run && run.first < from && run.last >= from) from = run.first;
  }
  if (from !== fromFrame) widened.push({ why: 'inside-run', from });
  if (firstFrame !== null && firstFrame < from) {
    const recorded = new Set<number>();
    for (const r of records) for (let f = r.frame; f <= (r.throughFrame ?? r.frame); f++) recorded.add(f);
    let lowest: number | undefined;
    let highest = -1;
    for (let f = firstFrame; f < from; f++) {
      if (recorded.has(f)) continue;
      lowest ??= f;
      highest = f;
    }
    if (lowest !== undefined) {
      widened.push({ why: 'unrecorded', from: lowest, through: highest });
      from = lowest;
    }
  }
  const kept: { -readonly [K in keyof ReplayKept]: ReplayKept[K] } = { framesOk: 0, framesFailed: 0, framesGap: 0 };
  for (const r of records) {
    if (r.frame >= from) continue;
    const last = r.throughFrame ?? r.frame;
    if (r.status === 'ok') kept.framesOk++;
    else if (r.status === 'late') kept.framesLate = (kept.framesLate ?? 0) + 1;
    else if (r.status === 'failed') kept.framesFailed++;
    else kept.framesGap += last - r.frame + 1;
    kept.firstFrame = Math.min(kept.firstFrame ?? r.frame, r.frame);
    kept.lastFrame = Math.max(kept.lastFrame ?? last, last);
  }
  return { from, kept, widened };
}

export interface ReplayResult {
  readonly videoId: string;
  /** The frame asked for. */
  readonly askedFrom: number;
  /** The first frame redone (at or below `askedFrom`: see {@link widened}). */
  readonly fromFrame: number;
  readonly widened: readonly ReplayWidening[];
  /** The token before the reset, and after it. */
  readonly previousToken: number;
  readonly token: number;
  readonly deleted: number;
  /** Events of the redone frames deleted (the redone frames write the same ids again). */
  readonly eventsDeleted: number;
  /** Results from `fromFrame` on that were committed after the reset (newer token), and so kept. */
  readonly keptNewer: number;
  /** Frames from `fromFrame` on re-sent to be recorded again. */
  readonly resent: number;
  /** Frames below `fromFrame` re-sent only to rebuild the tracker and the rules (their records stay). */
  readonly rebuilt: number;
  /** The first frame re-sent (the video's first frame, or `fromFrame`). */
  readonly rebuiltFrom: number;
  /** Whether the end marker was re-sent. */
  readonly endMarker: boolean;
  /** The end frame the rewound checkpoint already knows (then the marker is not re-sent). */
  readonly endFrameKnown: number | null;
  readonly replayTag: string;
}

export async function replay(p: OperatorPorts, o: { readonly videoId: string; readonly fromFrame: number }): Promise<ReplayResult> {
  if (!Number.isSafeInteger(o.fromFrame) || o.fromFrame < 0) throw new OperatorError('--from must be a non-negative integer frame number', { usage: true });
  const v = await p.leases.getVideo(o.videoId);
  if (v.state === 'new') throw new OperatorError(`no such video "${o.videoId}": it has no lease in ${p.where}`);

  const objects = await p.objects.list(o.videoId);
  const below: FrameResultItem[] = [];
  for await (const page of p.results.pages(o.videoId, { beforeFrame: o.fromFrame })) below.push(...page);
  const firstFrame = v.checkpoint.sequencer.firstFrame;
  const { from, kept, widened } = replayStart(below, o.fromFrame, firstFrame, v.checkpoint.replay);

  // Images and segments, each with the frames it covers (a segment is re-sent whole: its
  // frames below `from` are among those re-run silently).
  const allObjects = await objectRanges(objects, (key) => p.objects.declaredFrames(key));
  const end = objects.find((ob) => parseFrameKey(ob.key).kind === 'end');
  if (!allObjects.some((r) => r.first + r.count > from)) throw new OperatorError(`no frames of "${o.videoId}" at or after frame ${from} in s3://${p.bucket}; nothing to replay`);
  // The tracker and the rules restart at the video's first frame (decision 46): the frames
  // below `from` are re-sent too, and re-run silently to rebuild their state.
  const start = Math.min(firstFrame ?? from, from);
  const sent = allObjects.filter((r) => r.first + r.count > start);
  const covered = (r: ObjectRange, at: number) => Math.max(0, r.first + r.count - Math.max(r.first, at));
  const redone = sent.reduce((n, r) => n + covered(r, from), 0);
  const total = sent.reduce((n, r) => n + covered(r, start), 0);

  const reset = await p.leases.resetForReplay(o.videoId, from, v.token, kept, p.now());
  if (reset === 'token-moved') {
    throw new OperatorError(`the lease of "${o.videoId}" changed while preparing the replay (token is no longer ${v.token}); nothing changed; retry`);
  }

  // Delete the results being redone (the new owner writes them again; writes are
  // create-only), but only those committed under the old token or before: the reset has
  // fenced that token, so nothing can add to them any more, while anything committed
  // since (token > v.token) is a live result of the new owner and stays.
  const { deleted, keptNewer } = await deleteResultsFrom(p.results, o.videoId, from, v.token);
  // Their events go with them (an event exists iff its frame's record does, decision 35);
  // the redone frames write the same ids again.
  const eventsDeleted = await p.results.deleteEventsFrom(o.videoId, from, v.token);
  // The summary keeps saying "complete" until the next commit unless told otherwise.
  await p.results.reopenSummary(o.videoId, { framesOk: kept.framesOk, framesLate: kept.framesLate ?? 0, framesFailed: kept.framesFailed, framesGap: kept.framesGap }, reset.token, p.now());

  const replayTag = p.newTag('replay');
  // The rewound checkpoint keeps a known end frame; re-sending the marker then would only
  // re-admit the finished video once more after the replay completes.
  const endFrameKnown = v.checkpoint.sequencer.endFrame;
  const resendEnd = end !== undefined && endFrameKnown === null;
  const toSend = [...sent.map((r) => r.object), ...(resendEnd && end ? [end] : [])];
  const r = await p.ingest.resend(toSend, replayTag, 'affinity-replay');
  if (r.failure !== undefined) throw new OperatorError(`re-sending frames failed after ${r.sent}: ${r.failure}; re-run the replay`);
  return {
    videoId: o.videoId,
    askedFrom: o.fromFrame,
    fromFrame: from,
    widened,
    previousToken: v.token,
    token: reset.token,
    deleted,
    eventsDeleted,
    keptNewer,
    resent: redone,
    rebuilt: total - redone,
    rebuiltFrom: start,
    endMarker: resendEnd,
    endFrameKnown,
    replayTag,
  };
}

/** Deletes in flight at once; the deletes still sweep upwards in frame order, as the new owner processes. */
const DELETE_CONCURRENCY = 16;

/**
 * Deletes a video's records from `fromFrame` on whose token is at most `maxToken`, in frame
 * order, each with its own condition. Records with a newer token are counted and kept. A
 * segment's packed records are one item (decision 56): deleted once, counted per frame.
 */
export async function deleteResultsFrom(results: Pick<ResultsAdmin, 'pages' | 'deleteRecord'>, videoId: string, fromFrame: number, maxToken: number): Promise<{ deleted: number; keptNewer: number }> {
  let deleted = 0;
  let keptNewer = 0;
  const items = new Set<number>();
  const deleteOne = async (frame: number, frames: number): Promise<void> => {
    const outcome = await results.deleteRecord(videoId, frame, maxToken);
    if (outcome === 'deleted') deleted += frames;
    else if (outcome === 'newer') keptNewer += frames;
  };
  for await (const page of results.pages(videoId, { fromFrame })) {
    for (let i = 0; i < page.length; i += DELETE_CONCURRENCY) {
      const batch: Promise<void>[] = [];
      for (const r of page.slice(i, i + DELETE_CONCURRENCY)) {
        const key = r.packed?.first ?? r.frame;
        if (key < fromFrame) throw new Error(`frame ${fromFrame} of ${videoId} lies inside the packed records from frame ${key}: delete from ${key}`);
        if (items.has(key)) continue;
        items.add(key);
        batch.push(deleteOne(key, r.packed?.count ?? 1));
      }
      await Promise.all(batch);
    }
  }
  return { deleted, keptNewer };
}

/** The part of the results table a worker needs to finish a replay's deletes. */
export type ReplayDeletes = Pick<ResultsAdmin, 'pages' | 'deleteRecord' | 'deleteEventsFrom'>;

/**
 * Finishes a replay's deletes (the new owner's first step on adopting a video whose
 * checkpoint has a replay in progress): the records and events from `silentBelow` on under
 * `fencedToken` or older, each delete conditional on that token, exactly as the replay
 * deletes them. Idempotent; throws when the table cannot be reached (the adoption is retried).
 */
export async function finishReplayDeletes(results: ReplayDeletes, videoId: string, pending: { readonly silentBelow: number; readonly fencedToken: number }): Promise<{ deleted: number; keptNewer: number; eventsDeleted: number; kept: ReplayKept }> {
  const { deleted, keptNewer } = await deleteResultsFrom(results, videoId, pending.silentBelow, pending.fencedToken);
  const eventsDeleted = await results.deleteEventsFrom(videoId, pending.silentBelow, pending.fencedToken);
  // The counts of the records that stay, read now: the replay counted them before its reset,
  // and a late frame below `silentBelow` committed by the old owner between that read and the
  // reset would leave its counts stale (simulation, seed 12624). Nothing below `silentBelow`
  // changes from here until this owner commits.
  const below: FrameResultItem[] = [];
  for await (const page of results.pages(videoId, { beforeFrame: pending.silentBelow })) below.push(...page);
  const { kept } = replayStart(below, pending.silentBelow, null);
  return { deleted, keptNewer, eventsDeleted, kept };
}
