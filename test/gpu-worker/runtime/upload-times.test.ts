import { describe, expect, it } from 'vitest';
import { eventTimeMs, UploadTimes } from '../../../gpu-worker/runtime/upload-times.ts';

const T0 = Date.parse('2026-11-25T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe('eventTimeMs', () => {
  it.each([
    ['2026-11-25T00:00:00.000Z', T0],
    ['2026-11-25T00:00:01.250Z', T0 + 1250],
    ['not a date', undefined],
    ['', undefined],
  ])('%j -> %j', (text, expected) => {
    expect(eventTimeMs(text)).toBe(expected);
  });
});

describe('UploadTimes', () => {
  type Result = { frame: number; status: 'ok' | 'late' | 'failed' | 'gap' };
  const cases: { name: string; noted: [number, string][]; landed: Result[]; landedAtMs: number; latencies: number[]; left: number }[] = [
    { name: 'an ok record: landed - uploaded', noted: [[0, at(0)]], landed: [{ frame: 0, status: 'ok' }], landedAtMs: T0 + 480, latencies: [480], left: 0 },
    { name: 'a late record counts too', noted: [[3, at(100)]], landed: [{ frame: 3, status: 'late' }], landedAtMs: T0 + 7100, latencies: [7000], left: 0 },
    { name: 'a failed record ends the frame without a sample', noted: [[1, at(0)]], landed: [{ frame: 1, status: 'failed' }], landedAtMs: T0 + 50, latencies: [], left: 0 },
    { name: 'a gap record ends the frame without a sample', noted: [[2, at(0)]], landed: [{ frame: 2, status: 'gap' }], landedAtMs: T0 + 50, latencies: [], left: 0 },
    { name: 'a frame never noted gives nothing (buffered by a predecessor)', noted: [], landed: [{ frame: 4, status: 'ok' }], landedAtMs: T0, latencies: [], left: 0 },
    { name: 'frames not yet landed stay', noted: [[5, at(0)], [6, at(33)]], landed: [{ frame: 5, status: 'ok' }], landedAtMs: T0 + 200, latencies: [200], left: 1 },
    { name: 'a duplicate keeps the first upload time', noted: [[7, at(0)], [7, at(900)]], landed: [{ frame: 7, status: 'ok' }], landedAtMs: T0 + 1000, latencies: [1000], left: 0 },
    { name: 'an unparseable eventTime is not noted', noted: [[8, 'yesterday']], landed: [{ frame: 8, status: 'ok' }], landedAtMs: T0, latencies: [], left: 0 },
    { name: 'clock skew never gives a negative latency', noted: [[9, at(20)]], landed: [{ frame: 9, status: 'ok' }], landedAtMs: T0 + 5, latencies: [0], left: 0 },
    {
      name: 'one commit of several frames, in result order',
      noted: [[10, at(0)], [11, at(33)], [12, at(66)]],
      landed: [
        { frame: 10, status: 'ok' },
        { frame: 11, status: 'failed' },
        { frame: 12, status: 'ok' },
      ],
      landedAtMs: T0 + 300,
      latencies: [300, 234],
      left: 0,
    },
  ];

  it.each(cases)('$name', ({ noted, landed, landedAtMs, latencies, left }) => {
    const u = new UploadTimes();
    for (const [frame, eventTime] of noted) u.note(frame, eventTime);
    expect(u.landed(landed, landedAtMs)).toEqual(latencies);
    expect(u.size).toBe(left);
  });

  it('gives each frame one sample: a record landing again gives none', () => {
    const u = new UploadTimes();
    u.note(0, at(0));
    expect(u.landed([{ frame: 0, status: 'ok' }], T0 + 10)).toEqual([10]);
    expect(u.landed([{ frame: 0, status: 'ok' }], T0 + 20)).toEqual([]);
  });
});
