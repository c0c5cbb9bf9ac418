import { describe, expect, it } from 'vitest';
import { changeRules, emptyAnalytics, footPoint, insidePolygon, occupancy, runRules, sideOf, withRules, type AnalyticsState, type TrackedFrame } from '../../../core/analytics/rule-engine.ts';
import { validateRules, type RulesDocument } from '../../../core/analytics/rules.ts';
import type { Detection } from '../../../core/ports.ts';

function rules(doc: unknown): RulesDocument {
  const r = validateRules(doc);
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.rules;
}

/** A detection whose foot point (bottom centre) is (x, y). */
function at(trackId: number, x: number, y: number, label = 'person'): Detection {
  return { trackId, label, score: 0.9, box: [x - 5, y - 20, x + 5, y] };
}

/** Frames 0.. of one track whose foot point follows `points`. */
function path(trackId: number, points: readonly (readonly [number, number])[], label = 'person', from = 0): TrackedFrame[] {
  return points.map(([x, y], i) => ({ frame: from + i, detections: [at(trackId, x, y, label)] }));
}

// Horizontal line y = 100 from x = 0 to 200, a→b pointing right: below it (y > 100) is its
// right-hand side on screen, so moving down across it is `in`.
const DOOR = { id: 'door', a: [0, 100], b: [200, 100], hysteresisPx: 4 };

function run(doc: unknown, frames: readonly TrackedFrame[]) {
  return runRules(withRules(emptyAnalytics(), 'e1', rules(doc)), frames);
}

describe('line crossings', () => {
  const ys = (...y: number[]) => y.map((v) => [50, v] as const);
  const cases: [string, TrackedFrame[], string[]][] = [
    ['a crossing downwards is in', path(1, ys(80, 90, 110, 120)), ['2:in']],
    ['a crossing upwards is out', path(1, ys(120, 110, 90)), ['2:out']],
    ['jitter inside the dead band never counts', path(1, ys(80, 98, 102, 99, 103, 97, 101, 80)), []],
    ['a track that touches the line and leaves does not count', path(1, ys(80, 100, 97, 80)), []],
    ['a track first seen on the line takes its side without counting', path(1, ys(100, 110, 130)), []],
    ['a crossing in steps through the band counts once, where the new side is confirmed', path(1, ys(90, 97, 100, 103, 104.5, 120)), ['4:in']],
    ['real back-and-forth beyond the band counts every change of side', path(1, ys(90, 110, 90, 110)), ['1:in', '2:out', '3:in']],
    ['a crossing beyond the segment end does not count', path(1, [[250, 80], [250, 120]]), []],
    ['after passing beyond the end, a return across the segment counts', path(1, [[250, 80], [250, 120], [50, 80]]), ['2:out']],
  ];
  it.each(cases)('%s', (_name, frames, expected) => {
    const { events } = run({ lines: [DOOR] }, frames);
    expect(events.map((e) => `${e.frame}:${e.detail?.direction}`)).toEqual(expected);
    expect(events.every((e) => e.kind === 'line.crossed' && e.ruleId === 'door' && e.trackId === 1)).toBe(true);
  });

  it('counts per class, both ways; class filters and unassociated detections are honoured', () => {
    const frames: TrackedFrame[] = [
      { frame: 0, detections: [at(1, 50, 80), at(2, 60, 80, 'car'), at(0, 70, 80), at(3, 80, 120)] },
      { frame: 1, detections: [at(1, 50, 120), at(2, 60, 120, 'car'), at(0, 70, 120), at(3, 80, 80)] },
    ];
    const all = run({ lines: [DOOR] }, frames);
    expect(all.state.totals.lines).toEqual({ door: { person: [1, 1], car: [1, 0] } });
    const people = run({ lines: [{ ...DOOR, classes: ['person'] }] }, frames);
    expect(people.state.totals.lines).toEqual({ door: { person: [1, 1] } });
  });

  it('a track keeps the class it was first seen with', () => {
    const frames = [{ frame: 0, detections: [at(1, 50, 80, 'person')] }, { frame: 1, detections: [at(1, 50, 120, 'bicycle')] }];
    expect(run({ lines: [DOOR] }, frames).state.totals.lines).toEqual({ door: { person: [1, 0] } });
  });
});

