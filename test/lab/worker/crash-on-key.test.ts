import { describe, expect, it } from 'vitest';
import type { FrameStore } from '../../../core/ingest/s3/frame-store.ts';
import type { FrameInput, FrameProcessor } from '../../../core/ports.ts';
import { crashOnKey } from '../../../lab/worker/crash-on-key.ts';

function fakes() {
  const store = { get: async (_b: string, key: string) => new TextEncoder().encode(key) } as unknown as FrameStore;
  const processed: number[] = [];
  const processor = {
    description: 'fake',
    get fatal() {
      return undefined;
    },
    process: async (frames: readonly FrameInput[]) => frames.map((f) => (processed.push(f.frame), { status: 'ok' as const, detections: [] })),
    processLate: async (frames: readonly FrameInput[]) => frames.map((f) => (processed.push(f.frame), { status: 'ok' as const, detections: [] })),
  } as unknown as FrameProcessor;
  return { store, processor, processed };
}

describe('WORKER_CRASH_ON_KEY seam', () => {
  it('dies when the model is handed a frame whose key contains the substring, not on fetch, not on other frames', async () => {
    const { store, processor, processed } = fakes();
    const died: number[] = [];
    const { frames, processor: p } = crashOnKey('v/000012', store, processor, (input) => died.push(input.frame));
    const ok = await frames.get('b', 'frames/v/000011.jpg');
    const poison = await frames.get('b', 'frames/v/000012.jpg');
    expect(died).toEqual([]);
    await p.process([{ videoId: 'v', frame: 11, image: ok }]);
    expect(died).toEqual([]);
    await p.processLate([{ videoId: 'v', frame: 12, image: poison }]);
    expect(died).toEqual([12]);
    expect(processed).toEqual([11, 12]);
    // Other members pass through, getters included.
    expect(p.description).toBe('fake');
    expect(p.fatal).toBeUndefined();
  });
});
