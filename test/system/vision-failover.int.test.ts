/**
 * The real vision pipeline on the local stack: the demo ONNX model and the ByteTrack
 * tracker in worker processes. A clip is processed twice side by side, once
 * uninterrupted and once with its owning worker killed (-9) mid-clip; track IDs
 * must continue across the failover: no extra ID switches.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { ensureDemoModel, evaluateMot, generateClip } from '../../gpu-worker/vision/index.ts';
import { frameKey } from '../../core/ingest/keys.ts';
import type { FrameResultItem } from '../../core/commit/results.ts';
import { put, results, startTestStack, summary, waitFor, type TestStack } from '../../harness/pipeline.ts';

let stack: TestStack;

beforeAll(async () => {
  const modelUri = await ensureDemoModel();
  stack = await startTestStack({
    tunables: { slotCount: 2, videosPerSlot: 1, modelUri },
    workerEnv: { FRAME_PROCESSOR: 'vision', STATS_PROCESSOR_DELAY_MS: '0' },
  });
});

afterAll(async () => {
  await stack?.stop();
});

const toMot = (items: readonly FrameResultItem[]) =>
  items.map((r) => ({ frame: r.frame, objects: r.detections.map((d) => ({ id: d.trackId, box: [...d.box] as [number, number, number, number] })) }));

describe('tracking across failover', () => {
  it('keeps track IDs through a kill -9 of the owning worker: same ID switches as an uninterrupted run', async () => {
    // Prepare
    const clip = await generateClip({ seed: 7, frames: 50, objects: 4, crossings: false, format: 'png' });
    const upload = async (videoId: string) => {
      for (const f of clip.frames) await put(stack, frameKey(videoId, f.frame, 'png'), f.image);
      await put(stack, `frames/${videoId}/_end`, String(clip.frames.length - 1));
    };
    // Act: the same clip as two videos on two workers; kill the second one's owner mid-clip
    await upload('clip-steady');
    await upload('clip-killed');
    await waitFor('progress on clip-killed', async () => (await results(stack, 'clip-killed')).length >= 15, 60_000, 50);
    const lease = await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk: 'video#clip-killed' }, ConsistentRead: true }));
    const victim = stack.launcher.workers().find((w) => w.alive && w.workerId === lease.Item?.owner)!;
    stack.launcher.kill({ pid: victim.pid }, 'SIGKILL');
    for (const v of ['clip-steady', 'clip-killed']) {
      await waitFor(`${v} complete`, async () => (await summary(stack, v))?.status === 'complete', 90_000);
    }
    // Assess
    const steady = (await results(stack, 'clip-steady')).sort((a, b) => a.frame - b.frame);
    const killed = (await results(stack, 'clip-killed')).sort((a, b) => a.frame - b.frame);
    expect(killed.map((r) => r.status).every((s) => s === 'ok')).toBe(true);
    expect(new Set(killed.map((r) => r.worker)).size).toBeGreaterThanOrEqual(2);
    const steadyScore = evaluateMot(clip.groundTruth, toMot(steady));
    const killedScore = evaluateMot(clip.groundTruth, toMot(killed));
    expect(steadyScore.idf1).toBeGreaterThanOrEqual(0.95);
    expect(killedScore.idf1).toBeGreaterThanOrEqual(0.95);
    expect(killedScore.idSwitches - steadyScore.idSwitches).toBe(0);
    // The restored tracker produced exactly the uninterrupted output.
    expect(killed.map((r) => r.detections.map((d) => d.trackId))).toEqual(steady.map((r) => r.detections.map((d) => d.trackId)));
  });
});
