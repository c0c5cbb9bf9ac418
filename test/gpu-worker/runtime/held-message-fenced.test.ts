/**
 * A message held for the next try (its record read failed) of a video whose commit is in
 * flight, on the real worker over the in-memory twins on a fake clock (simulation, seed 408).
 *
 * The worker retries held messages at the top of its loop. If it offers one to the video's
 * session while that video's commit is still in flight, and the commit comes back fenced (an
 * operator's replay or release moved the lease), the session is dropped under the offer: the
 * message's handle went to a session no one owns, was never committed, deleted or handed
 * back, and the inbox kept it invisible, blocking the video's FIFO group for good. As for a
 * receive, a held message of a video whose commit is in flight waits for that commit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbRecords } from '../../../core/commit/dynamodb/results-reader.ts';
import type { RecordReader } from '../../../core/commit/port.ts';
import type { LeaseTable } from '../../../core/leases/port.ts';
import { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a held message of a video whose commit is in flight', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('waits for that commit: fenced, the video is let go and its messages reach the next owner', async () => {
    // Prepare: frames 0-11 recorded by the owner, which keeps the video (a long idle release).
    const slot = 0;
    const v = h.videoId('held');
    const base = new DynamoDbRecords(h.results);
    // Armed below: frame 3's record read fails once (a throttle), and its retry answers slowly;
    // the video's commits take a while to answer.
    let armed = false;
    let frame3Reads = 0;
    const records: RecordReader = {
      get: async (id, frame) => {
        if (armed && id === v && frame === 3 && ++frame3Reads === 1) throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException' });
        if (armed && id === v && frame === 3) await sleep(3_000);
        return base.get(id, frame);
      },
      range: (...a) => base.range(...a),
      nearestProcessed: (...a) => base.nearestProcessed(...a),
    };
    const tunables = { ...h.tunables, videoIdleReleaseSeconds: 3_600 };
    const store = LeaseStore.forWiring(h.clients.ddb, h.wiring, tunables);
    const leases = new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== 'commit' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: unknown[]) => {
          if (armed) await sleep(1_000);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as unknown as LeaseTable;
    await h.pinVideo(v, slot);
    await h.putFrames(v, range(0, 12));
    await h.sendFrames(slot, v, range(0, 11));
    const worker = h.createWorker(slot, { tunables: { videoIdleReleaseSeconds: 3_600 }, extraDeps: { records, leases } }).start();
    await h.waitForResults(v, 12);

    // Act: the operator moves the lease (the owner is fenced from now on); then frames 0-9
    // come again (tagged, as a replay re-sends them: a full receive, so the round's commit
    // overlaps the next round): 0-2 are duplicates, taken by the old session, whose round
    // commits (fenced); 3's record read fails, so 3-9 are held and retried while that commit
    // is in flight.
    const lease = await h.leases.getVideo(v);
    expect(await h.leases.forceReleaseVideo(v, lease.token, Date.now(), 1)).toBe(true);
    armed = true;
    await h.sendFrames(slot, v, range(0, 9), { replayTag: 'again' });
    // Then the camera's next frame.
    await h.sendFrames(slot, v, [12]);
    const results = await h.waitForResults(v, 13, 600_000);
    await worker.stop();

    // Assess: the race happened (frame 3 held, the commit fenced), and the next frame got its
    // record from a new owner: the video's messages were not left blocked behind frame 3.
    expect(worker.logsMatching(/^could not take a message; holding it for the next try$/).length).toBeGreaterThan(0);
    expect(worker.logsMatching(/^commit rejected for video: lease moved \(fenced\)$/).length).toBeGreaterThan(0);
    expect(results.map((r) => [r.frame, r.status])).toEqual(range(0, 12).map((f) => [f, 'ok']));
    expect(results[12]!.token).toBeGreaterThan(lease.token + 1);
  });
});
