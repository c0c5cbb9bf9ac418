/**
 * The case of test/gpu-worker/runtime/worker-kill-pause*.int.test.ts, one file per
 * processor so that the two run side by side in the defaults lane of vitest.config.ts,
 * each on its own harness.
 *
 * Hostile timing on real SQS FIFO semantics (the worker harness on the SQS FIFO model, at
 * the default tunables users get: slot lease 15 s, heartbeat 5 s, visibility 5 s, skew
 * tolerance 5 s). The chaos run kills and pauses real processes but runs on fauxqs, which
 * hands out one message per group per receive, so there a worker never holds ten frames
 * of one video, and never reads ahead (decision 39). Here it does both, while uploads go
 * on: a worker is killed mid-stream (kill -9), its successor is paused past its lease
 * (SIGSTOP) and resumed after a third worker took over. Every AWS call of a killed or
 * paused worker waits at a gate (harness/process-gate.ts), so nothing it sends
 * reaches a service at the wrong time except what was already on its way.
 *
 * After it all: every frame has exactly one `ok` record, every video completes, and each
 * record's track ID (the stats processor's count of frames the video's state has seen)
 * equals its frame number + 1: each frame went through the video's state once, in order,
 * across both handovers. The paused worker exits `lease-lost` and writes nothing after it
 * resumes.
 *
 * The same run again with the simulated GPU detecting frames read ahead (decision 42):
 * every frame one `ok` record, with the very track IDs an in-order run of the real
 * ByteTrack gives, across both handovers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerHarness, type HarnessWorker } from '../../harness/worker-harness.ts';
import { ProcessGate } from '../../harness/process-gate.ts';
import { waitFor } from '../../harness/wait.ts';
import { inOrderTrackIds, trackIds } from '../../harness/worker-doubles.ts';
import type { FrameProcessor } from '../../core/ports.ts';
import { SimulatedGpuProcessor } from '../../lab/worker/simulated-gpu.ts';

const SLOT = 0;
const VIDEOS = 4;
const BACKLOG_FRAMES = 40;

/** Each worker's processor: the harness's stats processor, or a detect-ahead simulated GPU. */
export type KillPauseKind = 'stats' | 'simgpu';

