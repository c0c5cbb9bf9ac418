/**
 * kill -9 and SIGSTOP past the lease in the middle of segments, uploads going on (issue 34),
 * at the default tunables users get (slot lease 15 s, heartbeat 5 s, visibility 5 s): the
 * real worker on the in-memory twins (SQS FIFO model, lease table twin, S3 twin), real
 * H.264 segments of two lengths and containers decoded by FFmpeg. Every AWS call of a
 * killed or paused worker waits at a gate (harness/process-gate.ts).
 *
 * A round commits at most 80 frames of a video, so behind a backlog of 45- and 30-frame
 * segments its commits end inside segments: the kill and the pause land while a segment
 * is half recorded, and the successor resumes from the checkpoint's packed buffer, decoding
 * the segment again from its start up to the first frame it has no record of.
 *
 * After it all: every frame has exactly one `ok` record and each record's track ID (the
 * stats processor's count of frames the video's state has seen) equals its frame number
 * + 1: each frame went through the video's state once, in order, across both handovers.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerHarness, type HarnessWorker } from '../../../harness/worker-harness.ts';
import { ProcessGate } from '../../../harness/process-gate.ts';
import { waitFor } from '../../../harness/wait.ts';
import type { SourceContainer } from '../../../core/ingest/segment-keys.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'video', 'fixtures');
const SEGMENTS: readonly { bytes: Uint8Array; frames: number; container: Exclude<SourceContainer, 'image'> }[] = [
  { bytes: new Uint8Array(readFileSync(path.join(FIXTURES, 'bframes-45.mp4'))), frames: 45, container: 'mp4' },
  { bytes: new Uint8Array(readFileSync(path.join(FIXTURES, 'cfr-30.mpegts'))), frames: 30, container: 'mpegts' },
];
const SLOT = 0;
const VIDEOS = 3;
const BACKLOG_SEGMENTS = 4;

describe('kill -9 and SIGSTOP past the lease in the middle of segments, with uploads going on (twins, default tunables)', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', slots: 1 });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('gives every frame one ok record through the video state once, in order, across both handovers', async () => {
    const videos = Array.from({ length: VIDEOS }, (_, i) => h.videoId(`kps${i}`));
    /** Per video: the first frame of each segment uploaded, and the next frame number. */
    const starts = new Map(videos.map((v) => [v, [] as number[]]));
    const next = new Map(videos.map((v) => [v, 0]));
    let count = 0;
    const upload = async (v: string) => {
      const s = SEGMENTS[count++ % SEGMENTS.length]!;
      const n = next.get(v)!;
      await h.putSegment(v, n, s.bytes, { frames: s.frames, container: s.container });
      await h.sendSegment(SLOT, v, n, s.container);
      starts.get(v)!.push(n);
      next.set(v, n + s.frames);
    };
    for (const v of videos) await h.pinVideo(v, SLOT);
    for (let i = 0; i < BACKLOG_SEGMENTS; i++) for (const v of videos) await upload(v);
    let stopUploads = false;
    const uploads = (async () => {
      for (let tick = 0; !stopUploads; tick++) {
        await upload(videos[tick % VIDEOS]!);
        await new Promise((r) => setTimeout(r, 700));
      }
    })();
    const committedBy = async (w: HarnessWorker) => (await Promise.all(videos.map((v) => h.frameResults(v)))).flat().filter((r) => r.worker === w.workerId);
    /** Whether some video's records stop inside a segment (its next frame is no segment's first). */
    const midSegment = async () => {
      for (const v of videos) {
        const frames = (await h.frameResults(v)).map((r) => r.frame);
        const nextUnrecorded = frames.length;
        if (nextUnrecorded > 0 && !starts.get(v)!.includes(nextUnrecorded) && nextUnrecorded < next.get(v)!) return true;
      }
      return false;
    };

    // Act 1: kill -9 the owner in the middle of a segment
    const gateA = new ProcessGate();
    const a = h.createWorker(SLOT, { tunables: { firstFrameNumber: 0 }, gate: gateA }).start();
    await waitFor('A commits, ending inside a segment', async () => (await committedBy(a)).length >= 100 && (await midSegment()), 90_000, 50);
    gateA.kill();
    const b = h.createWorker(SLOT, { tunables: { firstFrameNumber: 0 }, gate: new ProcessGate() }).start();
    await waitFor('B commits after the takeover', async () => (await committedBy(b)).length >= 60, 90_000);

    // Act 2: pause B past its lease in the middle of a segment; C takes over; B resumes
    await waitFor('B ends a commit inside a segment', () => midSegment(), 60_000, 20);
    b.gate!.pause();
    const pausedAtMs = Date.now();
    const c = h.createWorker(SLOT, { tunables: { firstFrameNumber: 0 } }).start();
    await waitFor('C commits after the takeover', async () => (await committedBy(c)).length >= 60, 90_000);
    const resumedAtMs = Date.now();
    b.gate!.resume();
    expect(await b.done).toBe('lease-lost');

    // Finish: the end markers after the last segment
    stopUploads = true;
    await uploads;
    for (const v of videos) {
      await h.putEnd(v, next.get(v)! - 1);
      await h.sendEnd(SLOT, v);
    }
    for (const v of videos) await h.waitForSummary(v, (s) => s.status === 'complete', 120_000);

    // Assess: one ok record per frame, each through the video's state once, in order
    for (const v of videos) {
      const frames = next.get(v)!;
      const records = (await h.frameResults(v)).sort((x, y) => x.frame - y.frame);
      expect(records.map((r) => r.frame)).toEqual(Array.from({ length: frames }, (_, f) => f));
      expect(records.filter((r) => r.status !== 'ok').map((r) => [r.frame, r.status, r.reason])).toEqual([]);
      expect(records.filter((r) => r.detections[0]?.trackId !== r.frame + 1).map((r) => [r.frame, r.detections[0]?.trackId])).toEqual([]);
      expect((await h.summary(v))?.framesOk).toBe(frames);
    }
    for (const w of [a, b, c]) expect((await committedBy(w)).length).toBeGreaterThan(0);
    expect((await committedBy(b)).filter((r) => r.committedAtMs >= pausedAtMs)).toEqual([]);
    expect(b.gate!.held).toBeGreaterThan(0);
    expect(resumedAtMs - pausedAtMs).toBeGreaterThan(15_000);
    expect(h.model!.messages(h.dlqUrl(SLOT))).toEqual([]);
    await c.stop();
  }, 300_000);
});
