/**
 * Issue 20, "a new video's first result within 1 s of its first upload", end to end on the
 * local stack: the start of a video is decided at first sight by one S3 listing
 * (docs/decisions.md, decision 4), not `reorderWaitMs` after its first frame. The wait is
 * set to 30 s here, so a video that still waited for it could not have its first record
 * before the 30 s mark: the assertions are about which rule ran, not about how fast this
 * machine is. The worker is warmed first (a video from frame 0), so its start-up is not
 * counted in the first video's time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { results, startTestStack, summary, uploadFrames, waitFor, type TestStack } from '../../harness/pipeline.ts';

const REORDER_WAIT_MS = 30_000;
/** Long enough that the old rule would have produced its records, so a failure says which rule ran. */
const PATIENCE_MS = 2 * REORDER_WAIT_MS;
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ tunables: { slotCount: 1, reorderWaitMs: REORDER_WAIT_MS } });
  // Warm the slot's worker: frame 0 decides its video's start at once under either rule.
  await uploadFrames(stack, 'warm-up', [0]);
  await waitFor('worker warm', async () => (await results(stack, 'warm-up')).length === 1, 120_000);
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

describe('the start of a video is decided at first sight', () => {
  it('gives a video numbered from 1 (ffmpeg) its first ok record long before reorderWaitMs, with no gap at frame 0', async () => {
    // Prepare
    const video = 'ffmpeg-numbered';
    const firstUploadAtMs = Date.now();
    // Act: frames 1..5 as ffmpeg's %06d numbers them, uploaded in order (no end marker:
    // nothing but the start rule can let frame 1 go)
    await uploadFrames(stack, video, [1, 2, 3, 4, 5]);
    // Assess: frame 1's record exists before the wait could have elapsed
    const first = await waitFor('frame 1 recorded', async () => (await results(stack, video)).find((r) => r.frame === 1), PATIENCE_MS);
    expect(first.status).toBe('ok');
    expect(first.committedAtMs - firstUploadAtMs).toBeLessThan(REORDER_WAIT_MS);
    const items = await waitFor('frames 1..5 recorded', async () => {
      const r = await results(stack, video);
      return r.length >= 5 ? r.sort((a, b) => a.frame - b.frame) : undefined;
    }, PATIENCE_MS);
    expect(items.map((r) => `${r.frame}:${r.status}`)).toEqual(['1:ok', '2:ok', '3:ok', '4:ok', '5:ok']);
    // In order through the tracker from frame 1: the stats processor's counter is 1..5.
    expect(items.map((r) => r.detections[0]?.trackId)).toEqual([1, 2, 3, 4, 5]);
    expect(await summary(stack, video)).toMatchObject({ firstFrame: 1, framesOk: 5, framesGap: 0 });
  });

  it('processes a lower frame that shows up after the start as late, without waiting for reorderWaitMs', async () => {
    // Prepare: a video decided to start at 3, complete
    const video = 'lower-later';
    const startedAtMs = Date.now();
    await uploadFrames(stack, video, [3, 4], { end: 4 });
    await waitFor('video complete', async () => ((await summary(stack, video))?.status === 'complete' ? true : undefined), PATIENCE_MS);
    // Act: frame 2 turns up
    await uploadFrames(stack, video, [2]);
    // Assess
    const s = await waitFor('frame 2 late', async () => {
      const sum = await summary(stack, video);
      return sum?.framesLate === 1 ? sum : undefined;
    }, PATIENCE_MS);
    expect(s).toMatchObject({ status: 'complete', framesOk: 2, framesLate: 1, framesGap: 0, framesFailed: 0 });
    const items = (await results(stack, video)).sort((a, b) => a.frame - b.frame);
    expect(items.map((r) => `${r.frame}:${r.status}`)).toEqual(['2:late', '3:ok', '4:ok']);
    expect(Math.max(...items.map((r) => r.committedAtMs)) - startedAtMs).toBeLessThan(REORDER_WAIT_MS);
  });
});
