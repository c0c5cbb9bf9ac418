/**
 * Issue 19's scenario, end to end in the worker: the real worker on the lease table's twin
 * and the SQS FIFO model, on a fake clock, one video of frames 0-7 and an end marker, and
 * the commit of frames 2-3 applied with its answer lost while the re-reads of the video
 * fail too. Before commit ids the worker rolled the video back to the checkpoint before
 * 2-3 while DynamoDB held the one after; the retry was cancelled, read as landed by seq
 * (an ABA), and frames 4-7 ended without records. Now the worker keeps the messages,
 * re-reads until the store answers, and finds its own commit id there.
 *
 * The store's own part (a lost answer decided by the commit id, on DynamoDB Local) is the
 * lease contract's (test/core/leases/contract.int.test.ts), and commit-outcomes-random.int
 * draws such faults at random on DynamoDB Local.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import { DdbCommitFaults } from '../../support/ddb-commit-faults.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

let h: WorkerHarness;

beforeAll(async () => {
  h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { slotQueueVisibilitySeconds: 2, slotLeaseTtlSeconds: 6, heartbeatIntervalSeconds: 2, firstFrameNumber: 0 } });
});

afterAll(async () => {
  await h?.stop();
});

/** A plain or AttributeValue-form attribute as a plain value. */
const plain = (v: unknown): unknown => (v !== null && typeof v === 'object' ? ((v as { S?: string; N?: string }).S ?? Number((v as { N?: string }).N)) : v);

describe('a commit applied with its answer lost, and its re-reads failing', () => {
  it('gives frames 0-7 one record each and completes the video with framesOk 8', async () => {
    // Prepare: a LeaseStore on its own client of the twin with targeted faults: the first
    // transaction carrying frame 2's result applies and loses its answer; the next 3 reads
    // of the video (the store's re-read, then the worker's) fail.
    const videoId = h.videoId('lost-answer');
    const faults = new DdbCommitFaults(() => 1);
    let lostAnswers = 0;
    let failedReads = 0;
    faults.plan = (operation, input) => {
      if (operation === 'TransactWriteItems' && lostAnswers === 0) {
        const items = (input.TransactItems ?? []) as { Put?: { Item?: Record<string, unknown> } }[];
        if (items.some((it) => plain(it.Put?.Item?.videoId) === videoId && plain(it.Put?.Item?.frame) === 2)) {
          lostAnswers++;
          return 'apply-then-lose';
        }
      }
      if (operation === 'GetItem' && lostAnswers > 0 && failedReads < 3 && plain((input.Key as Record<string, unknown> | undefined)?.pk) === `video#${videoId}`) {
        failedReads++;
        return 'fail-before';
      }
      return 'none';
    };
    const leases = LeaseStore.forWiring(faults.wrap(h.clients.ddb), h.wiring, h.tunables);
    await h.pinVideo(videoId, 0);
    await h.putFrames(videoId, [0, 1, 2, 3, 4, 5, 6, 7]);
    await h.putEnd(videoId, 7);
    const worker = h.createWorker(0, { extraDeps: { leases } }).start();
    // Act: frames 0-1, then 2-3 (the commit whose answer is lost), then 4-7 and the end marker
    await h.sendFrames(0, videoId, [0, 1]);
    await h.waitForResults(videoId, 2);
    await h.sendFrames(0, videoId, [2, 3]);
    await h.waitForResults(videoId, 4);
    await h.sendFrames(0, videoId, [4, 5, 6, 7]);
    await h.sendEnd(0, videoId);
    const summary = await h.waitForSummary(videoId, (s) => s.status === 'complete');
    // Assess
    const records = await h.frameResults(videoId);
    expect(lostAnswers).toBe(1);
    expect(failedReads).toBe(3);
    expect(records.map((r) => `${r.frame}:${r.status}`)).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((f) => `${f}:ok`));
    expect(summary).toMatchObject({ status: 'complete', framesOk: 8, framesFailed: 0, framesGap: 0 });
    // The worker re-read before deciding, and rolled nothing back.
    expect(worker.logsMatching(/commit outcome unknown: holding its messages/).length).toBeGreaterThan(0);
    expect(worker.metricTotal('VideoRollbacks')).toBe(0);
    await worker.stop();
  });
});
