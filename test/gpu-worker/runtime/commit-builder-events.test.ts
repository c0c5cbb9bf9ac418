import { describe, expect, it } from 'vitest';
import { emptyCheckpoint, type VideoCheckpoint } from '../../../core/commit/checkpoint.ts';
import { emptySequencerState, type SequencedStep } from '../../../core/ordering/sequencer.ts';
import type { FrameOutcome } from '../../../core/ports.ts';
import { validateRules } from '../../../core/analytics/rules.ts';
import type { RulesView } from '../../../core/analytics/commit-events.ts';
import { eventId } from '../../../core/analytics/event-schema.ts';
import { storedEventsOf, unitCost, unitFits } from '../../../core/commit/commit-packing.ts';
import { isRuleEventsItem } from '../../../core/analytics/event-packing.ts';
import { buildCommit } from '../../../gpu-worker/runtime/commit-builder.ts';

const ref = (frame: number) => ({ frame, bucket: 'b', key: `frames/v/${frame}.jpg`, sizeBytes: 10 });
/** Track 1 with its foot point at y. */
const atY = (y: number): FrameOutcome => ({ status: 'ok', detections: [{ trackId: 1, label: 'person', score: 0.9, box: [45, y - 20, 55, y] }] });
const doc = validateRules({ lines: [{ id: 'door', a: [0, 100], b: [200, 100] }] });
if (!doc.ok) throw new Error('bad test rules');
const RULES: RulesView = { etag: 'video:"e1"', rules: doc.rules };

function build(steps: SequencedStep[], outcomes: [number, FrameOutcome][], o: { committed?: VideoCheckpoint; rules?: RulesView; complete?: boolean; parked?: Map<number, string> } = {}) {
  return buildCommit({
    videoId: 'v',
    token: 4,
    workerId: 'w',
    slot: 1,
    committed: o.committed ?? emptyCheckpoint(0),
    steps,
    outcomes: new Map(outcomes),
    sequencer: emptySequencerState(0),
    complete: o.complete ?? false,
    processor: 'state',
    nowMs: 1000,
    ...(o.rules ? { rules: o.rules } : {}),
    ...(o.parked ? { parked: o.parked } : {}),
  }).unit;
}

const frames = (...n: number[]): SequencedStep[] => n.map((f) => ({ type: 'frame', ref: ref(f) }));
const kinds = (u: ReturnType<typeof build>) => (u.events ?? []).map((e) => `${e.frame}:${e.kind}`);

