import { describe, expect, it } from 'vitest';
import { emptyCheckpoint } from '../../../core/commit/checkpoint.ts';
import { emptySequencerState, type SequencedStep } from '../../../core/ordering/sequencer.ts';
import type { FrameOutcome } from '../../../core/ports.ts';
import { buildCommit, resultExpiry } from '../../../gpu-worker/runtime/commit-builder.ts';

const ref = (frame: number) => ({ frame, bucket: 'b', key: `frames/v/${frame}.jpg`, sizeBytes: 10 });
const ok = (trackId: number): FrameOutcome => ({ status: 'ok', detections: [{ trackId, label: 'car', score: 0.9, box: [0, 0, 1, 1] }] });

function build(steps: SequencedStep[], outcomes: [number, FrameOutcome][], committed = emptyCheckpoint(0), resultsRetentionDays?: number, unrecordedBelowSilent?: ReadonlySet<number>) {
  return buildCommit({
    ...(resultsRetentionDays !== undefined ? { resultsRetentionDays } : {}),
    ...(unrecordedBelowSilent ? { unrecordedBelowSilent } : {}),
    videoId: 'v',
    token: 4,
    workerId: 'w',
    slot: 1,
    committed,
    steps,
    outcomes: new Map(outcomes),
    sequencer: emptySequencerState(0),
    complete: false,
    processor: 'state',
    nowMs: 1000,
  });
}

describe('buildCommit', () => {
  it('writes one record per frame, per-frame gaps, and counts each status', () => {
    const { unit } = build(
      [
        { type: 'frame', ref: ref(0) },
        { type: 'gap', frame: 1, reason: 'missing-frame' },
        { type: 'gap', frame: 2, reason: 'missing-frame' },
        { type: 'frame', ref: ref(3) },
        { type: 'reject', ref: ref(9), reason: 'after-end-of-stream' },
      ],
      [
        [0, ok(1)],
        [3, { status: 'failed', reason: 'corrupt-image' }],
      ],
    );
    expect(unit.results.map((r) => `${r.frame}:${r.status}:${r.reason ?? ''}`)).toEqual(['0:ok:', '1:gap:missing-frame', '2:gap:missing-frame', '3:failed:corrupt-image', '9:failed:after-end-of-stream']);
    expect(unit.checkpoint).toMatchObject({ seq: 1, framesOk: 1, framesGap: 2, framesFailed: 2, framesLate: 0, firstFrame: 0, lastFrame: 3, processor: 'state' });
    expect(unit.replacesGap).toBeUndefined();
    expect(unit.summary).toMatchObject({ framesOk: 1, framesGap: 2, framesFailed: 2, framesLate: 0, token: 4, status: 'active' });
  });

  it('turns a late frame that replaces a gap into framesLate + 1 and framesGap - 1, and marks its put as gap-replacing', () => {
    const before = { ...emptyCheckpoint(0), seq: 7, framesOk: 10, framesGap: 1, firstFrame: 0, lastFrame: 10 };
    const { unit } = build([{ type: 'late', ref: { ...ref(4), replacesGap: true } }], [[4, ok(3)]], before);
    expect(unit.results).toMatchObject([{ frame: 4, status: 'late', detections: [{ trackId: 3 }] }]);
    expect(unit.replacesGap).toEqual([4]);
    expect(unit.checkpoint).toMatchObject({ seq: 8, framesOk: 10, framesLate: 1, framesGap: 0 });
    expect(unit.expectedSeq).toBe(7);
  });

  it('gives every unit a fresh commit id and names the one it replaces, even when two units share a seq', () => {
    const before = { ...emptyCheckpoint(0), seq: 7, commitId: 'previous-commit' };
    const first = build([{ type: 'frame', ref: ref(0) }], [[0, ok(1)]], before).unit;
    // The retry after a rollback: same previous checkpoint, same seq, another identity.
    const retry = build([{ type: 'frame', ref: ref(0) }], [[0, ok(1)]], before).unit;
    expect(first.expectedCommitId).toBe('previous-commit');
    expect(first.checkpoint.seq).toBe(retry.checkpoint.seq);
    expect(first.checkpoint.commitId).not.toBe('previous-commit');
    expect(first.checkpoint.commitId).not.toBe(retry.checkpoint.commitId);
    expect(first.checkpoint.commitId).toMatch(/^[A-Za-z0-9_-]{16}$/);
  });

  it('counts a late frame below the start without touching framesGap, and lowers firstFrame', () => {
    const before = { ...emptyCheckpoint(-1), framesOk: 3, firstFrame: 5, lastFrame: 7 };
    const { unit } = build([{ type: 'late', ref: { ...ref(2), replacesGap: false } }], [[2, { status: 'failed', reason: 'corrupt-image' }]], before);
    expect(unit.results).toMatchObject([{ frame: 2, status: 'failed', reason: 'corrupt-image' }]);
    expect(unit.checkpoint).toMatchObject({ framesFailed: 1, framesLate: 0, framesGap: 0, firstFrame: 2 });
    expect(unit.replacesGap).toBeUndefined();
  });

  it('refuses to commit a processed step without an outcome', () => {
    expect(() => build([{ type: 'frame', ref: ref(0) }], [])).toThrow(/no outcome/);
  });
});

