import { describe, expect, it } from 'vitest';
import { DEFAULT_FORGET_AFTER_FRAMES, DEFAULT_FPS, DEFAULT_HYSTERESIS_PX, parseRules, validateRules } from '../../../core/analytics/rules.ts';

const line = { id: 'door', a: [0, 100], b: [200, 100] };
const zone = { id: 'lobby', polygon: [[0, 0], [100, 0], [100, 100], [0, 100]] };

describe('validateRules', () => {
  const bad: [string, unknown, string][] = [
    ['not an object', [], 'document: must be a JSON object'],
    ['unknown top-level field', { lines: [], colour: 1 }, 'colour: unknown field'],
    ['fps zero', { fps: 0 }, 'fps: must be a number in (0, 1000]'],
    ['forgetAfterFrames fraction', { forgetAfterFrames: 1.5 }, 'forgetAfterFrames: must be an integer'],
    ['lines not an array', { lines: {} }, 'lines: must be an array'],
    ['line without id', { lines: [{ a: [0, 0], b: [1, 1] }] }, 'lines[0].id: must be 1-48 characters'],
    ['line id with #', { lines: [{ ...line, id: 'a#b' }] }, 'lines[0].id: must be 1-48 characters'],
    ['line point not a pair', { lines: [{ ...line, a: [1] }] }, 'lines[0].a: must be [x, y]'],
    ['line point NaN-ish string', { lines: [{ ...line, b: ['1', 2] }] }, 'lines[0].b: must be [x, y]'],
    ['degenerate line', { lines: [{ ...line, b: [0, 100] }] }, 'lines[0]: a and b are the same point'],
    ['negative hysteresis', { lines: [{ ...line, hysteresisPx: -1 }] }, 'lines[0].hysteresisPx: must be a number in [0, 1000]'],
    ['empty classes', { lines: [{ ...line, classes: [] }] }, 'lines[0].classes: must be a non-empty array'],
    ['duplicate ids across kinds', { lines: [line], zones: [{ ...zone, id: 'door' }] }, 'zones[0].id: "door" is used by another rule'],
    ['zone with two points', { zones: [{ id: 'z', polygon: [[0, 0], [1, 1]] }] }, 'zones[0].polygon: must be an array of 3 to 64 points'],
    ['zone without area', { zones: [{ id: 'z', polygon: [[0, 0], [1, 1], [2, 2]] }] }, 'zones[0].polygon: has no area'],
    ['dwell zero', { zones: [{ ...zone, dwellSeconds: 0 }] }, 'zones[0].dwellSeconds: must be a number in (0, 86400]'],
    ['unknown zone field', { zones: [{ ...zone, radius: 3 }] }, 'zones[0].radius: unknown field'],
    ['too many rules', { lines: Array.from({ length: 33 }, (_, i) => ({ ...line, id: `l${i}` })) }, 'document: 33 rules, at most 32'],
  ];
  it.each(bad)('rejects %s', (_name, doc, message) => {
    const r = validateRules(doc);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.some((e) => e.startsWith(message))).toBe(true);
  });

  it('fills defaults and keeps what was given', () => {
    const r = validateRules({ lines: [line], zones: [{ ...zone, dwellSeconds: 2, classes: ['person'] }] });
    expect(r).toEqual({
      ok: true,
      rules: {
        fps: DEFAULT_FPS,
        forgetAfterFrames: DEFAULT_FORGET_AFTER_FRAMES,
        lines: [{ id: 'door', a: [0, 100], b: [200, 100], hysteresisPx: DEFAULT_HYSTERESIS_PX }],
        zones: [{ id: 'lobby', polygon: zone.polygon, classes: ['person'], dwellSeconds: 2 }],
      },
    });
  });

  it('an empty document is valid: no rules', () => {
    expect(validateRules({})).toEqual({ ok: true, rules: { fps: DEFAULT_FPS, forgetAfterFrames: DEFAULT_FORGET_AFTER_FRAMES, lines: [], zones: [] } });
  });

  it('reports every problem at once, with its path', () => {
    const r = validateRules({ fps: -1, lines: [{ id: 'x', a: [0, 0] }] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors).toEqual(['fps: must be a number in (0, 1000]', 'lines[0].b: must be [x, y] in pixels (finite numbers, |c| <= 65536)']);
  });

  it('parseRules names bad JSON', () => {
    const r = parseRules('{ "lines": [');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]).toMatch(/^not JSON: /);
  });
});
