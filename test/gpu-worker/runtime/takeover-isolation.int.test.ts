/**
 * The crash-loop breaker from the first successor (decision 29), with the real worker in
 * this process (worker harness on the twins: the lease table's, S3's and the SQS FIFO
 * model; real time, since the crash probe's child processes run on it, which is also why
 * this file stays `.int`): a worker that
 * claims its slot from an owner that never released it runs the videos it took from that
 * owner alone (one frame per round, each announced by a marker), goes back to normal
 * rounds once the redelivery window has closed and the frames known then have run, and a
 * worker that follows a clean drain isolates nothing. With the crash probe (decision 41),
 * a frame that kills the probe's child process is recorded `crashed-worker` without ever
 * reaching the worker's processor, and the normal path never calls the probe.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../../harness/wait.ts';
import { WorkerHarness, wrapProcessor, type HarnessWorker } from '../../../harness/worker-harness.ts';
import { frameKey } from '../../../core/ingest/keys.ts';
import { ProcessProbe } from '../../../gpu-worker/runtime/crash/probe-process.ts';
import type { FrameInput } from '../../../core/ports.ts';

const PROBE_ENTRY = fileURLToPath(new URL('../../../lab/probe-main.ts', import.meta.url));
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

const WINDOW_SECONDS = 2;
const SLOT = 0;

describe('takeover isolation (worker harness)', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { slotQueueVisibilitySeconds: WINDOW_SECONDS } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  /** Frames committed in the same round share a commit time: how many rounds held more than one. */
  const sharedRounds = (items: readonly { committedAtMs: number }[]) => {
    const byTime = new Map<number, number>();
    for (const r of items) byTime.set(r.committedAtMs, (byTime.get(r.committedAtMs) ?? 0) + 1);
    return [...byTime.values()].filter((n) => n > 1).length;
  };

  const isolatedLines = (w: HarnessWorker) => w.logsMatching(/running it isolated/);

  it('a successor of an owner that died runs its videos alone, then normal rounds once the window has passed', async () => {
    // Prepare: an owner held the slot and the video and died (its lease ran out, never released)
    const videoId = h.videoId('taken');
    const t0 = Date.now();
    const dead = await h.leases.claimSlot(SLOT, 'dead-owner', t0 - 60_000, 1_000);
    expect(dead).toBeDefined();
    await h.pinVideo(videoId, SLOT);
    const adopted = await h.leases.adoptVideo(videoId, { slot: SLOT, workerId: 'dead-owner', epoch: dead!.epoch }, t0 - 60_000);
    expect(typeof adopted).toBe('object');
    const first = Array.from({ length: 6 }, (_, f) => f);
    await h.putFrames(videoId, first);
    await h.sendFrames(SLOT, videoId, first);
    // Act
    const w = h.createWorker(SLOT, { tunables: { firstFrameNumber: 0 } }).start();
    const isolated = await h.waitForResults(videoId, first.length);
    // Assess: the claim was a takeover; the video ran alone, one frame per commit
    expect(w.logsMatching(/^slot claimed$/)[0]?.fields.takenOver).toBe(true);
    expect(isolatedLines(w).map((l) => l.fields.videoId)).toEqual([videoId]);
    expect(isolated.every((r) => r.status === 'ok')).toBe(true);
    expect(sharedRounds(isolated)).toBe(0);
    // Act: once the window has passed and its frames ran, the video is back to normal rounds
    await waitFor('back to normal rounds', async () => w.logsMatching(/video back to normal rounds/).length > 0 || undefined, 30_000);
    const more = Array.from({ length: 10 }, (_, f) => first.length + f);
    await h.putFrames(videoId, more);
    await h.sendFrames(SLOT, videoId, more);
    const all = await h.waitForResults(videoId, first.length + more.length);
    // Assess: later frames share rounds again; every frame one ok record, in order
    const later = all.filter((r) => r.frame >= first.length);
    expect(sharedRounds(later)).toBeGreaterThan(0);
    expect(all.map((r) => r.frame)).toEqual([...first, ...more]);
    expect(all.every((r) => r.status === 'ok')).toBe(true);
    await w.stop();
  }, 120_000);

  it('after a clean drain the successor takes the slot over from nobody and isolates nothing', async () => {
    // Prepare: a worker owns the video and drains (it releases the slot; the video stays pinned)
    const videoId = h.videoId('drained');
    const first = [0, 1, 2];
    await h.putFrames(videoId, first);
    await h.pinVideo(videoId, SLOT);
    await h.sendFrames(SLOT, videoId, first);
    const before = h.createWorker(SLOT, { tunables: { firstFrameNumber: 0 } }).start();
    await h.waitForResults(videoId, first.length);
    expect(await before.stop()).toBe('drained');
    // Act: the successor adopts the pinned video and gets more frames
    const more = [3, 4, 5, 6, 7];
    await h.putFrames(videoId, more);
    await h.sendFrames(SLOT, videoId, more);
    const after = h.createWorker(SLOT, { tunables: { firstFrameNumber: 0 } }).start();
    const all = await h.waitForResults(videoId, first.length + more.length);
    // Assess
    expect(after.logsMatching(/^slot claimed$/)[0]?.fields.takenOver).toBe(false);
    expect(after.logsMatching(/^video adopted$/).map((l) => [l.fields.videoId, l.fields.handover])).toContainEqual([videoId, 'clean']);
    expect(isolatedLines(after)).toEqual([]);
    expect(all.map((r) => r.frame)).toEqual([...first, ...more]);
    await after.stop();
  }, 120_000);

  /** A dead owner held the slot and the video: what a successor finds after a crash. */
  async function takenFromDeadOwner(videoId: string): Promise<void> {
    const t0 = Date.now();
    const dead = await h.leases.claimSlot(SLOT, 'dead-owner', t0 - 60_000, 1_000);
    expect(dead).toBeDefined();
    await h.pinVideo(videoId, SLOT);
    expect(typeof (await h.leases.adoptVideo(videoId, { slot: SLOT, workerId: 'dead-owner', epoch: dead!.epoch }, t0 - 60_000))).toBe('object');
  }

  it('with the crash probe: a frame that kills the probe child twice is recorded crashed-worker, never reaches the processor, and the video goes on', async () => {
    // Prepare: the video taken from a dead owner; its frame 3 kills whatever process detects it
    const videoId = h.videoId('probed');
    await takenFromDeadOwner(videoId);
    const frames = Array.from({ length: 8 }, (_, f) => f);
    await h.putFrames(videoId, frames);
    await h.sendFrames(SLOT, videoId, frames);
    const probe = new ProcessProbe({ entry: PROBE_ENTRY, env: { ...process.env, FRAME_PROCESSOR: 'stats', WORKER_CRASH_ON_KEY: frameKey(videoId, 3) }, log: quiet });
    const handed: number[] = [];
    // Act
    const w = h
      .createWorker(SLOT, {
        tunables: { firstFrameNumber: 0 },
        processor: (inner) => wrapProcessor(inner, { process: (f: readonly FrameInput[]) => (handed.push(...f.map((i) => i.frame)), inner.process(f)) }),
        extraDeps: { probe },
      })
      .start();
    const all = await h.waitForResults(videoId, frames.length);
    await w.stop();
    // Assess: one record per frame, frame 3 crashed-worker; the worker's processor never saw it
    expect(all.map((r) => [r.frame, r.status, r.reason])).toEqual(frames.map((f) => (f === 3 ? [3, 'failed', 'crashed-worker'] : [f, 'ok', undefined])));
    expect(handed).not.toContain(3);
    expect(handed.sort((a, b) => a - b)).toEqual(frames.filter((f) => f !== 3));
    expect(probe.deaths).toBe(2);
    expect(w.logsMatching(/crash probe: the child process died/).map((l) => l.fields.frame)).toEqual([3, 3]);
    expect(w.logsMatching(/frame parked, it killed the worker/).map((l) => l.fields.frame)).toEqual([3]);
    expect(w.metrics.filter((m) => m.name === 'FramesCrashedWorker').reduce((n, m) => n + m.value, 0)).toBe(1);
    expect(probe.running).toBe(false);
  }, 120_000);

  it('the normal path never calls the probe: a worker that took its slot cleanly runs its video without it', async () => {
    const videoId = h.videoId('unprobed');
    await h.pinVideo(videoId, SLOT);
    const frames = [0, 1, 2, 3, 4];
    await h.putFrames(videoId, frames);
    await h.sendFrames(SLOT, videoId, frames);
    let tries = 0;
    let warmed = 0;
    const probe = { tryFrame: async () => (tries++, { kind: 'survived' as const }), warm: () => void warmed++, stop: async () => {} };
    const w = h.createWorker(SLOT, { tunables: { firstFrameNumber: 0 }, extraDeps: { probe } }).start();
    const all = await h.waitForResults(videoId, frames.length);
    await w.stop();
    expect(all.every((r) => r.status === 'ok')).toBe(true);
    expect(w.logsMatching(/^slot claimed$/)[0]?.fields.takenOver).toBe(false);
    expect([tries, warmed]).toEqual([0, 0]);
  }, 120_000);
});
