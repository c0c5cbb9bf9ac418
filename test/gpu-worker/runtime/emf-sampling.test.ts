import { describe, expect, it } from 'vitest';
import { SAMPLE_VALUES, sampleInto } from '../../../gpu-worker/runtime/emf-metrics.ts';
import { rng } from '../../../core/random.ts';

/** Feeds 0..n-1 through sampleInto, as EmfMetrics.milliseconds does. */
function sampleOf(n: number, seed = 7): number[] {
  const values: number[] = [];
  const random = rng(seed);
  for (let i = 0; i < n; i++) sampleInto(values, i + 1, i, random);
  return values;
}

describe('sampleInto (latency series sampling)', () => {
  it.each([0, 1, 50, SAMPLE_VALUES])('keeps all %i values, in order, up to the limit', (n) => {
    expect(sampleOf(n)).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  it.each([101, 1_000, 4_800])('keeps %i values down to a sample of the limit, drawn from the whole interval', (n) => {
    const s = sampleOf(n);
    expect(s).toHaveLength(SAMPLE_VALUES);
    expect(new Set(s).size).toBe(SAMPLE_VALUES);
    expect(s.every((v) => Number.isInteger(v) && v >= 0 && v < n)).toBe(true);
    // Not the first 100 (the rule before): a uniform sample holds values from the last quarter too.
    expect(s.some((v) => v >= SAMPLE_VALUES)).toBe(true);
    if (n >= 1_000) expect(s.filter((v) => v >= (3 * n) / 4).length).toBeGreaterThan(5);
  });

  it('gives each value the same chance: over many seeds, the mean of the sample is near the middle', () => {
    const n = 1_000;
    let sum = 0;
    let count = 0;
    for (let seed = 1; seed <= 40; seed++) for (const v of sampleOf(n, seed)) {
      sum += v;
      count++;
    }
    // The first-100 rule would give 49.5; a uniform sample of 0..999 gives 499.5.
    expect(sum / count).toBeGreaterThan(450);
    expect(sum / count).toBeLessThan(550);
  });
});
