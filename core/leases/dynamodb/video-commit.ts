/**
 * The fenced commit of results, checkpoints and summaries (the body of
 * `LeaseStore.commit`): packing units into transactions, sending them, and deciding each
 * unit's outcome by commit id (the pure decisions are in commit-outcome.ts; see decision 22
 * in docs/decisions.md). Split from lease-store.ts along that seam; it reads videos and the
 * slot through the store it is given.
 */
import { TransactWriteCommand, type DynamoDBDocumentClient, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { decideCancellation, decideStoredOutcome, storedCommitState, type CancellationReason, type ItemOwner, type StoredCommitState, type UnitOutcome } from '../../commit/commit-outcome.ts';
import { packUnits, storedEventsOf, storedItemsOf, unitProblem, type CommitUnit } from '../../commit/commit-packing.ts';
import { framesToCheck } from '../../commit/record-packing.ts';
import { storedCheckpoint } from '../../commit/checkpoint.ts';
import { queryResults } from '../../commit/dynamodb/results-reader.ts';
import type { CommitOutcome, SlotFence } from '../port.ts';
import { slotKey, videoKey } from './lease-table.ts';
import type { RulesItems } from './rules-items.ts';

/** A TransactWriteItems item. */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

// CommitOutcome is the lease port's (core/leases/port.ts); re-exported for importers of this file.
export type { CommitOutcome } from '../port.ts';

/** Attempts per transaction group (conflicts with other transactions and unknown outcomes retry). */
const MAX_COMMIT_ATTEMPTS = 5;

/** What the committer needs from the lease store. */
export interface VideoCommitterDeps {
  readonly ddb: DynamoDBDocumentClient;
  /** The leases table (slot and video items). */
  readonly tableName: string;
  /** The results table (frame results and summaries). */
  readonly resultsTableName: string;
  /**
   * The events outbox table (issue 22). Units' events are written only when it is set; a
   * unit with events and no table is a wiring error and fails before anything is sent.
   */
  readonly eventsTableName?: string;
  /** A consistent read of a video's lease item (throws when it fails). */
  readonly readVideo: (videoId: string) => Promise<StoredCommitState>;
  /** A consistent read of a slot's lease (throws when it fails). */
  readonly readSlot: (slot: number) => Promise<{ readonly owner?: string; readonly epoch: number; readonly expiresAtMs: number }>;
  /** The checkpoints' out-of-line rules documents (rules-items.ts): each transaction writes those not known stored. */
  readonly rules: RulesItems;
}

/** Sends commit units as fenced transactions and decides every unit's outcome. */
export class VideoCommitter {
  private readonly d: VideoCommitterDeps;

  constructor(deps: VideoCommitterDeps) {
    this.d = deps;
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
    const outcomes = new Map<string, UnitOutcome>();
    let ambiguousRetries = 0;
    // A unit that names one item twice would fail its whole transaction on DynamoDB (and
    // pass, wrongly, on DynamoDB Local): it is refused here, before anything is sent, and the
    // others go on without it. One unit per video, too.
    const sendable: CommitUnit[] = [];
    for (const u of units) {
      const problem = outcomes.has(u.videoId) || sendable.some((x) => x.videoId === u.videoId) ? `two units for video ${u.videoId}` : unitProblem(u);
      if (problem) outcomes.set(u.videoId, { invalid: problem });
      else sendable.push(u);
    }
    // Records already standing among a unit's segment frames settle those frames, as a
    // per-frame condition would (record-packing.ts, framesToCheck); a failed read leaves
    // the unit unsent (not landed: retried later).
    const checked = await Promise.all(sendable.map(async (u) => ({ u, recorded: await this.recordedAmong(u).catch(() => undefined) })));
    sendable.length = 0;
    for (const { u, recorded } of checked) {
      if (recorded === undefined) outcomes.set(u.videoId, 'not-landed');
      else if (recorded.length > 0) outcomes.set(u.videoId, { conflict: recorded[0]!, ...(recorded.length > 1 ? { alsoRecorded: recorded.slice(1) } : {}) });
      else sendable.push(u);
    }
    const groups = packUnits(sendable); // throws only before anything was sent (a unit that cannot fit)
    if (this.d.eventsTableName === undefined && units.some((u) => (u.events?.length ?? 0) > 0)) throw new Error('commit units carry events but no events table is wired');
    for (let g = 0; g < groups.length; g++) {
      const r = await this.commitGroup(fence, groups[g]!, nowMs);
      ambiguousRetries += r.ambiguousRetries;
      for (const [videoId, o] of r.outcomes) outcomes.set(videoId, o);
      // A unit that landed landed with its rules document (same transaction, or an earlier one).
      for (const u of groups[g]!) if (r.outcomes.get(u.videoId) === 'landed') this.d.rules.landed(u.checkpoint);
      if (r.slotLost) {
        // Groups that landed stay landed; later groups were never sent.
        for (const later of groups.slice(g + 1)) for (const u of later) outcomes.set(u.videoId, 'fenced');
        return { kind: 'slot-lost', outcomes, ambiguousRetries };
      }
    }
    return { kind: 'settled', outcomes, ambiguousRetries };
  }

  /**
   * The unit's segment frames that already have a record, ascending: one range read per
   * run of consecutive frames (a unit's segment frames are usually one or two runs; a late
   * frame far below them is read alone, not with every record between). None to read
   * when the unit has no segment frames.
   */
  private async recordedAmong(u: CommitUnit): Promise<number[]> {
    const frames = [...framesToCheck(u.results, u.replacesGap)].sort((a, b) => a - b);
    const recorded: number[] = [];
    const source = { ddb: this.d.ddb, resultsTable: this.d.resultsTableName };
    for (let i = 0; i < frames.length; ) {
      let j = i;
      while (j + 1 < frames.length && frames[j + 1]! <= frames[j]! + 1) j++;
      for await (const page of queryResults(source, u.videoId, { fromFrame: frames[i]!, beforeFrame: frames[j]! + 1 })) recorded.push(...page.map((r) => r.frame));
      i = j + 1;
    }
    return recorded;
  }

  private async commitGroup(fence: SlotFence, units: readonly CommitUnit[], nowMs: number): Promise<{ outcomes: Map<string, UnitOutcome>; slotLost: boolean; ambiguousRetries: number }> {
    const outcomes = new Map<string, UnitOutcome>();
    let pending = [...units];
    let ambiguousRetries = 0;
    const slotLost = () => {
      for (const u of pending) outcomes.set(u.videoId, 'fenced');
      return { outcomes, slotLost: true, ambiguousRetries };
    };
    for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS && pending.length > 0; attempt++) {
      const { items, owners } = this.transactItemsFor(fence, pending, nowMs);
      let error: unknown;
      try {
        await this.d.ddb.send(new TransactWriteCommand({ TransactItems: items }));
        for (const u of pending) outcomes.set(u.videoId, 'landed');
        return { outcomes, slotLost: false, ambiguousRetries };
      } catch (e) {
        error = e;
      }
      if (isValidationError(error)) {
        // Refused as malformed before anything applied: a bug in what was sent, never an
        // unknown outcome to retry. Alone, the unit is invalid; in company, each unit is
        // sent alone so that only the faulty one is held back.
        if (pending.length === 1) {
          outcomes.set(pending[0]!.videoId, { invalid: `ValidationException: ${errorMessage(error).slice(0, 200)}` });
          return { outcomes, slotLost: false, ambiguousRetries };
        }
        for (const u of pending) {
          const alone = await this.commitGroup(fence, [u], nowMs);
          ambiguousRetries += alone.ambiguousRetries;
          for (const [videoId, o] of alone.outcomes) outcomes.set(videoId, o);
          if (alone.slotLost) {
            for (const rest of pending) if (!outcomes.has(rest.videoId)) outcomes.set(rest.videoId, 'fenced');
            return { outcomes, slotLost: true, ambiguousRetries };
          }
        }
        return { outcomes, slotLost: false, ambiguousRetries };
      }
      if (error instanceof TransactionCanceledException) {
        // This attempt wrote nothing. Videos whose condition failed are settled (fenced,
        // stale, a result conflict, or landed by an earlier attempt: by commit id only).
        const reasons: CancellationReason[] = (error.CancellationReasons ?? []).map((r) => {
          const stored = r.Item ? storedCommitState(plainItem(r.Item)) : undefined;
          return { ...(r.Code ? { Code: r.Code } : {}), ...(stored ? { stored } : {}) };
        });
        const d = decideCancellation(reasons, owners, pending, fence);
        if (d.kind === 'slot-lost') return slotLost();
        for (const [videoId, o] of d.settled) outcomes.set(videoId, o);
        pending = pending.filter((u) => !d.settled.has(u.videoId));
        if (d.backoff) await new Promise((r) => setTimeout(r, 10 * 2 ** attempt * (0.5 + Math.random())));
        continue;
      }
      // Unknown outcome (timeout, 5xx after the SDK's retries): the transaction may have
      // applied. Decide each unit by re-reading its video; a failed re-read leaves it
      // `unknown` (not retried: the store is unreachable, and the caller re-reads later).
      ambiguousRetries++;
      const next: CommitUnit[] = [];
      for (const u of pending) {
        let stored: StoredCommitState;
        try {
          stored = await this.d.readVideo(u.videoId);
        } catch {
          outcomes.set(u.videoId, 'unknown');
          continue;
        }
        const d = decideStoredOutcome(stored, u, fence);
        if (d === 'not-landed') next.push(u);
        else outcomes.set(u.videoId, d);
      }
      pending = next;
      if (pending.length === 0) break;
      try {
        const slot = await this.d.readSlot(fence.slot);
        if (slot.owner !== fence.workerId || slot.epoch !== fence.epoch || slot.expiresAtMs <= Date.now()) return slotLost();
      } catch {
        // The retry's own slot condition decides.
      }
    }
    // Attempts ran out with these units known unwritten and the lease ours at the last look.
    for (const u of pending) outcomes.set(u.videoId, 'not-landed');
    return { outcomes, slotLost: false, ambiguousRetries };
  }

  /** The transaction's items, and for each item the video (and result frame) it belongs to. */
  private transactItemsFor(fence: SlotFence, units: readonly CommitUnit[], nowMs: number): { items: TransactItem[]; owners: ItemOwner[] } {
    const items: TransactItem[] = [slotFenceCheck(this.d.tableName, fence, nowMs)];
    const owners: ItemOwner[] = [{ role: 'slot' }];
    const rulesInTransaction = new Set<string>();
    for (const u of units) {
      owners.push({ role: 'video', videoId: u.videoId });
      items.push({
        Update: {
          TableName: this.d.tableName,
          Key: { pk: videoKey(u.videoId) },
          UpdateExpression: 'SET checkpoint = :ck, ckSeq = :seq, lastCommitAtMs = :now',
          // The checkpoint replaced must be the one the unit was built on, by seq and by commit
          // id (a checkpoint written before ids existed has none: its seq decides).
          ConditionExpression:
            '#owner = :me AND #token = :token AND ckSeq = :prevSeq AND pinnedSlot = :slot AND (attribute_not_exists(checkpoint.commitId) OR checkpoint.commitId = :prevId)',
          ExpressionAttributeNames: { '#owner': 'owner', '#token': 'token' },
          // On a failed condition the cancellation carries the stored item: its commit id
          // tells fenced from stale, and an earlier attempt of this very unit from neither.
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ExpressionAttributeValues: {
            ':prevId': u.expectedCommitId,
            // Compressed, the commit id in the clear (core/commit/checkpoint.ts, decisions 65 and 76).
            ':ck': storedCheckpoint(u.checkpoint),
            ':seq': u.checkpoint.seq,
            ':now': nowMs,
            ':me': fence.workerId,
            ':token': u.token,
            ':prevSeq': u.expectedSeq,
            ':slot': fence.slot,
          },
        },
      });
      // The rules document the stored checkpoint refers to, unless known stored (decision 76);
      // after the video's update, so a unit's items stay together, starting with it.
      const rules = this.d.rules.putFor(u.checkpoint, rulesInTransaction);
      if (rules) {
        owners.push({ role: 'rules' });
        items.push(rules);
      }
      const replaceable = new Set(u.replacesGap ?? []);
      // A segment's run is one packed item (record-packing.ts), create-only like a frame's:
      // the checkpoint's fence above is what keeps its frames from being written twice.
      for (const r of storedItemsOf(u)) {
        owners.push({ role: 'result', videoId: u.videoId, frame: r.frame });
        items.push({
          Put: {
            TableName: this.d.resultsTableName,
            Item: r,
            // A frame's result is written once; redeliveries and duplicates never overwrite it.
            // Only a late frame may replace its gap record, and nothing else.
            ...(replaceable.has(r.frame)
              ? {
                  ConditionExpression: 'attribute_not_exists(videoId) OR #status = :gap',
                  ExpressionAttributeNames: { '#status': 'status' },
                  ExpressionAttributeValues: { ':gap': 'gap' },
                }
              : { ConditionExpression: 'attribute_not_exists(videoId)' }),
          },
        });
      }
      // Rule events batched, one item per unit; life events one each (event-packing.ts).
      for (const e of storedEventsOf(u)) {
        owners.push({ role: 'event', videoId: u.videoId });
        // Unconditional: the id is deterministic, so a retry of this unit writes the very
        // same item, and the fences above decide whether any of it lands.
        items.push({ Put: { TableName: this.d.eventsTableName!, Item: e } });
      }
      owners.push({ role: 'summary', videoId: u.videoId });
      items.push({
        Put: {
          TableName: this.d.resultsTableName,
          Item: u.summary,
          ConditionExpression: 'attribute_not_exists(#token) OR #token <= :token',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':token': u.token },
        },
      });
    }
    return { items, owners };
  }
}

