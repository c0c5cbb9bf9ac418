/**
 * `reconcile` over a segment that declares no frame count (issue 40, lower impact): the
 * real worker and the real operation (core/commit/operations/reconcile.ts) on the in-memory
 * twins, with real H.264 (test/gpu-worker/video/fixtures/). The segment is uploaded after
 * its frames became gaps, its notification lost; a reconcile re-sends it and the worker
 * records the frames it holds. The frames after its count up to the next object are gaps no
 * object holds: the next reconcile must say "nothing to reconcile" instead of re-sending the
 * segment on every run.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../../core/commit/operations/reconcile.ts';
import { segmentKey } from '../../../core/ingest/segment-keys.ts';
import { harnessOperatorPorts } from '../../../harness/operator-harness.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'video', 'fixtures');
/** 30 frames, MPEG-TS (no count in the container, none declared: the demuxer counts). */
const TS_30 = new Uint8Array(readFileSync(path.join(FIXTURES, 'cfr-30.mpegts')));

describe('reconcile: an undeclared segment', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 300 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('re-sends it once; once its frames are recorded, the next run finds nothing to reconcile', async () => {
    // Prepare: frame 40 and the end marker; frames 0-39 become gaps and the video completes.
    const v = h.videoId('undeclared');
    await h.pinVideo(v, 0);
    await h.putFrames(v, [40]);
    await h.putEnd(v, 40);
    const worker = h.createWorker(0).start();
    await h.sendFrames(0, v, [40]);
    await h.sendEnd(0, v);
    await h.waitForSummary(v, (s) => s.status === 'complete' && s.framesGap === 40);
    // The segment of frames 0-29 comes after, its notification lost; 30-39 never exist.
    await h.putSegment(v, 0, TS_30, { container: 'mpegts' });
    const ports = harnessOperatorPorts(h);

    // Act
    const first = await reconcile(ports, { videoId: v });
    await h.waitFor('frames 0-29 recorded late', async () => {
      const items = await h.frameResults(v);
      return items.filter((r) => r.frame < 30 && r.status === 'late').length === 30 ? true : undefined;
    }, 60_000);
    const second = await reconcile(ports, { videoId: v });
    await worker.stop();

    // Assess
    expect(first.findings).toEqual([{ frame: 0, key: segmentKey(v, 0, 'mpegts'), why: 'gap-with-object' }]);
    expect(first.resent).toBe(1);
    expect(second.findings).toEqual([]);
    expect(second.resent).toBe(0);
    const items = await h.frameResults(v);
    expect(items.map((r) => r.status)).toEqual([...Array(30).fill('late'), ...Array(10).fill('gap'), 'ok']);
  });
});
