/**
 * `affinity replay <id> --from <frame>`: reprocesses a video from a frame on, from the
 * frames still in S3, so that records, track ids, events and rule totals equal an
 * uninterrupted run (decision 46): the tracker and the rules restart at the video's first
 * frame, and the frames below `from` are re-run silently to rebuild their state.
 *
 *  1. counts the results kept (frames before `from`);
 *  2. `resetForReplay`: rewinds the checkpoint to the video's first frame with a fresh
 *     tracker and fresh rule state, frames below `from` marked silent, bumps the
 *     token from T to T+1 (fencing any worker still holding the video: from now on no
 *     result can be committed under T or older) and unpins it;
 *  3. deletes the results (and their events) from `from` on, in frame order, each delete conditional on the
 *     result's token being at most T. A live frame committed after the reset (by whoever
 *     adopts the video next, under T+1 or later) is never deleted. Deleting before the
 *     reset would not do: the old owner could still commit results between the deletes
 *     and the reset. Then marks the summary active again;
 *  4. re-sends the frames (and the end marker, unless its frame is already known) as S3
 *     events on the ingest queue with a fresh `replayTag` attribute, so the router gives
 *     them fresh FIFO dedup ids and writes the tag into the slot messages' bodies (a
 *     worker forwarding one keeps it). Sending after the deletes also covers the one
 *     remaining race: if a new owner reached a frame while its old result still stood, it
 *     kept that result as settled; once deleted, the re-sent frame finds no record and is
 *     processed (as `late`), so no frame is left without a record.
 */
