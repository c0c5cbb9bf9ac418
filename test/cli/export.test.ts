/**
 * `affinity export` (issue 34, part 3): the pure formatting of records as JSON lines and
 * MOTChallenge rows, table-driven, and the command over an in-memory page source
 * (paging, order, the file written through a temporary name, usage errors).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exportCommand, exportLines, framesOf, jsonlLine, motLines, type ExportFormat } from '../../cli/commands/export.ts';
import { memoryIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import type { FrameRecord, FrameRecordPages } from '../../cli/read.ts';
import type { Target } from '../../cli/target.ts';

const rec = (frame: number, over: Partial<FrameRecord> = {}): FrameRecord => ({
  videoId: 'v',
  frame,
  status: 'ok',
  detections: [],
  token: 3,
  worker: 'w1',
  committedAtMs: 1_000 + frame,
  ...over,
});
const det = (trackId: number, box: [number, number, number, number], score = 0.9, label = 'person') => ({ trackId, label, score, box });

const OK = rec(0, { detections: [det(7, [10.123, 20, 50.456, 80.5], 0.912345), det(8, [0, 0, 4, 4], 0.5, 'car')] });
const LATE = rec(4, { status: 'late', reason: 'late', detections: [det(7, [12, 20, 52, 80]), det(0, [100, 100, 110, 110], 0.3)] });
const FAILED = rec(5, { status: 'failed', reason: 'decode-error', detail: 'Input buffer contains unsupported image format', key: 'frames/v/000005.jpg' });
const GAP = rec(6, { status: 'gap', reason: 'missing' });
const LEGACY_GAP_RUN = rec(7, { status: 'gap', reason: 'missing', throughFrame: 9 });
const WITH_PTS = rec(10, { ptsMs: 333.367, detections: [det(7, [1, 2, 3, 4])] });

describe('export formatting (pure)', () => {
  it.each<[string, FrameRecord, string[]]>([
    [
      'an ok frame: detections with track id, class, score (4 decimals) and box (0.01 px)',
      OK,
      [
        '{"frame":0,"status":"ok","detections":[{"trackId":7,"label":"person","score":0.9123,"box":[10.12,20,50.46,80.5]},{"trackId":8,"label":"car","score":0.5,"box":[0,0,4,4]}]}',
      ],
    ],
    ['an ok frame without detections', rec(1), ['{"frame":1,"status":"ok","detections":[]}']],
    [
      'a late frame keeps its status, reason and its unassociated detection (id 0)',
      LATE,
      [
        '{"frame":4,"status":"late","reason":"late","detections":[{"trackId":7,"label":"person","score":0.9,"box":[12,20,52,80]},{"trackId":0,"label":"person","score":0.3,"box":[100,100,110,110]}]}',
      ],
    ],
    ['a failed frame with its reason and detail', FAILED, ['{"frame":5,"status":"failed","reason":"decode-error","detail":"Input buffer contains unsupported image format","detections":[]}']],
    ['a gap frame with its reason', GAP, ['{"frame":6,"status":"gap","reason":"missing","detections":[]}']],
    [
      'a gap run written before gaps were per frame: one line per frame',
      LEGACY_GAP_RUN,
      [7, 8, 9].map((f) => `{"frame":${f},"status":"gap","reason":"missing","detections":[]}`),
    ],
    ['ptsMs where the record has one', WITH_PTS, ['{"frame":10,"status":"ok","ptsMs":333.367,"detections":[{"trackId":7,"label":"person","score":0.9,"box":[1,2,3,4]}]}']],
  ])('jsonl: %s', (_name, record, lines) => {
    expect(exportLines(record, 'jsonl')).toEqual(lines);
    for (const l of lines) expect(JSON.parse(l)).toMatchObject({ frame: expect.any(Number), status: record.status });
  });

  it.each<[string, FrameRecord, number | undefined, string[]]>([
    ['frame 0 is MOT frame 1; width and height from the box', OK, undefined, ['1,7,10.12,20,40.34,60.5,0.9123,-1,-1,-1', '1,8,0,0,4,4,0.5,-1,-1,-1']],
    ['an ok frame without detections has no line', rec(1), undefined, []],
    ['a late frame: its tracked detections only (id 0 is untracked)', LATE, undefined, ['5,7,12,20,40,60,0.9,-1,-1,-1']],
    ['a failed frame is skipped', FAILED, undefined, []],
    ['a gap frame is skipped', GAP, undefined, []],
    ['a legacy gap run is skipped', LEGACY_GAP_RUN, undefined, []],
    ['--first-frame 4: frame 4 is MOT frame 1', LATE, 4, ['1,7,12,20,40,60,0.9,-1,-1,-1']],
    ['--first-frame 10: frame 10 is MOT frame 1', WITH_PTS, 10, ['1,7,1,2,2,2,0.9,-1,-1,-1']],
    ['a frame below --first-frame has no MOT frame', OK, 1, []],
  ])('mot: %s', (_name, record, firstFrame, lines) => {
    expect(exportLines(record, 'mot', firstFrame !== undefined ? { firstFrame } : {})).toEqual(lines);
    for (const l of lines) expect(l.split(',')).toHaveLength(10);
  });

  it('frames, jsonl and mot lines compose as exportLines does', () => {
    const frames = framesOf(OK);
    expect(frames.map(jsonlLine)).toEqual(exportLines(OK, 'jsonl'));
    expect(frames.flatMap((f) => motLines(f))).toEqual(exportLines(OK, 'mot'));
  });
});

const target = { description: 'test pages', close: () => {} } as unknown as Target;
/** Pages as a reader yields them, counting how many were asked for before each line was written. */
function pagesOf(pages: readonly (readonly FrameRecord[])[]): FrameRecordPages & { pulled: number } {
  const source = Object.assign(
    async function* () {
      for (const p of pages) {
        source.pulled++;
        yield p;
      }
    },
    { pulled: 0 },
  );
  return source;
}

