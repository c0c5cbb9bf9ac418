/**
 * Overlapping rounds: behind a backlog, the worker commits one round in the background while
 * it receives, fetches and processes the next; at a live rate it awaits each commit. On the SQS FIFO model (several messages of one group
 * per receive, group blocking), with the real LeaseStore on the lease table's twin (fake clock) wrapped to make
 * commits slow (and, in one test, fail), so the overlap is there by construction, not by
 * luck of timing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { WorkerHarness, wrapProcessor, type HarnessWorker } from '../../../harness/worker-harness.ts';

const FRAMES = 30;
const COMMIT_DELAY_MS = 300;
const frameNumbers = Array.from({ length: FRAMES }, (_, i) => i);

let h: WorkerHarness;

beforeAll(async () => {
  // One receive per round (no fan-out, decision 30), so rounds alternate between the two
  // videos and a commit holds one of them: with fan-out a round holds both, and a failed
  // commit rightly rolls both back.
  h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 3, tunables: { firstFrameNumber: 0, receiveConcurrency: 1 } });
});

afterAll(async () => {
  await h?.stop();
});

interface Span {
  readonly videos: readonly string[];
  readonly startMs: number;
  endMs?: number;
}

/**
 * A LeaseStore whose commits take {@link COMMIT_DELAY_MS} longer and are recorded; `failFirst`
 * makes the first commit that holds that video throw after the delay (an error with no
 * answer: the worker cannot know whether it applied, and must restore the video).
 */
