/**
 * `affinity export` (issue 34, part 3) on DynamoDB Local through the CLI's own dispatch
 * (`main` with an injected target): records written as the worker writes them, more than
 * one Query page of them, read back in frame order as JSON lines and as MOTChallenge rows.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportCommand } from '../../cli/commands/export.ts';
import { memoryIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { frameRecordPages, type FrameRecord } from '../../cli/read.ts';
import type { Target } from '../../cli/target.ts';
import { RESULTS_TABLE } from '../../core/resources.ts';
import { SUMMARY_FRAME, type FrameResultItem } from '../../core/commit/results.ts';
import { LOCAL_CREDENTIALS, startDynamoDbLocal } from '../../local/emulators.ts';
import { createTableInput } from '../../local/resources.ts';

const REGION = 'us-east-1';
const TABLE = 'ExportCli-results';
/** Enough frames, with enough detections each, that the Query takes more than one 1-MB page. */
const FRAMES = 700;
const DETECTIONS = 40;

let dynamo: Awaited<ReturnType<typeof startDynamoDbLocal>>;
let dynamodb: DynamoDBClient;
let target: Target;
let work: string;

/** Frame f of video `v`: ok with 40 tracked boxes, except frame 7 (failed), 8 (gap), 9 (late, one untracked box). */
function record(videoId: string, frame: number): FrameResultItem {
  const base = { videoId, frame, token: 2, worker: 'w-1', committedAtMs: 1_700_000_000_000 + frame, key: `frames/${videoId}/${String(frame).padStart(6, '0')}.jpg` };
  if (frame === 7) return { ...base, status: 'failed', reason: 'decode-error', detail: 'corrupt JPEG', detections: [] };
  if (frame === 8) return { ...base, status: 'gap', reason: 'missing', detections: [] };
  const detections = Array.from({ length: DETECTIONS }, (_, i) => ({ trackId: i + 1, label: i % 2 ? 'car' : 'person', score: (50 + i) / 100, box: [frame + i, 2 * i, frame + i + 10.5, 2 * i + 20] as [number, number, number, number] }));
  if (frame === 9) return { ...base, status: 'late', reason: 'late', detections: [...detections.slice(0, 2), { trackId: 0, label: 'person', score: 0.4, box: [1, 1, 2, 2] }] };
  return { ...base, status: 'ok', detections };
}

beforeAll(async () => {
  dynamo = await startDynamoDbLocal({ region: REGION });
  dynamodb = new DynamoDBClient({ region: REGION, credentials: { ...LOCAL_CREDENTIALS }, endpoint: dynamo.endpoint });
  const ddb = DynamoDBDocumentClient.from(dynamodb);
  await dynamodb.send(new CreateTableCommand(createTableInput(TABLE, RESULTS_TABLE)));
  // Two videos side by side, and a summary item that the export must not read as a frame.
  const items: object[] = [
    ...Array.from({ length: FRAMES }, (_, f) => record('cam', f)),
    ...Array.from({ length: 3 }, (_, f) => record('other', f)),
    { videoId: 'cam', frame: SUMMARY_FRAME, kind: 'summary', status: 'complete' },
  ];
  for (let i = 0; i < items.length; i += 25) {
    await ddb.send(new BatchWriteCommand({ RequestItems: { [TABLE]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }));
  }
  target = { description: 'test DynamoDB Local', kind: 'local', region: REGION, resultsTable: TABLE, clients: { ddb }, close: () => {} } as unknown as Target;
  work = mkdtempSync(join(tmpdir(), 'affinity-export-int-'));
});

afterAll(async () => {
  dynamodb?.destroy();
  await dynamo?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

async function cli(args: string[]) {
  const io = memoryIo();
  const code = await main(args, io, async () => target);
  return { code, lines: io.lines, err: io.errors.join('\n') };
}

describe('affinity export on DynamoDB Local', () => {
  it('reads the records through more than one Query page, in frame order', async () => {
    // Prepare: count the pages the default reader yields.
    let pages = 0;
    const read = frameRecordPages(target);
    const counted = async function* (videoId: string): AsyncGenerator<readonly FrameRecord[]> {
      for await (const p of read(videoId)) {
        pages++;
        yield p;
      }
    };
    const io = memoryIo();
    // Act
    const report = await exportCommand(target, { videoId: 'cam', format: 'jsonl' }, io, counted);
    // Assess
    expect(pages).toBeGreaterThan(1);
    expect(report.frames).toBe(FRAMES);
    expect(io.lines.map((l) => JSON.parse(l).frame)).toEqual(Array.from({ length: FRAMES }, (_, f) => f));
  });

  it('--format jsonl --out: every frame with its status, reason and tracked boxes', async () => {
    // Prepare
    const file = join(work, 'cam.jsonl');
    // Act
    const r = await cli(['export', 'cam', '--out', file]);
    // Assess
    expect(r.code, r.err).toBe(0);
    expect(r.lines).toEqual([]);
    expect(r.err).toBe(`exported ${FRAMES} frame(s) of cam (${FRAMES - 3} ok, 1 late, 1 failed, 1 gap) as jsonl: ${FRAMES} line(s) to ${file}`);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(lines).toHaveLength(FRAMES);
    expect(lines[0]).toEqual({ frame: 0, status: 'ok', detections: record('cam', 0).detections });
    expect(lines[7]).toEqual({ frame: 7, status: 'failed', reason: 'decode-error', detail: 'corrupt JPEG', detections: [] });
    expect(lines[8]).toEqual({ frame: 8, status: 'gap', reason: 'missing', detections: [] });
    expect(lines[9]).toMatchObject({ frame: 9, status: 'late', reason: 'late' });
    expect(lines[9].detections.map((d: { trackId: number }) => d.trackId)).toEqual([1, 2, 0]);
    expect(readdirSync(work).filter((n) => n.includes('.partial-'))).toEqual([]);
  });

  it('--format mot: 1-based frames, tracked detections of ok and late frames only', async () => {
    // Act
    const r = await cli(['export', 'cam', '--format', 'mot']);
    // Assess
    expect(r.code, r.err).toBe(0);
    const rows = r.lines.map((l) => l.split(',').map(Number));
    expect(rows).toHaveLength((FRAMES - 3) * DETECTIONS + 2);
    expect(r.lines[0]).toBe('1,1,0,0,10.5,20,0.5,-1,-1,-1');
    const motFrames = [...new Set(rows.map((x) => x[0]))];
    // Frames 7 (failed) and 8 (gap) have no rows: MOT frames 8 and 9 are absent; the late frame 9 is MOT frame 10 with its 2 tracked boxes.
    expect(motFrames).toEqual(Array.from({ length: FRAMES }, (_, f) => f + 1).filter((m) => m !== 8 && m !== 9));
    expect(rows.filter((x) => x[0] === 10).map((x) => x[1])).toEqual([1, 2]);
    expect(rows.every((x) => x.length === 10 && x[1]! > 0 && x.slice(7).every((v) => v === -1))).toBe(true);
  });

  it('exits 1 with a clear line for a video without records', async () => {
    const r = await cli(['export', 'nobody', '--format', 'mot']);
    expect(r.code).toBe(1);
    expect(r.err).toBe('error: no results for video "nobody" in test DynamoDB Local');
  });
});
