/**
 * A video file end to end on the local stack (issue 34): `affinity upload <file>` cuts it at
 * keyframes into segments with declared frame counts, S3 notifies, the real router routes
 * each segment as one message, a real worker process decodes it (FFmpeg through node-av)
 * and records every frame. Then the operator commands on it: `affinity replay --from` the
 * middle of a segment redoes the frames with the same records, and `affinity reconcile`
 * judges segments by the frames they cover; `affinity export` writes one line per frame.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryIo } from '../../cli/io.ts';
import { loadLocalTarget } from '../../cli/target.ts';
import { replayCommand } from '../../cli/commands/replay.ts';
import { reconcileCommand } from '../../cli/commands/reconcile.ts';
import { uploadVideoFile } from '../../cli/video/segment-upload.ts';
import { results, startTestStack, summary, waitFor, type TestStack } from '../../harness/pipeline.ts';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', 'gpu-worker', 'video', 'fixtures', 'bframes-45.mp4');

let stack: TestStack;
let work: string;

beforeAll(async () => {
  stack = await startTestStack({ tunables: { slotCount: 1 } });
  work = mkdtempSync(join(tmpdir(), 'segments-'));
});

afterAll(async () => {
  await stack?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('a video file through the local stack', () => {
  it('records every frame of every segment once, in order; replay from inside a segment and reconcile keep them so', async () => {
    // Prepare: a 45-frame H.264 file (B-frames, a keyframe every 15), cut into 3 segments
    const v = 'file-cam';
    const up = await uploadVideoFile(FIXTURE, { s3: stack.clients.s3, bucket: stack.wiring.bucket, videoId: v, outDir: join(work, 'cut'), segmentSeconds: 0.5, end: true });
    expect(up.plan.upload.map((s) => [s.key, s.frames])).toEqual([
      [`frames/${v}/000000.ts`, 15],
      [`frames/${v}/000015.ts`, 15],
      [`frames/${v}/000030.ts`, 15],
    ]);
    await waitFor('the video complete', async () => (await summary(stack, v))?.status === 'complete', 120_000);
    const first = await results(stack, v);
    expect(first.map((r) => [r.frame, r.status])).toEqual(Array.from({ length: 45 }, (_, f) => [f, 'ok']));
    // The stats processor's track id counts the frames the video's state has seen: each frame once, in order.
    expect(first.map((r) => r.detections[0]?.trackId)).toEqual(Array.from({ length: 45 }, (_, f) => f + 1));
    expect(first.every((r) => typeof r.ptsMs === 'number')).toBe(true);

    // Each segment's frames are stored packed (decision 56): frame 20 lies in a run that
    // starts at 15 when the second segment was committed whole, later when it was split.
    const runStart = first[20]!.packed?.first ?? 20;
    expect(first[20]!.packed).toBeDefined();
    expect(runStart).toBeGreaterThanOrEqual(15);

    // Act 1: replay from frame 20, inside the second segment: it widens to its packed run
    const target = loadLocalTarget(dirname(stack.stackFile));
    try {
      const io1 = memoryIo();
      const replayed = await replayCommand(target, { videoId: v, fromFrame: 20 }, io1);
      expect(replayed).toMatchObject({ fromFrame: runStart, resent: 45 - runStart, rebuilt: runStart, deleted: 45 - runStart });
      if (runStart < 20) expect(io1.errors.join('\n')).toContain(`replaying from ${runStart}`);
      const redone = await waitFor('the replay done', async () => {
        const r = await results(stack, v);
        return (await summary(stack, v))?.status === 'complete' && r.length === 45 && r.slice(runStart).every((x) => x.token >= replayed.token) ? r : undefined;
      }, 120_000);
      const comparable = (rs: typeof redone) => rs.map((r) => `${r.frame}:${r.status}:${r.detections.map((d) => d.trackId).join(',')}:${r.ptsMs}`);
      expect(comparable(redone)).toEqual(comparable(first));
      expect(redone.slice(0, runStart)).toEqual(first.slice(0, runStart));

      // Act 2: reconcile finds nothing to do on a whole video made of segments
      const io = memoryIo();
      const rec = await reconcileCommand(target, { videoId: v }, io);
      expect(rec).toMatchObject({ objects: 3, records: 45, findings: [], resent: 0 });
    } finally {
      target.close();
    }
  }, 300_000);
});
