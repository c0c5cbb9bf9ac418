/**
 * `release --force` of a video that waits (core/commit/operations/release.ts), on the real
 * worker and the real release operation over the in-memory twins on a fake clock; the
 * router is stood in for by harness/operator-harness.ts.
 *
 * The video's frames 11-12 and its end marker were taken already: they live in its
 * checkpoint, no message for them will come again. The release re-sends them (tagged), so
 * the video is admitted at once and its next owner adopts the checkpoint and completes it:
 * the frames never uploaded become gaps, the buffered ones get their records.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forceRelease } from '../../../core/commit/operations/release.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';
import { harnessOperatorPorts } from '../../../harness/operator-harness.ts';
import { waitFor } from '../../../harness/wait.ts';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('release --force of a video waiting with frames buffered', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('re-sends what the checkpoint holds: the video is admitted again, adopted from its checkpoint, and completes', async () => {
    // Prepare: frames 0-8 recorded, 9-10 never uploaded, 11-12 buffered behind them, the
    // end marker (12) taken. A long reorder wait: the owner is still waiting when released.
    const slot = 0;
    const v = h.videoId('held');
    await h.pinVideo(v, slot);
    await h.putFrames(v, [...range(0, 8), 11, 12]);
    await h.putEnd(v, 12);
    await h.sendFrames(slot, v, [...range(0, 8), 11, 12]);
    await h.sendEnd(slot, v);
    const worker = h.createWorker(slot, { tunables: { reorderWaitMs: 30_000 } }).start();
    await h.waitForResults(v, 9);
    await waitFor('frames 11-12 and the end checkpointed', async () => {
      const sq = (await h.leases.getVideo(v)).checkpoint.sequencer;
      return sq.buffered.length === 2 && sq.endFrame === 12 ? true : undefined;
    }, 60_000);

    // Act: the operator force-releases the video while its owner waits for 9-10.
    const r = await forceRelease(harnessOperatorPorts(h, { slot }), { videoId: v, retentionDays: 1 });
    const summary = await h.waitForSummary(v, (s) => s.status === 'complete', 600_000);
    await worker.stop();

    // Assess: 11-12 and the end marker were re-sent with a tag; every frame has exactly one
    // record, the never-uploaded ones gaps; the new owner came after the released token.
    expect(r).toMatchObject({ slot, complete: false, resentFrames: [11, 12], resentEndMarker: true, replayTag: 'release-1' });
    const records = await h.frameResults(v);
    expect(records.map((x) => [x.frame, x.status])).toEqual([...range(0, 8).map((f) => [f, 'ok']), [9, 'gap'], [10, 'gap'], [11, 'ok'], [12, 'ok']]);
    expect(summary).toMatchObject({ framesOk: 11, framesGap: 2, framesFailed: 0 });
    for (const x of records.filter((x) => x.frame >= 9)) expect(x.token).toBeGreaterThan(r.token);
  });
});