function slowCommits(spans: Span[], failFirst?: string): LeaseStore {
  const inner = LeaseStore.forWiring(h.clients.ddb, h.wiring, h.tunables);
  let failed = false;
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'commit') {
        return async (...args: Parameters<LeaseStore['commit']>) => {
          const span: Span = { videos: args[1].map((u) => u.videoId), startMs: performance.now() };
          spans.push(span);
          try {
            await new Promise((r) => setTimeout(r, COMMIT_DELAY_MS));
            if (failFirst && !failed && span.videos.includes(failFirst)) {
              failed = true;
              throw Object.assign(new Error('injected: connection reset before the answer'), { name: 'TimeoutError' });
            }
            return await target.commit(...args);
          } finally {
            span.endMs = performance.now();
          }
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A worker with slow, recorded commits whose processor records when each frame is processed. */
function recordingWorker(slot: number): { worker: HarnessWorker; commits: Span[]; processed: { video: string; atMs: number }[] } {
  const commits: Span[] = [];
  const processed: { video: string; atMs: number }[] = [];
  const worker = h.createWorker(slot, {
    extraDeps: { leases: slowCommits(commits) },
    processor: (inner) =>
      wrapProcessor(inner, {
        process: (frames) => {
          for (const f of frames) processed.push({ video: f.videoId, atMs: performance.now() });
          return inner.process(frames);
        },
      }),
  });
  return { worker, commits, processed };
}

function expectEveryFrameOkOnceInOrder(items: readonly FrameResultItem[]): void {
  expect(items.map((r) => r.frame)).toEqual(frameNumbers);
  expect(items.map((r) => r.status)).toEqual(frameNumbers.map(() => 'ok'));
  // StatsProcessor: trackId = frames the video's state had seen, so every frame once, in order.
  expect(items.map((r) => r.detections[0]?.trackId)).toEqual(frameNumbers.map((f) => f + 1));
}

/** Queues two videos' frames and end markers on a slot before any worker runs. */
async function queueTwoVideos(slot: number, a: string, b: string): Promise<void> {
  for (const v of [a, b]) {
    await h.pinVideo(v, slot);
    await h.putFrames(v, frameNumbers);
    await h.putEnd(v, FRAMES - 1);
    await h.sendFrames(slot, v, frameNumbers);
    await h.sendEnd(slot, v);
  }
}

describe('worker rounds overlap', () => {
  it("processes one video's round while the other video's commit is in flight, and never a video during its own commit", async () => {
    // Prepare
    const slot = 0;
    const [a, b] = [h.videoId('a'), h.videoId('b')];
    await queueTwoVideos(slot, a, b);
    const { worker, commits, processed } = recordingWorker(slot);

    // Act
    worker.start();
    await Promise.all([a, b].map((v) => h.waitForSummary(v, (s) => s.status === 'complete')));
    const exit = await worker.stop();

    // Assess: the guarantees hold...
    expect(exit).toBe('drained');
    for (const v of [a, b]) expectEveryFrameOkOnceInOrder(await h.frameResults(v));
    // ...frames were processed while another video's commit was in flight...
    const during = (p: { video: string; atMs: number }) => commits.filter((c) => c.startMs < p.atMs && p.atMs < (c.endMs ?? Infinity));
    const overlapped = processed.filter((p) => during(p).length > 0);
    expect(overlapped.length).toBeGreaterThan(0);
    // ...and never while a commit of their own video was.
    expect(processed.filter((p) => during(p).some((c) => c.videos.includes(p.video)))).toEqual([]);
    // Commits one at a time.
    const sorted = [...commits].sort((x, y) => x.startMs - y.startMs);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]!.startMs).toBeGreaterThanOrEqual(sorted[i - 1]!.endMs!);
  });

  it("restores only the video whose commit failed while the other's round ran, and both finish exactly once, in order", async () => {
    // Prepare
    const slot = 1;
    const [a, b] = [h.videoId('a'), h.videoId('b')];
    await queueTwoVideos(slot, a, b);
    const commits: Span[] = [];
    const worker = h.createWorker(slot, { extraDeps: { leases: slowCommits(commits, a) } });

    // Act
    worker.start();
    const summaries = await Promise.all([a, b].map((v) => h.waitForSummary(v, (s) => s.status === 'complete')));
    const exit = await worker.stop();

    // Assess
    expect(exit).toBe('drained');
    for (const v of [a, b]) expectEveryFrameOkOnceInOrder(await h.frameResults(v));
    for (const s of summaries) expect([s.framesOk, s.framesFailed, s.framesGap]).toEqual([FRAMES, 0, 0]);
    // The failure cost video a one rollback (after a read showed the commit had not landed) and nothing else.
    expect(worker.metrics.filter((m) => m.name === 'VideoRollbacks').map((m) => m.dimensions.Reason)).toEqual(['commit-unknown']);
  });

  it('does not overlap at a live rate (receives not full), so rounds stay whole and calls per frame do not grow', async () => {
    // Prepare: three videos' frames trickle in one at a time, as from live cameras that the worker keeps up with.
    const slot = 2;
    const videos = [h.videoId('a'), h.videoId('b'), h.videoId('c')];
    for (const v of videos) {
      await h.pinVideo(v, slot);
      await h.putFrames(v, frameNumbers);
      await h.putEnd(v, FRAMES - 1);
    }
    const { worker, commits, processed } = recordingWorker(slot);

    // Act
    worker.start();
    // Each frame only once the previous one is recorded: at most 3 messages wait, so no
    // receive can come back full (10), however slow the machine.
    for (const f of frameNumbers) {
      for (const v of videos) {
        await h.sendFrames(slot, v, [f]);
        await new Promise((r) => setTimeout(r, 40));
      }
      await Promise.all(videos.map((v) => h.waitForResults(v, f + 1)));
    }
    for (const v of videos) await h.sendEnd(slot, v);
    await Promise.all(videos.map((v) => h.waitForSummary(v, (s) => s.status === 'complete')));
    const exit = await worker.stop();

    // Assess: nothing ran during a commit...
    expect(exit).toBe('drained');
    const duringACommit = processed.filter((p) => commits.some((c) => c.startMs < p.atMs && p.atMs < (c.endMs ?? Infinity)));
    expect(duringACommit).toEqual([]);
    // ...and every frame is still recorded once, in order.
    for (const v of videos) expectEveryFrameOkOnceInOrder(await h.frameResults(v));
  });
});
