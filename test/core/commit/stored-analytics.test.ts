/**
 * The analytics state as a stored checkpoint packs it (issue 44, decision 76): what is read
 * back is what was written, key order included where the engine or the summary can see it,
 * and a run continued from the read state raises what an uninterrupted run raises.
 */
import { describe, expect, it } from 'vitest';
import { emptyAnalytics, runRules, withRules, type AnalyticsState, type TrackedFrame } from '../../../core/analytics/rule-engine.ts';
import { validateRules } from '../../../core/analytics/rules.ts';
import { packAnalytics, unpackAnalytics } from '../../../core/commit/stored-analytics.ts';
import { readStoredCheckpoint, storedCheckpoint, emptyCheckpoint, type VideoCheckpoint } from '../../../core/commit/checkpoint.ts';

const r = validateRules({
  fps: 10,
  lines: [{ id: 'door', a: [0, 100], b: [400, 100] }, { id: '7', a: [200, 0], b: [200, 400], classes: ['car'] }],
  zones: [{ id: 'stop', polygon: [[0, 120], [150, 120], [150, 300], [0, 300]], dwellSeconds: 1 }, { id: 'bay', polygon: [[250, 0], [400, 0], [400, 90], [250, 90]] }],
});
if (!r.ok) throw new Error(r.errors.join('; '));
const RULES = r.rules;

/** Three tracks: a person crossing the door into the stop zone and dwelling, a car across both lines into the bay, one that goes lost. */
function frames(from: number, to: number): TrackedFrame[] {
  const out: TrackedFrame[] = [];
  for (let f = from; f < to; f++) {
    const box = (x: number, y: number): [number, number, number, number] => [x - 5, y - 20, x + 5, y];
    const detections = [
      { trackId: 3, label: 'person', score: 0.9, box: box(60, 60 + 8 * f) },
      { trackId: 12, label: 'car', score: 0.8, box: box(150 + 9 * f, 160 - 9 * f) },
      ...(f < 6 ? [{ trackId: 40, label: 'bicycle', score: 0.7, box: box(300, 200) }] : []),
    ];
    out.push({ frame: f, detections, ...(f % 2 === 0 ? { ptsMs: f * 100 } : {}) });
  }
  return out;
}

describe('packed analytics state', () => {
  it('reads back exactly what was written, with the key order of totals and of each side map', () => {
    // Prepare: a state with sides, memberships, stream times, dwell flags and totals
    const state: AnalyticsState = { ...runRules(withRules(emptyAnalytics(), '"e1"', RULES), frames(0, 20)).state, invalidEtag: '"bad"' };
    const { rules: _outOfLine, ...rest } = state;
    expect(Object.values(rest.tracks).some((t) => t.d && t.zt && t.s)).toBe(true);
    // Act
    const packed = packAnalytics(rest);
    const back = unpackAnalytics(JSON.parse(JSON.stringify(packed)) as Record<string, unknown>);
    // Assess
    expect(back).toEqual(rest);
    expect(JSON.stringify(back.totals)).toBe(JSON.stringify(rest.totals));
    for (const [id, t] of Object.entries(rest.tracks)) expect(Object.keys(back.tracks[id]!.s ?? {})).toEqual(Object.keys(t.s ?? {}));
    expect(JSON.stringify(packed).length).toBeLessThan(JSON.stringify(rest).length * 0.75);
  });

  it('continues, after a checkpoint stored and read back mid-way, with the events and totals of an uninterrupted run', () => {
    const start = withRules(emptyAnalytics(), '"e1"', RULES);
    const whole = runRules(start, frames(0, 30));
    const first = runRules(start, frames(0, 13));
    const ck: VideoCheckpoint = { ...emptyCheckpoint(0), seq: 3, analytics: first.state };
    const read = readStoredCheckpoint(storedCheckpoint(ck), 'v')!;
    // The rules come back from their own item (the store does that); here, by hand.
    const resumed = runRules({ ...read.analytics!, rules: RULES }, frames(13, 30));
    expect([...first.events, ...resumed.events]).toEqual(whole.events);
    expect(resumed.state).toEqual(whole.state);
    expect(read.rulesRef).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it('reads an unpacked state (stored before decision 76) as it is, and refuses a packed one that names a missing string', () => {
    const state = runRules(withRules(emptyAnalytics(), '"e1"', RULES), frames(0, 10)).state;
    expect(unpackAnalytics(state as unknown as Record<string, unknown>)).toBe(state);
    const packed = packAnalytics(state);
    expect(() => unpackAnalytics({ ...packed, k: packed.k.slice(0, 1) })).toThrow(/names string \d+, which its table lacks/);
    expect(() => unpackAnalytics({ ...packed, p: 9 })).toThrow(/packed form 9, which this version does not read/);
  });
});
