/**
 * Gaps re-checked against S3, end to end on the local stack (DynamoDB Local + fauxqs, real
 * router and worker processes): a frame uploaded after its gap, whose notification is lost,
 * does not stay `gap` (issue 19, item 5). Before completion the worker's own re-check finds
 * it; after completion `affinity reconcile` does.
 */
import { dirname } from 'node:path';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryIo } from '../../cli/io.ts';
import { reconcileCommand } from '../../cli/commands/reconcile.ts';
import { main } from '../../cli/main.ts';
import { loadLocalTarget, type Target } from '../../cli/target.ts';
import { frameKey } from '../../core/ingest/keys.ts';
import type { FrameResultItem } from '../../core/commit/results.ts';
import { jpeg, put, results, startTestStack, summary, uploadFrames, waitFor, type TestStack } from '../../harness/pipeline.ts';

let stack: TestStack;
let target: Target;
const dropped = new Set<string>();

beforeAll(async () => {
  stack = await startTestStack({ tunables: { slotCount: 2, routerPinCacheSeconds: 10 } });
  stack.notifier.setNotificationFault((key) => (dropped.has(key) ? { kind: 'drop' } : undefined));
  target = loadLocalTarget(dirname(stack.stackFile));
});

afterAll(async () => {
  const dir = stack ? dirname(stack.stackFile) : undefined;
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Uploads a frame whose S3 notification is lost. */
async function uploadSilently(videoId: string, frame: number): Promise<void> {
  dropped.add(frameKey(videoId, frame));
  await put(stack, frameKey(videoId, frame), await jpeg());
}

function recordsOf(items: readonly FrameResultItem[], frame: number): FrameResultItem[] {
  return items.filter((r) => r.frame === frame);
}

describe('gaps re-checked against S3', () => {
  it('the worker re-checks gaps before completing: a frame uploaded after its gap without a notification becomes late (chaos seed 424242, chaos-04 frame 33)', async () => {
    // Prepare: frames 0..7 but 3; wait until 3 is recorded as a gap.
    const videoId = 'rc-before-end';
    await uploadFrames(stack, videoId, [0, 1, 2, 4, 5, 6, 7]);
    await waitFor('gap at frame 3', async () => recordsOf(await results(stack, videoId), 3).find((r) => r.status === 'gap'), 60_000);
    // Act: frame 3's object arrives, its notification is lost; then the end marker.
    await uploadSilently(videoId, 3);
    await put(stack, `frames/${videoId}/_end`, '7');
    // Assess: the re-check before completion processed it late, replacing the gap.
    const done = await waitFor('complete', async () => ((await summary(stack, videoId))?.status === 'complete' ? summary(stack, videoId) : undefined), 60_000);
    const items = await results(stack, videoId);
    expect(recordsOf(items, 3)).toEqual([expect.objectContaining({ status: 'late' })]);
    expect(items.map((r) => r.frame)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(done).toMatchObject({ framesOk: 7, framesLate: 1, framesGap: 0 });
  });

  it('affinity reconcile: after completion, a gap whose object came later is re-sent and becomes late, with exactly one record', async () => {
    // Prepare: a finished video with a gap at 3 (re-checked before completion: still absent then).
    const videoId = 'rc-after-end';
    await uploadFrames(stack, videoId, [0, 1, 2, 4, 5, 6, 7], { end: 7 });
    await waitFor('complete', async () => ((await summary(stack, videoId))?.status === 'complete' ? true : undefined), 60_000);
    expect(recordsOf(await results(stack, videoId), 3)).toEqual([expect.objectContaining({ status: 'gap' })]);
    await uploadSilently(videoId, 3);
    // Act 1: a dry run reports and sends nothing.
    const io = memoryIo();
    const dry = await reconcileCommand(target, { videoId, dryRun: true }, io);
    expect(dry.findings).toEqual([{ frame: 3, key: frameKey(videoId, 3), why: 'gap-with-object' }]);
    expect(dry.resent).toBe(0);
    expect(io.lines.join('\n')).toContain('gap records whose object exists: 1 (3)');
    expect(io.lines.join('\n')).toContain('dry run: would re-send 1 frame(s); nothing sent');
    // Act 2: through the CLI entry point.
    const cli = memoryIo();
    const code = await main(['reconcile', videoId, '--state-dir', dirname(stack.stackFile)], cli);
    expect(code, cli.errors.join('\n')).toBe(0);
    expect(cli.lines.join('\n')).toMatch(/re-sent 1 frame\(s\) with replay tag reconcile-/);
    // Assess: the gap became late, one record, counts follow.
    const late = await waitFor('frame 3 late', async () => recordsOf(await results(stack, videoId), 3).find((r) => r.status === 'late'), 60_000);
    expect(late.status).toBe('late');
    const items = await results(stack, videoId);
    expect(recordsOf(items, 3)).toHaveLength(1);
    expect(items).toHaveLength(8);
    await waitFor('summary counts', async () => {
      const s = await summary(stack, videoId);
      return s?.framesGap === 0 && s.framesLate === 1 && s.framesOk === 7 ? s : undefined;
    }, 30_000);
    // A second reconcile finds nothing.
    const again = await reconcileCommand(target, { videoId }, memoryIo());
    expect(again.findings).toEqual([]);
  });

  it('affinity reconcile: an object with no record at all (its notification lost, no listing due) is processed', async () => {
    // Prepare: frames 0..4 arrive; frame 5 is uploaded silently and nothing outstanding makes the worker list.
    const videoId = 'rc-no-record';
    await uploadFrames(stack, videoId, [0, 1, 2, 3, 4]);
    await waitFor('5 records', async () => ((await results(stack, videoId)).length === 5 ? true : undefined), 60_000);
    await uploadSilently(videoId, 5);
    // Act
    const r = await reconcileCommand(target, { videoId }, memoryIo());
    // Assess
    expect(r.findings).toEqual([{ frame: 5, key: frameKey(videoId, 5), why: 'no-record' }]);
    expect(r.resent).toBe(1);
    const rec = await waitFor('frame 5 recorded', async () => recordsOf(await results(stack, videoId), 5)[0], 60_000);
    expect(rec.status).toBe('ok');
    expect(await results(stack, videoId)).toHaveLength(6);
  });
});
