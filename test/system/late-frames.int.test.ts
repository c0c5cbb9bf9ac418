/**
 * Issue 8, end to end on the local stack: waiting may delay a frame, nothing may
 * discard a frame that exists. Uploads go through the S3 API; one notification is
 * withheld by the local notification hook. Timing is hostile on purpose: frames late by
 * several reorder waits, a stray frame far ahead, a video numbered from 1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { frameKey } from '../../core/ingest/keys.ts';
import type { FrameResultItem } from '../../core/commit/results.ts';
import { FAST_TUNABLES, put, jpeg, results, startTestStack, summary, uploadFrames, waitFor, type TestStack } from '../../harness/pipeline.ts';
import { sleep } from '../../core/async.ts';

const WAIT_MS = FAST_TUNABLES.reorderWaitMs!;
/** Keys whose S3 notification the hook drops: the object exists, its event never comes. */
const withheld = new Set<string>();
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({
    tunables: { slotCount: 2, videosPerSlot: 8 },
    notificationFault: (key) => (withheld.has(key) ? { kind: 'drop' } : { kind: 'deliver' }),
  });
});

afterAll(async () => {
  await stack?.stop();
});

const statusOf = (items: readonly FrameResultItem[]) => Object.fromEntries(items.map((r) => [r.frame, r.status]));

async function complete(videoId: string, timeoutMs = 60_000) {
  return waitFor(`${videoId} complete`, async () => {
    const s = await summary(stack, videoId);
    return s?.status === 'complete' ? s : undefined;
  }, timeoutMs);
}

/** Uploads frames one by one at a steady pace (ms between uploads). */
async function steady(videoId: string, frames: readonly number[], paceMs: number): Promise<Map<number, number>> {
  const uploadedAt = new Map<number, number>();
  const body = await jpeg();
  for (const f of frames) {
    await put(stack, frameKey(videoId, f), body);
    uploadedAt.set(f, Date.now());
    await sleep(paceMs);
  }
  return uploadedAt;
}

describe('a late frame is processed, not dropped', () => {
  it('processes frames delayed 3x reorderWaitMs behind their successors as late, with detections, and leaves no gap', async () => {
    // Prepare: frames 3 and 7 are held back while their successors stream in
    const video = 'delayed';
    const held = [3, 7];
    const rest = Array.from({ length: 16 }, (_, f) => f).filter((f) => !held.includes(f));
    // Act
    await steady(video, rest, 100);
    await sleep(3 * WAIT_MS);
    // However slowly a loaded machine starts the worker, the held frames come only once the
    // stream has passed them (both recorded as gaps), so they are late by construction.
    await waitFor('held frames recorded as gaps', async () => {
      const items = await results(stack, video);
      return held.every((f) => items.some((r) => r.frame === f && r.status === 'gap')) ? true : undefined;
    }, 60_000);
    await uploadFrames(stack, video, held);
    await put(stack, `frames/${video}/_end`, '15');
    // Assess
    const s = await waitFor('delayed frames committed', async () => {
      const sum = await summary(stack, video);
      return sum?.status === 'complete' && sum.framesGap === 0 && sum.framesLate === 2 ? sum : undefined;
    }, 60_000);
    const items = await results(stack, video);
    expect(items).toHaveLength(16);
    for (const f of held) {
      const r = items.find((i) => i.frame === f)!;
      expect(r.status).toBe('late');
      expect(r.detections.length).toBeGreaterThan(0);
    }
    expect(items.filter((r) => r.status === 'gap')).toEqual([]);
    expect(s).toMatchObject({ framesOk: 14, framesLate: 2, framesGap: 0, framesFailed: 0 });
  });

  it('processes frame 0 as late when it comes after its successors, though it has no frame before it', async () => {
    // Prepare: frame 0 is held back 3x reorderWaitMs, so the video starts at frame 1 and 0 is late
    const video = 'late-zero';
    // Act
    await steady(video, [1, 2, 3, 4, 5], 100);
    await sleep(3 * WAIT_MS);
    await uploadFrames(stack, video, [0]);
    await put(stack, `frames/${video}/_end`, '5');
    // Assess: once, as late, with its detections; not failed after retries
    const s = await waitFor('late frame 0 committed', async () => {
      const sum = await summary(stack, video);
      return sum?.status === 'complete' && sum.framesLate + sum.framesFailed === 1 ? sum : undefined;
    }, 60_000);
    const zero = (await results(stack, video)).find((r) => r.frame === 0)!;
    expect(zero.status).toBe('late');
    expect(zero.detections.length).toBeGreaterThan(0);
    expect(s).toMatchObject({ framesOk: 5, framesLate: 1, framesGap: 0, framesFailed: 0 });
  });

  it('upgrades a gap to late even after the video finished and was released, and counts it once', async () => {
    // Prepare: a finished video whose frame 2 was never uploaded
    const video = 'finished-late';
    await uploadFrames(stack, video, [0, 1, 3, 4], { end: 4 });
    const done = await complete(video);
    expect(done).toMatchObject({ framesOk: 4, framesGap: 1 });
    expect(statusOf(await results(stack, video))[2]).toBe('gap');
    await waitFor('video released', async () => {
      const lease = await stack.clients.ddb.send(new (await import('@aws-sdk/lib-dynamodb')).GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk: `video#${video}` } }));
      return lease.Item?.state === 'released' ? true : undefined;
    });
    // Act: the frame turns up, twice
    await uploadFrames(stack, video, [2]);
    await uploadFrames(stack, video, [2]);
    // Assess
    const after = await waitFor('late frame committed', async () => {
      const sum = await summary(stack, video);
      return sum?.framesLate === 1 ? sum : undefined;
    });
    expect(after).toMatchObject({ status: 'complete', framesOk: 4, framesLate: 1, framesGap: 0 });
    const items = await results(stack, video);
    expect(items).toHaveLength(5);
    expect(items.find((r) => r.frame === 2)).toMatchObject({ status: 'late' });
  });
});

