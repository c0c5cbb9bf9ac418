/**
 * Rules and events on the local stack with the real vision pipeline (issue 22): the same
 * clip runs as two videos under one default rules document, one uninterrupted and one
 * whose owner is killed (-9) mid-clip and whose early frames are uploaded again (duplicate
 * notifications). The rule events (ids and contents) and the totals must be equal; the
 * killed video also has its take-over event. A third video has its own, invalid rules
 * document: it gets a `rules.invalid` event, a worker log line, and all its frames.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { ensureDemoModel, generateClip } from '../../gpu-worker/vision/index.ts';
import { frameKey } from '../../core/ingest/keys.ts';
import { allEvents } from '../../core/analytics/dynamodb/events-reader.ts';
import { DEFAULT_RULES_KEY, rulesKey } from '../../core/analytics/s3/rules-store.ts';
import type { EventItem } from '../../core/analytics/event-schema.ts';
import { put, results, startTestStack, summary, waitFor, type TestStack } from '../../harness/pipeline.ts';
import { dirname } from 'node:path';
import { loadLocalTarget } from '../../cli/target.ts';
import { memoryIo } from '../../cli/io.ts';
import { replayCommand } from '../../cli/commands/replay.ts';
import { countEvents } from '../../cli/commands/counts.ts';

let stack: TestStack;

beforeAll(async () => {
  const modelUri = await ensureDemoModel();
  stack = await startTestStack({
    tunables: { slotCount: 3, videosPerSlot: 1, modelUri },
    workerEnv: { FRAME_PROCESSOR: 'vision', STATS_PROCESSOR_DELAY_MS: '0' },
  });
});

afterAll(async () => {
  await stack?.stop();
});

/** A vertical counting line through the middle of the 320x240 clip, and its left half as a zone with a 1 s dwell at 10 fps. */
const CLIP_RULES = {
  fps: 10,
  lines: [{ id: 'middle', a: [160, 0], b: [160, 240] }],
  zones: [{ id: 'left', polygon: [[0, 0], [160, 0], [160, 240], [0, 240]], dwellSeconds: 1 }],
};

/** What must be equal between two runs of the same frames: everything but who wrote it and when. */
const comparable = (events: readonly EventItem[]) =>
  events.filter((e) => e.kind.startsWith('line.') || e.kind.startsWith('zone.')).map((e) => ({ eventId: e.eventId, kind: e.kind, frame: e.frame, ruleId: e.ruleId, trackId: e.trackId, label: e.label, detail: e.detail }));

describe('rules across failover', () => {
  it('kill -9 and duplicate uploads: the same rule events and totals as an uninterrupted run; a bad rules file is reported and frames go on', async () => {
    // Prepare
    const clip = await generateClip({ seed: 11, frames: 60, objects: 5, crossings: false, format: 'png' });
    await put(stack, DEFAULT_RULES_KEY, JSON.stringify(CLIP_RULES));
    await put(stack, rulesKey('clip-bad'), JSON.stringify({ lines: [{ id: 'broken', a: [0, 0] }] }));
    const upload = async (videoId: string, count = clip.frames.length) => {
      for (const f of clip.frames.slice(0, count)) await put(stack, frameKey(videoId, f.frame, 'png'), f.image);
      await put(stack, `frames/${videoId}/_end`, String(count - 1));
    };
    // Act
    await upload('rules-steady');
    await upload('rules-killed');
    await upload('clip-bad', 20);
    await waitFor('progress on rules-killed', async () => (await results(stack, 'rules-killed')).length >= 20, 90_000, 50);
    const lease = await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk: 'video#rules-killed' }, ConsistentRead: true }));
    const victim = stack.launcher.workers().find((w) => w.alive && w.workerId === lease.Item?.owner)!;
    stack.launcher.kill({ pid: victim.pid }, 'SIGKILL');
    // Redeliveries: frames already committed, uploaded again.
    for (const f of clip.frames.slice(0, 10)) await put(stack, frameKey('rules-killed', f.frame, 'png'), f.image);
    for (const v of ['rules-steady', 'rules-killed', 'clip-bad']) {
      await waitFor(`${v} complete`, async () => (await summary(stack, v))?.status === 'complete', 120_000);
    }
    // Assess
    const steady = await allEvents(stack.clients.ddb, stack.wiring.eventsTable, 'rules-steady');
    const killed = await allEvents(stack.clients.ddb, stack.wiring.eventsTable, 'rules-killed');
    expect(new Set((await results(stack, 'rules-killed')).map((r) => r.worker)).size).toBeGreaterThanOrEqual(2);
    expect(comparable(steady).filter((e) => e.kind === 'line.crossed').length).toBeGreaterThan(0);
    expect(comparable(killed)).toEqual(comparable(steady));
    const totals = (await summary(stack, 'rules-killed'))?.ruleTotals;
    expect(totals).toBeDefined();
    expect(totals).toEqual((await summary(stack, 'rules-steady'))?.ruleTotals);
    expect(steady.filter((e) => e.kind === 'video.started')).toHaveLength(1);
    expect(killed.filter((e) => e.kind === 'video.started').map((e) => e.eventId)).toEqual(steady.filter((e) => e.kind === 'video.started').map((e) => e.eventId));
    expect(killed.filter((e) => e.kind === 'video.completed')).toHaveLength(1);
    const takeover = killed.filter((e) => e.kind === 'video.taken-over');
    expect(takeover.length).toBeGreaterThanOrEqual(1);
    expect(takeover[0]!.detail).toMatchObject({ oldOwner: victim.workerId });
    // The bad rules file: one clear event and log line; every frame recorded ok.
    const bad = await allEvents(stack.clients.ddb, stack.wiring.eventsTable, 'clip-bad');
    const invalid = bad.filter((e) => e.kind === 'rules.invalid');
    expect(invalid).toHaveLength(1);
    expect(String(invalid[0]!.detail?.errors)).toContain('lines[0].b: must be [x, y]');
    expect(bad.filter((e) => e.kind === 'line.crossed')).toEqual([]);
    const badRecords = await results(stack, 'clip-bad');
    expect(badRecords.map((r) => r.status)).toEqual(Array(20).fill('ok'));
    expect(stack.workerLines.some((l) => l.includes('rules document invalid') && l.includes('clip-bad'))).toBe(true);
  });
});