describe('geometry', () => {
  it.each([
    [[50, 110], 1],
    [[50, 90], -1],
    [[50, 103], 0],
    [[50, 96], 0],
  ] as const)('side of %j is %d', (p, side) => {
    expect(sideOf({ id: 'l', a: [0, 100], b: [200, 100], hysteresisPx: 4 }, p)).toBe(side);
  });
  it.each([
    [[50, 50], true],
    [[150, 50], false],
    [[5, 95], true],
    [[-1, 50], false],
  ] as const)('point %j inside the square: %s', (p, inside) => {
    expect(insidePolygon([[0, 0], [100, 0], [100, 100], [0, 100]], p)).toBe(inside);
  });
  it('tests the bottom centre of a box', () => {
    expect(footPoint([10, 20, 30, 60])).toEqual([20, 60]);
  });
});

describe('zones', () => {
  const LOBBY = { id: 'lobby', polygon: [[0, 0], [100, 0], [100, 100], [0, 100]], dwellSeconds: 1 };
  it('raises enter, one dwell after dwellSeconds (by frame numbers and fps), and exit', () => {
    // fps 10: dwell 1 s = 10 frames after entry. Outside at 0, inside 1..20, outside at 21..
    const pts = Array.from({ length: 25 }, (_, i) => (i >= 1 && i <= 20 ? ([50, 50] as const) : ([150, 50] as const)));
    const { events, state } = run({ fps: 10, zones: [LOBBY] }, path(7, pts));
    expect(events.map((e) => `${e.frame}:${e.kind}`)).toEqual(['1:zone.entered', '11:zone.dwell', '21:zone.exited']);
    expect(events[1]!.detail).toEqual({ seconds: 1, enteredFrame: 1 });
    expect(events[2]!.detail).toEqual({ seconds: 2, enteredFrame: 1, reason: 'left' });
    expect(state.totals.zones).toEqual({ lobby: { person: [1, 1, 1] } });
  });

  it('dwell is raised once per track and zone, even when the track comes back', () => {
    const pts: [number, number][] = [...Array(15).fill([50, 50]), [150, 50], ...Array(15).fill([50, 50])];
    const { events } = run({ fps: 10, zones: [LOBBY] }, path(7, pts));
    expect(events.filter((e) => e.kind === 'zone.dwell')).toHaveLength(1);
    expect(events.filter((e) => e.kind === 'zone.entered')).toHaveLength(2);
  });

  it('a frame gap counts towards dwell (time is frame numbers / fps)', () => {
    const frames = [{ frame: 0, detections: [at(1, 50, 50)] }, { frame: 30, detections: [at(1, 50, 50)] }];
    const { events } = run({ fps: 10, zones: [LOBBY], forgetAfterFrames: 100 }, frames);
    expect(events.map((e) => `${e.frame}:${e.kind}`)).toEqual(['0:zone.entered', '30:zone.dwell']);
  });

  it.each([
    // A variable frame rate: 10 frames take 2.5 s of stream time; dwell (1 s) is reached at frame 4, exit says 2.5 s.
    { name: 'the stream time, at a variable frame rate', ptsOf: (f: number) => 1_000 + f * 250, dwellFrame: 4, exitSeconds: 2.5 },
    // A segmenter that restarts its time line at frame 5: time runs backwards, so frame numbers / fps decide.
    { name: 'frames / fps when the stream time runs backwards', ptsOf: (f: number) => (f < 5 ? 1_000 + f * 100 : (f - 5) * 100), dwellFrame: 10, exitSeconds: 1 },
  ])('dwell is $name', ({ ptsOf, dwellFrame, exitSeconds }) => {
    const frames: TrackedFrame[] = Array.from({ length: 12 }, (_, f) => ({ frame: f, ptsMs: ptsOf(f), detections: [at(1, f <= 10 ? 50 : 150, 50)] }));
    const { events } = run({ fps: 10, zones: [LOBBY] }, frames);
    expect(events.map((e) => `${e.frame}:${e.kind}`)).toEqual(['0:zone.entered', `${dwellFrame}:zone.dwell`, '11:zone.exited']);
    expect(events[2]!.detail).toMatchObject({ seconds: exitSeconds === 1 ? 1.1 : 2.75, enteredFrame: 0 });
  });

  it('a track the tracker has dropped leaves its zones and its state is dropped', () => {
    const frames: TrackedFrame[] = [{ frame: 0, detections: [at(1, 50, 50), at(2, 60, 60)] }];
    for (let f = 1; f <= 6; f++) frames.push({ frame: f, detections: [at(2, 60, 60)] });
    const { events, state } = run({ zones: [{ ...LOBBY, dwellSeconds: undefined }], forgetAfterFrames: 5 }, frames);
    expect(events.map((e) => `${e.frame}:${e.kind}:${e.trackId}`)).toEqual(['0:zone.entered:1', '0:zone.entered:2', '6:zone.exited:1']);
    expect(events[2]!.detail?.reason).toBe('track-lost');
    expect(Object.keys(state.tracks)).toEqual(['2']);
    expect(occupancy(state)).toEqual({ lobby: { person: 1 } });
  });
});

