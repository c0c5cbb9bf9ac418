import { describe, expect, it } from 'vitest';
import { runLateFrames } from '../../../bench/late-frames.ts';

// A small, deterministic version of `npx node bench/late-frames.ts`: fixed seeds, the
// demo model on CPU, 10% of 40 frames delivered late through processLate.
describe('late frames on a synthetic clip (bench/late-frames.ts, small)', () => {
  it('gives >= 90% of late detections the ground-truth track ID on a clip without crossings', async () => {
    const r = await runLateFrames({ clips: [{ seed: 1, crossings: false }], frames: 40, objects: 6 });
    const [clip] = r.clips;
    console.log(`late frames ${clip.lateFrames.join(',')}: ${clip.correct}/${clip.lateDetections} right, share ${clip.share.toFixed(4)}`);
    expect(clip.lateFrames).toHaveLength(4);
    expect(clip.lateDetections).toBeGreaterThanOrEqual(12);
    expect(clip.share).toBeGreaterThanOrEqual(0.9);
  });

  it('gives no wrong IDs through crossings (losses there are occluded fragments, not association)', async () => {
    // With crossings the detector reports pieces of occluded squares that overlap no
    // ground-truth box at IoU 0.5; those count against `share`, not `associationShare`.
    const r = await runLateFrames({ clips: [{ seed: 1, crossings: true }], frames: 40, objects: 6 });
    const [clip] = r.clips;
    console.log(`crossings: ${clip.correct}/${clip.lateDetections} right, ${clip.noGroundTruth} on no GT, association share ${clip.associationShare.toFixed(4)}`);
    expect(clip.lateDetections - clip.noGroundTruth).toBeGreaterThanOrEqual(12);
    expect(clip.wrongId).toBe(0);
    expect(clip.associationShare).toBeGreaterThanOrEqual(0.9);
  });
});