describe('gaps only for what is really missing', () => {
  it('does not gap frames arriving at the uploader\'s pace because a stray frame is far ahead', async () => {
    // Prepare + Act: frame 0 (the start is decided at first sight), the stray 60, then
    // 1..40 at a steady pace slower than nothing-happens
    const video = 'stray';
    await uploadFrames(stack, video, [0, 60]);
    await steady(video, Array.from({ length: 40 }, (_, f) => f + 1), WAIT_MS / 3);
    await put(stack, `frames/${video}/_end`, '60');
    await uploadFrames(stack, video, Array.from({ length: 19 }, (_, i) => 41 + i));
    // Assess
    await complete(video);
    const items = await results(stack, video);
    expect(items).toHaveLength(61);
    expect(items.filter((r) => r.status !== 'ok').map((r) => `${r.frame}:${r.status}`)).toEqual([]);
  });

  it('does not gap the frames below a stray when the uploader pauses for several reorder waits and then resumes', async () => {
    // Prepare: frame 0 (the start is decided at first sight), the stray 25, 1..10 at a
    // steady pace; then the uploader stalls for 4 reorder waits (twice the quiet that
    // settles a missing tail), then resumes.
    const video = 'stray-pause';
    await uploadFrames(stack, video, [0, 25]);
    await steady(video, Array.from({ length: 10 }, (_, f) => f + 1), WAIT_MS / 3);
    await waitFor('frames 0..10 processed', async () => (await results(stack, video)).length === 11);
    await sleep(4 * WAIT_MS);
    // Act
    await steady(video, Array.from({ length: 14 }, (_, i) => 11 + i), WAIT_MS / 3);
    await put(stack, `frames/${video}/_end`, '25');
    // Assess: every frame ok, in order (the stats processor's counter is the frame + 1)
    await complete(video);
    const items = (await results(stack, video)).sort((a, b) => a.frame - b.frame);
    expect(items.filter((r) => r.status !== 'ok').map((r) => `${r.frame}:${r.status}`)).toEqual([]);
    expect(items.map((r) => r.detections[0]?.trackId)).toEqual(Array.from({ length: 26 }, (_, f) => f + 1));
  });

  it('commits the gap of a frame that never comes while the stream goes on, without waiting for the buffer to fill', async () => {
    // Prepare: 0..39 at 5 fps, frame 10 never uploaded; the buffer (64) can never overflow
    const video = 'one-lost';
    const frames = Array.from({ length: 40 }, (_, f) => f).filter((f) => f !== 10);
    // Act
    const uploadedAt = await steady(video, frames, 200);
    // Assess: the gap was committed before the uploader finished, and frames after it were in order (ok)
    const items = await waitFor('40 records', async () => {
      const r = await results(stack, video);
      return r.length >= 40 ? r : undefined;
    });
    const gap = items.find((r) => r.frame === 10)!;
    expect(gap.status).toBe('gap');
    expect(gap.committedAtMs).toBeLessThan(uploadedAt.get(39)!);
    expect(items.filter((r) => r.frame !== 10).every((r) => r.status === 'ok')).toBe(true);
  });
});

describe('S3 is the source of truth', () => {
  it('processes a frame whose notification never came, in order, from the listing', async () => {
    // Prepare: frame 5's event is dropped by the notification hook; its object exists
    const video = 'withheld';
    withheld.add(frameKey(video, 5));
    // Act
    await steady(video, Array.from({ length: 12 }, (_, f) => f), 50);
    await put(stack, `frames/${video}/_end`, '11');
    // Assess
    await complete(video);
    const items = await results(stack, video);
    expect(items).toHaveLength(12);
    expect(stack.notifier.counts.dropped).toBe(1); // the event really never came
    expect(items.find((r) => r.frame === 5)).toMatchObject({ status: 'ok', key: frameKey(video, 5) });
    // The stats processor's per-video counter saw frame 5 in its place.
    expect(items.map((r) => r.detections[0]?.trackId)).toEqual(Array.from({ length: 12 }, (_, f) => f + 1));
  });
});

describe('the start of a video needs no convention', () => {
  it('starts a video numbered from 1 at frame 1, with no gap at frame 0', async () => {
    // Frame 1 first (the start is decided at first sight), the rest out of order.
    const video = 'one-based';
    await uploadFrames(stack, video, [1, 3, 2, 5, 4], { end: 5 });
    const s = await complete(video);
    const items = await results(stack, video);
    expect(items.map((r) => `${r.frame}:${r.status}`)).toEqual(['1:ok', '2:ok', '3:ok', '4:ok', '5:ok']);
    expect(s).toMatchObject({ firstFrame: 1, framesOk: 5, framesGap: 0 });
  });

  it('records a frame below the chosen start that shows up later as late, not lost or failed', async () => {
    const video = 'below-start';
    await uploadFrames(stack, video, [4, 5, 6], { end: 6 });
    await complete(video);
    await uploadFrames(stack, video, [2]);
    const s = await waitFor('late frame below the start', async () => {
      const sum = await summary(stack, video);
      return sum?.framesLate === 1 ? sum : undefined;
    });
    expect(s).toMatchObject({ firstFrame: 2, framesOk: 3, framesLate: 1, framesFailed: 0, framesGap: 0 });
    expect(statusOf(await results(stack, video))).toEqual({ 2: 'late', 4: 'ok', 5: 'ok', 6: 'ok' });
  });
});