describe('determinism and the checkpoint', () => {
  /** A seeded walk of `tracks` tracks over `frames` frames, some leaving for good. */
  function scene(tracks: number, frames: number, seed: number): TrackedFrame[] {
    let s = seed;
    const rnd = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pos = Array.from({ length: tracks }, () => [rnd() * 640, rnd() * 480, (rnd() - 0.5) * 12, (rnd() - 0.5) * 12]);
    const out: TrackedFrame[] = [];
    for (let f = 0; f < frames; f++) {
      const detections: Detection[] = [];
      pos.forEach((p, i) => {
        p[0]! += p[2]! + (rnd() - 0.5) * 3;
        p[1]! += p[3]! + (rnd() - 0.5) * 3;
        if (f > frames / 2 && i % 5 === 0) return; // gone: forgotten later
        if (rnd() < 0.1) return; // missed detection
        detections.push(at(i + 1, p[0]!, p[1]!, i % 3 === 0 ? 'car' : 'person'));
      });
      out.push({ frame: f, detections });
    }
    return out;
  }
  const doc = {
    fps: 10,
    forgetAfterFrames: 20,
    lines: Array.from({ length: 5 }, (_, i) => ({ id: `line${i}`, a: [0, 80 * (i + 1)], b: [640, 60 * (i + 1)] })),
    zones: Array.from({ length: 5 }, (_, i) => ({ id: `zone${i}`, polygon: [[100 * i, 0], [100 * i + 150, 0], [100 * i + 150, 480], [100 * i, 480]], dwellSeconds: 2 })),
  };

  it('runs resumed from a JSON round trip of the state (a checkpoint) equal one uninterrupted run', () => {
    const frames = scene(50, 200, 42);
    const whole = run(doc, frames);
    expect(whole.events.length).toBeGreaterThan(50);
    for (const cut of [1, 37, 100, 199]) {
      const first = run(doc, frames.slice(0, cut));
      const stored = JSON.parse(JSON.stringify(first.state)) as AnalyticsState;
      const second = runRules(stored, frames.slice(cut));
      expect([...first.events, ...second.events]).toEqual(whole.events);
      expect(second.state).toEqual(whole.state);
    }
  });

  it('does not change the state it is given', () => {
    const start = withRules(emptyAnalytics(), 'e', rules(doc));
    const copy = structuredClone(start);
    runRules(start, scene(10, 20, 1));
    expect(start).toEqual(copy);
  });

  it('a new rules version keeps the state of unchanged rules and drops that of changed ones', () => {
    const r1 = rules({ lines: [DOOR, { id: 'gate', a: [0, 300], b: [200, 300] }] });
    const s1 = runRules(withRules(emptyAnalytics(), 'v1', r1), path(1, [[50, 80]]).map((f) => ({ ...f, detections: [...f.detections, at(2, 50, 280)] }))).state;
    expect(s1.tracks['1']!.s).toEqual({ door: -1, gate: -1 });
    const r2 = rules({ lines: [DOOR, { id: 'gate', a: [0, 310], b: [200, 310] }] });
    const s2 = withRules(s1, 'v2', r2);
    expect(s2.tracks['1']!.s).toEqual({ door: -1 });
    expect(s2.etag).toBe('v2');
    expect(withRules(s2, 'v2', r1)).toBe(s2); // same ETag: nothing to do
  });
});

