/**
 * The bit codes under packed records' format 3 (decision 77): zigzag, Rice codes with a
 * bounded unary part, and the writer and reader agreeing bit for bit. Table-driven.
 */
import { describe, expect, it } from 'vitest';
import { BitReader, BitWriter, bestRiceParameter, riceBits, unzigzag, zigzag } from '../../../core/commit/bit-codes.ts';

describe('zigzag', () => {
  it.each([
    [0, 0],
    [-1, 1],
    [1, 2],
    [-2, 3],
    [2 ** 50, 2 ** 51],
    [-(2 ** 50), 2 ** 51 - 1],
  ])('%d ↔ %d', (n, z) => {
    expect(zigzag(n)).toBe(z);
    expect(unzigzag(z)).toBe(n);
  });
});

describe('BitWriter and BitReader', () => {
  it.each([
    { name: 'small values, k 0', values: [0, 1, 2, 3, 4, 0, 0], k: 0 },
    { name: 'jitter-sized values, k 8', values: [0, 255, 256, 511, 767, 768, 1_000, 12], k: 8 },
    { name: 'values past the unary cap (Elias gamma)', values: [40, 1_000, 65_535, 2 ** 31, 2 ** 32 + 5], k: 2 },
    { name: 'values to 2^53 - 1, k 0 and k 31', values: [2 ** 52, Number.MAX_SAFE_INTEGER, 7], k: 0 },
    { name: 'k 31', values: [0, 2 ** 31 - 1, 2 ** 31, Number.MAX_SAFE_INTEGER], k: 31 },
  ])('$name: read back as written, in the bits riceBits counts', ({ values, k }) => {
    // Prepare
    const w = new BitWriter();
    w.bits(0b101, 3);
    for (const z of values) w.rice(z, k);
    w.bits(2 ** 40 + 3, 41);
    const bytes = w.finish();
    // Act
    const r = new BitReader(bytes, 'test');
    // Assess
    expect(r.bits(3)).toBe(0b101);
    expect(values.map(() => r.rice(k))).toEqual(values);
    expect(r.bits(41)).toBe(2 ** 40 + 3);
    expect(r.atEnd()).toBe(true);
    expect(bytes.byteLength).toBe(Math.ceil((3 + values.reduce((n, z) => n + riceBits(z, k), 0) + 41) / 8));
  });

  it('reports a stream cut short, and bits left over', () => {
    const w = new BitWriter();
    w.rice(1_000, 4);
    const bytes = w.finish();
    expect(() => new BitReader(bytes.subarray(0, 1), 'the test stream').rice(4)).toThrow(/the test stream: truncated/);
    const r = new BitReader(Uint8Array.from([...bytes, 0x80]), 'x');
    r.rice(4);
    expect(r.atEnd()).toBe(false);
  });

  it('refuses a gamma code longer than a safe integer', () => {
    // 3 ones (the unary cap), then 60 zeros: no writer of safe integers made it.
    expect(() => new BitReader(Uint8Array.from([0xe0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), 'x').rice(0)).toThrow(/past 2\^53/);
  });
});

describe('bestRiceParameter', () => {
  it.each([
    { name: 'nothing', values: [] as number[] },
    { name: 'all zero', values: [0, 0, 0] },
    { name: 'uniform below 600', values: Array.from({ length: 600 }, (_, i) => (i * 7919) % 600) },
    { name: 'small values and a few huge ones', values: [...Array.from({ length: 300 }, (_, i) => i % 20), 2 ** 45, 2 ** 50] },
    { name: 'large values only', values: [2 ** 40, 2 ** 40 + 12_345, 2 ** 41] },
  ])('$name: as few bits as any parameter', ({ values }) => {
    const cost = (k: number) => values.reduce((n, z) => n + riceBits(z, k), 0);
    const fewest = Math.min(...Array.from({ length: 32 }, (_, k) => cost(k)));
    expect(cost(bestRiceParameter(values))).toBe(fewest);
  });
});
