/**
 * A worker whose inference thread dies (for real: the thread calls process.exit on its
 * first frame batch, through main.ts's INFERENCE_THREAD_FAULT test seam) drains and exits
 * with EXIT_PROCESSOR_FAILED instead of heartbeating while every round fails; a new task
 * takes the slot over and every frame gets one `ok` record, none `failed` for the death.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_PROCESSOR_FAILED } from '../../core/config.ts';
import { frameKey } from '../../core/ingest/keys.ts';
import { ensureDemoModel, generateClip } from '../../gpu-worker/vision/index.ts';
import { put, results, startTestStack, summary, waitFor, type TestStack } from '../../harness/pipeline.ts';

let stack: TestStack;
const onceFile = join(mkdtempSync(join(tmpdir(), 'thread-fault-')), 'fault-once');

beforeAll(async () => {
  const modelUri = await ensureDemoModel();
  // Only the first worker removes this file and gets the fault; its successor runs clean.
  writeFileSync(onceFile, '');
  stack = await startTestStack({
    tunables: { slotCount: 1, videosPerSlot: 2, modelUri },
    workerEnv: { FRAME_PROCESSOR: 'vision', INFERENCE_THREAD_FAULT: JSON.stringify({ kind: 'exit', onRun: 2, onceFile }) },
  });
});

afterAll(async () => {
  await stack?.stop();
});

describe('a worker whose inference thread dies', () => {
  it('exits with EXIT_PROCESSOR_FAILED, and its successor records every frame ok', async () => {
    // Prepare
    const clip = await generateClip({ seed: 5, frames: 12, objects: 2 });
    // Act
    for (const f of clip.frames) await put(stack, frameKey('thread-dies', f.frame, 'png'), f.image);
    await put(stack, 'frames/thread-dies/_end', String(clip.frames.length - 1));
    await waitFor('video complete', async () => (await summary(stack, 'thread-dies'))?.status === 'complete', 120_000);
    // Assess
    const records = (await results(stack, 'thread-dies')).sort((a, b) => a.frame - b.frame);
    expect(records.map((r) => [r.frame, r.status])).toEqual(clip.frames.map((f) => [f.frame, 'ok']));
    const workers = stack.launcher.workers();
    const broken = workers.filter((w) => w.exitCode === EXIT_PROCESSOR_FAILED);
    expect(broken).toHaveLength(1);
    expect(records.every((r) => r.worker !== broken[0]!.workerId)).toBe(true);
    expect(stack.workerLines.some((l) => l.includes('frame processor broken') && l.includes('inference thread died (thread-exit)'))).toBe(true);
    // The EMF line written before the exit carries the death's metric and reason.
    expect(stack.workerLines.some((l) => l.includes('"InferenceThreadDied"') && l.includes('"thread-exit"'))).toBe(true);
  });
});
