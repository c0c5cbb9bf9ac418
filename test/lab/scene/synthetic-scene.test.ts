/**
 * The cost bench's synthetic street scene (lab/scene/synthetic-scene.ts, issue 44): a pure
 * function of the video and the frame (the same after a failover), about the asked number
 * of detections a frame, and objects that come and go, so a real tracker holds a changing
 * set of tracks.
 */
import { describe, expect, it } from 'vitest';
import { ByteTracker } from '../../../gpu-worker/vision/tracker.ts';
import { sceneDetections } from '../../../lab/scene/synthetic-scene.ts';

describe('sceneDetections', () => {
  it('is a function of the video and the frame alone, whatever order frames are asked in', () => {
    const forward = Array.from({ length: 300 }, (_, f) => sceneDetections('cam-1', f + 1, { fps: 30 }));
    const backward = Array.from({ length: 300 }, (_, f) => sceneDetections('cam-1', 300 - f, { fps: 30 })).reverse();
    expect(backward).toEqual(forward);
    expect(sceneDetections('cam-2', 10, { fps: 30 })).not.toEqual(sceneDetections('cam-1', 10, { fps: 30 }));
  });

  it.each([
    { detections: 5, fps: 30 },
    { detections: 5, fps: 3 },
    { detections: 1, fps: 10 },
  ])('gives about $detections detections a frame at $fps fps, inside a 1920x1080 image', ({ detections, fps }) => {
    const frames = Math.round(fps * 600);
    let n = 0;
    let outside = 0;
    for (let f = 1; f <= frames; f++) {
      const ds = sceneDetections('cam-mean', f, { fps, detections });
      n += ds.length;
      outside += ds.filter((d) => d.box[0] < -5 || d.box[1] < -5 || d.box[2] > 1925 || d.box[3] > 1085).length;
    }
    expect(outside).toBe(0);
    expect(n / frames).toBeGreaterThan(detections * 0.85);
    expect(n / frames).toBeLessThan(detections * 1.15);
  });

  it('has objects born and leaving: the real tracker opens new tracks all along, not only at the start', () => {
    const tracker = new ByteTracker();
    const firstSeen = new Map<number, number>();
    for (let f = 1; f <= 30 * 120; f++) for (const t of tracker.update(f, sceneDetections('cam-life', f, { fps: 30 }))) if (!firstSeen.has(t.trackId)) firstSeen.set(t.trackId, f);
    const bornAfterFirstMinute = [...firstSeen.values()].filter((f) => f > 30 * 60).length;
    // About 0.7 objects a second are born (6-7 lanes, ~10-s cycles): well over 20 in the second minute.
    expect(bornAfterFirstMinute).toBeGreaterThan(20);
    expect(firstSeen.size).toBeLessThan(200);
  });
});
