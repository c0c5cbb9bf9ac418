import { describe, expect, it } from 'vitest';
import { aheadHooks, detectAheadHint, type AheadVideo } from '../../../../gpu-worker/runtime/ahead/ahead-hints.ts';
import type { FrameInput, FrameProcessor } from '../../../../core/ports.ts';

const image = Uint8Array.of(1, 2);
/** A video that would run frames 10..19 only (the others settled, past its end, or it is isolated). */
const video: AheadVideo = { wouldRun: (frame) => frame >= 10 && frame < 20 };
const videoOf = (id: string) => (id === 'cam-1' ? video : undefined);

describe('detectAheadHint (decision 42)', () => {
  it.each([
    ['a frame the video would run next', 'frames/cam-1/000012.jpg', { videoId: 'cam-1', frame: 12 }],
    ['a frame it would not run (settled, backing off, isolated, past its end)', 'frames/cam-1/000025.jpg', undefined],
    ['a video this worker does not own', 'frames/cam-2/000012.jpg', undefined],
    ['an end marker, not a frame', 'frames/cam-1/_end.json', undefined],
    ['a key outside the frame layout', 'elsewhere/cam-1/000012.jpg', undefined],
  ])('%s', (_what, key, expected) => {
    const hint = detectAheadHint(key, image, videoOf, 0);
    if (!expected) expect(hint).toBeUndefined();
    else expect(hint).toEqual({ ...expected, image, key });
  });
});

describe('aheadHooks', () => {
  const processor = (calls: unknown[]): FrameProcessor =>
    ({ prepareAhead: (i: Uint8Array) => calls.push(['prepare', i]), detectAhead: (f: FrameInput) => calls.push(['detect', f.frame]) }) as unknown as FrameProcessor;

  it('decodes fetched frames ahead, and detects read-ahead frames the video would run', () => {
    const calls: unknown[] = [];
    const hooks = aheadHooks(processor(calls), 160, videoOf, () => 0);
    hooks.onFetched(image);
    hooks.onReadAhead!(image, 'frames/cam-1/000011.jpg');
    hooks.onReadAhead!(image, 'frames/cam-1/000030.jpg');
    expect(calls).toEqual([['prepare', image], ['detect', 11]]);
  });

  it('has no read-ahead hook at detectAheadFrames 0, or for a processor that cannot detect ahead', () => {
    expect(aheadHooks(processor([]), 0, videoOf, () => 0).onReadAhead).toBeUndefined();
    expect(aheadHooks({ prepareAhead: () => undefined } as unknown as FrameProcessor, 160, videoOf, () => 0).onReadAhead).toBeUndefined();
  });
});