describe('buildCommit: events', () => {
  it('the first commit raises video.started; rule events ride with the frames that cause them', () => {
    const u = build(frames(0, 1), [[0, atY(80)], [1, atY(120)]], { rules: RULES });
    expect(kinds(u)).toEqual(['0:video.started', '1:line.crossed']);
    expect(u.events![1]).toMatchObject({ videoId: 'v', eventId: eventId({ frame: 1, kind: 'line.crossed', ruleId: 'door', trackId: 1 }), ruleId: 'door', trackId: 1, label: 'person', detail: { direction: 'in' }, token: 4 });
    expect(u.checkpoint.analytics?.totals.lines).toEqual({ door: { person: [1, 0] } });
    expect(u.checkpoint.analytics?.etag).toBe('video:"e1"');
    expect(u.summary.ruleTotals).toEqual({ lines: { door: { person: [1, 0] } }, zones: {} });
  });

  it('late frames raise no rule events and leave the rule state alone', () => {
    const first = build(frames(0, 1), [[0, atY(80)], [1, atY(80)]], { rules: RULES });
    const late = build([{ type: 'late', ref: { ...ref(5), replacesGap: true } }], [[5, atY(120)]], { committed: { ...first.checkpoint, framesGap: 1 }, rules: RULES });
    expect(late.events).toBeUndefined();
    expect(late.checkpoint.analytics).toEqual(first.checkpoint.analytics);
  });

  it('failed, parked, completed: one life event each; no second video.started', () => {
    const first = build(frames(0), [[0, atY(80)]], { rules: RULES });
    const u = build(frames(1, 2), [[1, { status: 'failed', reason: 'corrupt-image' }], [2, { status: 'failed', reason: 'processing-error' }]], {
      committed: first.checkpoint,
      rules: RULES,
      complete: true,
      parked: new Map([[2, 'processing-error']]),
    });
    expect(kinds(u)).toEqual(['1:frame.failed', '2:frame.parked', '2:video.completed']);
    expect(u.events![0]!.detail).toMatchObject({ reason: 'corrupt-image', token: 4, key: 'frames/v/1.jpg' });
  });

  it('a reject-only first unit starts the video once', () => {
    const first = build([{ type: 'reject', ref: ref(9), reason: 'after-end-of-stream' }], []);
    expect(kinds(first)).toEqual(['9:video.started', '9:frame.failed']);
    expect(kinds(build(frames(0), [[0, atY(80)]], { committed: first.checkpoint }))).toEqual([]);
  });

  it('an invalid rules document raises rules.invalid once per version; the last good rules stay in effect', () => {
    const first = build(frames(0), [[0, atY(80)]], { rules: RULES });
    const invalid: RulesView = { ...RULES, invalid: { etag: 'video:"bad"', errors: ['lines[0].a: must be [x, y]'] } };
    const u = build(frames(1), [[1, atY(120)]], { committed: first.checkpoint, rules: invalid });
    expect(kinds(u)).toEqual(['1:rules.invalid', '1:line.crossed']);
    expect(u.events![0]).toMatchObject({ eventId: eventId({ frame: 1, kind: 'rules.invalid', discriminator: 'video:"bad"' }), detail: { etag: 'video:"bad"', keptEtag: 'video:"e1"' } });
    const again = build(frames(2), [[2, atY(130)]], { committed: u.checkpoint, rules: invalid });
    expect(kinds(again)).toEqual([]);
  });

  it('the same frames from the same checkpoint give the same event ids (a successor re-running them)', () => {
    const first = build(frames(0), [[0, atY(80)]], { rules: RULES });
    const a = build(frames(1, 2), [[1, atY(120)], [2, atY(80)]], { committed: first.checkpoint, rules: RULES });
    const b = build(frames(1, 2), [[1, atY(120)], [2, atY(80)]], { committed: JSON.parse(JSON.stringify(first.checkpoint)) as VideoCheckpoint, rules: RULES });
    expect(a.events!.map((e) => e.eventId)).toEqual(b.events!.map((e) => e.eventId));
    expect(a.checkpoint.analytics).toEqual(b.checkpoint.analytics);
    expect(a.checkpoint.commitId).not.toBe(b.checkpoint.commitId);
  });

  it('without a view (no rules store, or a failed read) the rules in the checkpoint keep running', () => {
    const first = build(frames(0), [[0, atY(80)]], { rules: RULES });
    const u = build(frames(1), [[1, atY(120)]], { committed: first.checkpoint });
    expect(kinds(u)).toEqual(['1:line.crossed']);
    expect(u.checkpoint.analytics?.etag).toBe('video:"e1"');
  });

  it('rule events are stored in batches: 121 events of two frames are 3 outbox items, and the unit fits', () => {
    const many = validateRules({ lines: Array.from({ length: 30 }, (_, i) => ({ id: `l${i}`, a: [0, 100 + i], b: [200, 100 + i], hysteresisPx: 0 })) });
    if (!many.ok) throw new Error('bad');
    const view = { etag: 'x', rules: many.rules };
    const det = (trackId: number, y: number) => ({ trackId, label: 'person', score: 1, box: [45, y - 20, 55, y] as [number, number, number, number] });
    const outcome = (y: number): FrameOutcome => ({ status: 'ok', detections: [1, 2, 3, 4].map((t) => det(t, y)) });
    const u = build(frames(0, 1), [[0, outcome(50)], [1, outcome(200)]], { rules: view });
    expect(u.events!.length).toBe(1 + 30 * 4);
    // Two frame records, the video item, the summary; video.started alone; the 120 crossings two batches (10 KB each at most);
    // the rules document, which may ride along (stored out of line, decision 76).
    expect(unitCost(u).items).toBe(2 + 2 + 3 + 1);
    expect(storedEventsOf(u).map((e) => e.kind)).toEqual(['video.started', 'rule.events', 'rule.events']);
    expect(storedEventsOf(u).reduce((n, e) => n + (isRuleEventsItem(e) ? e.events.length : 0), 0)).toBe(120);
    expect(unitFits(u)).toBe(true);
  });
});