describe('rules across an operator replay (issue 32, decision 46)', () => {
  it('affinity replay --from the middle: records, track ids, events and totals equal an uninterrupted run, and the counts from the events too', async () => {
    // Prepare: the same clip as two videos under the default rules; both complete
    const clip = await generateClip({ seed: 23, frames: 40, objects: 4, crossings: true, format: 'png' });
    await put(stack, DEFAULT_RULES_KEY, JSON.stringify(CLIP_RULES));
    for (const videoId of ['replay-steady', 'replay-redone']) {
      for (const f of clip.frames) await put(stack, frameKey(videoId, f.frame, 'png'), f.image);
      await put(stack, `frames/${videoId}/_end`, String(clip.frames.length - 1));
    }
    for (const v of ['replay-steady', 'replay-redone']) await waitFor(`${v} complete`, async () => (await summary(stack, v))?.status === 'complete', 120_000);
    const before = await results(stack, 'replay-redone');
    // Act: replay the second from frame 20
    const target = loadLocalTarget(dirname(stack.stackFile));
    const io = memoryIo();
    const replayed = await replayCommand(target, { videoId: 'replay-redone', fromFrame: 20 }, io);
    target.close();
    const redone = await waitFor('replay-redone redone', async () => {
      const r = await results(stack, 'replay-redone');
      const s = await summary(stack, 'replay-redone');
      return s?.status === 'complete' && r.length === clip.frames.length && r.slice(20).every((x) => x.token >= replayed.token) ? r : undefined;
    }, 120_000).catch(async (e: unknown) => {
      const r = await results(stack, 'replay-redone');
      throw new Error(`${String(e)}; summary ${JSON.stringify(await summary(stack, 'replay-redone'))}; records ${r.map((x) => `${x.frame}:${x.status}:${x.token}`).join(' ')}; worker lines ${stack.workerLines.filter((l) => l.includes('replay-redone')).slice(-15).join('\n')}`);
    });
    // Assess
    const steady = await results(stack, 'replay-steady');
    const trackIds = (rs: typeof steady) => rs.map((r) => `${r.frame}:${r.status}:${r.detections.map((d) => d.trackId).join(',')}`);
    expect(replayed).toMatchObject({ fromFrame: 20, resent: 20, rebuilt: 20 });
    expect(redone.slice(0, 20)).toEqual(before.slice(0, 20));
    expect(trackIds(redone)).toEqual(trackIds(steady));
    const steadyEvents = await allEvents(stack.clients.ddb, stack.wiring.eventsTable, 'replay-steady');
    const redoneEvents = await allEvents(stack.clients.ddb, stack.wiring.eventsTable, 'replay-redone');
    expect(comparable(steadyEvents).length).toBeGreaterThan(0);
    expect(comparable(redoneEvents)).toEqual(comparable(steadyEvents));
    expect(countEvents(redoneEvents)).toEqual(countEvents(steadyEvents));
    const totals = (await summary(stack, 'replay-redone'))?.ruleTotals;
    expect(totals).toBeDefined();
    expect(totals).toEqual((await summary(stack, 'replay-steady'))?.ruleTotals);
    expect(await summary(stack, 'replay-redone')).toMatchObject({ framesOk: clip.frames.length, framesGap: 0, framesFailed: 0 });
  }, 300_000);
});
