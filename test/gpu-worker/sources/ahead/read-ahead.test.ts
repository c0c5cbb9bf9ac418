import { describe, expect, it } from 'vitest';
import { readAheadPlans, type ReceivedFrame } from '../../../../gpu-worker/sources/ahead/read-ahead.ts';

const f = (videoId: string, frame: number, key = `frames/${videoId}/${String(frame).padStart(6, '0')}.jpg`): ReceivedFrame => ({ videoId, frame, key });
const run = (videoId: string, from: number, n: number, keyOf?: (i: number) => string): ReceivedFrame[] =>
  Array.from({ length: n }, (_, i) => f(videoId, from + i, keyOf?.(from + i)));

describe('readAheadPlans', () => {
  const cases: { name: string; received: ReceivedFrame[]; count?: number; want: Record<string, string[]> }[] = [
    { name: 'a full consecutive padded batch: the next keys, padded alike', received: run('a', 0, 10), count: 3, want: { a: ['frames/a/000010.jpg', 'frames/a/000011.jpg', 'frames/a/000012.jpg'] } },
    { name: 'order of arrival does not matter', received: run('a', 20, 10).reverse(), count: 1, want: { a: ['frames/a/000030.jpg'] } },
    { name: 'a batch short of full: nothing (no sign of a backlog)', received: run('a', 0, 9), want: {} },
    { name: 'a skip in the numbers: nothing (the camera does not number every frame)', received: [...run('a', 0, 9), f('a', 10)], want: {} },
    { name: 'a duplicate in the batch: nothing', received: [...run('a', 0, 9), f('a', 8)], want: {} },
    { name: 'unpadded keys: unpadded successors across a width change', received: run('u', 90, 10, (i) => `frames/u/${i}.png`), count: 2, want: { u: ['frames/u/100.png', 'frames/u/101.png'] } },
    { name: 'padded keys past their pad width stay unpadded-looking', received: run('w', 999_990, 10, (i) => `frames/w/${String(i).padStart(6, '0')}.jpg`), count: 1, want: { w: ['frames/w/1000000.jpg'] } },
    { name: 'mixed key forms: nothing', received: [...run('m', 40, 9), f('m', 49, 'frames/m/49.jpg')], want: {} },
    { name: 'the extension as written', received: run('x', 0, 10, (i) => `frames/x/${String(i).padStart(4, '0')}.JPEG`), count: 1, want: { x: ['frames/x/0010.JPEG'] } },
    { name: 'two videos in one receive: each judged alone', received: [...run('a', 0, 10), ...run('b', 5, 4)], count: 1, want: { a: ['frames/a/000010.jpg'] } },
    { name: 'count 0: off', received: run('a', 0, 10), count: 0, want: {} },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plans = readAheadPlans(c.received, 10, c.count ?? 10);
      const got = Object.fromEntries(plans.map((p) => [p.videoId, p.frames.map((x) => x.key)]));
      if (c.count === undefined) expect(Object.keys(got)).toEqual(Object.keys(c.want));
      else expect(got).toEqual(c.want);
    });
  }

  it('predicts `count` frames with their numbers', () => {
    const [plan] = readAheadPlans(run('a', 100, 10), 10, 10);
    expect(plan!.frames.map((x) => x.frame)).toEqual([110, 111, 112, 113, 114, 115, 116, 117, 118, 119]);
  });
});
