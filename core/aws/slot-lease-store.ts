/**
 * DynamoDB adapter for the slot half of the lease protocol: `slot#{n}` items in the
 * leases table hold a worker slot's owner, epoch (grows on every claim), expiresAtMs,
 * heartbeat, videoCount and launch bookkeeping. A slot is held by heartbeat.
 *
 * Every write is conditional and compares expiry attributes itself; decisions live in
 * lease-logic.ts. The video half (pins, adoption, fenced commits) is lease-store.ts,
 * which extends this class: both halves share one table and its retry helpers.
 */
import { GetCommand, QueryCommand, ScanCommand, UpdateCommand, type DynamoDBDocumentClient, type TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { emptySlotRecord, type LivenessOptions, type SlotRecord } from '../lease-logic.ts';
import { mapBounded } from '../async.ts';
import { recordLaunchedTaskOnSlot, requestLaunchGrant, withdrawLaunchGrant, type LaunchGrantTable } from './launch-grants.ts';

export const slotKey = (slot: number) => `slot#${slot}`;
export const videoKey = (videoId: string) => `video#${videoId}`;

/** Identifies the slot lease a worker writes under; every commit re-checks it. */
export interface SlotFence {
  readonly slot: number;
  readonly workerId: string;
  readonly epoch: number;
}

/** Thrown by renew when the outcome could not be confirmed either way. */
export class UnconfirmedError extends Error {
  override name = 'UnconfirmedError';
}

export interface LeaseTableOptions {
  readonly tableName: string;
  readonly resultsTableName: string;
  readonly pinnedSlotIndex: string;
}

export class SlotLeaseStore<O extends LeaseTableOptions = LeaseTableOptions> {
  protected readonly ddb: DynamoDBDocumentClient;
  protected readonly o: O;

  constructor(ddb: DynamoDBDocumentClient, options: O) {
    this.ddb = ddb;
    this.o = options;
  }


  /** Reads slots 0..count-1 (missing items read as never-claimed). One BatchGetItem per 100 slots. */
  async getSlots(count: number): Promise<SlotRecord[]> {
    const keys = Array.from({ length: count }, (_, i) => slotKey(i));
    const items = await this.batchGet(keys, true);
    return keys.map((k, i) => toSlotRecord(i, items.get(k)));
  }

  /** Reads the given slots only (one BatchGetItem per 100): what a router needs for its launch check, whatever `slotCount` is. */
  async getSlotsNumbered(slots: readonly number[]): Promise<SlotRecord[]> {
    const keys = slots.map(slotKey);
    const items = await this.batchGet(keys, true);
    return slots.map((slot, i) => toSlotRecord(slot, items.get(keys[i]!)));
  }

  async getSlot(slot: number): Promise<SlotRecord> {
    const r = await this.ddb.send(new GetCommand({ TableName: this.o.tableName, Key: { pk: slotKey(slot) }, ConsistentRead: true }));
    return toSlotRecord(slot, r.Item);
  }

  /**
   * Claims a slot whose lease has run out more than `skewToleranceMs` ago by the
   * claimer's clock (the owner wrote its expiry from its own clock, which may run behind
   * ours), or that has no owner (released), or whose owner's lease a task-stopped report
   * ended (`ownerStoppedAtMs` after its claim: no skew allowance is owed to a stopped
   * task). The condition is lease-logic's {@link canClaimSlot}. Returns the new epoch, or
   * undefined while another worker's lease is valid.
   *
   * `takenOver` says whether the claim took the slot from an owner that did not release it
   * (its lease ran out, or a task-stopped report ended it): that owner may have died with
   * work in flight (the crash-loop breaker, decision 29). It comes from the claim's own
   * answer (`ReturnValues: ALL_OLD`), so it costs no call. A claim confirmed by re-reading
   * (below) cannot see what it replaced and says `true`, the cautious answer.
   */
  async claimSlot(
    slot: number,
    workerId: string,
    nowMs: number,
    ttlMs: number,
    skewToleranceMs = 0,
  ): Promise<{ epoch: number; expiresAtMs: number; takenOver: boolean } | undefined> {
    const expiresAtMs = nowMs + ttlMs;
    try {
      const r = await this.ddb.send(
        new UpdateCommand({
          TableName: this.o.tableName,
          Key: { pk: slotKey(slot) },
          UpdateExpression:
            'SET #owner = :me, expiresAtMs = :exp, heartbeatAtMs = :now, slot = :slot, claimedAtMs = :now, videoCount = if_not_exists(videoCount, :zero) ADD epoch :one',
          ConditionExpression:
            'attribute_not_exists(expiresAtMs) OR attribute_not_exists(#owner) OR expiresAtMs <= :lapsed' +
            ' OR (expiresAtMs <= :now AND ownerStoppedAtMs > claimedAtMs)',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: {
            ':me': workerId,
            ':exp': expiresAtMs,
            ':now': nowMs,
            ':lapsed': nowMs - Math.max(0, skewToleranceMs),
            ':slot': slot,
            ':one': 1,
            ':zero': 0,
          },
          // The item as it was: its epoch + 1 is ours (ADD epoch :one), and an owner still
          // there means the previous holder never released the slot.
          ReturnValues: 'ALL_OLD',
        }),
      );
      const previous = r.Attributes;
      return { epoch: Number(previous?.epoch ?? 0) + 1, expiresAtMs, takenOver: typeof previous?.owner === 'string' };
    } catch (e) {
      if (!(e instanceof ConditionalCheckFailedException)) throw e;
      // The SDK retries a call that timed out; when the first attempt applied, the retry
      // fails the condition. Our owner and our exact expiry in the item mean it was ours.
      const current = await this.getSlot(slot);
      if (current.owner === workerId && current.expiresAtMs === expiresAtMs) return { epoch: current.epoch, expiresAtMs, takenOver: true };
      return undefined;
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
          // An expired lease is gone even if nobody has claimed it yet (the janitor ends
          // the lease of a task reported stopped): a heartbeat must not revive it.
          ConditionExpression: '#owner = :me AND epoch = :epoch AND expiresAtMs > :now',
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
      if (current.expiresAtMs <= nowMs) return 'lost';
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
   * Ends the lease of a slot whose task is known to have stopped (ECS task-stopped
   * event, or the local worker's exit), so that its replacement can claim at once
   * instead of waiting for the TTL. Succeeds only while the lease is still running and
   * its owner claimed the slot before the task stopped (`claimedAtMs < stoppedAtMs`):
   * an owner that claimed later is a successor and keeps its lease. When the stopped
   * task's worker id is known, the owner must be that worker too (a zombie that stops
   * after its successor claimed must not end the successor's lease).
   *
   * Sets `expiresAtMs` to the earlier of now and the stop, which is what `claimSlot`
   * tests; owner and epoch stay for the record. Safe even if the report were wrong:
   * every commit re-checks owner, epoch and expiry, and the next claim bumps the epoch.
   * Returns false when the condition did not hold (nothing was changed).
   */
  async expireStoppedOwner(slot: number, stoppedAtMs: number, nowMs: number, stoppedWorkerId?: string): Promise<boolean> {
    const expiresAtMs = Math.min(nowMs, stoppedAtMs);
    try {
      await this.ddb.send(
        new UpdateCommand({
          TableName: this.o.tableName,
          Key: { pk: slotKey(slot) },
          UpdateExpression: 'SET expiresAtMs = :exp, ownerStoppedAtMs = :stopped',
          ConditionExpression:
            `attribute_exists(#owner) AND expiresAtMs > :now AND claimedAtMs < :stopped` + (stoppedWorkerId !== undefined ? ' AND #owner = :worker' : ''),
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: {
            ':exp': expiresAtMs,
            ':now': nowMs,
            ':stopped': stoppedAtMs,
            ...(stoppedWorkerId !== undefined ? { ':worker': stoppedWorkerId } : {}),
          },
        }),
      );
      return true;
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return false;
      throw e;
    }
  }

  /**
   * Grants one launch for a slot: succeeds for one caller per grace window, only while
   * the slot has no live owner (or `force`), never during a failed launch's backoff.
   * See {@link requestLaunchGrant}. Returns the launch sequence number.
   */
  requestLaunch(slot: number, nowMs: number, o: LivenessOptions, mode: 'if-dead' | 'force'): Promise<number | undefined> {
    return requestLaunchGrant(this.grantTable(), slot, nowMs, o, mode);
  }

  /** Withdraws grant `launchSeq` of a launch that did not happen, retryable from `retryAtMs`. See {@link withdrawLaunchGrant}. */
  withdrawLaunch(slot: number, launchSeq: number, retryAtMs: number): Promise<boolean> {
    return withdrawLaunchGrant(this.grantTable(), slot, launchSeq, retryAtMs);
  }

  /** Records the task grant `launchSeq` started. See {@link recordLaunchedTaskOnSlot}. */
  recordLaunchedTask(slot: number, launchSeq: number, taskId: string): Promise<boolean> {
    return recordLaunchedTaskOnSlot(this.grantTable(), slot, launchSeq, taskId);
  }

  private grantTable(): LaunchGrantTable {
    return { ddb: this.ddb, tableName: this.o.tableName };
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
   * Sends a transaction, retrying when it was cancelled only by conflicts with other
   * transactions on the same items (router pins, worker commits and releases touch the
   * slot item concurrently); a failed condition is never retried.
   */
  protected async transact(command: TransactWriteCommand): Promise<void> {
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

  protected async batchGet(keys: readonly string[], consistent: boolean, projection?: string): Promise<Map<string, Record<string, unknown>>> {
    const out = new Map<string, Record<string, unknown>>();
    const unique = [...new Set(keys)];
    const chunks: string[][] = [];
    for (let i = 0; i < unique.length; i += 100) chunks.push(unique.slice(i, i + 100));
    // BatchGetItem takes 100 keys; the chunks of a large read (a router batch of 1,000
    // videos, the janitor's 1,000 slots) are read in parallel, a few at a time.
    await mapBounded(chunks, BATCH_GET_CONCURRENCY, async (chunk) => {
      let request: Record<string, { pk: string }[]> | undefined = { [this.o.tableName]: chunk.map((pk) => ({ pk })) };
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
    });
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
    ...(typeof it.launchTaskId === 'string' ? { launchTaskId: it.launchTaskId } : {}),
    launchRetryAtMs: Number(it.launchRetryAtMs ?? 0),
    launchFailures: Number(it.launchFailures ?? 0),
    ...(it.claimedAtMs !== undefined ? { claimedAtMs: Number(it.claimedAtMs) } : {}),
    ...(it.ownerStoppedAtMs !== undefined ? { ownerStoppedAtMs: Number(it.ownerStoppedAtMs) } : {}),
  };
}

/**
 * BatchGetItem calls one read has in flight: enough to read 1,000 keys in two rounds,
 * few enough not to burst a table's partitions (3,000 read units/s each).
 */
const BATCH_GET_CONCURRENCY = 5;

export function errorName(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
