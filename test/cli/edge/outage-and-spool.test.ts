/**
 * The edge's pure rules: one stalled/resumed pair per outage however many attempts it
 * took (the "6 reconnect(s)" of issue 41), the spool's byte bound (oldest first, never
 * the segment in flight), the fleet's plan for a changed config, and the events' shape.
 */
import { describe, expect, it } from 'vitest';
import { initialOutageState, noteDrop, noteFrames, outageSummary, type OutageEvent, type OutageState } from '../../../cli/video/stream-outage.ts';
import { dropPending, segmentsOverBound } from '../../../cli/edge/spool-bound.ts';
import { edgeEvent, planFleet } from '../../../cli/edge/fleet.ts';
import { initialState, type JournalSegment } from '../../../cli/video/stream-journal.ts';
import type { CameraConfig } from '../../../cli/edge/edge-config.ts';

type Step = ['drop', number] | ['frames', number];

function run(steps: readonly Step[]): { state: OutageState; events: OutageEvent[] } {
  let state = initialOutageState();
  const events: OutageEvent[] = [];
  for (const [what, at] of steps) {
    const r = what === 'drop' ? noteDrop(state, `why at ${at}`, at) : noteFrames(state, at);
    state = r.state;
    if (r.event) events.push(r.event);
  }
  return { state, events };
}

describe('outages: one stalled / resumed pair each', () => {
  it('a 20-s outage of 6 attempts is one pair, with its duration and attempts', () => {
    const { state, events } = run([['frames', 0], ['drop', 1000], ['drop', 2000], ['drop', 4000], ['drop', 8000], ['drop', 14000], ['drop', 20000], ['frames', 21000]]);
    expect(events).toEqual([
      { kind: 'source.stalled', outage: 1, reason: 'why at 1000', atMs: 1000, wasUp: true },
      { kind: 'source.resumed', outage: 1, atMs: 21000, outageMs: 20000, attempts: 6 },
    ]);
    expect(outageSummary(state)).toBe('1 outage(s) (6 reconnect attempt(s))');
  });

  it.each<[string, Step[], string[]]>([
    ['nothing drops', [['frames', 0], ['frames', 5]], []],
    ['a camera that never answers: one stall, no resume', [['drop', 0], ['drop', 1], ['drop', 2]], ['source.stalled#1']],
    ['a late first answer resumes the never-connected stall', [['drop', 0], ['drop', 1], ['frames', 2]], ['source.stalled#1', 'source.resumed#1']],
    ['two outages, two pairs', [['frames', 0], ['drop', 1], ['frames', 2], ['drop', 3], ['drop', 4], ['frames', 5]], ['source.stalled#1', 'source.resumed#1', 'source.stalled#2', 'source.resumed#2']],
    ['frames again while up change nothing', [['frames', 0], ['drop', 1], ['frames', 2], ['frames', 3]], ['source.stalled#1', 'source.resumed#1']],
  ])('%s', (_name, steps, expected) => {
    expect(run(steps).events.map((e) => `${e.kind}#${e.outage}`)).toEqual(expected);
  });
});

const seg = (firstFrame: number, bytes: number): JournalSegment => ({ key: `frames/v/${String(firstFrame).padStart(6, '0')}.ts`, firstFrame, frames: 10, file: `/spool/${firstFrame}.ts`, bytes });

describe('the spool bound', () => {
  const pending = [seg(0, 100), seg(10, 100), seg(20, 100), seg(30, 100)];
  it.each<[string, number, string | null, number[]]>([
    ['under the bound: nothing', 400, null, []],
    ['over it: the oldest first, until the rest fit', 250, null, [0, 10]],
    ['the segment in flight is never dropped', 250, 'frames/v/000000.ts', [10, 20]],
    ['a bound below one segment keeps only the in-flight one', 50, 'frames/v/000000.ts', [10, 20, 30]],
  ])('%s', (_name, max, inFlight, dropped) => {
    expect(segmentsOverBound(pending, max, inFlight).map((p) => p.firstFrame)).toEqual(dropped);
  });

  it('dropping keeps the numbering (the frames become a gap, no number is reused)', () => {
    const state = { ...initialState('v', 'mpegts', 0), nextFrame: 40, pending };
    const after = dropPending(state, new Set([pending[0]!.key]));
    expect(after.nextFrame).toBe(40);
    expect(after.pending.map((p) => p.firstFrame)).toEqual([10, 20, 30]);
    expect(after.uploadedSegments).toBe(0);
  });
});

const cam = (video: string, url = `rtsp://h/${video}`, segmentSeconds = 2): CameraConfig => ({ video, url, segmentSeconds, container: 'mpegts', spoolMaxBytes: 1000, readTimeoutSeconds: 10, firstFrame: 0 });

describe('planFleet', () => {
  it.each<[string, CameraConfig[], CameraConfig[], Record<string, string[]>]>([
    ['same file: nothing moves', [cam('a'), cam('b')], [cam('a'), cam('b')], { start: [], stop: [], restart: [], unchanged: ['a', 'b'] }],
    ['a camera added', [cam('a')], [cam('a'), cam('c')], { start: ['c'], stop: [], restart: [], unchanged: ['a'] }],
    ['a camera removed', [cam('a'), cam('b')], [cam('b')], { start: [], stop: ['a'], restart: [], unchanged: ['b'] }],
    ['a camera changed (URL, segment length)', [cam('a'), cam('b')], [cam('a', 'rtsp://other'), cam('b', undefined, 4)], { start: [], stop: [], restart: ['a', 'b'], unchanged: [] }],
  ])('%s', (_name, before, after, expected) => {
    const plan = planFleet(new Map(before.map((c) => [c.video, c])), after);
    expect({ start: plan.start.map((c) => c.video), stop: plan.stop, restart: plan.restart.map((c) => c.video), unchanged: plan.unchanged }).toEqual(expected);
  });
});

describe('edgeEvent', () => {
  it('has the analytics events\' kind, detail-type and a deterministic id apart from the worker\'s', () => {
    const e = edgeEvent('door-1', { kind: 'source.resumed', outage: 2, atMs: 5, outageMs: 20_000, attempts: 6 }, 300);
    expect(e).toEqual({
      type: 'event',
      source: 'edge',
      videoId: 'door-1',
      eventId: '0000000300#source.resumed###edge-2',
      kind: 'source.resumed',
      detailType: 'Source Resumed',
      frame: 300,
      atMs: 5,
      detail: { outage: 2, outageMs: 20_000, attempts: 6 },
    });
  });
});
