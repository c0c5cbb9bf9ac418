/**
 * Issue 40, defect 2 with encoded segments, as reported: `replay --from 45` while the
 * camera's next segment arrives between the replay's reset and its first delete. The new
 * owner meets the old records of 45-89 (one packed item, decision 56) and settles them as
 * recorded; the replay then deletes them and re-sends segment 45, whose frames must be
 * decided by their records again and recorded. The real worker and the real operation on
 * the in-memory twins, real H.264 (test/gpu-worker/video/fixtures/).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replay } from '../../../core/commit/operations/replay.ts';
import { harnessOperatorPorts } from '../../../harness/operator-harness.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'video', 'fixtures');
/** 45 frames, MP4. */
const MP4_45 = new Uint8Array(readFileSync(path.join(FIXTURES, 'bframes-45.mp4')));

describe('replay racing a live camera (segments)', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 300 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('records every frame of the re-sent segment although the new owner met its old records first', async () => {
    // Prepare: segments 0 and 45 recorded by a first worker, which then drains (releasing the
    // video); the next owner keeps the video while the camera goes on.
    const v = h.videoId('cam');
    await h.pinVideo(v, 0);
    await h.putSegment(v, 0, MP4_45, { frames: 45 });
    await h.putSegment(v, 45, MP4_45, { frames: 45 });
    const first = h.createWorker(0).start();
    await h.sendSegment(0, v, 0);
    await h.sendSegment(0, v, 45);
    await h.waitForResults(v, 90);
    await first.stop();
    const worker = h.createWorker(0, { tunables: { videoIdleReleaseSeconds: 3_600 } }).start();
    // It takes over what the first left pinned to the slot (the replay reads the token after that).
    await h.waitFor('the video settled with the second worker', async () => {
      const lease = await h.leases.getVideo(v);
      return lease.owner === worker.workerId || lease.pinnedSlot === undefined ? true : undefined;
    }, 30_000);
    const ports = harnessOperatorPorts(h, {
      beforeFirstDelete: async () => {
        // The camera's next segment, after the reset and before the first delete.
        await h.putSegment(v, 90, MP4_45, { frames: 45 });
        if ((await h.leases.getVideo(v)).pinnedSlot === undefined) await h.pinVideo(v, 0);
        await h.sendSegment(0, v, 90);
        await h.waitFor('segment 90 recorded by the new owner', async () => ((await h.frameResults(v)).some((r) => r.frame === 134) ? true : undefined), 60_000);
      },
    });

    // Act
    const r = await replay(ports, { videoId: v, fromFrame: 45 });
    await h.waitFor('frames 45-89 recorded again', async () => {
      const items = await h.frameResults(v);
      return items.filter((x) => x.frame >= 45 && x.frame < 90).length === 45 ? true : undefined;
    }, 30_000).catch(() => undefined);
    await worker.stop();

    // Assess: the race happened: the new owner adopted the video before the replay's deletes,
    // and finished them itself before deciding a frame (it met no old record), so the
    // replay's own deletes found only the new owner's records, and kept them ...
    const finished = worker.logsMatching(/^a replay's deletes finished/);
    expect(finished.map((l) => l.fields?.deleted)).toEqual([45]);
    expect(worker.logsMatching(/^a frame of this round already has a record/).filter((l) => Number(l.fields?.frame) >= 45 && Number(l.fields?.frame) < 90)).toEqual([]);
    expect(r).toMatchObject({ fromFrame: 45, deleted: 0, keptNewer: 45 });
    // ... and every frame has exactly one record.
    const items = await h.frameResults(v);
    expect(items.map((x) => x.frame)).toEqual(Array.from({ length: 135 }, (_, i) => i));
    expect(items.filter((x) => x.frame >= 45 && x.frame < 90).every((x) => x.token > r.previousToken)).toBe(true);
  });
});
