/**
 * The demo's rules (cli/demo-rules.ts): the document, the truth totals and the
 * counted-vs-truth table; and the rules drawn on rendered frames (cli/render.ts).
 */
import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { allMatch, compareTotals, demoRules, ruleCountTable, truthTotals, type TruthFrame } from '../../cli/demo-rules.ts';
import { annotateFrame, htmlPage, LINE_COLOUR, overlaySvg, ZONE_COLOUR } from '../../cli/render.ts';

/** One object walking right to left across the middle of a 320x240 image, 10 px a frame. */
const walker: TruthFrame[] = Array.from({ length: 30 }, (_, frame) => {
  const x = 300 - frame * 10;
  return { frame, objects: [{ id: 1, label: 'red', box: [x - 10, 100, x + 10, 140] as const }] };
});

describe('demo rules and counts', () => {
  it('builds a line down the middle and the left half as a zone, sized to the clip', () => {
    // Act
    const rules = demoRules({ widthPx: 640, heightPx: 480 });
    // Assess
    expect(rules.lines).toMatchObject([{ id: 'middle', a: [320, 0], b: [320, 480] }]);
    expect(rules.zones[0]!.polygon).toEqual([[0, 0], [320, 0], [320, 480], [0, 480]]);
    expect(rules.zones[0]!.dwellSeconds).toBe(1);
  });

  it('counts the truth tracks: a right-to-left walk crosses in once, enters the left half and dwells', () => {
    // Act
    const totals = truthTotals(walker, demoRules({ widthPx: 320, heightPx: 240 }));
    // Assess
    expect(totals.lines).toEqual({ middle: { red: [1, 0] } });
    expect(totals.zones).toEqual({ 'left-half': { red: [1, 0, 1] } });
  });

  it('compares counted totals with the truth per rule and class, and flags a difference', () => {
    // Prepare
    const rules = demoRules({ widthPx: 320, heightPx: 240 });
    const truth = { lines: { middle: { red: [1, 0] as [number, number] } }, zones: { 'left-half': { red: [1, 0, 1] as [number, number, number] } } };
    const short = { lines: { middle: { red: [1, 0] as [number, number], blue: [0, 1] as [number, number] } }, zones: {} };
    // Act
    const same = compareTotals(rules, truth, truth);
    const differ = compareTotals(rules, short, truth);
    const missing = compareTotals(rules, undefined, { lines: {}, zones: {} });
    // Assess
    expect(same.every((r) => r.match)).toBe(true);
    expect(differ.map((r) => [r.kind, r.ruleId, r.label, r.counted, r.truth, r.match])).toEqual([
      ['line', 'middle', 'blue', [0, 1], [0, 0], false],
      ['line', 'middle', 'red', [1, 0], [1, 0], true],
      ['zone', 'left-half', 'red', [0, 0, 0], [1, 0, 1], false],
    ]);
    expect(missing.map((r) => [r.ruleId, r.label, r.match])).toEqual([
      ['middle', '-', true],
      ['left-half', '-', true],
    ]);
    const table = ruleCountTable([
      { videoId: 'a', rows: same, events: 5 },
      { videoId: 'b', rows: differ },
    ]);
    expect(table[0]).toMatch(/^video\s+rule\s+class\s+counts\s+counted\s+truth$/);
    expect(table).toContain('a: every count matches the ground truth; 5 event(s) in the events table');
    expect(table).toContain('b: 2 of 3 count row(s) differ from the ground truth');
    expect(table.some((l) => /^b\s+zone left-half\s+red\s+entered\/exited\/dwell\s+0\/0\/0\s+1\/0\/1\s+DIFFERS$/.test(l))).toBe(true);
    expect(allMatch([{ videoId: 'a', rows: same }])).toBe(true);
    expect(allMatch([{ videoId: 'b', rows: differ }])).toBe(false);
  });
});

describe('rules on rendered frames', () => {
  const rgbOf = (hex: string) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

  it('draws the line, its in-arrow towards the right-hand side of a→b, and the zone outline on the frame', async () => {
    // Prepare: a black 160x120 frame, a line down x=80 (a→b downwards: in points left), a zone over the right quarter.
    const image = await sharp({ create: { width: 160, height: 120, channels: 3, background: { r: 0, g: 0, b: 0 } } }).png().toBuffer();
    const rules = {
      fps: 10,
      forgetAfterFrames: 30,
      lines: [{ id: 'mid', a: [80, 0], b: [80, 120] } as const],
      zones: [{ id: 'right', polygon: [[120, 0], [160, 0], [160, 120], [120, 120]] as const }],
    };
    // Act
    const plain = await annotateFrame({ frame: 0, status: 'ok', image, detections: [] }, { width: 160, height: 120 });
    const drawn = await annotateFrame({ frame: 0, status: 'ok', image, detections: [] }, { width: 160, height: 120 }, { rules });
    // Assess
    const px = (f: typeof drawn, x: number, y: number) => [...f.rgb.subarray((y * 160 + x) * 3, (y * 160 + x) * 3 + 3)];
    const near = (got: number[], want: number[]) => got.every((v, i) => Math.abs(v - want[i]!) <= 2);
    expect(near(px(drawn, 80, 20), rgbOf(LINE_COLOUR))).toBe(true); // on the line
    expect(px(plain, 80, 20)).toEqual([0, 0, 0]); // not without rules
    expect(near(px(drawn, 74, 60), rgbOf(LINE_COLOUR))).toBe(true); // the arrow, left of the midpoint (in = left here)
    expect(px(drawn, 86, 60)).toEqual([0, 0, 0]); // and not on the right
    expect(near(px(drawn, 125, 0), rgbOf(ZONE_COLOUR))).toBe(true); // zone outline (the first dash of its top edge)
    expect(px(drawn, 100, 100)).toEqual([0, 0, 0]); // outside the zone stays black
    const inside = px(drawn, 140, 60);
    expect(inside).not.toEqual([0, 0, 0]); // light fill inside the zone
    expect(inside[2]! > inside[0]!).toBe(true);
  });

  it('puts the rules under the detections and lists them on the HTML page', () => {
    // Prepare
    const rules = demoRules({ widthPx: 320, heightPx: 240 });
    // Act
    const svg = overlaySvg(320, 240, [{ trackId: 4, label: 'red', score: 1, box: [10, 10, 50, 50] }], { rules });
    const page = htmlPage({ videoId: 'v', gif: Buffer.from('g'), sheet: Buffer.from('s'), tracks: [], frames: 1, rules });
    // Assess
    expect(svg.indexOf(`stroke="${LINE_COLOUR}"`)).toBeLessThan(svg.indexOf('x="10" y="10" width="40" height="40"'));
    expect(svg).toContain('x1="160" y1="0" x2="160" y2="240"');
    expect(page).toContain('line middle (160,0 → 160,240');
    expect(page).toContain('zone left-half (4 points, dwell 1 s)');
  });
});
