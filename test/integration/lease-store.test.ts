/**
 * The lease protocol against DynamoDB Local: conditional writes compare expiry
 * themselves, tokens only grow, and the store rejects writes under an old lease.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { startLocalStack, type LocalStack } from '../../local/stack.ts';
import { LeaseStore, type CommitUnit, type SlotFence } from '../../core/lease-store.ts';
import { summaryOf, type VideoCheckpoint } from '../../core/checkpoint.ts';
import type { FrameResultItem } from '../../core/results.ts';
import { DEFAULT_TUNABLES } from '../../core/config.ts';

let stack: LocalStack;
let store: LeaseStore;
const TTL_MS = 5_000;

beforeAll(async () => {
  stack = await startLocalStack({ quiet: true, routerHandler: false, janitorHandler: false, stateDir: `.local/test-lease-${process.pid}` });
  store = new LeaseStore(stack.clients.ddb, { tableName: stack.wiring.leasesTable, resultsTableName: stack.wiring.resultsTable, pinnedSlotIndex: stack.wiring.pinnedSlotIndex });
});

afterAll(async () => {
  await stack?.stop();
});

function unit(videoId: string, token: number, prev: VideoCheckpoint, frame: number, worker: string, slot: number, now: number): CommitUnit {
  const checkpoint: VideoCheckpoint = { ...prev, seq: prev.seq + 1, sequencer: { ...prev.sequencer, nextFrame: frame + 1 }, framesOk: prev.framesOk + 1 };
  const result: FrameResultItem = { videoId, frame, status: 'ok', detections: [], token, worker, committedAtMs: now };
  return { videoId, token, expectedSeq: prev.seq, checkpoint, results: [result], summary: summaryOf(videoId, checkpoint, { token, worker, slot }, now) };
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
    if (adoptedA === 'not-here') throw new Error('not adopted');
    expect(adoptedA.token).toBe(1);
    expect((await store.commit(fenceA, [unit('fv', 1, adoptedA.checkpoint, 0, 'A', 20, t0)], Date.now())).kind).toBe('committed');
    // Act: A pauses past its lease; B claims the slot and adopts the video (token 2)
    const t1 = Date.now() + TTL_MS + 1;
    const b = await store.claimSlot(20, 'B', t1, TTL_MS);
    const fenceB: SlotFence = { slot: 20, workerId: 'B', epoch: b!.epoch };
    const adoptedB = await store.adoptVideo('fv', fenceB, t1);
    if (adoptedB === 'not-here') throw new Error('not adopted');
    expect(adoptedB.token).toBe(2);
    expect(adoptedB.checkpoint.sequencer.nextFrame).toBe(1);
    // Assess: A's late write is rejected by the store; B's goes through
    const late = await store.commit(fenceA, [unit('fv', 1, adoptedA.checkpoint, 1, 'A', 20, t1)], t1);
    expect(late.kind).toBe('slot-lost');
    expect((await store.commit(fenceB, [unit('fv', 2, adoptedB.checkpoint, 1, 'B', 20, t1)], t1)).kind).toBe('committed');
    const r1 = await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.resultsTable, Key: { videoId: 'fv', frame: 1 } }));
    expect(r1.Item).toMatchObject({ worker: 'B', token: 2 });
    // A write under the old token with a valid slot lease (e.g. an operator forced the video away) is rejected too
    const current = await store.getVideo('fv');
    expect(await store.forceReleaseVideo('fv', current.token, t1, 1)).toBe(true);
    const stale = await store.commit(fenceB, [unit('fv', 2, current.checkpoint, 2, 'B', 20, t1)], t1);
    expect(stale).toMatchObject({ kind: 'videos-fenced', videoIds: ['fv'] });
    expect((await store.getVideo('fv')).token).toBe(3);
  });

  it('keeps the token growing across release and re-adoption, and restores the checkpoint', async () => {
    const t0 = Date.now();
    const a = await store.claimSlot(21, 'A', t0, TTL_MS);
    const fence: SlotFence = { slot: 21, workerId: 'A', epoch: a!.epoch };
    await store.pinVideo('rv', 21, t0);
    const v = await store.adoptVideo('rv', fence, t0);
    if (v === 'not-here') throw new Error('not adopted');
    await store.commit(fence, [unit('rv', v.token, v.checkpoint, 0, 'A', 21, t0)], t0);
    const after = await store.getVideo('rv');
    expect(await store.releaseVideo('rv', fence, after.token, after.checkpoint.seq, t0, DEFAULT_TUNABLES.releasedVideoRetentionDays)).toBe(true);
    const released = await store.getVideo('rv');
    expect(released.pinnedSlot).toBeUndefined();
    expect((await store.getSlot(21)).videoCount).toBe(0);
    await store.pinVideo('rv', 21, t0);
    const again = await store.adoptVideo('rv', { ...fence, workerId: 'A2' }, t0);
    if (again === 'not-here') throw new Error('not adopted');
    expect(again.token).toBe(v.token + 1);
    expect(again.checkpoint.sequencer.nextFrame).toBe(1);
    expect(again.checkpoint.ownerChanges).toBe(2);
  });
});
