/**
 * An operator's replay racing live work (issue 40, defects 2 and 3), on the real worker
 * and the real replay operation (core/commit/operations/replay.ts) over the in-memory twins
 * on a fake clock; the router is stood in for by harness/operator-harness.ts.
 *
 * - Defect 2: the camera's next frame arrives after the replay's reset and before its
 *   first delete. The new owner meets the old records from `--from` on, still standing,
 *   and settles them as recorded; the replay then deletes them and re-sends the frames.
 *   The re-sent frames (tagged) must be decided by their records again, and recorded.
 * - Defect 3: frames below `--from` without a record yet (late, not yet uploaded) are not
 *   re-run silently: the replay starts at the lowest of them, says so, and each gets its
 *   record when it arrives.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replay } from '../../../core/commit/operations/replay.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';
import { harnessOperatorPorts } from '../../../harness/operator-harness.ts';
import { waitFor } from '../../../harness/wait.ts';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('replay racing live frames', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('a live frame arriving between the reset and the deletes leaves no frame without a record (defect 2)', async () => {
    // Prepare: a live video (no end marker) with frames 0-9 recorded. Its owner keeps it
    // (a long idle release: a live camera's frames keep coming), so the owner that adopts
    // it after the reset is the one that meets the replay's re-sent frames.
    const slot = 0;
    const v = h.videoId('race');
    await h.pinVideo(v, slot);
    await h.putFrames(v, range(0, 9));
    await h.sendFrames(slot, v, range(0, 9));
    const worker = h.createWorker(slot, { tunables: { videoIdleReleaseSeconds: 3_600 } }).start();
    await h.waitForResults(v, 10);
    const before = await h.frameResults(v);
    // The camera's next frame arrives after the reset, before the first delete: the new
    // owner lists S3, runs 0-4 silently, meets the old records of 5-9 and settles them,
    // then records 10. Only then do the deletes go on.
    const ports = harnessOperatorPorts(h, {
      slot,
      beforeFirstDelete: async () => {
        await h.putFrames(v, [10]);
        if ((await h.leases.getVideo(v)).pinnedSlot === undefined) await h.pinVideo(v, slot);
        await h.sendFrames(slot, v, [10]);
        await waitFor('frame 10 recorded by the new owner', async () => (await h.frameResults(v)).some((r) => r.frame === 10), 300_000);
      },
    });

    // Act
    const r = await replay(ports, { videoId: v, fromFrame: 5 });
    await waitFor('the re-sent frames taken and nothing left to run', async () => {
      const lease = await h.leases.getVideo(v);
      const sq = lease.checkpoint.sequencer;
      return h.model!.pending(h.slotUrl(slot)).length === 0 && sq.late.length === 0 && sq.buffered.length === 0 ? true : undefined;
    }, 600_000);
    await worker.stop();

    // Assess: the race happened: the new owner adopted the video before the replay's first
    // delete, and finished the replay's deletes itself before deciding a frame, so it met no
    // old record (issue 40: a gap's record, which no re-send covers, would have been lost) ...
    expect(worker.logsMatching(/^a replay's deletes finished/).map((l) => l.fields?.deleted)).toEqual([5]);
    expect(worker.logsMatching(/^a frame of this round already has a record/).filter((l) => Number(l.fields?.frame) >= 5)).toEqual([]);
    // ... the replay's own deletes found the new owner's records only, and kept them; and
    // every frame has exactly one record.
    const after = await h.frameResults(v);
    expect(r).toMatchObject({ fromFrame: 5, deleted: 0, keptNewer: 5, resent: 5, rebuilt: 5 });
    expect(after.map((x) => x.frame)).toEqual(range(0, 10));
    expect(after.slice(0, 5)).toEqual(before.slice(0, 5));
    for (const rec of after.filter((x) => x.frame >= 5 && x.frame <= 9)) expect(rec.token).toBeGreaterThan(r.previousToken);
    const summary = await h.summary(v);
    expect((summary?.framesOk ?? 0) + (summary?.framesLate ?? 0)).toBe(11);
  });

  it('a gap from --from on, met by the new owner before the replay deletes it, is decided again (no object covers it: nothing re-sends it)', async () => {
    // Prepare: frames 0-4 and 8-9 recorded ok, 5-7 never uploaded (gaps, after the reorder wait).
    const slot = 0;
    const v = h.videoId('gaprace');
    await h.pinVideo(v, slot);
    await h.putFrames(v, [...range(0, 4), 8, 9]);
    await h.sendFrames(slot, v, [...range(0, 4), 8, 9]);
    const worker = h.createWorker(slot, { tunables: { videoIdleReleaseSeconds: 3_600 } }).start();
    await h.waitForResults(v, 10);
    expect((await h.frameResults(v)).filter((x) => x.status === 'gap').map((x) => x.frame)).toEqual([5, 6, 7]);
    // The camera's next frame lands between the reset and the first delete, and the new owner
    // records it: it passed 6 and 7 while their old gap records would still have stood.
    const ports = harnessOperatorPorts(h, {
      slot,
      beforeFirstDelete: async () => {
        await h.putFrames(v, [10]);
        if ((await h.leases.getVideo(v)).pinnedSlot === undefined) await h.pinVideo(v, slot);
        await h.sendFrames(slot, v, [10]);
        await waitFor('frame 10 recorded by the new owner', async () => (await h.frameResults(v)).some((x) => x.frame === 10), 300_000);
      },
    });

    // Act
    const r = await replay(ports, { videoId: v, fromFrame: 6 });
    await waitFor('nothing left to run', async () => (h.model!.pending(h.slotUrl(slot)).length === 0 ? true : undefined), 600_000);
    await worker.stop();

    // Assess: 6 and 7 have a record again (a gap, by the new owner), every frame exactly one.
    const after = await h.frameResults(v);
    expect(after.map((x) => [x.frame, x.status])).toEqual(range(0, 10).map((f) => [f, f >= 5 && f <= 7 ? 'gap' : 'ok']));
    for (const rec of after.filter((x) => x.frame >= 6)) expect(rec.token).toBeGreaterThan(r.previousToken);
    expect(await h.summary(v)).toMatchObject({ framesOk: 8, framesGap: 3 });
  });

  it('frames below --from without a record yet are redone, not silenced: each gets its record when it arrives (defect 3)', async () => {
    // Prepare: frames 0-4 recorded, 5-9 late (not uploaded yet), 10 waiting in the reorder
    // buffer (a long reorder wait: no gap is decided while the test acts).
    const slot = 0;
    const v = h.videoId('hole');
    await h.pinVideo(v, slot);
    await h.putFrames(v, [...range(0, 4), 10]);
    await h.sendFrames(slot, v, [...range(0, 4), 10]);
    const worker = h.createWorker(slot, { tunables: { reorderWaitMs: 3_600_000 } }).start();
    await h.waitForResults(v, 5);
    await waitFor('frame 10 buffered', async () => (await h.leases.getVideo(v)).checkpoint.sequencer.buffered.some((b) => b.frame === 10), 60_000);
    const ports = harnessOperatorPorts(h, { slot });

    // Act: the operator replays from 10; then the late frames arrive.
    const r = await replay(ports, { videoId: v, fromFrame: 10 });
    await h.putFrames(v, range(5, 9));
    await h.sendFrames(slot, v, range(5, 9));
    await waitFor('frame 10 recorded', async () => (await h.frameResults(v)).some((x) => x.frame === 10), 600_000);
    await worker.stop();

    // Assess: every frame has its record; the replay started at 5 and said why.
    const after = await h.frameResults(v);
    expect(after.map((x) => [x.frame, x.status])).toEqual(range(0, 10).map((f) => [f, 'ok']));
    expect((await h.summary(v))?.framesOk).toBe(11);
    expect(r.fromFrame).toBe(5);
    expect(r.widened).toEqual([{ why: 'unrecorded', from: 5, through: 9 }]);
  });

  it('a lease reset that silences frames without a record (a replay from before the fix, or one racing another): the worker records each, and gaps the one that never comes (defect 3)', async () => {
    // Prepare: as above, frames 0-4 recorded, 5-9 not uploaded yet, 10 buffered.
    const slot = 0;
    const v = h.videoId('silenced');
    await h.pinVideo(v, slot);
    await h.putFrames(v, [...range(0, 4), 10]);
    await h.sendFrames(slot, v, [...range(0, 4), 10]);
    const worker = h.createWorker(slot, { tunables: { reorderWaitMs: 60_000 } }).start();
    await h.waitForResults(v, 5);
    await waitFor('frame 10 buffered', async () => (await h.leases.getVideo(v)).checkpoint.sequencer.buffered.some((b) => b.frame === 10), 60_000);

    // Act: the lease is rewound with frames below 10 silent, the frames re-sent; then 5-7
    // and 9 arrive, 8 never does.
    const lease = await h.leases.getVideo(v);
    expect(await h.leases.resetForReplay(v, 10, lease.token, { framesOk: 5, framesFailed: 0, framesGap: 0, firstFrame: 0, lastFrame: 4 }, Date.now())).toEqual({ token: lease.token + 1 });
    await h.pinVideo(v, slot);
    await h.sendFrames(slot, v, [...range(0, 4), 10], { replayTag: 'replay-silenced' });
    await h.putFrames(v, [5, 6, 7, 9]);
    await h.sendFrames(slot, v, [5, 6, 7, 9]);
    await waitFor('frame 10 recorded', async () => (await h.frameResults(v)).some((x) => x.frame === 10), 3_600_000);
    await worker.stop();

    // Assess: each frame below 10 without a record got one: its result, or a gap.
    const after = await h.frameResults(v);
    expect(after.map((x) => [x.frame, x.status])).toEqual(range(0, 10).map((f) => [f, f === 8 ? 'gap' : 'ok']));
    expect(await h.summary(v)).toMatchObject({ framesOk: 10, framesGap: 1 });
    const warned = worker.logsMatching(/^frames below a replay's --from have no record/, ['warn']).flatMap((l) => l.fields?.frames as number[]);
    expect(new Set(warned)).toEqual(new Set([5, 6, 7, 8, 9]));
  });
});
