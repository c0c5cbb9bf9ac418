/**
 * Every CLI command against one local stack (stats processor: no model needed),
 * run in-process through `main` with --state-dir, plus the real binary once.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryIo, type Io } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { replayCommand } from '../../cli/commands/replay.ts';
import { deleteResultsFrom } from '../../core/commit/operations/replay.ts';
import { DynamoDbResultsAdmin } from '../../core/commit/dynamodb/results-admin.ts';
import { loadLocalTarget } from '../../cli/target.ts';
import { jpeg, results, startTestStack, summary, uploadFrames, waitFor, type TestStack } from '../../harness/pipeline.ts';

const run = promisify(execFile);

let stack: TestStack;
let stateDir: string;
let work: string;

async function cli(args: string[], io: Io & { lines: string[]; errors: string[] } = memoryIo()) {
  const code = await main([...args, '--state-dir', stateDir], io);
  return { code, out: io.lines.join('\n'), err: io.errors.join('\n'), lines: io.lines };
}

async function lease(videoId: string) {
  return (await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk: `video#${videoId}` }, ConsistentRead: true }))).Item;
}

beforeAll(async () => {
  // The pin cache must stay below the idle release (validateTunables), whatever the shared test tunables say.
  stack = await startTestStack({ workerEnv: { FRAME_PROCESSOR: 'stats' }, tunables: { slotCount: 2, routerPinCacheSeconds: 10 } });
  stateDir = dirname(stack.stackFile);
  work = mkdtempSync(join(tmpdir(), 'affinity-cli-'));
  const body = await jpeg();
  // Names carry the frame number; one non-image is ignored.
  for (let f = 0; f < 6; f++) writeFileSync(join(work, `shot_${f}.jpg`), body);
  writeFileSync(join(work, 'README.txt'), 'not a frame');
});

afterAll(async () => {
  await stack?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

describe('affinity CLI on the local stack', () => {
  it('upload: puts frames under the key contract with an end marker, and resumes without re-sending', async () => {
    // Act
    const first = await cli(['upload', work, '--video', 'up1', '--end', '--concurrency', '3']);
    const again = await cli(['upload', work, '--video', 'up1', '--end']);
    // Assess
    expect(first.code, first.err).toBe(0);
    expect(first.out).toContain('uploaded 6 frame(s)');
    const listed = await stack.clients.s3.send(new ListObjectsV2Command({ Bucket: stack.wiring.bucket, Prefix: 'frames/up1/' }));
    expect((listed.Contents ?? []).map((o) => o.Key).sort()).toEqual([
      'frames/up1/000000.jpg',
      'frames/up1/000001.jpg',
      'frames/up1/000002.jpg',
      'frames/up1/000003.jpg',
      'frames/up1/000004.jpg',
      'frames/up1/000005.jpg',
      'frames/up1/_end',
    ]);
    const end = await stack.clients.s3.send(new GetObjectCommand({ Bucket: stack.wiring.bucket, Key: 'frames/up1/_end' }));
    expect(await end.Body!.transformToString()).toBe('5');
    expect(again.code).toBe(0);
    expect(again.out).toContain('uploaded 0 frame(s)');
    expect(again.out).toContain('skipped 6');
    await waitFor('up1 complete', async () => (await summary(stack, 'up1'))?.status === 'complete', 60_000);
  });

  it('upload: fails clearly on a missing folder and an invalid video id', async () => {
    // Act
    const missing = await cli(['upload', join(work, 'nope'), '--video', 'v']);
    const missingFile = await cli(['upload', join(work, 'missing.mp4'), '--video', 'v']);
    const badId = await cli(['upload', work, '--video', 'bad/id']);
    // Assess
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/nope does not exist: give a folder of frames \(\.jpg, \.jpeg, \.png\) or a video file/);
    expect(missingFile.code).toBe(1);
    expect(missingFile.err).toMatch(/missing\.mp4 does not exist/);
    expect(missingFile.err).not.toMatch(/ENOENT|directory/);
    expect(badId.code).toBe(2);
    expect(badId.err).toMatch(/invalid video id "bad\/id"/);
  });

  it('results: streams frames in order as text, CSV and NDJSON, without the summary item', async () => {
    // Act
    const text = await cli(['results', 'up1']);
    const csv = await cli(['results', 'up1', '--csv']);
    const json = await cli(['results', 'up1', '--json']);
    const none = await cli(['results', 'never-uploaded']);
    // Assess
    expect(text.code).toBe(0);
    expect(text.lines.map((l) => Number(l.split('\t')[0]))).toEqual([0, 1, 2, 3, 4, 5]);
    expect(csv.lines[0]).toBe('frame,status,trackId,label,score,x1,y1,x2,y2,reason,worker,token');
    expect(csv.lines.slice(1).map((l) => l.split(',').slice(0, 3).join(','))).toEqual(['0,ok,1', '1,ok,2', '2,ok,3', '3,ok,4', '4,ok,5', '5,ok,6']);
    const frames = json.lines.map((l) => JSON.parse(l) as { frame: number; status: string });
    expect(frames.map((f) => f.frame)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(frames.every((f) => f.status === 'ok')).toBe(true);
    expect(none.code).toBe(1);
    expect(none.err).toContain('no results for video "never-uploaded"');
  });

  it('video: shows lease, owners, progress and counts; unknown videos are an error', async () => {
    // Act
    const text = await cli(['video', 'up1']);
    const json = await cli(['video', 'up1', '--json']);
    const unknown = await cli(['video', 'nobody']);
    // Assess
    expect(text.code, text.err).toBe(0);
    expect(text.out).toMatch(/lease\s+\w+.*token \d+/);
    expect(text.out).toMatch(/progress\s+next frame 6/);
    expect(text.out).toMatch(/results\s+complete: 6 ok, (0 late, )?0 failed, 0 gap/);
    expect(text.out).toMatch(/OWNERS \(1\)[\s\S]*local-slot\d/);
    const report = JSON.parse(json.out) as { progress: { nextFrame: number; endFrame: number }; owners: unknown[]; gaps: unknown[] };
    expect(report.progress).toMatchObject({ nextFrame: 6, endFrame: 5 });
    expect(report.owners).toHaveLength(1);
    expect(report.gaps).toEqual([]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('no such video "nobody"');
  });

  it('video: lists gaps and failures with reasons', async () => {
    // Prepare: frame 1 never comes (gap after the reorder wait), frame 2 is not an image.
    await uploadFrames(stack, 'holes', [0]);
    await stack.clients.s3.send(
      new (await import('@aws-sdk/client-s3')).PutObjectCommand({ Bucket: stack.wiring.bucket, Key: 'frames/holes/000002.jpg', Body: 'not a jpeg' }),
    );
    await uploadFrames(stack, 'holes', [3], { end: 3 });
    await waitFor('holes complete', async () => (await summary(stack, 'holes'))?.status === 'complete', 60_000);
    // Act
    const text = await cli(['video', 'holes']);
    // Assess
    expect(text.code, text.err).toBe(0);
    expect(text.out).toMatch(/GAPS \(1\)\n\s+1\s+missing-frame/);
    expect(text.out).toMatch(/FAILURES \(1\)\n\s+2\s+\S+/);
  });

  it('status: shows slots with owners and heartbeat age, leased videos and every queue', async () => {
    // Prepare: a video that stays leased (no end marker).
    await uploadFrames(stack, 'held', [0, 1]);
    await waitFor('held processed', async () => ((await results(stack, 'held')).length === 2 ? true : undefined));
    // Act
    const text = await cli(['status']);
    const json = await cli(['status', '--json']);
    // Assess
    expect(text.code, text.err).toBe(0);
    expect(text.out).toMatch(/SLOTS[\s\S]*live\s+local-slot\d-\S+\s+\d+\s+[\d.]+s ago/);
    expect(text.out).toMatch(/LEASED VIDEOS \(\d+\)[\s\S]*held\s+\d\s+\d+\s+local-slot/);
    const report = JSON.parse(json.out) as { slots: { state: string }[]; queues: { name: string; error?: string }[] };
    expect(report.slots).toHaveLength(2);
    expect(report.queues.map((q) => q.name)).toEqual(['ingest', 'ingest-dlq', 'slot-0', 'slot-0-dlq', 'slot-1', 'slot-1-dlq']);
    expect(report.queues.filter((q) => q.error)).toEqual([]);
  });

  it('release --force: refuses without a terminal or --yes, asks on a terminal, then releases fenced', async () => {
    // Prepare
    const before = await waitFor('held leased', async () => {
      const l = await lease('held');
      return l?.pinnedSlot !== undefined ? l : undefined;
    });
    // Act
    const noForce = await cli(['release', 'held']);
    const noTty = await cli(['release', 'held', '--force']);
    const declined = await cli(['release', 'held', '--force'], memoryIo({ interactive: true, answer: false }));
    const unchanged = await lease('held');
    const confirmedIo = memoryIo({ interactive: true, answer: true });
    const confirmed = await cli(['release', 'held', '--force'], confirmedIo);
    const after = await lease('held');
    const twice = await cli(['release', 'held', '--force', '--yes']);
    // Assess
    expect(noForce.code).toBe(2);
    expect(noForce.err).toContain('pass --force');
    expect(noTty.code).toBe(2);
    expect(noTty.err).toMatch(/refusing to force-release .* not a terminal; pass --yes/);
    expect(declined.code).toBe(1);
    expect(unchanged?.token).toBe(before.token);
    expect(unchanged?.pinnedSlot).toBe(before.pinnedSlot);
    expect(confirmedIo.questions[0]).toMatch(/Force-release video held/);
    expect(confirmed.code, confirmed.err).toBe(0);
    // Frames 0-1 recorded, nothing buffered, no end marker: nothing to re-send.
    expect(confirmed.out).toMatch(/released held from slot \d: token \d+ -> \d+; its checkpoint waited on nothing in S3: its next upload admits it afresh/);
    expect(after?.token).toBe(Number(before.token) + 1);
    expect(after?.pinnedSlot).toBeUndefined();
    expect(twice.code).toBe(1);
    expect(twice.err).toContain('is not leased');
    // The next frame is admitted afresh and committed under a newer token.
    await uploadFrames(stack, 'held', [2]);
    const items = await waitFor('held frame 2', async () => {
      const r = await results(stack, 'held');
      return r.length === 3 ? r : undefined;
    });
    expect(items[2]!.token).toBeGreaterThan(Number(before.token));
  });

  it('replay --from: redoes the frames from S3 under a new token and keeps the earlier ones', async () => {
    // Prepare
    const original = await results(stack, 'up1');
    // Act
    const replay = await cli(['replay', 'up1', '--from', '3']);
    const redone = await waitFor('up1 replayed', async () => {
      const r = await results(stack, 'up1');
      const s = await summary(stack, 'up1');
      return r.length === 6 && r.slice(3).every((x) => x.token > original[0]!.token) && s?.status === 'complete' ? r : undefined;
    }, 60_000);
    const bad = await cli(['replay', 'nobody', '--from', '0']);
    // Assess
    expect(replay.code, replay.err).toBe(0);
    expect(replay.out).toMatch(/replaying up1 from frame 3: token \d+ -> \d+, deleted 3 result\(s\) and 1 event\(s\), re-sent 3 frame\(s\) \(and 3 from frame 0 to rebuild the tracker and rules, recorded already\) \(end frame 5 already known\)/);
    expect(redone.slice(0, 3)).toEqual(original.slice(0, 3));
    expect(redone.slice(3).map((r) => r.frame)).toEqual([3, 4, 5]);
    expect(redone.slice(3).every((r) => r.status === 'ok' && r.committedAtMs > original[5]!.committedAtMs)).toBe(true);
    expect((await summary(stack, 'up1'))?.framesOk).toBe(6);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('no such video "nobody"');
  });

  it('replay: never deletes a result committed under the new token between the reset and the deletes', async () => {
    // Prepare: a finished video, and a target whose DynamoDB client lets a "live" commit
    // land right after the replay's reset (the window where the old order lost results).
    await uploadFrames(stack, 'race', [0, 1, 2, 3, 4, 5], { end: 5 });
    await waitFor('race complete', async () => (await summary(stack, 'race'))?.status === 'complete', 60_000);
    const original = await results(stack, 'race');
    const target = loadLocalTarget(stateDir);
    let injected: number | undefined;
    const commitAfterReset: InitializeMiddleware<object, MetadataBearer> = (next) => async (args) => {
      const out = await next(args);
      const items = (args.input as { TransactItems?: { Update?: { Key?: { pk?: unknown }; ExpressionAttributeValues?: Record<string, unknown> } }[] }).TransactItems ?? [];
      const reset = items.find((i) => i.Update?.Key?.pk === 'video#race' && i.Update.ExpressionAttributeValues?.[':next'] !== undefined);
      if (reset && injected === undefined) {
        injected = Number(reset.Update!.ExpressionAttributeValues![':next']);
        await stack.clients.ddb.send(
          new PutCommand({
            TableName: stack.wiring.resultsTable,
            Item: { videoId: 'race', frame: 4, status: 'ok', detections: [], token: injected, worker: 'live-owner', committedAtMs: Date.now() },
          }),
        );
      }
      return out;
    };
    target.clients.ddb.middlewareStack.add(commitAfterReset, { step: 'initialize', name: 'commitAfterReset' });
    const io = memoryIo();
    // Act
    const summaryOfReplay = await replayCommand(target, { videoId: 'race', fromFrame: 3 }, io);
    const afterReplay = await results(stack, 'race');
    target.close();
    const redone = await waitFor('race frames 3 and 5 redone', async () => {
      const r = await results(stack, 'race');
      return r.length === 6 && [3, 5].every((f) => r.find((x) => x.frame === f)!.token > original[0]!.token) ? r : undefined;
    }, 60_000);
    // Assess: the live result survived the replay's deletes and everything else was redone
    expect(injected).toBe(summaryOfReplay.token);
    expect(summaryOfReplay).toMatchObject({ fromFrame: 3, deleted: 2, keptNewer: 1, resent: 3, rebuilt: 3 });
    // The one event deleted is the video's completion (frame 5), written again when the replay completes it.
    expect(io.lines.join('\n')).toContain('deleted 2 result(s) and 1 event(s), kept 1 committed since the reset');
    expect(afterReplay.find((r) => r.frame === 4)).toMatchObject({ worker: 'live-owner', token: injected });
    expect(afterReplay.map((r) => r.frame)).toEqual([0, 1, 2, 4]);
    expect(redone.find((r) => r.frame === 4)).toMatchObject({ worker: 'live-owner', token: injected });
    expect(redone.slice(0, 3)).toEqual(original.slice(0, 3));
  });

  it('replay deletes results only up to the old token, in frame order', async () => {
    // Prepare: results of a video nobody processes, old (token 3) and newer (token 4)
    const admin = new DynamoDbResultsAdmin({ ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable, eventsTable: stack.wiring.eventsTable });
    const put = (frame: number, token: number) =>
      stack.clients.ddb.send(new PutCommand({ TableName: stack.wiring.resultsTable, Item: { videoId: 'tokens', frame, status: 'ok', detections: [], token, worker: 'w', committedAtMs: 1 } }));
    for (const [frame, token] of [[0, 3], [1, 3], [2, 3], [3, 4], [4, 3], [5, 4]] as const) await put(frame, token);
    // Act
    const r = await deleteResultsFrom(admin, 'tokens', 1, 3);
    const left = await results(stack, 'tokens');
    // Assess
    expect(r).toEqual({ deleted: 3, keptNewer: 2 });
    expect(left.map((x) => [x.frame, x.token])).toEqual([
      [0, 3],
      [3, 4],
      [5, 4],
    ]);
  });

  it('render: writes a contact sheet PNG, an animated GIF and an HTML page', async () => {
    // Prepare
    const out = join(work, 'render');
    // Act
    const r = await cli(['render', 'up1', '--out', out]);
    // Assess
    expect(r.code, r.err).toBe(0);
    const sheet = await sharp(join(out, 'up1-contact.png')).metadata();
    const gif = await sharp(join(out, 'up1.gif'), { animated: true }).metadata();
    expect(sheet.format).toBe('png');
    expect([gif.format, gif.pages]).toEqual(['gif', 6]);
    const html = readFileSync(join(out, 'up1.html'), 'utf8');
    expect(html).toContain('data:image/gif;base64,');
    expect(html).toContain('<td>frame</td>');
    expect(existsSync(join(out, 'up1.gif'))).toBe(true);
    expect(r.out).not.toContain('drawn'); // no rules document in the bucket: nothing drawn, no error
  });

  it('render: draws the video\'s rules document from the bucket', async () => {
    // Prepare
    const out = join(work, 'render-rules');
    const rules = { fps: 10, lines: [{ id: 'middle', a: [32, 0], b: [32, 48] }], zones: [{ id: 'left', polygon: [[0, 0], [32, 0], [32, 48], [0, 48]] }] };
    await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: 'rules/up1.json', Body: JSON.stringify(rules) }));
    // Act
    const r = await cli(['render', 'up1', '--out', out]);
    // Assess
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('1 line(s) and 1 zone(s) drawn');
    const html = readFileSync(join(out, 'up1.html'), 'utf8');
    expect(html).toContain('line middle (32,0 → 32,48');
    expect(html).toContain('zone left (4 points)');
  });

  it('the binary runs with Node 24 and exits non-zero with a clear message on errors', async () => {
    // Act
    const ok = await run(process.execPath, ['cli/bin.ts', 'status', '--state-dir', stateDir]);
    const failed = await run(process.execPath, ['cli/bin.ts', 'video', 'nobody', '--state-dir', stateDir]).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    // Assess
    expect(ok.stdout).toContain('SLOTS');
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain('error: no such video "nobody"');
  });
});