import { randomUUID } from 'node:crypto';
import { DeleteCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { eventId } from '../../core/analytics/event-schema.ts';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { parseFrameKey } from '../../core/ingest/keys.ts';
import { storedObjectRanges, type ObjectRange } from '../video/object-ranges.ts';
import type { FrameResultItem } from '../../core/commit/results.ts';
import { CliError, type Io } from '../io.ts';
import { leaseStore, listVideoObjects, queryResults } from '../read.ts';
import type { Target } from '../target.ts';
import { resendAsUploads } from '../resend.ts';

export interface KeptCounts {
  framesOk: number;
  /** Present when any kept frame was processed late. */
  framesLate?: number;
  framesFailed: number;
  framesGap: number;
  firstFrame?: number;
  lastFrame?: number;
}

/**
 * Counts what stays when replaying from `fromFrame`. A stored run that straddles
 * `fromFrame` cannot be split (a gap run written before gaps were per frame, or a
 * segment's packed records, decision 56), so the replay starts at the run's first frame
 * instead (`effectiveFrom`). Pure.
 */
export function keptBefore(items: readonly FrameResultItem[], fromFrame: number): { kept: KeptCounts; effectiveFrom: number } {
  let effectiveFrom = fromFrame;
  for (const r of items) {
    const run = r.packed ? { first: r.packed.first, last: r.packed.first + r.packed.count - 1 } : r.status === 'gap' && r.throughFrame !== undefined ? { first: r.frame, last: r.throughFrame } : undefined;
    if (run && run.first < effectiveFrom && run.last >= effectiveFrom) effectiveFrom = run.first;
  }
  const kept: KeptCounts = { framesOk: 0, framesFailed: 0, framesGap: 0 };
  for (const r of items) {
    if (r.frame >= effectiveFrom) continue;
    const last = r.throughFrame ?? r.frame;
    if (r.status === 'ok') kept.framesOk++;
    else if (r.status === 'late') kept.framesLate = (kept.framesLate ?? 0) + 1;
    else if (r.status === 'failed') kept.framesFailed++;
    else kept.framesGap += last - r.frame + 1;
    kept.firstFrame = Math.min(kept.firstFrame ?? r.frame, r.frame);
    kept.lastFrame = Math.max(kept.lastFrame ?? last, last);
  }
  return { kept, effectiveFrom };
}

export interface ReplaySummary {
  readonly fromFrame: number;
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
  readonly endMarker: boolean;
  readonly replayTag: string;
}

export async function replayCommand(target: Target, o: { videoId: string; fromFrame: number }, io: Io): Promise<ReplaySummary> {
  if (!Number.isSafeInteger(o.fromFrame) || o.fromFrame < 0) throw new CliError('--from must be a non-negative integer frame number', 2);
  const store = leaseStore(target);
  const v = await store.getVideo(o.videoId);
  if (v.state === 'new') throw new CliError(`no such video "${o.videoId}": it has no lease in ${target.description}`);

  const objects = await listVideoObjects(target, o.videoId);
  const before: FrameResultItem[] = [];
  for await (const page of queryResults(target, o.videoId, { beforeFrame: o.fromFrame })) before.push(...page);
  const { kept, effectiveFrom } = keptBefore(before, o.fromFrame);
  if (effectiveFrom !== o.fromFrame) io.err(`frame ${o.fromFrame} lies inside a stored run (a gap run, or a segment's packed records) starting at ${effectiveFrom}; replaying from ${effectiveFrom}`);

  // Images and segments, each with the frames it covers (a segment is re-sent whole: its
  // frames below `from` are among those re-run silently).
  const allObjects = await storedObjectRanges(target, objects);
  const end = objects.find((ob) => parseFrameKey(ob.key).kind === 'end');
  if (!allObjects.some((r) => r.first + r.count > effectiveFrom)) throw new CliError(`no frames of "${o.videoId}" at or after frame ${effectiveFrom} in s3://${target.bucket}; nothing to replay`);
  // The tracker and the rules restart at the video's first frame (decision 46): the frames
  // below `from` are re-sent too, and re-run silently to rebuild their state.
  const start = Math.min(v.checkpoint.sequencer.firstFrame ?? effectiveFrom, effectiveFrom);
  const sent = allObjects.filter((r) => r.first + r.count > start);
  const covered = (r: ObjectRange, from: number) => Math.max(0, r.first + r.count - Math.max(r.first, from));
  const redone = sent.reduce((n, r) => n + covered(r, effectiveFrom), 0);
  const frames = { length: sent.reduce((n, r) => n + covered(r, start), 0) };

  const reset = await store.resetForReplay(o.videoId, effectiveFrom, v.token, kept, Date.now());
  if (reset === 'token-moved') {
    throw new CliError(`the lease of "${o.videoId}" changed while preparing the replay (token is no longer ${v.token}); nothing changed; retry`);
  }

  // Delete the results being redone (the new owner writes them again; writes are
  // create-only), but only those committed under the old token or before: the reset has
  // fenced that token, so nothing can add to them any more, while anything committed
  // since (token > v.token) is a live result of the new owner and stays.
  const { deleted, keptNewer } = await deleteResultsUpTo(target, o.videoId, effectiveFrom, v.token);
  // Their events go with them (an event exists iff its frame's record does, decision 35);
  // the redone frames write the same ids again.
  const eventsDeleted = await deleteEventsUpTo(target, o.videoId, effectiveFrom, v.token);

  // The summary keeps saying "complete" until the next commit unless told otherwise.
  try {
    await target.clients.ddb.send(
      new UpdateCommand({
        TableName: target.resultsTable,
        Key: { videoId: o.videoId, frame: -1 },
        UpdateExpression: 'SET #status = :active, framesOk = :ok, framesLate = :late, framesFailed = :failed, framesGap = :gap, #token = :token, updatedAtMs = :now',
        ConditionExpression: 'attribute_exists(videoId) AND #token <= :token',
        ExpressionAttributeNames: { '#status': 'status', '#token': 'token' },
        ExpressionAttributeValues: {
          ':active': 'active',
          ':ok': kept.framesOk,
          ':late': kept.framesLate ?? 0,
          ':failed': kept.framesFailed,
          ':gap': kept.framesGap,
          ':token': reset.token,
          ':now': Date.now(),
        },
      }),
    );
  } catch (e) {
    if (!(e instanceof ConditionalCheckFailedException)) throw e;
  }

  const replayTag = `replay-${Date.now().toString(36)}-${randomUUID().slice(0, 8)}`;
  // The rewound checkpoint keeps a known end frame; re-sending the marker then would only
  // re-admit the finished video once more after the replay completes.
  const resendEnd = end !== undefined && v.checkpoint.sequencer.endFrame === null;
  const toSend = [...sent.map((r) => r.object), ...(resendEnd && end ? [end] : [])];
  await resendAsUploads(target, toSend, replayTag, 'affinity-replay', 're-run the replay');
  io.out(
    `replaying ${o.videoId} from frame ${effectiveFrom}: token ${v.token} -> ${reset.token}, deleted ${deleted} result(s) and ${eventsDeleted} event(s), ` +
      (keptNewer > 0 ? `kept ${keptNewer} committed since the reset, ` : '') +
      `re-sent ${redone} frame(s)${start < effectiveFrom ? ` (and ${frames.length - redone} from frame ${start} to rebuild the tracker and rules, recorded already)` : ''}${resendEnd ? ' and the end marker' : v.checkpoint.sequencer.endFrame !== null ? ` (end frame ${v.checkpoint.sequencer.endFrame} already known)` : ''} (replay tag ${replayTag})`,
  );
  return { fromFrame: effectiveFrom, token: reset.token, deleted, eventsDeleted, keptNewer, resent: redone, rebuilt: frames.length - redone, endMarker: resendEnd, replayTag };
}

/**
 * Deletes a video's events of frames from `fromFrame` on whose token is at most `maxToken`
 * (event ids sort by frame, so one query from the frame's id prefix finds them); life events
 * of no frame (-1) and events committed since the reset stay. Exported for tests.
 */
export async function deleteEventsUpTo(target: Pick<Target, 'clients' | 'eventsTable'>, videoId: string, fromFrame: number, maxToken: number): Promise<number> {
  let deleted = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await target.clients.ddb.send(
      new QueryCommand({
        TableName: target.eventsTable,
        KeyConditionExpression: 'videoId = :v AND eventId >= :from',
        ExpressionAttributeValues: { ':v': videoId, ':from': eventId({ frame: fromFrame, kind: 'video.started' }).split('#')[0]! },
        ProjectionExpression: 'eventId',
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of page.Items ?? []) {
      try {
        await target.clients.ddb.send(
          new DeleteCommand({
            TableName: target.eventsTable,
            Key: { videoId, eventId: item.eventId },
            ConditionExpression: 'attribute_exists(eventId) AND #token <= :old',
            ExpressionAttributeNames: { '#token': 'token' },
            ExpressionAttributeValues: { ':old': maxToken },
          }),
        );
        deleted++;
      } catch (e) {
        if (!(e instanceof ConditionalCheckFailedException)) throw e;
      }
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return deleted;
}

/** Deletes in flight at once; the deletes still sweep upwards in frame order, as the new owner processes. */
const DELETE_CONCURRENCY = 16;

/**
 * Deletes a video's results from `fromFrame` on whose token is at most `maxToken`, in
 * frame order, each with its own condition (BatchWriteItem has none). Results with a newer
 * token are counted and kept. Exported for tests.
 */
export async function deleteResultsUpTo(
  target: Pick<Target, 'clients' | 'resultsTable'>,
  videoId: string,
  fromFrame: number,
  maxToken: number,
): Promise<{ deleted: number; keptNewer: number }> {
  let deleted = 0;
  let keptNewer = 0;
  // A segment's packed records are one item (decision 56): deleted once, counted per frame.
  const items = new Set<number>();
  const deleteOne = async (frame: number, frames: number): Promise<void> => {
    try {
      const r = await target.clients.ddb.send(
        new DeleteCommand({
          TableName: target.resultsTable,
          Key: { videoId, frame },
          ConditionExpression: 'attribute_not_exists(#token) OR #token <= :old',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':old': maxToken },
          ReturnValues: 'ALL_OLD',
        }),
      );
      if (r.Attributes) deleted += frames;
    } catch (e) {
      if (!(e instanceof ConditionalCheckFailedException)) throw e;
      keptNewer += frames;
    }
  };
  for await (const page of queryResults(target, videoId, { fromFrame })) {
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
