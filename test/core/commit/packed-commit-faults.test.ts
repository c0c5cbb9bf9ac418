/**
 * The read before a packed write (decision 56) when the results table does not answer:
 * the unit is not sent (`not-landed`: rolled back and retried, never a failure), nothing
 * is written, and the same frames land once the read succeeds. On the lease table's twin
 * through the production committer.
 */
import { describe, expect, it } from 'vitest';
import { newCommitId, summaryOf } from '../../../core/commit/checkpoint.ts';
import type { CommitUnit } from '../../../core/commit/commit-packing.ts';
import { allResults, storedResultItems } from '../../../core/commit/dynamodb/results-reader.ts';
import { MemoryLeaseTable } from '../../../core/leases/memory/memory-lease-table.ts';

describe('the read before a packed write fails', () => {
  it('leaves the unit unsent and not landed; a retry writes each frame once', async () => {
    // Prepare: slot 0 held by W, video v adopted
    const twin = new MemoryLeaseTable();
    const store = twin.leases({ firstFrameNumber: 0 });
    const now = Date.now();
    const slot = await store.claimSlot(0, 'W', now, 60_000);
    const fence = { slot: 0, workerId: 'W', epoch: slot!.epoch };
    await store.pinVideo('v', 0, now);
    const v = await store.adoptVideo('v', fence, now);
    if (typeof v === 'string') throw new Error(v);
    const prev = v.checkpoint;
    const unit = (): CommitUnit => {
      const checkpoint = { ...prev, seq: prev.seq + 1, commitId: newCommitId(), sequencer: { ...prev.sequencer, nextFrame: 6 }, framesOk: 6 };
      const results = Array.from({ length: 6 }, (_, frame) => ({ videoId: 'v', frame, status: 'ok' as const, detections: [], token: v.token, worker: 'W', committedAtMs: now, key: 'frames/v/000000.mp4' }));
      return { videoId: 'v', token: v.token, expectedSeq: prev.seq, expectedCommitId: prev.commitId, checkpoint, results, summary: summaryOf('v', checkpoint, { token: v.token, worker: 'W', slot: 0 }, now) };
    };
    const results = { ddb: twin.ddb, resultsTable: twin.wiring.resultsTable };
    // Act 1: every Query of the results table fails (an outage of the read)
    let transactions = 0;
    twin.db.intercept = async (operation, input, run) => {
      if (operation === 'Query' && input.TableName === twin.wiring.resultsTable) throw Object.assign(new Error('Service unavailable'), { name: 'ServiceUnavailable', $metadata: { httpStatusCode: 503 } });
      if (operation === 'TransactWriteItems') transactions++;
      return run();
    };
    const failed = await store.commit(fence, [unit()], now);
    // Assess 1: not landed, nothing sent or written
    expect(Object.fromEntries(failed.outcomes)).toEqual({ v: 'not-landed' });
    expect(transactions).toBe(0);
    twin.db.intercept = undefined;
    expect(await storedResultItems(results, 'v')).toEqual([]);
    expect((await store.getVideo('v')).checkpoint.commitId).toBe(prev.commitId);
    // Act 2: the read answers again; the retry (a new unit on the same checkpoint) lands
    const retried = await store.commit(fence, [unit()], now);
    // Assess 2
    expect(Object.fromEntries(retried.outcomes)).toEqual({ v: 'landed' });
    expect((await allResults(results, 'v')).map((r) => r.frame)).toEqual([0, 1, 2, 3, 4, 5]);
    expect((await storedResultItems(results, 'v')).length).toBe(1);
  });
});
