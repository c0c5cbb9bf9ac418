/**
 * Which objects a reconcile sends again (core/commit/operations/reconcile.ts
 * `findUnreconciled`, pure): frames with an object whose record is a gap or missing. An
 * undeclared segment reaches only as far as the records naming it once it has any, so a
 * reconcile whose re-sends were recorded finds nothing the next time (issue 40).
 */
import { describe, expect, it } from 'vitest';
import { findUnreconciled } from '../../../../core/commit/operations/reconcile.ts';
import { objectRanges } from '../../../../core/ingest/object-ranges.ts';
import { frameKey } from '../../../../core/ingest/keys.ts';
import { segmentKey } from '../../../../core/ingest/segment-keys.ts';
import type { FrameResultItem } from '../../../../core/commit/results.ts';

describe('findUnreconciled', () => {
  const ob = (frame: number) => ({ key: frameKey('v', frame), sizeBytes: 1, eTag: 'e' });
  const rec = (frame: number, status: FrameResultItem['status'], throughFrame?: number, key?: string) =>
    ({ videoId: 'v', frame, status, detections: [], token: 1, worker: 'w', committedAtMs: 0, ...(throughFrame !== undefined ? { throughFrame } : {}), ...(key ? { key } : {}) }) as FrameResultItem;
  const okRun = (from: number, to: number, key?: string) => Array.from({ length: to - from }, (_, i) => rec(from + i, 'ok', undefined, key));
  const gapRun = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => rec(from + i, 'gap'));
  const seg10 = segmentKey('v', 10);
  const cases: { name: string; objects: number[]; segments?: [number, number | undefined][]; records: FrameResultItem[]; held?: number[]; want: [number, string][] }[] = [
    { name: 'a segment recorded whole is settled', objects: [], segments: [[10, 45]], records: okRun(10, 55), want: [] },
    { name: 'a segment recorded in part is sent again, named by its first frame without a record', objects: [], segments: [[10, 45]], records: okRun(10, 30), want: [[30, 'no-record']] },
    { name: 'a segment with a gap inside is sent again', objects: [], segments: [[10, 45]], records: [...okRun(10, 20), rec(20, 'gap'), ...okRun(21, 55)], want: [[20, 'gap-with-object']] },
    { name: 'an undeclared segment covers up to the next object', objects: [30], segments: [[10, undefined]], records: [...okRun(10, 29), rec(30, 'ok')], want: [[29, 'no-record']] },
    // The worker counted 15 frames in an undeclared segment 10 whose next object is 30: 25-29 are gaps no object holds (issue 40).
    { name: 'an undeclared segment reaches as far as the records naming it: the gaps after it are no one\'s', objects: [30], segments: [[10, undefined]], records: [...okRun(10, 25, seg10), ...gapRun(25, 30), rec(30, 'ok')], want: [] },
    { name: 'an undeclared segment with a gap inside its reach is sent again', objects: [30], segments: [[10, undefined]], records: [...okRun(10, 20, seg10), rec(20, 'gap'), ...okRun(21, 25, seg10), ...gapRun(25, 30), rec(30, 'ok')], want: [[20, 'gap-with-object']] },
    { name: 'an undeclared segment no record names yet (its notification lost) is sent', objects: [30], segments: [[10, undefined]], records: [...gapRun(10, 30), rec(30, 'ok')], want: [[10, 'gap-with-object']] },
    { name: 'a declared segment reaches its declaration, whatever its records name', objects: [30], segments: [[10, 20]], records: [...okRun(10, 25, seg10), ...gapRun(25, 30), rec(30, 'ok')], want: [[25, 'gap-with-object']] },
    { name: 'a segment held by the checkpoint is not lost', objects: [], segments: [[0, 3]], records: [rec(0, 'ok')], held: [1, 2], want: [] },
    { name: 'a gap with an object', objects: [0, 1], records: [rec(0, 'ok'), rec(1, 'gap')], want: [[1, 'gap-with-object']] },
    { name: 'an old gap run with an object inside', objects: [0, 4], records: [rec(0, 'ok'), rec(2, 'gap', 5)], want: [[4, 'gap-with-object']] },
    { name: 'ok, late and failed records are settled', objects: [0, 1, 2], records: [rec(0, 'ok'), rec(1, 'late'), rec(2, 'failed')], want: [] },
    { name: 'no record, not held', objects: [0, 1], records: [rec(0, 'ok')], want: [[1, 'no-record']] },
    { name: 'no record but held by the checkpoint', objects: [0, 1], records: [rec(0, 'ok')], held: [1], want: [] },
    { name: 'a gap without an object stays', objects: [0], records: [rec(0, 'ok'), rec(1, 'gap')], want: [] },
  ];
  it.each(cases)('$name', async ({ objects, segments, records, held, want }) => {
    const declared = new Map((segments ?? []).map(([n, k]) => [segmentKey('v', n), k]));
    const stored = [...objects.map(ob), ...(segments ?? []).map(([n]) => ({ key: segmentKey('v', n), sizeBytes: 1, eTag: 'e' })), { key: 'frames/v/_end', sizeBytes: 1, eTag: 'e' }];
    const found = findUnreconciled(await objectRanges(stored, async (key) => declared.get(key)), records, new Set(held ?? []));
    expect(found.map((f) => [f.frame, f.why])).toEqual(want);
  });
});
