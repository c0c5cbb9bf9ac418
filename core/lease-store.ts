/**
 * DynamoDB adapter for the lease protocol. Two kinds of item share the leases table:
 *
 *   slot#{n}       a worker slot: owner, epoch (grows on every claim), expiresAtMs, heartbeat,
 *                  videoCount, launch bookkeeping. Held by heartbeat.
 *   video#{id}     a video lease: pinnedSlot, token (the video's fencing token: grows on every
 *                  change of owner), owner, ownerEpoch, and the checkpoint.
 *
 * Every write is conditional and compares expiry attributes itself; the TTL attribute
 * only garbage-collects released videos. Decisions live in lease-logic.ts.
 */
import {
  BatchGetCommand,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { emptySlotRecord, type LivenessOptions, type SlotRecord } from './lease-logic.ts';
import type { Tunables, Wiring } from './config.ts';
import { emptyCheckpoint, withNewOwner, type VideoCheckpoint } from './checkpoint.ts';
import type { FrameResultItem, VideoSummaryItem } from './results.ts';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export const slotKey = (slot: number) => `slot#${slot}`;
export const videoKey = (videoId: string) => `video#${videoId}`;

export interface VideoRecord {
  readonly videoId: string;
  readonly pinnedSlot?: number;
  readonly token: number;
  readonly owner?: string;
  readonly ownerEpoch?: number;
  readonly state: 'pinned' | 'released' | 'new';
  readonly checkpoint: VideoCheckpoint;
}

export interface VideoPin {
  readonly pinnedSlot?: number;
  readonly token: number;
}

/** Identifies the slot lease a worker writes under; every commit re-checks it. */
export interface SlotFence {
  readonly slot: number;
  readonly workerId: string;
  readonly epoch: number;
}

/** Everything one video commits at once: results, the checkpoint that covers them, the summary. */
export interface CommitUnit {
  readonly videoId: string;
  readonly token: number;
  /** The checkpoint's `seq` before this commit; the new checkpoint has seq + 1. */
  readonly expectedSeq: number;
  readonly checkpoint: VideoCheckpoint;
  readonly results: readonly FrameResultItem[];
  readonly summary: VideoSummaryItem;
}

export type CommitOutcome =
  | { readonly kind: 'committed'; readonly ambiguousRetries: number }
  /** The slot lease is gone: the worker must stop at once. */
  | { readonly kind: 'slot-lost' }
  /** These videos' leases moved (token or seq changed): drop their in-memory state. */
  | { readonly kind: 'videos-fenced'; readonly videoIds: readonly string[]; readonly committedVideoIds: readonly string[] };

export interface LeaseStoreOptions {
  readonly tableName: string;
  readonly resultsTableName: string;
  readonly pinnedSlotIndex: string;
  /** Where a video seen for the first time starts (tunables.firstFrameNumber). @default 0 */
  readonly firstFrameNumber?: number;
}

/** Thrown by renew when the outcome could not be confirmed either way. */
export class UnconfirmedError extends Error {
  override name = 'UnconfirmedError';
}

const MAX_TRANSACT_ITEMS = 100;

export class LeaseStore {
  private readonly ddb: DynamoDBDocumentClient;
  private readonly o: LeaseStoreOptions;

  constructor(ddb: DynamoDBDocumentClient, options: LeaseStoreOptions) {
    this.ddb = ddb;
    this.o = options;
  }

  /** The store for a deployment's wiring and tunables. */
  static forWiring(ddb: DynamoDBDocumentClient, wiring: Pick<Wiring, 'leasesTable' | 'resultsTable' | 'pinnedSlotIndex'>, tunables: Pick<Tunables, 'firstFrameNumber'>): LeaseStore {
    return new LeaseStore(ddb, {
      tableName: wiring.leasesTable,
      resultsTableName: wiring.resultsTable,
      pinnedSlotIndex: wiring.pinnedSlotIndex,
      firstFrameNumber: tunables.firstFrameNumber,
    });
  }

  // ---------------------------------------------------------------- slots

  /** Reads slots 0..count-1 (missing items read as never-claimed). One BatchGetItem per 100 slots. */
  async getSlots(count: number): Promise<SlotRecord[]> {
    const keys = Array.from({ length: count }, (_, i) => slotKey(i));
    const items = await this.batchGet(keys, true);
    return keys.map((k, i) => toSlotRecord(i, items.get(k)));
  }

  async getSlot(slot: number): Promise<SlotRecord> {
    const r = await this.ddb.send(new GetCommand({ TableName: this.o.tableName, Key: { pk: slotKey(slot) }, ConsistentRead: true }));
    return toSlotRecord(slot, r.Item);
  }

  /**
   * Claims a slot whose lease has run out (or that this worker already holds).
   * Returns the new epoch, or undefined while another worker's lease is valid.
   */
  async claimSlot(slot: number, workerId: string, nowMs: number, ttlMs: number): Promise<{ epoch: number; expiresAtMs: number } | undefined> {
    const expiresAtMs = nowMs + ttlMs;
    try {
      const r = await this.ddb.send(
        new UpdateCommand({
          TableName: this.o.tableName,
          Key: { pk: slotKey(slot) },
          UpdateExpression:
            'SET #owner = :me, expiresAtMs = :exp, heartbeatAtMs = :now, slot = :slot, claimedAtMs = :now, videoCount = if_not_exists(videoCount, :zero) ADD epoch :one',
          ConditionExpression: 'attribute_not_exists(expiresAtMs) OR expiresAtMs <= :now OR attribute_not_exists(#owner)',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':me': workerId, ':exp': expiresAtMs, ':now': nowMs, ':slot': slot, ':one': 1, ':zero': 0 },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { epoch: Number(r.Attributes?.epoch), expiresAtMs };
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return undefined;
      throw e;
    }
  }

  /**
   * Renews a slot lease. `lost` means another worker claimed it (or it was released).
   * An error that may have hidden a success is resolved by re-reading; if that is
   * impossible too, {@link UnconfirmedError} is thrown and the caller decides.
   */
  async renewSlot(fence: SlotFence, nowMs: number, ttlMs: number): Promise<'renewed' | 'lost'> {
    const expiresAtMs = nowMs + ttlMs;
    try {
      await this.ddb.send(
        new UpdateCommand({
          TableName: this.o.tableName,
          Key: { pk: slotKey(fence.slot) },
          UpdateExpression: 'SET expiresAtMs = :exp, heartbeatAtMs = :now',
          ConditionExpression: '#owner = :me AND epoch = :epoch',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':me': fence.workerId, ':epoch': fence.epoch, ':exp': expiresAtMs, ':now': nowMs },
        }),
      );
      return 'renewed';
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return 'lost';
      // The write may have been applied even though we got an error: look before concluding.
      let current: SlotRecord;
      try {
        current = await this.getSlot(fence.slot);
      } catch (readError) {
        throw new UnconfirmedError(`heartbeat failed (${errorName(e)}) and could not be re-read (${errorName(readError)})`);
      }
      if (current.owner !== fence.workerId || current.epoch !== fence.epoch) return 'lost';
      if (current.expiresAtMs === expiresAtMs) return 'renewed';
      throw new UnconfirmedError(`heartbeat failed (${errorName(e)}); lease still ours but not renewed`);
    }
  }

  /** Gives the slot up at once so a successor need not wait for the lease to run out. */
  async releaseSlot(fence: SlotFence, nowMs: number): Promise<boolean> {
    try {
      await this.ddb.send(
        new UpdateCommand({
          TableName: this.o.tableName,
          Key: { pk: slotKey(fence.slot) },
          UpdateExpression: 'SET expiresAtMs = :now, releasedAtMs = :now REMOVE #owner',
          ConditionExpression: '#owner = :me AND epoch = :epoch',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':me': fence.workerId, ':epoch': fence.epoch, ':now': nowMs },
        }),
      );
      return true;
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return false;
      throw e;
    }
  }

  /**
   * Grants one launch for a slot: succeeds for one caller per grace window, only
   * while the slot has no live owner (or `force`, when its task is known to have
   * stopped, or its owner missed heartbeats). Returns the launch sequence number.
   */
  async requestLaunch(slot: number, nowMs: number, o: LivenessOptions, mode: 'if-dead' | 'force'): Promise<number | undefined> {
    const graceCutoffMs = nowMs - o.taskStartGraceSeconds * 1000;
    const staleHeartbeatMs = nowMs - 2 * o.heartbeatIntervalSeconds * 1000;
    const grace = '(attribute_not_exists(launchRequestedAtMs) OR launchRequestedAtMs < :cutoff OR launchRequestedAtMs < heartbeatAtMs)';
    const dead =
      mode === 'force'
        ? ''
        : ' AND (attribute_not_exists(#owner) OR attribute_not_exists(expiresAtMs) OR expiresAtMs <= :now OR heartbeatAtMs < :stale)';
    try {
      const r = await this.ddb.send(
        new UpdateCommand({
          TableName: this.o.tableName,
          Key: { pk: slotKey(slot) },
          UpdateExpression: 'SET launchRequestedAtMs = :now, slot = :slot, videoCount = if_not_exists(videoCount, :zero) ADD launchSeq :one',
          ConditionExpression: `${grace}${dead}`,
          ExpressionAttributeNames: mode === 'force' ? undefined : { '#owner': 'owner' },
          ExpressionAttributeValues: {
            ':now': nowMs,
            ':cutoff': graceCutoffMs,
            ':slot': slot,
            ':one': 1,
            ':zero': 0,
            ...(mode === 'force' ? {} : { ':stale': staleHeartbeatMs }),
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return Number(r.Attributes?.launchSeq);
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return undefined;
      throw e;
    }
  }

  /** Janitor repair: sets a slot's video count to what the index says. */
  async setVideoCount(slot: number, expected: number, actual: number): Promise<void> {
    try {
      await this.ddb.send(
        new UpdateCommand({
          TableName: this.o.tableName,
          Key: { pk: slotKey(slot) },
          UpdateExpression: 'SET videoCount = :actual, slot = :slot',
          ConditionExpression: 'attribute_not_exists(videoCount) OR videoCount = :expected',
          ExpressionAttributeValues: { ':actual': actual, ':expected': expected, ':slot': slot },
        }),
      );
    } catch (e) {
      if (!(e instanceof ConditionalCheckFailedException)) throw e;
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

  // ---------------------------------------------------------------- videos

  /** Reads the pins of many videos (projection only). One BatchGetItem per 100 videos. */
  async getPins(videoIds: readonly string[]): Promise<Map<string, VideoPin>> {
    const items = await this.batchGet(videoIds.map(videoKey), false, 'pk, pinnedSlot, #token');
    const out = new Map<string, VideoPin>();
    for (const id of videoIds) {
      const it = items.get(videoKey(id));
      out.set(id, { ...(it?.pinnedSlot !== undefined ? { pinnedSlot: Number(it.pinnedSlot) } : {}), token: Number(it?.token ?? 0) });
    }
    return out;
  }

  async getVideo(videoId: string): Promise<VideoRecord> {
    const r = await this.ddb.send(new GetCommand({ TableName: this.o.tableName, Key: { pk: videoKey(videoId) }, ConsistentRead: true }));
    return toVideoRecord(videoId, r.Item, this.o.firstFrameNumber ?? 0);
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
      await this.transact(
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

  /**
   * Takes ownership of a video pinned to the caller's slot: the token grows by one
   * (a change of owner) and the owner history records it. Returns the record as now
   * stored, or `not-here` when the video is pinned elsewhere or not at all.
   */
  async adoptVideo(videoId: string, fence: SlotFence, nowMs: number): Promise<VideoRecord | 'not-here'> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await this.getVideo(videoId);
      if (current.pinnedSlot !== fence.slot) return 'not-here';
      if (current.owner === fence.workerId && current.ownerEpoch === fence.epoch) return current;
      const token = current.token + 1;
      const ck = current.checkpoint;
      const adopted = withNewOwner(ck, { worker: fence.workerId, token, sinceMs: nowMs, fromFrame: ck.sequencer.nextFrame });
      const checkpoint: VideoCheckpoint = { ...adopted, seq: ck.seq + 1 };
      try {
        await this.ddb.send(
          new UpdateCommand({
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
              ':ck': checkpoint,
              ':seq': checkpoint.seq,
              ':prevSeq': ck.seq,
              ':slot': fence.slot,
            },
          }),
        );
        return { ...current, owner: fence.workerId, ownerEpoch: fence.epoch, token, checkpoint, state: 'pinned' };
      } catch (e) {
        if (!(e instanceof ConditionalCheckFailedException)) throw e;
      }
    }
    throw new Error(`could not adopt video ${videoId}: lease kept changing`);
  }

  /**
   * Commits results, checkpoints and summaries in as few transactions as fit, each
   * re-checking the slot lease (owner, epoch, unexpired) and each video's token and
   * checkpoint sequence. A write under an older token is rejected by the store.
   */
  async commit(fence: SlotFence, units: readonly CommitUnit[], nowMs: number): Promise<CommitOutcome> {
    const fenced: string[] = [];
    const committed: string[] = [];
    let ambiguousRetries = 0;
    for (const group of packUnits(units, MAX_TRANSACT_ITEMS - 1)) {
      const outcome = await this.commitGroup(fence, group, nowMs);
      if (outcome.kind === 'slot-lost') return outcome;
      ambiguousRetries += outcome.ambiguousRetries;
      fenced.push(...outcome.fenced);
      committed.push(...group.map((u) => u.videoId).filter((id) => !outcome.fenced.includes(id)));
    }
    if (fenced.length > 0) return { kind: 'videos-fenced', videoIds: fenced, committedVideoIds: committed };
    return { kind: 'committed', ambiguousRetries };
  }

  private async commitGroup(
    fence: SlotFence,
    units: readonly CommitUnit[],
    nowMs: number,
  ): Promise<{ kind: 'ok'; fenced: string[]; ambiguousRetries: number } | { kind: 'slot-lost' }> {
    let pending = [...units];
    const fenced: string[] = [];
    let ambiguousRetries = 0;
    for (let attempt = 0; attempt < 5 && pending.length > 0; attempt++) {
      const items = this.transactItemsFor(fence, pending, nowMs);
      try {
        await this.ddb.send(new TransactWriteCommand({ TransactItems: items }));
        return { kind: 'ok', fenced, ambiguousRetries };
      } catch (e) {
        if (!(e instanceof TransactionCanceledException)) {
          // Unknown outcome (timeout, 5xx after retries): re-reading decides per video below.
          ambiguousRetries++;
        } else {
          const reasons = e.CancellationReasons ?? [];
          if (reasons[0]?.Code === 'ConditionalCheckFailed') return { kind: 'slot-lost' };
          if (reasons.every((r) => !r.Code || r.Code === 'None' || r.Code === 'TransactionConflict')) {
            await new Promise((r) => setTimeout(r, 10 * 2 ** attempt * (0.5 + Math.random())));
            continue;
          }
        }
        // Decide per video by reading its lease: already committed, fenced, or retry.
        const next: CommitUnit[] = [];
        for (const u of pending) {
          const v = await this.getVideo(u.videoId);
          if (v.owner === fence.workerId && v.token === u.token && v.checkpoint.seq === u.checkpoint.seq) continue; // landed
          if (v.owner === fence.workerId && v.token === u.token && v.checkpoint.seq === u.expectedSeq && v.pinnedSlot === fence.slot) {
            next.push(u);
            continue;
          }
          fenced.push(u.videoId);
        }
        const slot = await this.getSlot(fence.slot);
        if (slot.owner !== fence.workerId || slot.epoch !== fence.epoch || slot.expiresAtMs <= Date.now()) return { kind: 'slot-lost' };
        pending = next;
      }
    }
    if (pending.length > 0) throw new Error(`commit did not settle for ${pending.map((u) => u.videoId).join(', ')}`);
    return { kind: 'ok', fenced, ambiguousRetries };
  }

  private transactItemsFor(fence: SlotFence, units: readonly CommitUnit[], nowMs: number): TransactItem[] {
    const items: TransactItem[] = [
      {
        ConditionCheck: {
          TableName: this.o.tableName,
          Key: { pk: slotKey(fence.slot) },
          ConditionExpression: '#owner = :me AND epoch = :epoch AND expiresAtMs > :now',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':me': fence.workerId, ':epoch': fence.epoch, ':now': nowMs },
        },
      },
    ];
    for (const u of units) {
      items.push({
        Update: {
          TableName: this.o.tableName,
          Key: { pk: videoKey(u.videoId) },
          UpdateExpression: 'SET checkpoint = :ck, ckSeq = :seq, lastCommitAtMs = :now',
          ConditionExpression: '#owner = :me AND #token = :token AND ckSeq = :prevSeq AND pinnedSlot = :slot',
          ExpressionAttributeNames: { '#owner': 'owner', '#token': 'token' },
          ExpressionAttributeValues: {
            ':ck': u.checkpoint,
            ':seq': u.checkpoint.seq,
            ':now': nowMs,
            ':me': fence.workerId,
            ':token': u.token,
            ':prevSeq': u.expectedSeq,
            ':slot': fence.slot,
          },
        },
      });
      for (const r of u.results) {
        items.push({
          Put: {
            TableName: this.o.resultsTableName,
            Item: r,
            // A frame's result is written once; redeliveries and duplicates never overwrite it.
            ConditionExpression: 'attribute_not_exists(videoId)',
          },
        });
      }
      items.push({
        Put: {
          TableName: this.o.resultsTableName,
          Item: u.summary,
          ConditionExpression: 'attribute_not_exists(#token) OR #token <= :token',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':token': u.token },
        },
      });
    }
    return items;
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
   * Operator replay: rewinds a video to `fromFrame` with a fresh processor state. The
   * token grows and the pin is dropped, so a worker still holding the video is fenced
   * and the next frame is admitted afresh. `kept` are the counts of results before
   * `fromFrame`, which stay. The caller deletes results from `fromFrame` on and re-sends
   * the frames with a replay tag (FIFO deduplication would drop plain re-sends).
   */
  async resetForReplay(
    videoId: string,
    fromFrame: number,
    expectedToken: number,
    kept: { framesOk: number; framesFailed: number; framesGap: number; firstFrame?: number; lastFrame?: number },
    nowMs: number,
  ): Promise<{ token: number } | 'token-moved'> {
    const v = await this.getVideo(videoId);
    if (v.token !== expectedToken) return 'token-moved';
    const ck = v.checkpoint;
    const checkpoint: VideoCheckpoint = {
      seq: ck.seq + 1,
      sequencer: { firstFrame: ck.sequencer.firstFrame, nextFrame: fromFrame, waitingSinceMs: null, buffered: [], endFrame: ck.sequencer.endFrame },
      framesOk: kept.framesOk,
      framesFailed: kept.framesFailed,
      framesGap: kept.framesGap,
      ...(kept.firstFrame !== undefined ? { firstFrame: kept.firstFrame } : {}),
      ...(kept.lastFrame !== undefined ? { lastFrame: kept.lastFrame } : {}),
      complete: false,
      owners: ck.owners,
      ownerChanges: ck.ownerChanges,
    };
    const reset = await this.unpin(videoId, v.pinnedSlot, nowMs, undefined, {
      set: 'checkpoint = :ck, ckSeq = :seq, #token = :next, videoId = :vid',
      condition: '(attribute_not_exists(#token) AND :token = :zero) OR #token = :token',
      values: { ':ck': checkpoint, ':seq': checkpoint.seq, ':next': expectedToken + 1, ':token': expectedToken, ':zero': 0, ':vid': videoId },
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
      await this.transact(new TransactWriteCommand({ TransactItems: items }));
      return true;
    } catch (e) {
      if (e instanceof TransactionCanceledException) return false;
      throw e;
    }
  }

  /**
   * Sends a transaction, retrying when it was cancelled only by conflicts with other
   * transactions on the same items (router pins, worker commits and releases touch the
   * slot item concurrently); a failed condition is never retried.
   */
  private async transact(command: TransactWriteCommand): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.ddb.send(command);
        return;
      } catch (e) {
        const conflictOnly =
          e instanceof TransactionCanceledException &&
          (e.CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict') &&
          (e.CancellationReasons ?? []).every((r) => !r.Code || r.Code === 'None' || r.Code === 'TransactionConflict');
        if (!conflictOnly || attempt >= 6) throw e;
        await new Promise((r) => setTimeout(r, 10 * 2 ** attempt * (0.5 + Math.random())));
      }
    }
  }

  private async batchGet(keys: readonly string[], consistent: boolean, projection?: string): Promise<Map<string, Record<string, unknown>>> {
    const out = new Map<string, Record<string, unknown>>();
    const unique = [...new Set(keys)];
    for (let i = 0; i < unique.length; i += 100) {
      let request: Record<string, { pk: string }[]> | undefined = { [this.o.tableName]: unique.slice(i, i + 100).map((pk) => ({ pk })) };
      for (let attempt = 0; request && attempt < 8; attempt++) {
        const r = await this.ddb.send(
          new BatchGetCommand({
            RequestItems: {
              [this.o.tableName]: {
                Keys: request[this.o.tableName]!,
                ConsistentRead: consistent,
                ...(projection ? { ProjectionExpression: projection, ExpressionAttributeNames: { '#token': 'token' } } : {}),
              },
            },
          }),
        );
        for (const it of r.Responses?.[this.o.tableName] ?? []) out.set(String(it.pk), it);
        const left = r.UnprocessedKeys?.[this.o.tableName]?.Keys as { pk: string }[] | undefined;
        request = left && left.length > 0 ? { [this.o.tableName]: left } : undefined;
        if (request) await new Promise((res) => setTimeout(res, 20 * 2 ** attempt));
      }
      if (request) throw new Error('BatchGetItem left keys unprocessed after retries');
    }
    return out;
  }
}

function toSlotRecord(slot: number, it: Record<string, unknown> | undefined): SlotRecord {
  if (!it) return emptySlotRecord(slot);
  return {
    slot,
    ...(typeof it.owner === 'string' ? { owner: it.owner } : {}),
    epoch: Number(it.epoch ?? 0),
    expiresAtMs: Number(it.expiresAtMs ?? 0),
    heartbeatAtMs: Number(it.heartbeatAtMs ?? 0),
    videoCount: Number(it.videoCount ?? 0),
    launchSeq: Number(it.launchSeq ?? 0),
    launchRequestedAtMs: Number(it.launchRequestedAtMs ?? 0),
  };
}

function toVideoRecord(videoId: string, it: Record<string, unknown> | undefined, firstFrameNumber: number): VideoRecord {
  if (!it) return { videoId, token: 0, state: 'new', checkpoint: emptyCheckpoint(firstFrameNumber) };
  const ck = (it.checkpoint as VideoCheckpoint | undefined) ?? emptyCheckpoint(firstFrameNumber);
  return {
    videoId,
    ...(it.pinnedSlot !== undefined ? { pinnedSlot: Number(it.pinnedSlot) } : {}),
    token: Number(it.token ?? 0),
    ...(typeof it.owner === 'string' ? { owner: it.owner } : {}),
    ...(it.ownerEpoch !== undefined ? { ownerEpoch: Number(it.ownerEpoch) } : {}),
    state: it.state === 'released' ? 'released' : it.pinnedSlot !== undefined ? 'pinned' : 'new',
    checkpoint: { ...ck, seq: Number(it.ckSeq ?? ck.seq ?? 0) },
  };
}

/** Packs commit units into groups whose item count fits one transaction. */
export function packUnits(units: readonly CommitUnit[], maxItems: number): CommitUnit[][] {
  const groups: CommitUnit[][] = [];
  let current: CommitUnit[] = [];
  let size = 0;
  for (const u of units) {
    const n = u.results.length + 2;
    if (n > maxItems) throw new Error(`commit unit for ${u.videoId} has ${n} items; split it before committing`);
    if (size + n > maxItems && current.length > 0) {
      groups.push(current);
      current = [];
      size = 0;
    }
    current.push(u);
    size += n;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

function isConditionalCancel(e: unknown, index: number): boolean {
  return e instanceof TransactionCanceledException && e.CancellationReasons?.[index]?.Code === 'ConditionalCheckFailed';
}

function errorName(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