/** DynamoDB's answer to a malformed request (two operations on one item, a bad expression, an item too large): nothing applied. */
function isValidationError(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { name?: unknown }).name === 'ValidationException';
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * The attributes of a cancellation reason's Item that commit decisions read, as plain
 * values: the document client does not translate errors, so the item may still be in
 * AttributeValue form ({ S }, { N }, { M }).
 */
function plainItem(item: Record<string, unknown>): Record<string, unknown> {
  const plain = (v: unknown): unknown => {
    if (v === null || typeof v !== 'object') return v;
    const a = v as { S?: string; N?: string; M?: Record<string, unknown> };
    if (a.S !== undefined) return a.S;
    if (a.N !== undefined) return Number(a.N);
    if (a.M !== undefined) return Object.fromEntries(Object.entries(a.M).map(([k, x]) => [k, plain(x)]));
    return v;
  };
  const ck = plain(item.checkpoint) as Record<string, unknown> | undefined;
  return {
    ...Object.fromEntries(['token', 'owner', 'pinnedSlot', 'ckSeq'].filter((k) => item[k] !== undefined).map((k) => [k, plain(item[k])])),
    ...(ck ? { checkpoint: { commitId: plain(ck.commitId), seq: plain(ck.seq) } } : {}),
  };
}


/** The transaction item every fenced write starts with: the slot is still ours (owner, epoch, unexpired). */
export function slotFenceCheck(tableName: string, fence: SlotFence, nowMs: number): TransactItem {
  return {
    ConditionCheck: {
      TableName: tableName,
      Key: { pk: slotKey(fence.slot) },
      ConditionExpression: '#owner = :me AND epoch = :epoch AND expiresAtMs > :now',
      ExpressionAttributeNames: { '#owner': 'owner' },
      ExpressionAttributeValues: { ':me': fence.workerId, ':epoch': fence.epoch, ':now': nowMs },
    },
  };
}
