/**
 * Issue 20, "few calls per frame at a live rate too", end to end on the local stack: at a
 * live rate (cameras each uploading a frame now and then, the frames of all of them
 * spread in time) the worker waits up to `receiveGatherMs` after a receive before the
 * next one (decision 31), so one receive, one delete batch and one commit carry the frames
 * of several videos, and nothing is lost or reordered. Calls are counted through the
 * worker's AWS call log (AWS_CALL_LOG), rounds through the records' `committedAtMs` (a
 * round's records share it). Without the gather each frame arrives alone, about every
 * FRAME_SPACING_MS, and pays its own receive, delete and commit.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { frameKey } from '../../core/ingest/keys.ts';
import type { FrameResultItem } from '../../core/commit/results.ts';
import { jpeg, put, results, startTestStack, uploadFrames, waitFor, type TestStack } from '../../harness/pipeline.ts';

const VIDEOS = 6;
const FRAMES = 8;
/** Each camera uploads a frame this often: longer than the gather, so one receive holds at most one frame per video (fauxqs hands out one per group). */
const CAMERA_PERIOD_MS = 900;
/** Between two uploads of any camera (their phases spread evenly). */
const FRAME_SPACING_MS = CAMERA_PERIOD_MS / VIDEOS;
const GATHER_MS = 700;
const frameNumbers = Array.from({ length: FRAMES }, (_, i) => i + 1);
let stack: TestStack;
let callLog: string;

beforeAll(async () => {
  callLog = join(mkdtempSync(join(tmpdir(), 'live-calls-')), 'calls.log');
  stack = await startTestStack({
    // No hedged GETs: this test pins one GET per frame, and on a loaded machine a local GET
    // can take longer than the hedge's 100 ms (hedging has its own tests).
    tunables: { slotCount: 1, videosPerSlot: VIDEOS + 1, firstFrameNumber: 0, receiveGatherMs: GATHER_MS, reorderWaitMs: 30_000, fetchHedgeMs: 0 },
    workerEnv: { AWS_CALL_LOG: callLog },
  });
  await uploadFrames(stack, 'warm-up', [0], { end: 0 });
  await waitFor('worker warm', async () => ((await results(stack, 'warm-up')).length === 1 ? true : undefined), 120_000);
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

/** The worker's calls logged since `fromLine`, by operation. */
function workerCalls(fromLine: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(callLog, 'utf8').split('\n').slice(fromLine)) {
    const [role, , op] = line.split('\t');
    if (role === 'worker' && op) out[op] = (out[op] ?? 0) + 1;
  }
  return out;
}

describe('a live rate: several videos per receive, delete batch and commit', () => {
  it('carries the frames of several videos in one commit and one delete batch, and records every frame once, in order', async () => {
    // Prepare: the videos' frame 0 first, so each video is adopted before counting starts
    const videos = Array.from({ length: VIDEOS }, (_, i) => `live-${i}`);
    for (const v of videos) await uploadFrames(stack, v, [0]);
    await waitFor('videos adopted', async () => ((await Promise.all(videos.map((v) => results(stack, v)))).every((r) => r.length === 1) ? true : undefined), 60_000);
    const fromLine = readFileSync(callLog, 'utf8').split('\n').length - 1;
    const body = await jpeg();

    // Act: every camera a frame each CAMERA_PERIOD_MS, phases spread evenly
    const startMs = Date.now();
    for (const f of frameNumbers) {
      for (const [i, v] of videos.entries()) {
        const dueMs = startMs + ((f - 1) * VIDEOS + i) * FRAME_SPACING_MS;
        await new Promise((r) => setTimeout(r, Math.max(0, dueMs - Date.now())));
        await put(stack, frameKey(v, f), body);
      }
    }
    const recorded = await waitFor('every frame recorded', async () => {
      const all = await Promise.all(videos.map((v) => results(stack, v)));
      return all.every((r) => r.length === FRAMES + 1) ? all : undefined;
    }, 120_000);
    const calls = workerCalls(fromLine);

    // Assess: nothing lost or doubled, each video in order through its tracker
    for (const items of recorded) {
      const sorted = [...items].sort((a, b) => a.frame - b.frame);
      expect(sorted.map((r) => `${r.frame}:${r.status}`)).toEqual([0, ...frameNumbers].map((f) => `${f}:ok`));
      // StatsProcessor: trackId counts the frames the video's state has seen.
      expect(sorted.map((r) => r.detections[0]?.trackId)).toEqual([0, ...frameNumbers].map((f) => f + 1));
      // Committed in frame order.
      expect(sorted.map((r) => r.committedAtMs)).toEqual([...sorted.map((r) => r.committedAtMs)].sort((a, b) => a - b));
    }
    // Rounds: a round's records share its committedAtMs.
    const counted = recorded.flat().filter((r: FrameResultItem) => r.frame >= 1);
    const rounds = new Map<number, Set<string>>();
    for (const r of counted) rounds.set(r.committedAtMs, (rounds.get(r.committedAtMs) ?? new Set()).add(r.videoId));
    const frames = counted.length;
    expect(frames).toBe(VIDEOS * FRAMES);
    // One frame per round (each frame its own receive, commit and delete) would be 48 rounds;
    // gathering brings several videos' frames into most rounds.
    expect(rounds.size).toBeLessThanOrEqual(frames / 3);
    expect(Math.max(...[...rounds.values()].map((s) => s.size))).toBeGreaterThanOrEqual(3);
    // The call log agrees: one commit and one delete batch carry several frames.
    expect(calls.TransactWriteItemsCommand ?? 0).toBeLessThanOrEqual(frames / 3);
    expect(calls.DeleteMessageBatchCommand ?? 0).toBeLessThanOrEqual(frames / 3);
    expect(calls.ReceiveMessageCommand ?? 0).toBeLessThanOrEqual(frames / 2);
    expect(calls.GetObjectCommand).toBe(frames);
  }, 240_000);
});
