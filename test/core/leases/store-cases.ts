/**
 * The lease protocol's cases beyond the port's basics (contract.ts registers them, so they
 * run on the in-memory twin and on DynamoDB Local through the production adapter):
 * conditional writes compare expiry themselves, tokens only grow, the store rejects writes
 * under an old lease, records are written once (a late record replaces only a gap), a
 * commit's fate is its commit id, and the crash-loop and takeover evidence ride on writes
 * and reads that happen anyway. (Formerly test/core/aws/lease-store.int.test.ts, on the
 * local stack alone.)
 */
import { deflateRawSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { allResults } from '../../../core/commit/dynamodb/results-reader.ts';
import { LeaseStore, type CommitOutcome, type CommitUnit, type SlotFence } from '../../../core/leases/dynamodb/lease-store.ts';
import { legacyCommitId, newCommitId, readStoredCheckpoint, summaryOf, type VideoCheckpoint } from '../../../core/commit/checkpoint.ts';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { DEFAULT_TUNABLES } from '../../../core/config.ts';
import type { LeaseContractBackend } from './contract.ts';
import { ByteTracker } from '../../../gpu-worker/vision/tracker.ts';
import { emptyAnalytics, withRules } from '../../../core/analytics/rule-engine.ts';
import { validateRules, type RulesDocument } from '../../../core/analytics/rules.ts';
import { rulesRef } from '../../../core/commit/rules-ref.ts';

const TTL_MS = 5_000;
const readStoredCheckpointOf = (stored: unknown) => readStoredCheckpoint(stored, 'test');

/** Registers the cases; `backend()` is called once they run (set it up in beforeAll). */
export function leaseStoreCases(backend: () => LeaseContractBackend): void {
  let store: LeaseStore;

  beforeAll(() => {
    const b = backend();
    store = new LeaseStore(b.ddb, { tableName: b.leasesTable, resultsTableName: b.resultsTable, pinnedSlotIndex: b.pinnedSlotIndex });
  });

  function unit(videoId: string, token: number, prev: VideoCheckpoint, frame: number, worker: string, slot: number, now: number): CommitUnit {
    const checkpoint: VideoCheckpoint = { ...prev, seq: prev.seq + 1, commitId: newCommitId(), sequencer: { ...prev.sequencer, nextFrame: frame + 1 }, framesOk: prev.framesOk + 1 };
    const result: FrameResultItem = { videoId, frame, status: 'ok', detections: [], token, worker, committedAtMs: now };
    return { videoId, token, expectedSeq: prev.seq, expectedCommitId: prev.commitId, checkpoint, results: [result], summary: summaryOf(videoId, checkpoint, { token, worker, slot }, now) };
  }

  /** Slot `slot` claimed by worker `W{slot}`, and `videoId` pinned to it and adopted. */
  async function owned(slot: number, videoId: string): Promise<{ fence: SlotFence; token: number; ck: () => Promise<VideoCheckpoint> }> {
    const t0 = Date.now();
    const a = await store.claimSlot(slot, `W${slot}`, t0, TTL_MS);
    const fence: SlotFence = { slot, workerId: `W${slot}`, epoch: a!.epoch };
    await store.pinVideo(videoId, slot, t0);
    const v = await store.adoptVideo(videoId, fence, t0);
    if (typeof v === 'string') throw new Error(v);
    return { fence, token: v.token, ck: async () => (await store.getVideo(videoId)).checkpoint };
  }

  /** The outcome of each unit of a commit, as a plain object (videoId -> outcome), with the kind. */
  function outcomeOf(o: CommitOutcome): { kind: string; units: Record<string, unknown> } {
    return { kind: o.kind, units: Object.fromEntries(o.outcomes) };
  }

  describe('slot leases', () => {
    it('lets one worker hold a slot until its lease runs out, then the next claim wins with a higher epoch', async () => {
      const t0 = Date.now();
      const a = await store.claimSlot(10, 'A', t0, TTL_MS);
      expect(a?.epoch).toBe(1);
      expect(await store.claimSlot(10, 'B', t0 + 1000, TTL_MS)).toBeUndefined();
      expect(await store.renewSlot({ slot: 10, workerId: 'A', epoch: 1 }, t0 + 2000, TTL_MS)).toBe('renewed');
      // expired lease items are still readable: the condition compares expiry itself
      expect(await store.claimSlot(10, 'B', t0 + 6000, TTL_MS)).toBeUndefined();
      const b = await store.claimSlot(10, 'B', t0 + 7001, TTL_MS);
      expect(b?.epoch).toBe(2);
      expect(await store.renewSlot({ slot: 10, workerId: 'A', epoch: 1 }, t0 + 7100, TTL_MS)).toBe('lost');
      expect(await store.releaseSlot({ slot: 10, workerId: 'B', epoch: 2 }, t0 + 7200)).toBe(true);
      expect((await store.claimSlot(10, 'C', t0 + 7300, TTL_MS))?.epoch).toBe(3);
    });

    it('does not let a heartbeat revive a lease that has run out, even before anyone claims it', async () => {
      const t0 = Date.now();
      const a = await store.claimSlot(14, 'A', t0, TTL_MS);
      const fence = { slot: 14, workerId: 'A', epoch: a!.epoch };
      expect(await store.renewSlot(fence, t0 + TTL_MS + 1, TTL_MS)).toBe('lost');
      expect((await store.claimSlot(14, 'B', t0 + TTL_MS + 2, TTL_MS))?.epoch).toBe(a!.epoch + 1);
    });

    it('grants one launch per slot per grace window', async () => {
      const now = Date.now();
      const o = { heartbeatIntervalSeconds: 5, taskStartGraceSeconds: 60 };
      const first = await store.requestLaunch(11, now, o, 'if-dead');
      expect(first).toBe(1);
      expect(await store.requestLaunch(11, now + 100, o, 'if-dead')).toBeUndefined();
      expect(await store.requestLaunch(11, now + 61_000, o, 'if-dead')).toBe(2);
    });

    it('enforces slot capacity under concurrent pins', async () => {
      const now = Date.now();
      const videos = ['c1', 'c2', 'c3', 'c4'];
      const outcomes = await Promise.all(videos.map((v) => store.pinVideo(v, 12, now, 2)));
      expect(outcomes.filter((o) => o === 'pinned')).toHaveLength(2);
      expect(outcomes.filter((o) => o === 'slot-full')).toHaveLength(2);
      expect((await store.getSlot(12)).videoCount).toBe(2);
      const pinned = videos[outcomes.indexOf('pinned')]!;
      expect(await store.pinVideo(pinned, 13, now)).toBe('taken');
    });
  });

  describe('fencing', () => {
    it('rejects commits under a lost slot lease and under an outdated video token', async () => {
      // Prepare: A owns slot 20 and video v
      const t0 = Date.now();
      const a = await store.claimSlot(20, 'A', t0, TTL_MS);
      const fenceA: SlotFence = { slot: 20, workerId: 'A', epoch: a!.epoch };
      expect(await store.pinVideo('fv', 20, t0)).toBe('pinned');
      const adoptedA = await store.adoptVideo('fv', fenceA, t0);
      if (typeof adoptedA === 'string') throw new Error(`not adopted: ${adoptedA}`);
      expect(adoptedA.token).toBe(1);
      expect(outcomeOf(await store.commit(fenceA, [unit('fv', 1, adoptedA.checkpoint, 0, 'A', 20, t0)], Date.now()))).toEqual({ kind: 'settled', units: { fv: 'landed' } });
      // Act: A pauses past its lease; B claims the slot and adopts the video (token 2)
      const t1 = Date.now() + TTL_MS + 1;
      const b = await store.claimSlot(20, 'B', t1, TTL_MS);
      const fenceB: SlotFence = { slot: 20, workerId: 'B', epoch: b!.epoch };
      const adoptedB = await store.adoptVideo('fv', fenceB, t1);
      if (typeof adoptedB === 'string') throw new Error(`not adopted: ${adoptedB}`);
      expect(adoptedB.token).toBe(2);
      expect(adoptedB.checkpoint.sequencer.nextFrame).toBe(1);
      // Assess: A's late write is rejected by the store; B's goes through
      const late = await store.commit(fenceA, [unit('fv', 1, adoptedA.checkpoint, 1, 'A', 20, t1)], t1);
      expect(outcomeOf(late)).toEqual({ kind: 'slot-lost', units: { fv: 'fenced' } });
      expect(outcomeOf(await store.commit(fenceB, [unit('fv', 2, adoptedB.checkpoint, 1, 'B', 20, t1)], t1))).toEqual({ kind: 'settled', units: { fv: 'landed' } });
      const r1 = await backend().ddb.send(new GetCommand({ TableName: backend().resultsTable, Key: { videoId: 'fv', frame: 1 } }));
      expect(r1.Item).toMatchObject({ worker: 'B', token: 2 });
      // A write under the old token with a valid slot lease (e.g. an operator forced the video away) is rejected too
      const current = await store.getVideo('fv');
      expect(await store.forceReleaseVideo('fv', current.token, t1, 1)).toBe(true);
      const stale = await store.commit(fenceB, [unit('fv', 2, current.checkpoint, 2, 'B', 20, t1)], t1);
      expect(outcomeOf(stale)).toEqual({ kind: 'settled', units: { fv: 'fenced' } });
      expect((await store.getVideo('fv')).token).toBe(3);
    });

    it('keeps the token growing across release and re-adoption, and restores the checkpoint', async () => {
      const t0 = Date.now();
      const a = await store.claimSlot(21, 'A', t0, TTL_MS);
      const fence: SlotFence = { slot: 21, workerId: 'A', epoch: a!.epoch };
      await store.pinVideo('rv', 21, t0);
      const v = await store.adoptVideo('rv', fence, t0);
      if (typeof v === 'string') throw new Error(`not adopted: ${v}`);
      await store.commit(fence, [unit('rv', v.token, v.checkpoint, 0, 'A', 21, t0)], t0);
      const after = await store.getVideo('rv');
      expect(await store.releaseVideo('rv', fence, after.token, after.checkpoint.seq, t0, DEFAULT_TUNABLES.releasedVideoRetentionDays)).toBe(true);
      const released = await store.getVideo('rv');
      expect(released.pinnedSlot).toBeUndefined();
      expect((await store.getSlot(21)).videoCount).toBe(0);
      await store.pinVideo('rv', 21, t0);
      const again = await store.adoptVideo('rv', fence, t0);
      if (typeof again === 'string') throw new Error(`not adopted: ${again}`);
      expect(again.token).toBe(v.token + 1);
      expect(again.checkpoint.sequencer.nextFrame).toBe(1);
      expect(again.checkpoint.ownerChanges).toBe(2);
    });

    it('does not let a worker whose slot epoch moved on adopt a video (no token churn)', async () => {
      // Prepare: A claims slot 22, pins a video; A's lease runs out and B claims the slot.
      const t0 = Date.now();
      const a = await store.claimSlot(22, 'A', t0, TTL_MS);
      const fenceA: SlotFence = { slot: 22, workerId: 'A', epoch: a!.epoch };
      await store.pinVideo('ev', 22, t0);
      const t1 = t0 + TTL_MS + 1;
      const b = await store.claimSlot(22, 'B', t1, TTL_MS);
      expect(b).toBeDefined();
      const before = await store.getVideo('ev');
      // Act: the stale A tries to adopt
      const outcome = await store.adoptVideo('ev', fenceA, t1);
      // Assess
      expect(outcome).toBe('slot-lost');
      expect((await store.getVideo('ev')).token).toBe(before.token);
    });
  });

  describe('records', () => {
    /** A unit committing one result with the given status for `frame`. */
    function recordUnit(videoId: string, token: number, prev: VideoCheckpoint, frame: number, status: FrameResultItem['status'], fence: SlotFence, replacesGap = false): CommitUnit {
      const base = unit(videoId, token, prev, frame, fence.workerId, fence.slot, Date.now());
      return { ...base, results: [{ ...base.results[0]!, status }], ...(replacesGap ? { replacesGap: [frame] } : {}) };
    }


    const record = async (videoId: string, frame: number) =>
      (await backend().ddb.send(new GetCommand({ TableName: backend().resultsTable, Key: { videoId, frame }, ConsistentRead: true }))).Item;

    it('lets a late record replace a gap record, and nothing else', async () => {
      // Prepare: frame 0 recorded as a gap
      const { fence, token, ck } = await owned(30, 'lr');
      expect(outcomeOf(await store.commit(fence, [recordUnit('lr', token, await ck(), 0, 'gap', fence)], Date.now())).units).toEqual({ lr: 'landed' });
      // Act: the late frame replaces it
      const late = await store.commit(fence, [recordUnit('lr', token, await ck(), 0, 'late', fence, true)], Date.now());
      // Assess
      expect(outcomeOf(late).units).toEqual({ lr: 'landed' });
      expect(await record('lr', 0)).toMatchObject({ status: 'late' });
      // A second late record for the same frame meets a record that is no longer a gap.
      const again = await store.commit(fence, [recordUnit('lr', token, await ck(), 0, 'late', fence, true)], Date.now());
      expect(outcomeOf(again)).toEqual({ kind: 'settled', units: { lr: { conflict: 0 } } });
    });

    it('takes only the video whose result meets an existing record out of a shared commit', async () => {
      // Prepare: two videos on one slot; frame 0 of "clash" already has an ok record
      const { fence, token, ck } = await owned(31, 'clash');
      await store.pinVideo('calm', 31, Date.now());
      const calm = await store.adoptVideo('calm', fence, Date.now());
      if (typeof calm === 'string') throw new Error(calm);
      expect(outcomeOf(await store.commit(fence, [recordUnit('clash', token, await ck(), 0, 'ok', fence)], Date.now())).units).toEqual({ clash: 'landed' });
      const clashCk = await ck();
      // Act: one transaction with a create-only record for an existing frame, and a good unit
      const outcome = await store.commit(fence, [recordUnit('clash', token, clashCk, 0, 'ok', fence), recordUnit('calm', calm.token, calm.checkpoint, 0, 'ok', fence)], Date.now());
      // Assess
      expect(outcomeOf(outcome)).toEqual({ kind: 'settled', units: { clash: { conflict: 0 }, calm: 'landed' } });
      expect(await record('calm', 0)).toMatchObject({ status: 'ok' });
      expect((await store.getVideo('clash')).checkpoint.seq).toBe(clashCk.seq);
    });
  });

  describe("a segment's records packed in one item (decision 56)", () => {
    const seg = (videoId: string, first: number) => `frames/${videoId}/${String(first).padStart(6, '0')}.mp4`;

    /** A unit committing `frames` of one segment (starting at `first`) with the given status. */
    function segmentUnit(videoId: string, token: number, prev: VideoCheckpoint, first: number, frames: readonly number[], status: FrameResultItem['status'], fence: SlotFence): CommitUnit {
      const now = Date.now();
      const base = unit(videoId, token, prev, Math.max(...frames), fence.workerId, fence.slot, now);
      return { ...base, results: frames.map((frame) => ({ videoId, frame, status, detections: [], token, worker: fence.workerId, committedAtMs: now, key: seg(videoId, first) })) };
    }


    const stored = async (videoId: string) =>
      (await backend().ddb.send(new QueryCommand({ TableName: backend().resultsTable, KeyConditionExpression: 'videoId = :v AND #f >= :zero', ExpressionAttributeNames: { '#f': 'frame' }, ExpressionAttributeValues: { ':v': videoId, ':zero': 0 }, ConsistentRead: true }))).Items ?? [];

    it('writes a run of segment frames as one item that reads back as one record per frame', async () => {
      const { fence, token, ck } = await owned(70, 'pk');
      const outcome = await store.commit(fence, [segmentUnit('pk', token, await ck(), 0, [0, 1, 2, 3, 4], 'ok', fence)], Date.now());
      expect(outcomeOf(outcome).units).toEqual({ pk: 'landed' });
      const items = await stored('pk');
      expect(items.map((i) => [i.frame, i.status, i.packedCount])).toEqual([[0, 'packed', 5]]);
      const records = await allResults({ ddb: backend().ddb, resultsTable: backend().resultsTable }, 'pk');
      expect(records.map((r) => `${r.frame}:${r.status}`)).toEqual(['0:ok', '1:ok', '2:ok', '3:ok', '4:ok']);
    });

    it('treats records standing inside a run as conflicts, all of them, and writes nothing', async () => {
      // Prepare: frames 3 and 4 recorded one item each (as after-end-of-stream records are)
      const { fence, token, ck } = await owned(71, 'pin');
      for (const frame of [3, 4]) {
        const u = segmentUnit('pin', token, await ck(), 0, [frame], 'failed', fence);
        expect(outcomeOf(await store.commit(fence, [u], Date.now())).units).toEqual({ pin: 'landed' });
      }
      const before = await ck();
      // Act: a run 0-5 of the same segment, whose one packed item's key (0) is free
      const outcome = await store.commit(fence, [segmentUnit('pin', token, before, 0, [0, 1, 2, 3, 4, 5], 'ok', fence)], Date.now());
      // Assess: both standing records settle; nothing was written
      expect(outcomeOf(outcome).units).toEqual({ pin: { conflict: 3, alsoRecorded: [4] } });
      expect((await stored('pin')).map((i) => i.frame)).toEqual([3, 4]);
      expect((await store.getVideo('pin')).checkpoint.commitId).toBe(before.commitId);
    });

    it('treats a packed run standing over a frame as a conflict for a record of that frame alone', async () => {
      // Prepare: frames 0-5 packed
      const { fence, token, ck } = await owned(72, 'pover');
      expect(outcomeOf(await store.commit(fence, [segmentUnit('pover', token, await ck(), 0, [0, 1, 2, 3, 4, 5], 'ok', fence)], Date.now())).units).toEqual({ pover: 'landed' });
      // Act: frame 4 alone (its own key is free), then frames 4-7 (key 4 is free too)
      const alone = await store.commit(fence, [segmentUnit('pover', token, await ck(), 0, [4], 'ok', fence)], Date.now());
      const run = await store.commit(fence, [segmentUnit('pover', token, await ck(), 0, [4, 5, 6, 7], 'ok', fence)], Date.now());
      // Assess
      expect(outcomeOf(alone).units).toEqual({ pover: { conflict: 4 } });
      expect(outcomeOf(run).units).toEqual({ pover: { conflict: 4, alsoRecorded: [5] } });
      expect((await stored('pover')).map((i) => i.frame)).toEqual([0]);
    });

    it('treats a packed run standing over a gap as a conflict, and writes no gap beside it (issue 40)', async () => {
      // Prepare: frames 30-44 of segment 0 packed (as a tail recorded after-end-of-stream is)
      const { fence, token, ck } = await owned(73, 'pgap');
      expect(outcomeOf(await store.commit(fence, [segmentUnit('pgap', token, await ck(), 0, [30, 31, 32, 33, 34], 'failed', fence)], Date.now())).units).toEqual({ pgap: 'landed' });
      // Act: gaps 31 and 35 (their own keys are free; 31 lies inside the run)
      const before = await ck();
      const base = unit('pgap', token, before, 35, fence.workerId, fence.slot, Date.now());
      const gap = (frame: number): FrameResultItem => ({ videoId: 'pgap', frame, status: 'gap', reason: 'missing-frame', detections: [], token, worker: fence.workerId, committedAtMs: Date.now() });
      const outcome = await store.commit(fence, [{ ...base, results: [gap(31), gap(35)] }], Date.now());
      // Assess: the run's frame settles; nothing was written
      expect(outcomeOf(outcome).units).toEqual({ pgap: { conflict: 31 } });
      expect((await stored('pgap')).map((i) => i.frame)).toEqual([30]);
      expect((await store.getVideo('pgap')).checkpoint.commitId).toBe(before.commitId);
    });
  });

  describe('malformed commit units (issue 32)', () => {
    async function twoVideos(slot: number, a: string, b: string): Promise<{ fence: SlotFence; va: { token: number; checkpoint: VideoCheckpoint }; vb: { token: number; checkpoint: VideoCheckpoint } }> {
      const t0 = Date.now();
      const claimed = await store.claimSlot(slot, `W${slot}`, t0, 60_000);
      const fence: SlotFence = { slot, workerId: `W${slot}`, epoch: claimed!.epoch };
      const adopt = async (id: string) => {
        await store.pinVideo(id, slot, t0);
        const v = await store.adoptVideo(id, fence, t0);
        if (typeof v === 'string') throw new Error(v);
        return v;
      };
      return { fence, va: await adopt(a), vb: await adopt(b) };
    }

    it('a unit naming one item twice is refused before anything is sent; the other unit of the commit lands', async () => {
      // Prepare: "twice" carries two results for frame 0 (on AWS: a ValidationException for the whole transaction)
      const { fence, va, vb } = await twoVideos(50, 'twice', 'beside');
      const twice = unit('twice', va.token, va.checkpoint, 0, fence.workerId, fence.slot, Date.now());
      const bad: CommitUnit = { ...twice, results: [twice.results[0]!, { ...twice.results[0]!, status: 'gap' }] };
      // Act
      const outcome = await store.commit(fence, [bad, unit('beside', vb.token, vb.checkpoint, 0, fence.workerId, fence.slot, Date.now())], Date.now());
      // Assess
      expect(outcomeOf(outcome)).toEqual({ kind: 'settled', units: { twice: { invalid: 'two results for frame 0' }, beside: 'landed' } });
      expect((await store.getVideo('twice')).checkpoint.commitId).toBe(va.checkpoint.commitId);
    });

    it('a ValidationException from DynamoDB is no unknown outcome: the faulty unit is found by sending each alone, the others land', async () => {
      // Prepare: "huge" carries a result item over DynamoDB's 400 KB item limit (refused as malformed by DynamoDB and DynamoDB Local alike)
      const { fence, va, vb } = await twoVideos(51, 'huge', 'fine');
      const huge = unit('huge', va.token, va.checkpoint, 0, fence.workerId, fence.slot, Date.now());
      const oversized: CommitUnit = { ...huge, results: [{ ...huge.results[0]!, detail: 'x'.repeat(420_000) }] };
      // Act
      const outcome = await store.commit(fence, [oversized, unit('fine', vb.token, vb.checkpoint, 0, fence.workerId, fence.slot, Date.now())], Date.now());
      // Assess
      const units = outcomeOf(outcome).units;
      expect(units.fine).toBe('landed');
      expect(units.huge).toMatchObject({ invalid: expect.stringMatching(/^ValidationException/) });
      expect(outcome.ambiguousRetries).toBe(0);
    });
  });

  describe('commit outcome by commit id', () => {
    it('calls a unit landed only by its own commit id: a resend of a landed unit is landed, another unit with the same seq is stale', async () => {
      // Prepare: W40 owns video "id"; unit u (seq 1) lands
      const t0 = Date.now();
      const a = await store.claimSlot(40, 'W40', t0, 60_000);
      const fence: SlotFence = { slot: 40, workerId: 'W40', epoch: a!.epoch };
      await store.pinVideo('id', 40, t0);
      const v = await store.adoptVideo('id', fence, t0);
      if (typeof v === 'string') throw new Error(v);
      const u = unit('id', v.token, v.checkpoint, 0, 'W40', 40, t0);
      expect(outcomeOf(await store.commit(fence, [u], t0)).units).toEqual({ id: 'landed' });
      // Act: the same unit sent again (an earlier attempt's answer was lost), and a rival unit
      // built on the same previous checkpoint: same seq, another commit id (the ABA case)
      const resent = await store.commit(fence, [u], t0);
      const rival = unit('id', v.token, v.checkpoint, 0, 'W40', 40, t0);
      const aba = await store.commit(fence, [rival], t0);
      // Assess: the cancellation wrote nothing; only the commit id in the stored item decides
      expect(rival.checkpoint.seq).toBe(u.checkpoint.seq);
      expect(outcomeOf(resent).units).toEqual({ id: 'landed' });
      expect(outcomeOf(aba).units).toEqual({ id: 'stale' });
      const stored = await store.readCommitState('id');
      expect(stored.checkpoint.commitId).toBe(u.checkpoint.commitId);
      expect(await store.resolveUnit(fence, u)).toBe('landed');
      expect(await store.resolveUnit(fence, rival)).toBe('stale');
    });

    it('reads a checkpoint written before commit ids with a seq-derived id, and commits over it', async () => {
      // Prepare: an item as an older version wrote it (no commitId in the checkpoint)
      const t0 = Date.now();
      const a = await store.claimSlot(41, 'W41', t0, 60_000);
      const fence: SlotFence = { slot: 41, workerId: 'W41', epoch: a!.epoch };
      await store.pinVideo('legacy', 41, t0);
      const v = await store.adoptVideo('legacy', fence, t0);
      if (typeof v === 'string') throw new Error(v);
      const { commitId: _dropped, ...old } = v.checkpoint;
      await backend().ddb.send(new UpdateCommand({ TableName: backend().leasesTable, Key: { pk: 'video#legacy' }, UpdateExpression: 'SET checkpoint = :ck', ExpressionAttributeValues: { ':ck': old } }));
      // Act
      const read = await store.readCommitState('legacy');
      const outcome = await store.commit(fence, [unit('legacy', v.token, read.checkpoint, 0, 'W41', 41, t0)], t0);
      // Assess
      expect(read.checkpoint.commitId).toBe(legacyCommitId(v.checkpoint.seq));
      expect(outcomeOf(outcome).units).toEqual({ legacy: 'landed' });
    });
  });

  describe('compressed checkpoints (issue 44)', () => {
    /** A tracker-sized processor snapshot: ~20 KB of JSON with repeating keys and digits, as the real tracker's is. */
    const snapshot = JSON.stringify({ nextId: 412, tracks: Array.from({ length: 60 }, (_, i) => ({ id: 350 + i, state: i % 3 ? 0 : 1, label: i % 2 ? 'person' : 'car', kf: Array.from({ length: 20 }, (_, j) => 0.1 + i * 7.123456789 + j / 3) })) });
    const rawItem = async (videoId: string) => (await backend().ddb.send(new GetCommand({ TableName: backend().leasesTable, Key: { pk: `video#${videoId}` }, ConsistentRead: true }))).Item!;

    it('stores the checkpoint as commit id and seq in the clear and the rest deflated, and reads back exactly what was committed', async () => {
      // Prepare
      const { fence, token, ck } = await owned(42, 'zck');
      const prev = await ck();
      const u = unit('zck', token, prev, 0, fence.workerId, fence.slot, Date.now());
      const big: CommitUnit = { ...u, checkpoint: { ...u.checkpoint, processor: snapshot } };
      // Act
      const outcome = await store.commit(fence, [big], Date.now());
      // Assess: landed; the stored attribute is small and binary; the read is the committed checkpoint
      expect(outcomeOf(outcome).units).toEqual({ zck: 'landed' });
      const item = await rawItem('zck');
      const stored = item.checkpoint as { commitId: string; seq?: number; d: Uint8Array; processor?: unknown };
      expect(stored.commitId).toBe(big.checkpoint.commitId);
      // The seq is the item's ckSeq alone (decision 76).
      expect(item.ckSeq).toBe(big.checkpoint.seq);
      expect(stored.seq).toBeUndefined();
      expect(stored.d).toBeInstanceOf(Uint8Array);
      expect(stored.processor).toBeUndefined();
      expect(stored.d.byteLength).toBeLessThan(Buffer.byteLength(JSON.stringify(big.checkpoint)) / 3);
      expect(await ck()).toEqual(big.checkpoint);
      // The next commit's condition reads checkpoint.commitId in the clear: it lands on top
      const next = unit('zck', token, big.checkpoint, 1, fence.workerId, fence.slot, Date.now());
      expect(outcomeOf(await store.commit(fence, [next], Date.now())).units).toEqual({ zck: 'landed' });
      expect(await store.resolveUnit(fence, next)).toBe('landed');
    });

    it('reads a checkpoint stored uncompressed (before issue 44), commits over it, and the new one is stored compressed', async () => {
      // Prepare: the item as the previous version wrote it (a plain map, tracker state inside)
      const { fence, token, ck } = await owned(43, 'plainck');
      const prev = { ...(await ck()), processor: snapshot };
      await backend().ddb.send(new UpdateCommand({ TableName: backend().leasesTable, Key: { pk: 'video#plainck' }, UpdateExpression: 'SET checkpoint = :ck', ExpressionAttributeValues: { ':ck': prev } }));
      // Act
      const read = await store.getVideo('plainck');
      const outcome = await store.commit(fence, [unit('plainck', token, read.checkpoint, 0, fence.workerId, fence.slot, Date.now())], Date.now());
      // Assess
      expect(read.checkpoint).toEqual(prev);
      expect(outcomeOf(outcome).units).toEqual({ plainck: 'landed' });
      const stored = (await rawItem('plainck')).checkpoint as { d?: unknown };
      expect(stored.d).toBeInstanceOf(Uint8Array);
      expect((await ck()).processor).toBe(snapshot);
    });

    it('refuses to read a compressed checkpoint that does not inflate, naming the video, instead of starting it afresh', async () => {
      // Prepare
      const { ck } = await owned(44, 'badck');
      const good = await ck();
      await backend().ddb.send(new UpdateCommand({ TableName: backend().leasesTable, Key: { pk: 'video#badck' }, UpdateExpression: 'SET checkpoint = :ck', ExpressionAttributeValues: { ':ck': { commitId: good.commitId, seq: good.seq, z: new Uint8Array([0xff, 0xfe, 0x00, 0x13]) } } }));
      // Act / Assess
      await expect(store.getVideo('badck')).rejects.toThrow(/checkpoint of video badck is corrupt/);
      // The same in the form with a dictionary (decision 76)
      await backend().ddb.send(new UpdateCommand({ TableName: backend().leasesTable, Key: { pk: 'video#badck' }, UpdateExpression: 'SET checkpoint = :ck', ExpressionAttributeValues: { ':ck': { commitId: good.commitId, d: new Uint8Array([1, 0xff, 0xfe, 0x00, 0x13]) } } }));
      await expect(store.getVideo('badck')).rejects.toThrow(/checkpoint of video badck is corrupt/);
    });

    it('stores a binary processor snapshot (the tracker\'s) as raw bytes beside the JSON deflated with the dictionary, and reads it back exactly (decision 76)', async () => {
      // Prepare: a real tracker's snapshot (binary, version 2)
      const { fence, token, ck } = await owned(45, 'binck');
      const tracker = new ByteTracker();
      for (let f = 0; f < 5; f++) tracker.update(f, [{ box: [10 + 3 * f, 20, 60 + 3 * f, 120], score: 0.9, label: 'person' }, { box: [400, 300 - 2 * f, 520, 380 - 2 * f], score: 0.8, label: 'car' }]);
      const prev = await ck();
      const u = unit('binck', token, prev, 0, fence.workerId, fence.slot, Date.now());
      const withTracker: CommitUnit = { ...u, checkpoint: { ...u.checkpoint, processor: tracker.serialize() } };
      // Act
      const outcome = await store.commit(fence, [withTracker], Date.now());
      // Assess: the snapshot's bytes in `p`, not base64 inside `z`; the read is the committed checkpoint
      expect(outcomeOf(outcome).units).toEqual({ binck: 'landed' });
      const stored = (await rawItem('binck')).checkpoint as { d: Uint8Array; p: Uint8Array };
      expect(stored.d[0]).toBe(1);
      expect(stored.p).toBeInstanceOf(Uint8Array);
      expect(Buffer.from(stored.p).toString('base64')).toBe(withTracker.checkpoint.processor!.slice('~b64:'.length));
      expect(await ck()).toEqual(withTracker.checkpoint);
      expect(ByteTracker.restore((await ck()).processor!).serialize()).toBe(tracker.serialize());
    });

    it('reads a checkpoint compressed as the first release of issue 44 wrote it (no dictionary, the processor inside), and refuses an unknown dictionary by name', async () => {
      // Prepare: `z` (no dictionary) with seq, no `p`
      const { fence, ck } = await owned(46, 'zv1');
      const good = { ...(await ck()), processor: snapshot };
      const { commitId, seq, ...rest } = good;
      const put = (checkpoint: unknown) => backend().ddb.send(new UpdateCommand({ TableName: backend().leasesTable, Key: { pk: 'video#zv1' }, UpdateExpression: 'SET checkpoint = :ck', ExpressionAttributeValues: { ':ck': checkpoint } }));
      await put({ commitId, seq, z: new Uint8Array(deflateRawSync(JSON.stringify(rest))) });
      // Act / Assess
      expect((await store.getVideo('zv1')).checkpoint).toEqual(good);
      expect(fence.slot).toBe(46);
      await put({ commitId, d: new Uint8Array([99, ...deflateRawSync(JSON.stringify(rest))]) });
      await expect(store.getVideo('zv1')).rejects.toThrow(/checkpoint of video zv1 names compression dictionary 99, which this version does not have/);
    });
  });

  describe('rules documents stored out of line (issue 44, decision 76)', () => {
    const doc = (x: number): RulesDocument => {
      const r = validateRules({ fps: 30, lines: [{ id: 'door', a: [x, 10], b: [x, 500] }], zones: [{ id: 'stop', polygon: [[0, 0], [300, 0], [300, 200], [0, 200]], dwellSeconds: 5 }] });
      if (!r.ok) throw new Error(r.errors.join('; '));
      return r.rules;
    };
    const rawItem = async (pk: string) => (await backend().ddb.send(new GetCommand({ TableName: backend().leasesTable, Key: { pk }, ConsistentRead: true }))).Item;
    /** Another process: a store that knows no rules document yet. */
    const freshStore = () => {
      const b = backend();
      return new LeaseStore(b.ddb, { tableName: b.leasesTable, resultsTableName: b.resultsTable, pinnedSlotIndex: b.pinnedSlotIndex });
    };
    const withDoc = (u: CommitUnit, etag: string, rules: RulesDocument): CommitUnit => ({ ...u, checkpoint: { ...u.checkpoint, analytics: withRules(emptyAnalytics(), etag, rules) } });

    it('keeps only a reference in the lease item, writes the document once as rules#{ref} in the commit that first uses it, and reads it back in', async () => {
      // Prepare
      const { fence, token, ck } = await owned(47, 'rulesout');
      const rules = doc(100 + (Date.now() % 1000));
      const { ref } = rulesRef(rules);
      const first = withDoc(unit('rulesout', token, await ck(), 0, fence.workerId, fence.slot, Date.now()), '"v1"', rules);
      // Act
      expect(outcomeOf(await store.commit(fence, [first], Date.now())).units).toEqual({ rulesout: 'landed' });
      // Assess: the document is its own item; the checkpoint holds the reference, not the rules
      const item = await rawItem(`rules#${ref}`);
      expect(JSON.parse(item!.rules as string)).toEqual(rules);
      const stored = (await rawItem('video#rulesout'))!.checkpoint;
      expect(JSON.stringify(readStoredCheckpointOf(stored))).not.toContain('"door"');
      // A successor (another process) reads the checkpoint with its rules, exactly as committed
      expect((await freshStore().getVideo('rulesout')).checkpoint).toEqual(first.checkpoint);
      // The next commit with the same rules does not write the document again: delete it by
      // hand, commit, and it is still gone (a successor then gets the named error below).
      await backend().ddb.send(new UpdateCommand({ TableName: backend().leasesTable, Key: { pk: `rules#${ref}` }, UpdateExpression: 'REMOVE #r', ExpressionAttributeNames: { '#r': 'rules' } }));
      const second = { ...unit('rulesout', token, first.checkpoint, 1, fence.workerId, fence.slot, Date.now()) };
      expect(outcomeOf(await store.commit(fence, [second], Date.now())).units).toEqual({ rulesout: 'landed' });
      expect((await rawItem(`rules#${ref}`))!.rules).toBeUndefined();
      await expect(freshStore().getVideo('rulesout')).rejects.toThrow(new RegExp(`checkpoint of video rulesout runs the rules document ${ref}, and the leases table has no item rules#${ref}: restore`));
    });

    it('writes a document shared by two videos once in a transaction that commits both (one operation per item), and a new version beside the old', async () => {
      // Prepare: two videos on one slot
      const t0 = Date.now();
      const a = await store.claimSlot(48, 'W48', t0, TTL_MS);
      const fence: SlotFence = { slot: 48, workerId: 'W48', epoch: a!.epoch };
      const adopt = async (id: string) => {
        await store.pinVideo(id, 48, t0);
        const v = await store.adoptVideo(id, fence, t0);
        if (typeof v === 'string') throw new Error(v);
        return v;
      };
      const [x, y] = [await adopt('shared-x'), await adopt('shared-y')];
      const rules = doc(2000 + (Date.now() % 1000));
      const other = freshStore();
      const ux = withDoc(unit('shared-x', x.token, x.checkpoint, 0, 'W48', 48, t0), '"d1"', rules);
      const uy = withDoc(unit('shared-y', y.token, y.checkpoint, 0, 'W48', 48, t0), '"d1"', rules);
      // Act: a process that knows no document commits both in one transaction
      const outcome = await other.commit(fence, [ux, uy], t0);
      // Assess
      expect(outcomeOf(outcome).units).toEqual({ 'shared-x': 'landed', 'shared-y': 'landed' });
      expect((await freshStore().getVideo('shared-y')).checkpoint.analytics?.rules).toEqual(rules);
      // A rules change: the new document is a new item, and the old one stays for any checkpoint still naming it
      const changed = doc(3000 + (Date.now() % 1000));
      const ux2 = withDoc(unit('shared-x', x.token, ux.checkpoint, 1, 'W48', 48, t0), '"d2"', changed);
      expect(outcomeOf(await other.commit(fence, [ux2], t0)).units).toEqual({ 'shared-x': 'landed' });
      expect((await freshStore().getVideo('shared-x')).checkpoint.analytics?.rules).toEqual(changed);
      expect(await rawItem(`rules#${rulesRef(rules).ref}`)).toBeDefined();
      expect((await freshStore().getVideo('shared-y')).checkpoint.analytics?.rules).toEqual(rules);
    });

    it('reads a checkpoint with its rules inline (stored before decision 76), and the adoption stores them out of line', async () => {
      // Prepare: the compressed form of the previous release, rules inside
      const { ck } = await owned(49, 'inline-rules');
      const rules = doc(4000 + (Date.now() % 1000));
      const old = { ...(await ck()), analytics: withRules(emptyAnalytics(), '"i1"', rules) };
      const { commitId, seq, ...rest } = old;
      await backend().ddb.send(new UpdateCommand({ TableName: backend().leasesTable, Key: { pk: 'video#inline-rules' }, UpdateExpression: 'SET checkpoint = :ck', ExpressionAttributeValues: { ':ck': { commitId, seq, z: new Uint8Array(deflateRawSync(JSON.stringify(rest))) } } }));
      expect((await store.getVideo('inline-rules')).checkpoint).toEqual(old);
      // Act: another worker adopts it (a fresh process, which knows no document)
      const other = freshStore();
      const b = await other.claimSlot(49, 'W49b', Date.now() + TTL_MS + 1, TTL_MS);
      const adopted = await other.adoptVideo('inline-rules', { slot: 49, workerId: 'W49b', epoch: b!.epoch }, Date.now() + TTL_MS + 1);
      if (typeof adopted === 'string') throw new Error(adopted);
      // Assess: the rules are now their own item, and a third process reads them back
      expect(JSON.parse((await rawItem(`rules#${rulesRef(rules).ref}`))!.rules as string)).toEqual(rules);
      expect((await freshStore().getVideo('inline-rules')).checkpoint.analytics?.rules).toEqual(rules);
    });
  });

  describe('crash-loop evidence (decision 28)', () => {
    it('counts adoptions without progress in the adoption write, tries once a marker is stored, and a commit of frames clears it', async () => {
      // Prepare: A owns slot 30 and adopts video cl, commits frame 0 (progress)
      let now = Date.now();
      const claim = async (worker: string): Promise<SlotFence> => {
        now += TTL_MS + 1;
        const c = await store.claimSlot(30, worker, now, TTL_MS);
        return { slot: 30, workerId: worker, epoch: c!.epoch };
      };
      const adopt = async (fence: SlotFence) => {
        const v = await store.adoptVideo('cl', fence, now);
        if (typeof v === 'string') throw new Error(`not adopted: ${v}`);
        return v;
      };
      const fenceA = await claim('A');
      await store.pinVideo('cl', 30, now);
      const a = await adopt(fenceA);
      expect(a.checkpoint.stall).toEqual({ adoptions: 1 });
      expect(outcomeOf(await store.commit(fenceA, [unit('cl', a.token, a.checkpoint, 0, 'A', 30, now)], now)).units).toEqual({ cl: 'landed' });
      const progressed = await store.getVideo('cl');
      // The test's unit() spreads the previous checkpoint, stall included; the worker's commit
      // builder leaves stall out of a unit of frames (crash-breaker.test.ts): do the same here.
      expect(progressed.checkpoint.stall).toEqual({ adoptions: 1 });
      const { stall: _dropped, ...withoutStall } = unit('cl', a.token, progressed.checkpoint, 1, 'A', 30, now).checkpoint;
      const frame1 = unit('cl', a.token, progressed.checkpoint, 1, 'A', 30, now);
      expect(outcomeOf(await store.commit(fenceA, [{ ...frame1, checkpoint: { ...withoutStall, commitId: frame1.checkpoint.commitId } }], now)).units).toEqual({ cl: 'landed' });
      expect((await store.getVideo('cl')).checkpoint.stall).toBeUndefined();
      // Act: B and C adopt and die without progress; C stores a marker for frame 2 first
      const b = await adopt(await claim('B'));
      expect(b.checkpoint.stall).toEqual({ adoptions: 1 });
      const fenceC = await claim('C');
      const c = await adopt(fenceC);
      expect(c.checkpoint.stall).toEqual({ adoptions: 2 });
      const marker: VideoCheckpoint = { ...c.checkpoint, seq: c.checkpoint.seq + 1, commitId: newCommitId(), stall: { adoptions: 2, trying: 2 } };
      const markerUnit: CommitUnit = { videoId: 'cl', token: c.token, expectedSeq: c.checkpoint.seq, expectedCommitId: c.checkpoint.commitId, checkpoint: marker, results: [], summary: summaryOf('cl', marker, { token: c.token, worker: 'C', slot: 30 }, now) };
      expect(outcomeOf(await store.commit(fenceC, [markerUnit], now)).units).toEqual({ cl: 'landed' });
      // Assess: the next adoption counts the death while trying frame 2
      const d = await adopt(await claim('D'));
      expect(d.checkpoint.stall).toEqual({ adoptions: 3, trying: 2, tries: 1 });
    });
  });

  describe('takeover evidence from writes and reads that happen anyway (decision 29)', () => {
    it('a claim says whether the previous owner released the slot; an adoption says whom the video was taken from', async () => {
      // Prepare: A claims a never-used slot and adopts a new video
      const t0 = Date.now();
      const a = await store.claimSlot(37, 'A', t0, TTL_MS);
      expect(a).toMatchObject({ epoch: 1, takenOver: false });
      const fenceA: SlotFence = { slot: 37, workerId: 'A', epoch: a!.epoch };
      await store.pinVideo('tk', 37, t0);
      const byA = await store.adoptVideo('tk', fenceA, t0);
      if (typeof byA === 'string') throw new Error(`not adopted: ${byA}`);
      expect(byA.adoptedFrom).toBeUndefined();
      // Act: A drains (releases the slot, keeps the video pinned); B claims and adopts
      expect(await store.releaseSlot(fenceA, t0 + 100)).toBe(true);
      const b = await store.claimSlot(37, 'B', t0 + 200, TTL_MS);
      // Assess: a clean handover, though the video comes from A
      expect(b).toMatchObject({ epoch: 2, takenOver: false });
      const fenceB: SlotFence = { slot: 37, workerId: 'B', epoch: b!.epoch };
      const byB = await store.adoptVideo('tk', fenceB, t0 + 200, { slotTakenOver: false });
      if (typeof byB === 'string') throw new Error(`not adopted: ${byB}`);
      expect(byB.adoptedFrom).toBe('A');
      // ... so the adoption is not counted in the stall evidence (nobody died)
      expect(byA.checkpoint.stall).toEqual({ adoptions: 1 });
      expect(byB.checkpoint.stall).toEqual({ adoptions: 1 });
      // Adopting again what is already ours takes it from nobody
      const again = await store.adoptVideo('tk', fenceB, t0 + 300);
      if (typeof again === 'string') throw new Error(`not adopted: ${again}`);
      expect(again.adoptedFrom).toBeUndefined();
      // Act: B dies (its lease runs out unreleased); C claims
      const c = await store.claimSlot(37, 'C', t0 + 200 + TTL_MS + 1, TTL_MS);
      expect(c).toMatchObject({ epoch: 3, takenOver: true });
      const byC = await store.adoptVideo('tk', { slot: 37, workerId: 'C', epoch: c!.epoch }, t0 + 200 + TTL_MS + 1, { slotTakenOver: true });
      if (typeof byC === 'string') throw new Error(`not adopted: ${byC}`);
      expect(byC.adoptedFrom).toBe('B');
      expect(byC.checkpoint.stall).toEqual({ adoptions: 2 });
      // A task-stopped report ends C's lease: D's claim takes the slot over too
      expect(await store.expireStoppedOwner(37, t0 + TTL_MS + 300, t0 + TTL_MS + 400, 'C')).toBe(true);
      const d = await store.claimSlot(37, 'D', t0 + TTL_MS + 500, TTL_MS);
      expect(d).toMatchObject({ epoch: 4, takenOver: true });
      // A video released idle has no owner: re-pinned and adopted, it is taken from nobody
      const fenceD: SlotFence = { slot: 37, workerId: 'D', epoch: d!.epoch };
      const byD = await store.adoptVideo('tk', fenceD, t0 + TTL_MS + 500);
      if (typeof byD === 'string') throw new Error(`not adopted: ${byD}`);
      expect(await store.releaseVideo('tk', fenceD, byD.token, byD.checkpoint.seq, t0 + TTL_MS + 600, 1)).toBe(true);
      await store.pinVideo('tk', 37, t0 + TTL_MS + 700);
      const fresh = await store.adoptVideo('tk', fenceD, t0 + TTL_MS + 700);
      if (typeof fresh === 'string') throw new Error(`not adopted: ${fresh}`);
      expect(fresh.adoptedFrom).toBeUndefined();
    });
  });
}
