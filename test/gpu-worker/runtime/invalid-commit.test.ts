/**
 * Issue 32: a commit unit DynamoDB refuses as malformed (two operations on one item, or any
 * ValidationException) is a bug, not an outage. On the real worker (the lease table's twin,
 * the SQS FIFO model, a fake clock): the unit is never retried as is, the other video of the same transactions
 * commits undisturbed, the refusal is counted (CommitsInvalid, alarmed), and after
 * MAX_VIDEO_FAILURES rounds the faulty video's frames are parked as `failed` records with
 * reason `invalid-commit`, so every frame still ends with one record and the video completes.
 * (That DynamoDB refuses two operations on one item with a ValidationException, and what
 * DynamoDB Local does instead, is the lease contract's: test/core/leases/contract*.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseStore, type CommitOutcome } from '../../../core/leases/dynamodb/lease-store.ts';
import { overriding } from '../../../core/overriding.ts';
import { MAX_VIDEO_FAILURES } from '../../../gpu-worker/runtime/video-session.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

let h: WorkerHarness;

beforeAll(async () => {
  h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0 } });
});

afterAll(async () => {
  await h?.stop();
});

describe('a commit unit refused as malformed', () => {
  it('is counted and parked after its failures, while the other video commits; every frame gets one record', async () => {
    // Prepare: DynamoDB refuses every unit of "bad" that carries an ok record (as it would a unit naming one item twice)
    const bad = h.videoId('bad');
    const good = h.videoId('good');
    for (const v of [bad, good]) {
      await h.pinVideo(v, 0);
      await h.putFrames(v, [0, 1, 2]);
      await h.putEnd(v, 2);
    }
    let refused = 0;
    const base = LeaseStore.forWiring(h.clients.ddb, h.wiring, h.tunables);
    const leases = overriding(base, {
      commit: async (fence, units, nowMs): Promise<CommitOutcome> => {
        const faulty = units.filter((u) => u.videoId === bad && u.results.some((r) => r.status === 'ok'));
        if (faulty.length === 0) return base.commit(fence, units, nowMs);
        refused++;
        const rest = await base.commit(fence, units.filter((u) => !faulty.includes(u)), nowMs);
        const outcomes = new Map(rest.outcomes);
        for (const u of faulty) outcomes.set(u.videoId, { invalid: 'ValidationException: Transaction request cannot include multiple operations on one item' });
        return { ...rest, outcomes };
      },
    });
    const worker = h.createWorker(0, { extraDeps: { leases } }).start();
    // Act
    for (const v of [bad, good]) {
      await h.sendFrames(0, v, [0, 1, 2]);
      await h.sendEnd(0, v);
    }
    const goodSummary = await h.waitForSummary(good, (s) => s.status === 'complete', 60_000);
    const badSummary = await h.waitForSummary(bad, (s) => s.status === 'complete', 120_000);
    // Assess
    expect(goodSummary).toMatchObject({ framesOk: 3, framesFailed: 0 });
    expect(refused).toBe(MAX_VIDEO_FAILURES);
    const records = await h.frameResults(bad);
    expect(records.map((r) => `${r.frame}:${r.status}:${r.reason ?? ''}`)).toEqual(['0:failed:invalid-commit', '1:failed:invalid-commit', '2:failed:invalid-commit']);
    expect(badSummary).toMatchObject({ framesOk: 0, framesFailed: 3 });
    expect(worker.metricTotal('CommitsInvalid')).toBe(MAX_VIDEO_FAILURES);
    expect(worker.logsMatching(/refused as malformed/).length).toBe(MAX_VIDEO_FAILURES);
    await worker.stop();
  });
});
