/**
 * DynamoDB adapter for the slot half of the lease protocol: `slot#{n}` items in the
 * leases table hold a worker slot's owner, epoch (grows on every claim), expiresAtMs,
 * heartbeat, videoCount and launch bookkeeping. A slot is held by heartbeat.
 *
 * Every write is conditional and compares expiry attributes itself; decisions live in
 * lease-logic.ts. The video half (pins, adoption, fenced commits) is video-lease-store.ts;
 * lease-store.ts composes the two into the adapter of the whole table (they share the
 * table and its retry helpers through lease-table.ts).
 */
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { emptySlotRecord, type LivenessOptions, type SlotRecord } from '../lease-logic.ts';
import { UnconfirmedError, type DeadOwnerRelease, type LaunchGrants, type SlotClaim, type SlotFence, type SlotLeases } from '../port.ts';
import { recordLaunchedTaskOnSlot, requestLaunchGrant, withdrawLaunchGrant, type LaunchGrantTable } from './launch-grants.ts';
import { errorName, LeaseTableAccess, slotKey, type LeaseTableOptions } from './lease-table.ts';

export { slotKey, videoKey, errorName, type LeaseTableOptions } from './lease-table.ts';
export { UnconfirmedError, type SlotFence } from '../port.ts';

/** The slot half of the lease adapter: claims, heartbeats, releases, launch grants and the janitor's slot repairs. */
export class SlotLeaseStore implements SlotLeases, LaunchGrants, DeadOwnerRelease {
  private readonly ddb: DynamoDBDocumentClient;
  private readonly o: LeaseTableOptions;
  private readonly table: LeaseTableAccess;

  /** Over a document client and the table's options, or over the access the video half shares. */
  constructor(table: LeaseTableAccess);
  constructor(ddb: DynamoDBDocumentClient, options: LeaseTableOptions);
  constructor(tableOrDdb: LeaseTableAccess | DynamoDBDocumentClient, options?: LeaseTableOptions) {
    this.table = tableOrDdb instanceof LeaseTableAccess ? tableOrDdb : new LeaseTableAccess(tableOrDdb, options!);
    this.ddb = this.table.ddb;
    this.o = this.table.o;
  }

  /** Reads slots 0..count-1 (missing items read as never-claimed). One BatchGetItem per 100 slots. */
  async getSlots(count: number): Promise<SlotRecord[]> {
    const keys = Array.from({ length: count }, (_, i) => slotKey(i));
    const items = await this.table.batchGet(keys, true);
    return keys.map((k, i) => toSlotRecord(i, items.get(k)));
  }

  /** Reads the given slots only (one BatchGetItem per 100): what a router needs for its launch check, whatever `slotCount` is. */
  async getSlotsNumbered(slots: readonly number[]): Promise<SlotRecord[]> {
    const keys = slots.map(slotKey);
    const items = await this.table.batchGet(keys, true);
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
  ): Promise<SlotClaim | undefined> {
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
   * task's worker id is known, the owner must be that worker too, or one of its worker
   * processes (`<id>/<n>`, a task with a hot spare: decision 75); a zombie that stops
   * after its successor claimed must not end the successor's lease.
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
            `attribute_exists(#owner) AND expiresAtMs > :now AND claimedAtMs < :stopped` +
            // A task with a hot spare (decision 75) names its worker processes `<task's worker id>/<n>`.
            (stoppedWorkerId !== undefined ? ' AND (#owner = :worker OR begins_with(#owner, :workerChild))' : ''),
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: {
            ':exp': expiresAtMs,
            ':now': nowMs,
            ':stopped': stoppedAtMs,
            ...(stoppedWorkerId !== undefined ? { ':worker': stoppedWorkerId, ':workerChild': `${stoppedWorkerId}/` } : {}),
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
   * A supervisor's fenced release of the worker process it saw die (decision 75): the
   * lease ends at the death, only while the slot is still `fence`'s claim (owner and
   * epoch: a successor's claim bumped the epoch and is never touched). The owner stays, so
   * the successor's claim reads `takenOver` (the crash-loop breaker, decision 29), and
   * `ownerStoppedAtMs` makes the slot claimable at once. An expiry already earlier than the
   * death (a frozen worker killed after its lease lapsed) is not moved later: then only the
   * stop is recorded.
   */
  async endDeadOwner(fence: SlotFence, stoppedAtMs: number, nowMs: number): Promise<'ended' | 'not-held'> {
    const exp = Math.min(nowMs, stoppedAtMs);
    const held = '#owner = :me AND epoch = :epoch AND claimedAtMs < :stopped';
    const values = { ':me': fence.workerId, ':epoch': fence.epoch, ':stopped': stoppedAtMs, ':exp': exp };
    for (const [update, lapse] of [
      ['SET expiresAtMs = :exp, ownerStoppedAtMs = :stopped', 'expiresAtMs > :exp'],
      ['SET ownerStoppedAtMs = :stopped', 'expiresAtMs <= :exp'],
    ] as const) {
      try {
        await this.ddb.send(
          new UpdateCommand({
            TableName: this.o.tableName,
            Key: { pk: slotKey(fence.slot) },
            UpdateExpression: update,
            ConditionExpression: `${held} AND ${lapse}`,
            ExpressionAttributeNames: { '#owner': 'owner' },
            ExpressionAttributeValues: values,
          }),
        );
        return 'ended';
      } catch (e) {
        if (!(e instanceof ConditionalCheckFailedException)) throw e;
      }
    }
    return 'not-held';
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