describe('buildCommit during an operator replay (decision 46)', () => {
  it('frames and gaps below silentBelow rebuild state only: no record, no count, no event; from it on, as usual; a late frame below it is still recorded', () => {
    // Prepare: rewound to frame 0, frames 0-2 recorded already (kept counts 3), replaying from 3
    const committed = { ...emptyCheckpoint(0), framesOk: 3, firstFrame: 0, lastFrame: 2, replay: { silentBelow: 3 } };
    // Act
    const { unit } = build(
      [
        { type: 'late', ref: { ...ref(1), replacesGap: true } },
        { type: 'frame', ref: ref(0) },
        { type: 'gap', frame: 1, reason: 'missing-frame' },
        { type: 'frame', ref: ref(2) },
        { type: 'frame', ref: ref(3) },
        { type: 'frame', ref: ref(4) },
      ],
      [
        [1, ok(7)],
        [0, ok(1)],
        [2, { status: 'failed', reason: 'corrupt-image' }],
        [3, ok(1)],
        [4, ok(1)],
      ],
      committed,
    );
    // Assess
    expect(unit.results.map((r) => `${r.frame}:${r.status}`)).toEqual(['1:late', '3:ok', '4:ok']);
    expect(unit.checkpoint).toMatchObject({ framesOk: 5, framesLate: 1, framesFailed: 0, replay: { silentBelow: 3 } });
    expect((unit.events ?? []).filter((e) => e.frame >= 0 && e.frame < 3 && e.kind !== 'frame.failed')).toEqual([]);
    expect((unit.events ?? []).some((e) => e.kind === 'frame.failed')).toBe(false);
  });

  it('a frame or gap below silentBelow that has no record is recorded as usual (issue 40, defect 3)', () => {
    // Prepare: replaying from 5, frames 0-1 recorded; 2 arrived, 3 never did, neither has a record.
    const committed = { ...emptyCheckpoint(0), framesOk: 2, firstFrame: 0, lastFrame: 1, replay: { silentBelow: 5 } };
    const steps: SequencedStep[] = [
      { type: 'frame', ref: ref(0) },
      { type: 'frame', ref: ref(1) },
      { type: 'frame', ref: ref(2) },
      { type: 'gap', frame: 3, reason: 'missing-frame' },
      { type: 'frame', ref: ref(4) },
    ];
    const outcomes: [number, FrameOutcome][] = [0, 1, 2, 4].map((f) => [f, ok(1)]);
    // Act
    const { unit } = build(steps, outcomes, committed, undefined, new Set([2, 3]));
    const silenced = build(steps, outcomes, committed);
    // Assess
    expect(unit.results.map((r) => `${r.frame}:${r.status}`)).toEqual(['2:ok', '3:gap']);
    expect(unit.checkpoint).toMatchObject({ framesOk: 3, framesGap: 1 });
    expect(silenced.unit.results).toEqual([]);
  });
});

describe('resultsRetentionDays: the TTL of frame records', () => {
  // nowMs 1000 in build(): commit time 1 s after the epoch.
  it.each([
    ['absent: never expires (records as before the setting)', undefined, undefined],
    ['0: never expires', 0, undefined],
    ['1 day', 1, 1 + 86_400],
    ['30 days', 30, 1 + 30 * 86_400],
    ['36,500 days (the maximum)', 36_500, 1 + 36_500 * 86_400],
  ])('%s', (_name, days, ttl) => {
    const { unit } = build(
      [
        { type: 'frame', ref: ref(0) },
        { type: 'gap', frame: 1, reason: 'missing-frame' },
        { type: 'frame', ref: ref(2) },
        { type: 'reject', ref: ref(9), reason: 'after-end-of-stream' },
      ],
      [
        [0, ok(1)],
        [2, { status: 'failed', reason: 'corrupt-image' }],
      ],
      emptyCheckpoint(0),
      days,
    );
    // Every frame record, whatever its status, carries the same expiry; the summary and the checkpoint none.
    expect(unit.results.map((r) => r.ttlEpochSeconds)).toEqual([ttl, ttl, ttl, ttl]);
    expect(unit.results.every((r) => ('ttlEpochSeconds' in r) === (ttl !== undefined))).toBe(true);
    expect('ttlEpochSeconds' in unit.summary).toBe(false);
    expect('ttlEpochSeconds' in unit.checkpoint).toBe(false);
  });

  it('gives a late frame that replaces a gap its own expiry, from its own commit', () => {
    const before = { ...emptyCheckpoint(0), seq: 7, framesOk: 10, framesGap: 1, firstFrame: 0, lastFrame: 10 };
    const { unit } = build([{ type: 'late', ref: { ...ref(4), replacesGap: true } }], [[4, ok(3)]], before, 7);
    expect(unit.results).toMatchObject([{ frame: 4, status: 'late', ttlEpochSeconds: 1 + 7 * 86_400 }]);
  });

  it.each([
    [0, 0, {}],
    [1_764_201_600_999, 0, {}],
    [1_764_201_600_999, 90, { ttlEpochSeconds: 1_764_201_600 + 90 * 86_400 }],
  ])('resultExpiry(%d, %d)', (nowMs, days, attr) => {
    expect(resultExpiry(nowMs, days)).toEqual(attr);
  });
});