describe('rule edits keep counts true (issue 32)', () => {
  const ZONE = { id: 'left', polygon: [[0, 0], [100, 0], [100, 200], [0, 200]] };
  const inside = (from: number, n: number) => path(1, Array.from({ length: n }, () => [50, 150] as const), 'person', from);
  /** entered − exited per zone from the events, the way `affinity counts` computes "inside". */
  const insideByEvents = (events: readonly { kind: string }[]) => events.filter((e) => e.kind === 'zone.entered').length - events.filter((e) => e.kind === 'zone.exited').length;

  it.each([
    { name: 'a zone moved', next: { zones: [{ ...ZONE, polygon: [[0, 0], [120, 0], [120, 200], [0, 200]] }] }, reenters: true },
    { name: 'a zone removed', next: { zones: [] as (typeof ZONE)[] }, reenters: false },
    { name: 'a zone re-added after its removal', next: { zones: [] as (typeof ZONE)[] }, readd: true, reenters: true },
  ])('$name: a track inside leaves with a rule-changed exit, and entered − exited stays the number inside', ({ next, readd, reenters }) => {
    // Prepare: one track inside the zone for 3 frames
    const v1 = runRules(withRules(emptyAnalytics(), 'v1', rules({ zones: [ZONE] })), inside(0, 3));
    // Act: the rules change (and, for a re-add, change back), the track stays where it is
    const changed = changeRules(v1.state, 'v2', rules(next));
    let state = changed.state;
    const events = [...v1.events, ...changed.events];
    if (readd) {
      const back = changeRules(state, 'v3', rules({ zones: [ZONE] }));
      events.push(...back.events);
      state = back.state;
    }
    const after = runRules(state, inside(3, 2));
    events.push(...after.events);
    // Assess
    expect(changed.events).toEqual([{ kind: 'zone.exited', frame: 2, ruleId: 'left', trackId: 1, label: 'person', detail: { seconds: 0.2, enteredFrame: 0, reason: 'rule-changed' }, discriminator: 'v2' }]); // the default 10 fps
    const occupied = Object.values(occupancy(after.state)).reduce((n, byLabel) => n + Object.values(byLabel).reduce((a, b) => a + b, 0), 0);
    expect(occupied).toBe(reenters ? 1 : 0);
    expect(insideByEvents(events)).toBe(occupied);
    const [entered, exited] = after.state.totals.zones.left!.person!;
    expect(entered - exited).toBe(occupied);
  });

  it('the same ETag changes nothing and raises nothing', () => {
    const v1 = runRules(withRules(emptyAnalytics(), 'v1', rules({ zones: [ZONE] })), inside(0, 3));
    expect(changeRules(v1.state, 'v1', rules({ zones: [] }))).toEqual({ state: v1.state, events: [] });
  });
});
