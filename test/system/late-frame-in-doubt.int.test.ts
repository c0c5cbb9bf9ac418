/**
 * Issue 32, confirmed sequence 1, on the real worker (DynamoDB Local, the SQS FIFO model):
 * a late frame that arrives while the commit of its gap is in doubt.
 *
 *  1. Video V has frames 0-2 committed and 4-5 buffered (their messages deleted, so V's FIFO
 *     group is open); frame 3 is missing. Another video W keeps the slot behind a backlog,
 *     so rounds overlap their commits with the next receive (decision 19).
 *  2. V's overdue listing finds no frame 3: V's unit is `gap 3, frame 4, frame 5`.
 *  3. While that commit is on its way, frame 3 is uploaded and notified.
 *  4. The commit fails before reaching DynamoDB (a 5xx): V's unit is in doubt.
 *  5. The next receive brings frame 3 before a read settles V (the settle read fails, an
 *     outage, until it has: whatever order the loop takes its receives and settles in).
 *  6. The read then says the commit did not land, and V is rolled back.
 *
 * Before the fix the worker accepted frame 3 as `late` from V's in-doubt state (3 was below
 * its live position and had no record). The rollback replayed `late 3` onto a state where
 * 3 is next, so the retry carried `gap 3` and `late 3`: two writes of one item. DynamoDB
 * Local failed the condition, the worker concluded "frame 3 already has a record", and V
 * completed with no record for frame 3 (on AWS the transaction is a ValidationException).
 * Now a video whose commit is in doubt takes no message until a read settles it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseStore } from '../../core/leases/dynamodb/lease-store.ts';
import { overriding } from '../../core/overriding.ts';
import { injectedError } from '../../lab/aws/fault-injection.ts';
import { sleep } from '../../core/async.ts';
import { WorkerHarness } from '../../harness/worker-harness.ts';
import { waitFor } from '../../harness/wait.ts';

let h: WorkerHarness;

beforeAll(async () => {
  h = await WorkerHarness.start({ slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 1500, slotQueueVisibilitySeconds: 5 } });
});

afterAll(async () => {
  await h?.stop();
});

describe('a late frame that arrives while the commit of its gap is in doubt', () => {
  // Whether frame 3's message reaches the worker inside the window depends on the loop's
  // timing: every try asserts the guarantee; a try that missed the window is made again with
  // new videos, and if no try hits it the test says so as a skip with its reason (the hold
  // itself is unit-tested in test/gpu-worker/runtime/message-intake.test.ts, the replay of
  // the late decision in video-session.test.ts).
  it('gets exactly one record, and the video completes with every frame', { timeout: 420_000 }, async (ctx) => {
    for (let attempt = 1; attempt <= 3; attempt++) if (await once()) return;
    ctx.skip('the in-doubt window was not hit in 3 tries on this machine; the guarantee held in each');
  });
});

/** One try of the sequence; asserts the guarantee, and says whether the window was hit. */
async function once(): Promise<boolean> {
  {
    // Prepare
    const v = h.videoId('doubt');
    const w = h.videoId('backlog');
    const wFrames = Array.from({ length: 400 }, (_, i) => i);
    await h.pinVideo(v, 0);
    await h.pinVideo(w, 0);
    await h.putFrames(v, [0, 1, 2, 4, 5]);
    await h.putEnd(v, 5);
    await h.putFrames(w, wFrames);
    await h.putEnd(w, wFrames.length - 1);
    let held = 0;
    let deferred = 0;
    // Once W is done no round is a backlog round any more: V's gap is then let through, and
    // this try has missed the window (vitest retries the test with new videos).
    let wDone = false;
    let frame3SentAtMs = 0;
    const base = LeaseStore.forWiring(h.clients.ddb, h.wiring, h.tunables);
    const leases = overriding(base, {
      commit: async (fence, units, nowMs) => {
        const carriesGap3 = units.some((u) => u.videoId === v && u.results.some((r) => r.frame === 3 && r.status === 'gap'));
        // The sequence needs V's gap in a round whose receive came back full (W's batch rides in
        // the same commit), so that its commit overlaps the next receive. A gap commit of any
        // other round fails unsent, as a store outage would: V rolls back and decides again.
        if (held === 0 && carriesGap3 && !units.some((u) => u.videoId === w) && !wDone) {
          deferred++;
          throw injectedError('dynamodb', '5xx');
        }
        if (held === 0 && carriesGap3) {
          held++;
          // Frame 3 is uploaded and notified while this commit is on its way; then the
          // commit fails before reaching DynamoDB (nothing applied, the answer is an error).
          await h.putFrames(v, [3]);
          await h.sendFrames(0, v, [3]);
          frame3SentAtMs = Date.now();
          // The commit fails once the overlapped receive has brought frame 3 (V's group is open), or after 5 s.
          const delivered = () => h.model!.deliveries(h.slotUrl(0)).some((d) => d.groupId === v && (JSON.parse(d.body) as { frame?: number }).frame === 3);
          for (let waitedMs = 0; waitedMs < 5_000 && !delivered(); waitedMs += 20) await sleep(20);
          throw injectedError('dynamodb', '5xx');
        }
        return base.commit(fence, units, nowMs);
      },
      // The read that settles V fails (an outage of the settle read) until V's frame 3 has
      // been received and held, for at most 10 s: a receive then comes while V's commit is
      // still in doubt, however the loop orders its receives and its settles.
      getVideo: async (videoId) => {
        if (videoId === v && held === 1 && !worker.metricTotal('MessagesHeldInDoubt') && Date.now() - frame3SentAtMs < 10_000) {
          settleReadsFailed++;
          throw injectedError('dynamodb', '5xx');
        }
        return base.getVideo(videoId);
      },
    });
    let settleReadsFailed = 0;
    const worker = h.createWorker(0, { extraDeps: { leases }, statsDelayMs: 5 }).start();
    try {
      // Act: V's frames 0-2, then 4-5 and its end marker (buffered, messages deleted)
      await h.sendFrames(0, v, [0, 1, 2]);
      await h.waitForResults(v, 3);
      await h.sendFrames(0, v, [4, 5]);
      await h.sendEnd(0, v);
      await waitFor('frames 4-5 buffered in the checkpoint', async () => {
        const video = await base.getVideo(v);
        return video.checkpoint.sequencer.buffered.length === 2 ? true : undefined;
      }, 30_000, 50);
      // A backlog on the slot: receives come back full, commits overlap the next receive.
      await h.sendFrames(0, w, wFrames);
      await h.sendEnd(0, w);
      void h.waitForSummary(w, (s) => s.status === 'complete', 120_000).then(() => (wDone = true), () => undefined);
      const summary = await h.waitForSummary(v, (s) => s.status === 'complete', 90_000);
      await h.waitForSummary(w, (s) => s.status === 'complete', 90_000);
      // Assess
      const windowSetUp = held === 1;
      expect(frame3SentAtMs).toBeGreaterThan(0);
      const records = await h.frameResults(v);
      expect(records.map((r) => r.frame)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(records.find((r) => r.frame === 3)?.status).toMatch(/^(ok|late)$/);
      expect(summary.framesGap).toBe(0);
      expect(summary.framesOk + summary.framesLate).toBe(6);
      expect((await h.frameResults(w)).filter((r) => r.status === 'ok')).toHaveLength(wFrames.length);
      // The in-doubt window was really hit: the worker held V's message until a read settled it.
      const hit = windowSetUp && worker.logsMatching(/commit outcome unknown/).length > 0 && worker.metricTotal('MessagesHeldInDoubt') > 0;
      if (!hit) console.warn(`in-doubt window missed (gap commits deferred: ${deferred}, set up: ${windowSetUp}, settle reads failed: ${settleReadsFailed}); trying again`);
      return hit;
    } finally {
      // A try that missed the window hands the slot on to the next one.
      await worker.stop();
    }
  }
}
