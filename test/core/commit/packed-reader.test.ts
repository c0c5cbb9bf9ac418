/**
 * The results reader over packed items (decision 56), on the lease table's twin through
 * the production reader: every read gives one record per frame, whichever shape stored it,
 * including ranges that start inside a packed run.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { allResults, countResults, DynamoDbRecords, getFrameResult, nearestProcessed, queryResults, type ResultsSource } from '../../../core/commit/dynamodb/results-reader.ts';
import { isPacked, storedItems } from '../../../core/commit/record-packing.ts';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { MemoryLeaseTable } from '../../../core/leases/memory/memory-lease-table.ts';

const base = { videoId: 'v', token: 1, worker: 'w', committedAtMs: 5 };
const seg = (first: number) => `frames/v/${String(first).padStart(6, '0')}.mp4`;
const rec = (frame: number, status: FrameResultItem['status'], key?: string): FrameResultItem => ({ ...base, frame, status, detections: status === 'ok' || status === 'late' ? [{ box: [frame, 0, 1, 1], score: 1, label: 'p', trackId: 1 }] : [], ...(key ? { key } : {}) });

// Frames 0-9: segment 0 (ok, frame 9 failed); 10-11 gaps; 12-19: segment 12 (ok); 20: a JPEG; 21: a gap.
const logical: FrameResultItem[] = [
  ...Array.from({ length: 9 }, (_, f) => rec(f, 'ok', seg(0))),
  rec(9, 'failed', seg(0)),
  rec(10, 'gap'),
  rec(11, 'gap'),
  ...Array.from({ length: 8 }, (_, i) => rec(12 + i, 'ok', seg(12))),
  rec(20, 'ok', 'frames/v/000020.jpg'),
  rec(21, 'gap'),
];
const frames = (records: readonly FrameResultItem[]) => records.map((r) => r.frame);
let source: ResultsSource;

beforeAll(async () => {
  const twin = new MemoryLeaseTable();
  source = { ddb: twin.ddb, resultsTable: twin.wiring.resultsTable };
  const items = storedItems(logical);
  expect(items.filter(isPacked).map((i) => i.frame)).toEqual([0, 12]);
  for (const item of items) await source.ddb.send(new PutCommand({ TableName: source.resultsTable, Item: item }));
  await source.ddb.send(new PutCommand({ TableName: source.resultsTable, Item: { videoId: 'v', frame: -1, kind: 'summary' } }));
});

describe('reading packed results', () => {
  it('all results: one record per frame in frame order, packed ones marked', async () => {
    const all = await allResults(source, 'v');
    expect(frames(all)).toEqual(frames(logical));
    expect(all.map((r) => r.status)).toEqual(logical.map((r) => r.status));
    expect(all[3]!.packed).toEqual({ first: 0, count: 10 });
    expect(all[20]!.packed).toBeUndefined();
    expect(all[5]!.detections[0]!.box[0]).toBe(5);
  });

  it.each([
    { from: 5, before: 8, expected: [5, 6, 7] },
    { from: 5, before: 14, expected: [5, 6, 7, 8, 9, 10, 11, 12, 13] },
    { from: 15, before: undefined, expected: [15, 16, 17, 18, 19, 20, 21] },
    { from: 10, before: 12, expected: [10, 11] },
    { from: 3, before: 3, expected: [] },
    { from: 0, before: 0, expected: [] },
  ])('a range from $from before $before, starting inside a run or not', async ({ from, before, expected }) => {
    const got: FrameResultItem[] = [];
    for await (const page of queryResults(source, 'v', { fromFrame: from, ...(before !== undefined ? { beforeFrame: before } : {}) })) got.push(...page);
    expect(frames(got)).toEqual(expected);
  });

  it('non-ok only: filtered after expanding, so a failed frame inside a run is found', async () => {
    const got: FrameResultItem[] = [];
    for await (const page of queryResults(source, 'v', { fromFrame: 4, nonOkOnly: true })) got.push(...page);
    expect(got.map((r) => `${r.frame}:${r.status}`)).toEqual(['9:failed', '10:gap', '11:gap', '21:gap']);
  });

  it.each([
    { frame: 0, status: 'ok' },
    { frame: 7, status: 'ok' },
    { frame: 9, status: 'failed' },
    { frame: 11, status: 'gap' },
    { frame: 19, status: 'ok' },
    { frame: 20, status: 'ok' },
    { frame: 22, status: undefined },
    { frame: 500, status: undefined },
  ])('one frame: $frame is $status', async ({ frame, status }) => {
    const r = await getFrameResult(source, 'v', frame);
    expect(r?.status).toBe(status);
    if (r) expect(r.frame).toBe(frame);
  });

  it('counts frames, not items', async () => {
    expect(await countResults(source, 'v')).toBe(logical.length);
  });

  it.each([
    { frame: 11, direction: 'before' as const, expected: 8 },
    { frame: 10, direction: 'after' as const, expected: 12 },
    { frame: 15, direction: 'before' as const, expected: 14 },
    { frame: 21, direction: 'before' as const, expected: 20 },
    { frame: 3, direction: 'before' as const, distance: 2, expected: 2 },
    { frame: 21, direction: 'after' as const, expected: undefined },
  ])('nearest processed $direction $frame', async ({ frame, direction, distance, expected }) => {
    expect((await nearestProcessed(source, 'v', frame, direction, distance ?? 30))?.frame).toBe(expected);
  });

  it('the records port reads the same', async () => {
    const records = new DynamoDbRecords(source);
    expect(frames(await records.range('v', 8, 12))).toEqual([8, 9, 10, 11, 12]);
    expect((await records.get('v', 16))?.key).toBe(seg(12));
  });
});
