/**
 * DynamoDB adapter for the video half of the lease protocol. `video#{id}` items in the
 * leases table hold a video lease: pinnedSlot, token (the video's fencing token: grows on
 * every change of owner), owner, ownerEpoch, and the checkpoint. Results and summaries go
 * to the results table in the same fenced transaction as the checkpoint that covers them.
 *
 * The slot half (claims, heartbeats, launch grants) is slot-lease-store.ts; lease-store.ts
 * composes the two into the adapter of the whole table. The fenced commit's transactions
 * and outcomes are video-commit.ts (decisions in commit-outcome.ts). Every write is
 * conditional; the TTL attribute only garbage-collects released videos.
 */
import { keptCounts } from '../lease-logic.ts';
import { GetCommand, QueryCommand, ScanCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { emptyCheckpoint, newCommitId, readStoredCheckpoint, storedCheckpoint, upgradeCheckpoint, withNewOwner, withResolvedRules, type ReadCheckpoint, type VideoCheckpoint } from '../../commit/checkpoint.ts';
import { RulesItems } from './rules-items.ts';
import { decideStoredOutcome, type StoredDecision } from '../../commit/commit-outcome.ts';
import { slotFenceCheck, VideoCommitter, type TransactItem } from './video-commit.ts';
import { emptySequencerState } from '../../ordering/sequencer.ts';
import type { CommitUnit } from '../../commit/commit-packing.ts';
import { takeOverEvent } from '../../analytics/life-events.ts';
import type { AdoptedVideo, CommitOutcome, FencedCommit, SlotFence, VideoLeases, ReplayKept, VideoPin, VideoRecord } from '../port.ts';
import { slotKey, videoKey, type LeaseTableAccess, type LeaseTableOptions } from './lease-table.ts';

/** The options of the whole lease adapter. */
export interface LeaseStoreOptions extends LeaseTableOptions {
  /** Where a video seen for the first time starts (tunables.firstFrameNumber; -1 = automatic). @default -1 */
  readonly firstFrameNumber?: number;
  /** The events outbox table (issue 22): when set, commits write their units' events and a take-over writes `video.taken-over`. */
  readonly eventsTableName?: string;
}

/** The video half of the lease adapter: pins, adoption, release, and the fenced commit. */
export class VideoLeaseStore implements VideoLeases, FencedCommit {
  private readonly ddb: DynamoDBDocumentClient;
  private readonly o: LeaseStoreOptions;
  private readonly table: LeaseTableAccess<LeaseStoreOptions>;
  private readonly committer: VideoCommitter;
  private readonly rules: RulesItems;

  /**
   * @param table the lease table, shared with the slot half
   * @param readSlot a consistent read of a slot's lease (the slot half's `getSlot`), for deciding commits whose answer was lost
   */
  constructor(table: LeaseTableAccess<LeaseStoreOptions>, readSlot: (slot: number) => Promise<{ readonly owner?: string; readonly epoch: number; readonly expiresAtMs: number }>) {
    this.table = table;
    this.ddb = table.ddb;
    this.o = table.o;
    this.rules = new RulesItems(this.ddb, this.o.tableName);
    this.committer = new VideoCommitter({
      rules: this.rules,
      ddb: this.ddb,
      tableName: this.o.tableName,
      resultsTableName: this.o.resultsTableName,
      ...(this.o.eventsTableName !== undefined ? { eventsTableName: this.o.eventsTableName } : {}),
      readVideo: (videoId) => this.readCommitState(videoId),
      readSlot,
    });
  }

  // ---------------------------------------------------------------- videos

  /** Reads the pins of many videos (projection only). One BatchGetItem per 100 videos. */
  async getPins(videoIds: readonly string[]): Promise<Map<string, VideoPin>> {
    const items = await this.table.batchGet(videoIds.map(videoKey), false, 'pk, pinnedSlot, #token');
    const out = new Map<string, VideoPin>();
    for (const id of videoIds) {
      const it = items.get(videoKey(id));
      out.set(id, { ...(it?.pinnedSlot !== undefined ? { pinnedSlot: Number(it.pinnedSlot) } : {}), token: Number(it?.token ?? 0) });
    }
    return out;
  }

  async getVideo(videoId: string): Promise<VideoRecord> {
    const r = await this.ddb.send(new GetCommand({ TableName: this.o.tableName, Key: { pk: videoKey(videoId) }, ConsistentRead: true }));
    return toVideoRecord(videoId, r.Item, await this.readCheckpoint(videoId, r.Item), this.o.firstFrameNumber ?? -1);
  }

  /**
   * The checkpoint a lease item holds, compressed (issue 44) or, written before, a plain
   * map, with its rules document read back in when it is stored out of line (decision 76).
   */
  private async readCheckpoint(videoId: string, it: Record<string, unknown> | undefined): Promise<ReadCheckpoint | undefined> {
    const stored = it ? readStoredCheckpoint(it.checkpoint, videoId) : undefined;
    if (stored?.rulesRef === undefined) return stored;
    return withResolvedRules(stored, await this.rules.read(videoId, stored.rulesRef));
  }

  /**
   * Pins an unpinned video to a slot and counts it on the slot. `taken` when another
   * router or worker pinned it first: re-read to learn where. With `maxVideosOnSlot`,
   * `slot-full` when concurrent admissions filled the slot meanwhile: choose again.
   */
  async pinVideo(videoId: string, slot: number, nowMs: number, maxVideosOnSlot?: number): Promise<'pinned' | 'taken' | 'slot-full'> {
    const capacity =
      maxVideosOnSlot === undefined
        ? {}
        : { ConditionExpression: 'attribute_not_exists(videoCount) OR videoCount < :cap', ExpressionAttributeValues: { ':slot': slot, ':one': 1, ':cap': maxVideosOnSlot } };
    try {
      await this.table.transact(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.o.tableName,
                Key: { pk: videoKey(videoId) },
                UpdateExpression:
                  'SET pinnedSlot = :slot, videoId = :vid, #state = :pinned, pinnedAtMs = :now, #token = if_not_exists(#token, :zero) REMOVE ttlEpochSeconds',
                ConditionExpression: 'attribute_not_exists(pinnedSlot)',
                ExpressionAttributeNames: { '#state': 'state', '#token': 'token' },
                ExpressionAttributeValues: { ':slot': slot, ':vid': videoId, ':pinned': 'pinned', ':now': nowMs, ':zero': 0 },
              },
            },
            {
              Update: {
                TableName: this.o.tableName,
                Key: { pk: slotKey(slot) },
                UpdateExpression: 'SET slot = :slot ADD videoCount :one',
                ExpressionAttributeValues: { ':slot': slot, ':one': 1 },
                ...capacity,
              },
            },
          ],
        }),
      );
      return 'pinned';
    } catch (e) {
      if (isConditionalCancel(e, 0)) return 'taken';
      if (isConditionalCancel(e, 1)) return 'slot-full';
      throw e;
    }
  }

  /** Video ids pinned to a slot, from the sparse GSI. */
  async listPinned(slot: number): Promise<string[]> {
    const ids: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const r = await this.ddb.send(
        new QueryCommand({
          TableName: this.o.tableName,
          IndexName: this.o.pinnedSlotIndex,
          KeyConditionExpression: 'pinnedSlot = :s',
          ExpressionAttributeValues: { ':s': slot },
          ExclusiveStartKey: start,
        }),
      );
      for (const it of r.Items ?? []) ids.push(String(it.pk).slice('video#'.length));
      start = r.LastEvaluatedKey;
    } while (start);
    return ids;
  }

  /**
   * Every pinned video, by slot, from one Scan of the sparse keys-only GSI (one request
   * per MB of keys, about 15,000 videos): the janitor's view of every slot at once, where
   * {@link listPinned} per slot would cost one Query per slot. Eventually consistent, as
   * any read of a GSI.
   */
  async listPinnedBySlot(): Promise<Map<number, string[]>> {
    const bySlot = new Map<number, string[]>();
    let start: Record<string, unknown> | undefined;
    do {
      const r = await this.ddb.send(new ScanCommand({ TableName: this.o.tableName, IndexName: this.o.pinnedSlotIndex, ExclusiveStartKey: start }));
      for (const it of r.Items ?? []) {
        const slot = Number(it.pinnedSlot);
        const id = String(it.pk).slice('video#'.length);
        const list = bySlot.get(slot);
        if (list) list.push(id);
        else bySlot.set(slot, [id]);
      }
      start = r.LastEvaluatedKey;
    } while (start);
    return bySlot;
  }

  /**
   * Takes ownership of a video pinned to the caller's slot: the token grows by one
   * (a change of owner) and the owner history records it. Returns the record as now
   * stored, `not-here` when the video is pinned elsewhere or not at all, or `slot-lost`
   * when the caller's slot lease is no longer valid (checked in the same transaction).
   * `adoptedFrom` is the owner the lease was taken from (from the read that precedes the
   * write anyway; absent for a video nobody owned, or one already ours): the crash-loop
   * breaker isolates a video taken from an owner that died (decision 29).
   *
   * `slotTakenOver` (the caller's slot claim took the slot from an owner that never
   * released it): when false and the video had another owner, the handover was clean and
   * the adoption is not counted in the stall evidence. Left out, every adoption counts.
   */
  async adoptVideo(videoId: string, fence: SlotFence, nowMs: number, options: { readonly slotTakenOver?: boolean } = {}): Promise<AdoptedVideo | 'not-here' | 'slot-lost'> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await this.getVideo(videoId);
      if (current.pinnedSlot !== fence.slot) return 'not-here';
      if (current.owner === fence.workerId && current.ownerEpoch === fence.epoch) return current;
      const token = current.token + 1;
      const ck = current.checkpoint;
      // withNewOwner also counts the adoption in the checkpoint's stall evidence (decision 28),
      // unless a live owner handed it over cleanly (decision 29).
      const clean = options.slotTakenOver === false && current.owner !== undefined;
      // The previous tenure's token: only its death counts as a try on a marked frame (it wrote the marker).
      const adopted = withNewOwner(ck, { worker: fence.workerId, token, sinceMs: nowMs, fromFrame: ck.sequencer.nextFrame }, !clean, current.owner !== undefined ? current.token : undefined);
      // A change of owner is a write of the checkpoint: a fresh commit id, so a unit the
      // previous owner built on the old checkpoint can never be mistaken for this one.
      const checkpoint: VideoCheckpoint = { ...adopted, seq: ck.seq + 1, commitId: newCommitId() };
      // A change of owner from a previous one is an event, written with the adoption itself.
      const event = this.o.eventsTableName !== undefined ? takeOverEvent(videoId, ck, { worker: fence.workerId, token }, nowMs, current.owner === undefined ? 'released' : clean ? 'clean' : 'from-dead-owner') : undefined;
      const rulesPut = this.rules.putFor(checkpoint, new Set());
      try {
        await this.ddb.send(
          new TransactWriteCommand({
            TransactItems: [
              // A stale worker (slot epoch moved on) must not bump the token.
              slotFenceCheck(this.o.tableName, fence, nowMs),
              {
                Update: {
                  TableName: this.o.tableName,
                  Key: { pk: videoKey(videoId) },
                  UpdateExpression: 'SET #owner = :me, ownerEpoch = :epoch, #token = :token, adoptedAtMs = :now, checkpoint = :ck, ckSeq = :seq',
                  ConditionExpression: 'pinnedSlot = :slot AND #token = :prevToken AND (attribute_not_exists(ckSeq) OR ckSeq = :prevSeq)',
                  ExpressionAttributeNames: { '#owner': 'owner', '#token': 'token' },
                  ExpressionAttributeValues: {
                    ':me': fence.workerId,
                    ':epoch': fence.epoch,
                    ':token': token,
                    ':prevToken': current.token,
                    ':now': nowMs,
                    ':ck': storedCheckpoint(checkpoint),
                    ':seq': checkpoint.seq,
                    ':prevSeq': ck.seq,
                    ':slot': fence.slot,
                  },
                },
              },
              ...(event ? [{ Put: { TableName: this.o.eventsTableName!, Item: event } }] : []),
              // A checkpoint read with its rules inline (stored before decision 76) is stored with a reference now.
              ...(rulesPut ? [rulesPut] : []),
            ],
          }),
        );
        this.rules.landed(checkpoint);
        return {
          ...current,
          owner: fence.workerId,
          ownerEpoch: fence.epoch,
          token,
          checkpoint,
          state: 'pinned',
          ...(current.owner !== undefined ? { adoptedFrom: current.owner } : {}),
        };
      } catch (e) {
        if (!(e instanceof TransactionCanceledException)) throw e;
        const reasons = e.CancellationReasons ?? [];
        if (reasons[0]?.Code === 'ConditionalCheckFailed') return 'slot-lost';
        // The video's lease changed (or a conflicting transaction): look again.
      }
    }
    throw new Error(`could not adopt video ${videoId}: lease kept changing`);
  }

  /**
   * Commits results, checkpoints and summaries in as few transactions as fit, each
   * re-checking the slot lease (owner, epoch, unexpired) and each video's token and
   * checkpoint (seq and commit id). A write under an older token is rejected by the store.
   *
   * Never throws once a transaction was sent: every unit gets an outcome (see
   * {@link CommitOutcome}). A unit is `landed` only when the stored checkpoint carries its
   * own commit id; a cancelled transaction wrote nothing, so its videos are fenced, stale
   * or in result conflict, never landed by it. An error whose outcome is unknown (timeout,
   * 5xx past the SDK's retries) is decided by re-reading each unit's video item.
   */
  async commit(fence: SlotFence, units: readonly CommitUnit[], nowMs: number): Promise<CommitOutcome> {
    return this.committer.commit(fence, units, nowMs);
  }

  /**
   * A consistent read of a video's lease item (token, owner, owner epoch, pin and the
   * stored checkpoint with its commit id), for deciding a commit whose outcome was
   * `unknown`. Throws when the read fails: the caller tries again later, and rolls nothing
   * back meanwhile.
   */
  async readCommitState(videoId: string): Promise<VideoRecord> {
    return this.getVideo(videoId);
  }

  /**
   * Decides a unit whose commit outcome was `unknown` by re-reading its video
   * ({@link decideStoredOutcome}): `landed` (apply it as committed), `not-landed` (it did
   * not land and the lease is still ours: roll back and retry), `fenced` or `stale` (drop
   * the video). Throws when the read fails.
   */
  async resolveUnit(fence: SlotFence, unit: CommitUnit): Promise<StoredDecision> {
    return decideStoredOutcome(await this.readCommitState(unit.videoId), unit, fence);
  }

  /**
   * Unpins a video (idle or finished) and uncounts it from the slot. The token and
   * checkpoint stay, so the next owner continues from them; TTL may collect the item
   * after the retention period.
   */
  async releaseVideo(videoId: string, fence: SlotFence, token: number, ckSeq: number, nowMs: number, retentionDays: number): Promise<boolean> {
    return this.unpin(videoId, fence.slot, nowMs, retentionDays, {
      condition: '#owner = :me AND #token = :token AND ckSeq = :seq AND pinnedSlot = :slot',
      values: { ':me': fence.workerId, ':token': token, ':seq': ckSeq, ':slot': fence.slot },
      slotGuard: { condition: '#owner = :me AND epoch = :epoch', values: { ':me': fence.workerId, ':epoch': fence.epoch } },
    });
  }

  /**
   * Unpins a video whose slot has no live owner (janitor repair) or on an operator's
   * order. The token grows, so a worker that still thinks it owns the video is fenced.
   */
  async forceReleaseVideo(videoId: string, expectedToken: number, nowMs: number, retentionDays: number): Promise<boolean> {
    const v = await this.getVideo(videoId);
    if (v.token !== expectedToken) return false;
    return this.unpin(videoId, v.pinnedSlot, nowMs, retentionDays, {
      set: '#token = :next',
      condition: '#token = :token',
      values: { ':token': expectedToken, ':next': expectedToken + 1 },
    });
  }

  /**
   * Operator replay: rewinds a video to its first frame with a fresh processor and rule
   * state, frames below `fromFrame` to be re-run silently (decision 46). The token grows
   * and the pin is dropped, so a worker still holding the video is fenced and the next
   * frame is admitted afresh. `kept` are the counts of results before `fromFrame`, which
   * stay. The caller deletes results and events from `fromFrame` on and re-sends the frames
   * from the first one with a replay tag (FIFO deduplication would drop plain re-sends).
   */
  async resetForReplay(
    videoId: string,
    fromFrame: number,
    expectedToken: number,
    kept: ReplayKept,
    nowMs: number,
  ): Promise<{ token: number } | 'token-moved'> {
    const v = await this.getVideo(videoId);
    if (v.token !== expectedToken) return 'token-moved';
    const ck = v.checkpoint;
    // Rewound to the video's first frame, with a fresh tracker and fresh rule state; frames
    // below `fromFrame` are re-run silently to rebuild both (decision 46), so the redone
    // frames get the track ids, event ids and totals of an uninterrupted run.
    const start = Math.max(0, Math.min(ck.sequencer.firstFrame ?? fromFrame, fromFrame));
    const checkpoint: VideoCheckpoint = {
      seq: ck.seq + 1,
      commitId: newCommitId(),
      sequencer: { ...emptySequencerState(start), endFrame: ck.sequencer.endFrame },
      // `fencedToken`: the records from `fromFrame` on under this token or older are the
      // replay's to delete; a replay started before those deletes land must not count them
      // as records that stay (core/commit/operations/replay.ts).
      replay: { silentBelow: fromFrame, fencedToken: expectedToken },
      ...keptCounts(kept),
      complete: false,
      owners: ck.owners,
      ownerChanges: ck.ownerChanges,
    };
    const reset = await this.unpin(videoId, v.pinnedSlot, nowMs, undefined, {
      set: 'checkpoint = :ck, ckSeq = :seq, #token = :next, videoId = :vid',
      condition: '(attribute_not_exists(#token) AND :token = :zero) OR #token = :token',
      values: { ':ck': storedCheckpoint(checkpoint), ':seq': checkpoint.seq, ':next': expectedToken + 1, ':token': expectedToken, ':zero': 0, ':vid': videoId },
    });
    return reset ? { token: expectedToken + 1 } : 'token-moved';
  }

  /**
   * The one way a video leaves its slot: marks it released (keeping token and
   * checkpoint unless `set` changes them), removes pin and owner, and uncounts it from
   * the slot, in one transaction under the caller's conditions. With `retentionDays`, TTL
   * may collect the item after that. False when a condition failed.
   */
  private async unpin(
    videoId: string,
    pinnedSlot: number | undefined,
    nowMs: number,
    retentionDays: number | undefined,
    guard: {
      readonly condition: string;
      readonly values: Record<string, unknown>;
      readonly set?: string;
      readonly slotGuard?: { readonly condition: string; readonly values: Record<string, unknown> };
    },
  ): Promise<boolean> {
    const ttl = retentionDays === undefined ? {} : { ':ttl': Math.floor(nowMs / 1000) + retentionDays * 86_400 };
    const set = ['#state = :released', 'releasedAtMs = :now', ...(retentionDays === undefined ? [] : ['ttlEpochSeconds = :ttl']), ...(guard.set ? [guard.set] : [])];
    const items: TransactItem[] = [
      {
        Update: {
          TableName: this.o.tableName,
          Key: { pk: videoKey(videoId) },
          UpdateExpression: `SET ${set.join(', ')} REMOVE pinnedSlot, #owner, ownerEpoch`,
          ConditionExpression: guard.condition,
          // DynamoDB rejects names an expression does not use.
          ExpressionAttributeNames: { '#state': 'state', '#owner': 'owner', ...(`${guard.condition} ${guard.set ?? ''}`.includes('#token') ? { '#token': 'token' } : {}) },
          ExpressionAttributeValues: { ':released': 'released', ':now': nowMs, ...ttl, ...guard.values },
        },
      },
    ];
    if (pinnedSlot !== undefined) {
      const slotGuard = guard.slotGuard;
      items.push({
        Update: {
          TableName: this.o.tableName,
          Key: { pk: slotKey(pinnedSlot) },
          UpdateExpression: 'ADD videoCount :minus',
          ExpressionAttributeValues: { ':minus': -1, ...slotGuard?.values },
          ...(slotGuard ? { ConditionExpression: slotGuard.condition, ExpressionAttributeNames: { '#owner': 'owner' } } : {}),
        },
      });
    }
    try {
      await this.table.transact(new TransactWriteCommand({ TransactItems: items }));
      return true;
    } catch (e) {
      if (e instanceof TransactionCanceledException) return false;
      throw e;
    }
  }
}


function toVideoRecord(videoId: string, it: Record<string, unknown> | undefined, stored: ReadCheckpoint | undefined, firstFrameNumber: number): VideoRecord {
  if (!it) return { videoId, token: 0, state: 'new', checkpoint: emptyCheckpoint(firstFrameNumber) };
  const ck = upgradeCheckpoint(stored ?? emptyCheckpoint(firstFrameNumber), it.ckSeq !== undefined ? Number(it.ckSeq) : undefined);
  return {
    videoId,
    ...(it.pinnedSlot !== undefined ? { pinnedSlot: Number(it.pinnedSlot) } : {}),
    token: Number(it.token ?? 0),
    ...(typeof it.owner === 'string' ? { owner: it.owner } : {}),
    ...(it.ownerEpoch !== undefined ? { ownerEpoch: Number(it.ownerEpoch) } : {}),
    state: it.state === 'released' ? 'released' : it.pinnedSlot !== undefined ? 'pinned' : 'new',
    checkpoint: ck,
  };
}

function isConditionalCancel(e: unknown, index: number): boolean {
  return e instanceof TransactionCanceledException && e.CancellationReasons?.[index]?.Code === 'ConditionalCheckFailed';
}