/** Registers the case for `kind` in the calling test file: its own harness (beforeAll / afterAll) and one test. */
export function killPauseCase(kind: KillPauseKind, title: string): void {
  describe('kill -9 and SIGSTOP past the lease on SQS FIFO semantics, with uploads going on (worker harness, default tunables)', () => {
    let h: WorkerHarness;

    beforeAll(async () => {
      h = await WorkerHarness.start({ slots: 1 });
    });

    afterAll(async () => {
      await h?.stop();
    });

    const committedBy = async (videoIds: readonly string[], w: HarnessWorker) =>
      (await Promise.all(videoIds.map((v) => h.frameResults(v)))).flat().filter((r) => r.worker === w.workerId);

    const gpus: SimulatedGpuProcessor[] = [];
    const processorOf = (k: KillPauseKind) => (k === 'stats' ? {} : { processor: () => (gpus.push(new SimulatedGpuProcessor({ batchSize: 8, maxBatchWaitMs: 5 }, undefined, 160)), gpus.at(-1)!) as FrameProcessor });

    it(title, async () => {
      // Prepare: four videos with a backlog (so receives bring ten frames of a video and reads ahead start)
      const videos = Array.from({ length: VIDEOS }, (_, i) => h.videoId(`kp${kind}${i}`));
      const backlog = Array.from({ length: BACKLOG_FRAMES }, (_, f) => f);
      for (const v of videos) {
        await h.pinVideo(v, SLOT);
        await h.putFrames(v, backlog);
        await h.sendFrames(SLOT, v, backlog);
      }
      // Uploads go on throughout, until the paused worker has resumed: bursts of 1-3 frames
      // per video, videos interleaved, with a duplicate message now and then (a re-sent
      // notification)
      let next = BACKLOG_FRAMES;
      let stopUploads = false;
      const uploads = (async () => {
        for (let tick = 0; !stopUploads; tick++) {
          const burst = Array.from({ length: 1 + (tick % 3) }, (_, i) => next + i);
          for (const v of videos) {
            await h.putFrames(v, burst);
            await h.sendFrames(SLOT, v, tick % 5 === 2 ? [...burst, burst[0]!] : burst);
          }
          next += burst.length;
          await new Promise((r) => setTimeout(r, 150 + (tick % 3) * 200));
        }
      })();
      // Awaited at the end of the act; until then a failed upload must not surface as an unhandled rejection.
      uploads.catch(() => undefined);
      const gateA = new ProcessGate();
      const a = h.createWorker(SLOT, { tunables: { firstFrameNumber: 0 }, gate: gateA, ...processorOf(kind) }).start();

      // Act 1: kill -9 the owner once it has committed frames and read some ahead
      await waitFor('A commits and reads ahead', async () => (await committedBy(videos, a)).length >= 40 && a.worker.prefetchedFrames.readAhead.used > 0, 60_000);
      gateA.kill();
      const uploadedAtKill = next;
      const b = h.createWorker(SLOT, { tunables: { firstFrameNumber: 0 }, gate: new ProcessGate(), ...processorOf(kind) }).start();
      await waitFor('B commits after the takeover', async () => (await committedBy(videos, b)).length >= 20, 90_000);

      // Act 2: pause B past its lease; C takes over; B resumes
      b.gate!.pause();
      const pausedAtMs = Date.now();
      const uploadedAtPause = next;
      const c = h.createWorker(SLOT, { tunables: { firstFrameNumber: 0 }, ...processorOf(kind) }).start();
      await waitFor('C commits after the takeover', async () => (await committedBy(videos, c)).length >= 20, 90_000);
      const resumedAtMs = Date.now();
      const uploadedAtResume = next;
      b.gate!.resume();
      expect(await b.done).toBe('lease-lost');

      // Finish: a few more frames, then the end markers
      await new Promise((r) => setTimeout(r, 2_000));
      stopUploads = true;
      await uploads;
      const FRAMES = next;
      // Frames were uploaded while the owner was dead and while its successor was paused
      expect(uploadedAtKill).toBeLessThan(uploadedAtPause);
      expect(uploadedAtPause).toBeLessThan(uploadedAtResume);
      expect(uploadedAtResume).toBeLessThan(FRAMES);
      for (const v of videos) {
        await h.putEnd(v, FRAMES - 1);
        await h.sendEnd(SLOT, v);
      }
      for (const v of videos) await h.waitForSummary(v, (s) => s.status === 'complete', 120_000);

      // Assess: one ok record per frame, each through the video's state once, in order
      for (const v of videos) {
        const records = (await h.frameResults(v)).sort((x, y) => x.frame - y.frame);
        expect(records.map((r) => r.frame)).toEqual(Array.from({ length: FRAMES }, (_, f) => f));
        expect(records.filter((r) => r.status !== 'ok').map((r) => [r.frame, r.status, r.reason])).toEqual([]);
        if (kind === 'stats') expect(records.filter((r) => r.detections[0]?.trackId !== r.frame + 1).map((r) => [r.frame, r.detections[0]?.trackId])).toEqual([]);
        else expect(records.map((r) => trackIds(r.detections))).toEqual(await inOrderTrackIds(v, records.map((r) => r.frame)));
        const summary = await h.summary(v);
        expect(summary?.framesOk).toBe(FRAMES);
      }
      // Each of the three owned part of the stream; the killed one never acted again, the paused one wrote nothing after it resumed
      for (const w of [a, b, c]) expect((await committedBy(videos, w)).length).toBeGreaterThan(0);
      expect((await committedBy(videos, b)).filter((r) => r.committedAtMs >= pausedAtMs)).toEqual([]);
      expect(b.gate!.held).toBeGreaterThan(0);
      expect(resumedAtMs - pausedAtMs).toBeGreaterThan(15_000);
      // Reads ahead were in play on both sides of the kill (and, with the simulated GPU, detections ahead)
      expect(a.worker.prefetchedFrames.readAhead.used).toBeGreaterThan(0);
      if (kind === 'simgpu') expect(gpus.reduce((n, g) => n + g.detectedAhead.used, 0)).toBeGreaterThan(0);
      // Nothing in the slot's DLQ
      expect(h.model!.messages(h.dlqUrl(SLOT))).toEqual([]);
      expect(h.model!.pending(h.slotUrl(SLOT))).toEqual([]);
      await c.stop();
    }, 300_000);
  });
}
