/**
 * A user's own model: the class names file in the forms users have, the output layouts
 * told apart with what to do about each, and the demo-model watch that says when the demo
 * detector runs on video it cannot see. Pure parts, table-driven; the real YOLO graphs
 * load through them in yolo-graphs.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { parseClassNames } from '../../../gpu-worker/vision/class-names.ts';
import { DEMO_WATCH_FRAMES, DemoModelWatch } from '../../../gpu-worker/vision/demo-model-watch.ts';
import { outputLayoutProblem } from '../../../gpu-worker/vision/model.ts';

describe('parseClassNames', () => {
  it.each([
    ['one per line, blank lines and comments skipped', 'person\n\n# vehicles\ncar\r\ntruck\n', ['person', 'car', 'truck']],
    ['a JSON array', '["person", "car"]', ['person', 'car']],
    ['the sidecar object', '{"inputWidth": 640, "classNames": ["a", "b"]}', ['a', 'b']],
    ['data.yaml, indexed map out of order', 'path: ../datasets\nnames:\n  1: car\n  0: person # first\n  2: "traffic light"\ntrain: x\n', ['person', 'car', 'traffic light']],
    ['data.yaml, list', 'names:\n  - person\n  - car\n', ['person', 'car']],
    ['data.yaml, inline list', "nc: 2\nnames: ['person', car]\n", ['person', 'car']],
    ['a byte-order mark', '\uFEFFperson\ncar', ['person', 'car']],
  ])('reads %s', (_case, text, names) => {
    expect(parseClassNames(text, 'names.txt')).toEqual(names);
  });

  it.each([
    ['an empty file', '', /names\.txt: no names found/],
    ['JSON that does not parse', '["a", ', /looks like JSON but does not parse/],
    ['JSON of numbers', '[1, 2]', /array of strings/],
    ['a hole in the indices', 'names:\n  0: a\n  2: c\n', /has no entry 1/],
    ['an empty name', '["a", ""]', /class 1 has an empty name/],
  ])('refuses %s, naming the file', (_case, text, message) => {
    expect(() => parseClassNames(text, 'names.txt')).toThrow(message);
  });
});

describe('outputLayoutProblem', () => {
  const coco = Array.from({ length: 80 }, (_, i) => `c${i}`);
  it.each([
    ['YOLOv8/11 with 80 names', [1, 84, 8400], coco, undefined],
    ['YOLOv8/11 at 320 with 2 classes', [1, 6, 2100], ['a', 'b'], undefined],
    ['no names given (numbered from the channels)', [1, 84, 8400], undefined, undefined],
    ['names one short', [1, 84, 8400], coco.slice(1), /84 channels, which is 80 classes .* gives 79 class name\(s\); give exactly 80/],
    ['a transposed / YOLOv5-style output', [1, 25200, 85], coco, /anchors before channels .*yolo export model=best\.pt format=onnx/],
    ['an NMS export', [1, 300, 6], coco, /already reduced by NMS/],
    ['a rank-2 output', [300, 6], coco, /has shape \[300, 6\]/],
    ['no class channel', [1, 4, 8400], undefined, /no room for class scores/],
  ])('%s', (_case, dims, names, problem) => {
    const p = outputLayoutProblem('m.onnx', dims, names, 'the classes file names.txt');
    if (problem === undefined) expect(p).toBeUndefined();
    else expect(p).toMatch(problem);
  });
});

describe('DemoModelWatch', () => {
  const feed = (watch: DemoModelWatch, videoId: string, boxesPerFrame: (i: number) => number, frames = DEMO_WATCH_FRAMES) =>
    Array.from({ length: frames }, (_, i) => watch.observe(videoId, boxesPerFrame(i))).filter((w) => w !== undefined);

  it('warns once, after the window, for a video with boxes in fewer than half its frames; the full text first, a reminder after', () => {
    // Prepare
    const watch = new DemoModelWatch(true);
    // Act
    const street = feed(watch, 'street', (i) => (i % 3 === 0 ? 1 : 0), 100);
    const lobby = feed(watch, 'lobby', () => 0);
    // Assess
    expect(street).toHaveLength(1);
    expect(street[0]).toMatchObject({ videoId: 'street', frames: DEMO_WATCH_FRAMES, framesWithBoxes: 10, first: true });
    expect(street[0]!.msg).toMatch(/^DEMO MODEL ON REAL VIDEO: video street gave boxes in 10 of its first 30 frames\..*coloured squares.*npm start -- --model yolov8n\.onnx.*modelUri=s3:/);
    expect(lobby).toHaveLength(1);
    expect(lobby[0]).toMatchObject({ first: false });
    expect(lobby[0]!.msg).toMatch(/see the warning above/);
  });

  it('stays silent on the demo\'s own kind of video (a box in most frames), and with a real model', () => {
    const demo = new DemoModelWatch(true);
    expect(feed(demo, 'cam-a', (i) => (i % 5 === 0 ? 0 : 3), 200)).toEqual([]);
    expect(feed(new DemoModelWatch(false), 'street', () => 0, 200)).toEqual([]);
  });

  it('decides nothing before the window is full, and watches a video closed and opened again afresh', () => {
    const watch = new DemoModelWatch(true);
    expect(feed(watch, 'v', () => 0, DEMO_WATCH_FRAMES - 1)).toEqual([]);
    watch.forget('v');
    expect(feed(watch, 'v', () => 0, DEMO_WATCH_FRAMES - 1)).toEqual([]);
    expect(watch.observe('v', 0)?.videoId).toBe('v');
  });
});