describe('exportCommand over pages', () => {
  const dir = mkdtempSync(join(tmpdir(), 'affinity-export-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const PAGES = [[OK, rec(1), rec(2, { detections: [det(7, [11, 20, 51, 80])] })], [rec(3), LATE, FAILED], [GAP, LEGACY_GAP_RUN, WITH_PTS]];

  it.each<[ExportFormat, number]>([
    ['jsonl', 11],
    ['mot', 5],
  ])('%s to stdout: every frame in order, one page at a time, and a count on stderr', async (format, lines) => {
    // Prepare: output is checked to come while the pages are still being read.
    const io = memoryIo();
    const pages = pagesOf(PAGES);
    const pulledAtLine: number[] = [];
    const out = io.out;
    io.out = (l) => (pulledAtLine.push(pages.pulled), out(l));
    // Act
    const report = await exportCommand(target, { videoId: 'v', format }, io, pages);
    // Assess
    expect(report).toEqual({ frames: 11, lines, byStatus: { ok: 5, late: 1, failed: 1, gap: 4 }, belowFirstFrame: 0, ...(format === 'mot' ? { firstFrame: 0 } : {}) });
    expect(io.lines).toHaveLength(lines);
    expect(pulledAtLine[0]).toBe(1);
    expect(io.errors).toEqual([
      `exported 11 frame(s) of v (5 ok, 1 late, 1 failed, 4 gap) as ${format}: ${lines} line(s)`,
      ...(format === 'mot' ? ['mot frames: MOT frame = our frame + 1 (the video has a frame 0: numbered from 0)'] : []),
    ]);
    if (format === 'jsonl') expect(io.lines.map((l) => JSON.parse(l).frame)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    else expect(io.lines.map((l) => Number(l.split(',')[0]))).toEqual([1, 1, 3, 5, 11]);
  });

  it('writes --out through a temporary name and leaves only the finished file', async () => {
    // Prepare
    const file = join(dir, 'v.mot.txt');
    const io = memoryIo();
    // Act
    const report = await exportCommand(target, { videoId: 'v', format: 'mot', out: file, firstFrame: 2 }, io, pagesOf(PAGES));
    // Assess
    expect(readFileSync(file, 'utf8')).toBe(['1,7,11,20,40,60,0.9,-1,-1,-1', '3,7,12,20,40,60,0.9,-1,-1,-1', '9,7,1,2,2,2,0.9,-1,-1,-1', ''].join('\n'));
    expect(readdirSync(dir)).toEqual(['v.mot.txt']);
    expect(io.lines).toEqual([]);
    expect(report.belowFirstFrame).toBe(2);
    expect(io.errors).toEqual([
      `exported 11 frame(s) of v (5 ok, 1 late, 1 failed, 4 gap) as mot: 3 line(s) to ${file}`,
      'mot frames: MOT frame = our frame - 1 (--first-frame 2)',
      'skipped 2 processed frame(s) below --first-frame 2: they have no MOT frame number',
    ]);
  });

  it.each([
    ['a folder numbered from 0 (000000.jpg first)', 0, undefined, [1, 2, 3], 'MOT frame = our frame + 1 (the video has a frame 0: numbered from 0)'],
    ['a folder numbered from 1, as MOT\'s img1/ (000001.jpg first)', 1, undefined, [1, 2, 3], 'MOT frame = our frame (the video has no frame 0: numbered from 1, as MOT; --first-frame 0 shifts by one)'],
    ['a video that starts later (a camera after a restart): its numbers kept', 40, undefined, [40, 41, 42], 'MOT frame = our frame (the video has no frame 0'],
    ['a folder numbered from 1, with --first-frame 0 as before', 1, 0, [2, 3, 4], 'MOT frame = our frame + 1 (--first-frame 0)'],
  ])('mot numbers frames of %s so that MOT frame 1 is its first image', async (_case, first, firstFrame, motFrames, note) => {
    // Prepare: three tracked frames from `first` on.
    const pages = pagesOf([[0, 1, 2].map((i) => rec(first + i, { detections: [det(7, [1, 2, 3, 4])] }))]);
    const io = memoryIo();
    // Act
    await exportCommand(target, { videoId: 'v', format: 'mot', ...(firstFrame !== undefined ? { firstFrame } : {}) }, io, pages);
    // Assess
    expect(io.lines.map((l) => Number(l.split(',')[0]))).toEqual(motFrames);
    expect(io.errors[1]).toContain(`mot frames: ${note}`);
  });

  it('fails without results, when reading fails or when the file cannot be opened, and leaves no file behind', async () => {
    // Prepare
    const empty = join(dir, 'empty.jsonl');
    const broken = join(dir, 'broken.jsonl');
    const failing: FrameRecordPages = async function* () {
      yield [OK];
      throw new Error('ProvisionedThroughputExceededException');
    };
    // Act, Assess
    await expect(exportCommand(target, { videoId: 'nope', format: 'jsonl', out: empty }, memoryIo(), pagesOf([]))).rejects.toThrow('no results for video "nope" in test pages');
    await expect(exportCommand(target, { videoId: 'v', format: 'jsonl', out: broken }, memoryIo(), failing)).rejects.toThrow('ProvisionedThroughputExceededException');
    await expect(exportCommand(target, { videoId: 'v', format: 'jsonl', out: join(dir, 'no-such-dir', 'v.jsonl') }, memoryIo(), pagesOf([[OK]]))).rejects.toThrow(
      `cannot write ${join(dir, 'no-such-dir', 'v.jsonl')}: ENOENT`,
    );
    expect(existsSync(empty) || existsSync(broken)).toBe(false);
    expect(readdirSync(dir).filter((n) => n.includes('.partial-'))).toEqual([]);
  });
});

describe('export arguments', () => {
  const noTarget = async () => {
    throw new Error('must not resolve a target');
  };
  it('gives help without touching a stack', async () => {
    const io = memoryIo();
    expect(await main(['export', '--help'], io, noTarget)).toBe(0);
    expect(io.lines.join('\n')).toContain('Usage: affinity export <id> [--format jsonl|mot]');
  });

  it.each<[string[], string]>([
    [['export', 'v', '--format', 'csv'], '--format must be jsonl or mot (got "csv")'],
    [['export', 'v', '--first-frame', '1'], '--first-frame applies to --format mot only'],
    [['export', 'v', '--format', 'mot', '--first-frame=-1'], '--first-frame must be 0 or more'],
    [['export', 'v', '--format', 'mot', '--first-frame', 'x'], '--first-frame must be an integer'],
    [['export'], 'missing <id>'],
  ])('refuses %j with exit 2', async (args, message) => {
    const io = memoryIo();
    expect(await main(args, io, async () => target)).toBe(2);
    expect(io.errors.join('\n')).toContain(message);
  });
});
