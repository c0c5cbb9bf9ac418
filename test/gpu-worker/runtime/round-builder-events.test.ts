import { describe, expect, it } from 'vitest';
import { emptyCheckpoint } from '../../../core/commit/checkpoint.ts';
import { emptyAnalytics, withRules } from '../../../core/analytics/rule-engine.ts';
import { validateRules } from '../../../core/analytics/rules.ts';
import { estimatedBytes, MAX_CHECKPOINT_BYTES, storedItemsOf, unitCost, unitFits } from '../../../core/commit/commit-packing.ts';
import type { FrameOutcome, LogSink } from '../../../core/ports.ts';
import { buildRound } from '../../../gpu-worker/runtime/round-builder.ts';
import type { VideoPlan, VideoRun } from '../../../gpu-worker/runtime/frame-runner.ts';
import { VideoSession } from '../../../gpu-worker/runtime/video-session.ts';

const OPTIONS = { reorderWaitMs: 5_000, reorderBufferFrames: 64, firstFrameNumber: 0 };
const ref = (frame: number) => ({ frame, bucket: 'b', key: `frames/v/${String(frame).padStart(6, '0')}.jpg`, sizeBytes: 10 });
const FENCE = { slot: 0, workerId: 'w', epoch: 1 };

/** `lines` horizontal lines between y = 100 and 100 + lines; 4 tracks jump across all of them every frame. */
function sessionWithLines(lines: number, frames: number): VideoSession {
  const doc = validateRules({ lines: Array.from({ length: lines }, (_, i) => ({ id: `l${i}`, a: [0, 100 + i], b: [200, 100 + i], hysteresisPx: 0 })) });
  if (!doc.ok) throw new Error(doc.errors.join('; '));
  const s = new VideoSession('v', 1, { ...emptyCheckpoint(0), analytics: withRules(emptyAnalytics(), 'e', doc.rules) }, OPTIONS, 0);
  for (let f = 0; f < frames; f++) {
    expect(s.offerFrame(ref(f), 0).kind).toBe('accepted');
    s.takeHandle(`h${f}`, 0);
  }
  return s;
}

/** `tracks` tracks that jump across every line each frame. */
const outcome = (frame: number, tracks = 4): FrameOutcome => ({
  status: 'ok',
  detections: Array.from({ length: tracks }, (_, i) => i + 1).map((trackId) => ({ trackId, label: 'person', score: 1, box: [45, (frame % 2 ? 200 : 50) - 20, 55, frame % 2 ? 200 : 50] as [number, number, number, number] })),
});

const runnerOf = (tracks: number) => ({
  run: async (plans: readonly VideoPlan[]) =>
    new Map<string, VideoRun>(plans.map((p) => [p.videoId, { ok: true, outcomes: new Map(p.steps.flatMap((s) => (s.type === 'frame' ? [[s.ref.frame, outcome(s.ref.frame, tracks)] as const] : []))) }])),
});
const logged: string[] = [];
const log: LogSink = { debug() {}, info() {}, warn: (m) => void logged.push(m), error: (m) => void logged.push(m) };
const depsOf = (tracks: number) => ({ runner: runnerOf(tracks), processor: { snapshot: () => 'tracker', openVideo() {}, closeVideo() {} }, log });
const deps = depsOf(4);

describe('buildRound with events', () => {
  it('rule events are one batch item per unit: 120 crossings over 4 frames commit in one round (99 items as single events did not)', async () => {
    // 10 lines x 4 tracks = 40 crossings per frame after the first: 4 frames make 120 events.
    const s = sessionWithLines(10, 4);
    const round = await buildRound(deps, [s], FENCE, 0);
    expect(round.failures).toEqual([]);
    const unit = round.units[0]!.unit;
    expect(unit.results.map((r) => r.frame)).toEqual([0, 1, 2, 3]);
    expect(unit.events!.filter((e) => e.kind === 'line.crossed')).toHaveLength(120);
    expect(unitFits(unit)).toBe(true);
    // The transaction holds: the video item, the records, the summary, video.started, two batches of 10 KB at most,
    // and room for the rules document (stored out of line, decision 76).
    expect(unitCost(unit).items).toBe(2 + storedItemsOf(unit).length + 3 + 1);
  });

  it('a round whose events overflow one transaction is rolled back and re-run with half the frames, never splitting a frame from its events', async () => {
    // 32 lines x 100 tracks = 3,200 crossings per frame after the first (about 45 batches
    // of 10 KB): frames 1-3 overflow the transaction's 100 items, frames 0-1 fit.
    const d = depsOf(100);
    const s = sessionWithLines(32, 4);
    const first = await buildRound(d, [s], FENCE, 0);
    expect(first.units).toEqual([]);
    expect(first.failures).toMatchObject([{ reason: 'events-over-transaction', blamed: [], transient: true }]);
    s.rollback([], 'events-over-transaction', false, 0);
    const second = await buildRound(d, [s], FENCE, 60_000);
    expect(second.failures).toEqual([]);
    const unit = second.units[0]!.unit;
    expect(unit.results.map((r) => r.frame)).toEqual([0, 1]);
    expect(unit.events!.filter((e) => e.kind === 'line.crossed').every((e) => e.frame === 1)).toBe(true);
    expect(unit.events!.filter((e) => e.kind === 'line.crossed')).toHaveLength(32 * 100);
    expect(unitFits(unit)).toBe(true);
    // Once it lands, the cap is lifted: the rest comes in one round again.
    s.applyCommitted(unit, second.units[0]!.plan);
    expect(s.plan(60_000)!.steps).toHaveLength(2);
  });

  it('one frame whose events alone overflow keeps its life events and the rule events that fit, loudly', async () => {
    // 32 lines x 250 tracks = 8,000 crossings at frame 1 (about 110 batches); frame 0 has been committed on its own.
    const d = depsOf(250);
    const s = sessionWithLines(32, 2);
    s.capNextPlan(1);
    const r0 = await buildRound(d, [s], FENCE, 0);
    s.applyCommitted(r0.units[0]!.unit, r0.units[0]!.plan);
    s.capNextPlan(1);
    logged.length = 0;
    const r1 = await buildRound(d, [s], FENCE, 0);
    const unit = r1.units[0]!.unit;
    expect(unit.results.map((r) => r.frame)).toEqual([1]);
    expect(unitFits(unit)).toBe(true);
    const written = unit.events!.length;
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(32 * 250);
    expect(unit.checkpoint.analytics!.totals.lines.l0).toEqual({ person: [250, 0] });
    expect(logged.some((m) => m.includes('more events than one transaction holds'))).toBe(true);
  });
});

describe('buildRound: the checkpoint cap with rule state', () => {
  it('when the new rule state of a round pushes the checkpoint past its cap, the tracker is compacted to make room', async () => {
    // 30 lines and 120 tracks that never cross: ~30 KB of new rule state, no events.
    const s = sessionWithLines(30, 2);
    const still: FrameOutcome = { status: 'ok', detections: Array.from({ length: 120 }, (_, t) => ({ trackId: t + 1, label: 'person', score: 1, box: [45, 30, 55, 50] as [number, number, number, number] })) };
    const quietRunner = {
      run: async (plans: readonly VideoPlan[]) => new Map<string, VideoRun>(plans.map((p) => [p.videoId, { ok: true, outcomes: new Map(p.steps.flatMap((st) => (st.type === 'frame' ? [[st.ref.frame, still] as const] : []))) }])),
    };
    // The tracker's full snapshot fits beside the committed state, not beside the new rule state.
    let asked: number | undefined;
    const reopened: (string | undefined)[] = [];
    const tracker = {
      snapshot: (_v: string, maxBytes?: number) => {
        if (maxBytes !== undefined) asked = maxBytes;
        return 'x'.repeat(maxBytes ?? 280_000);
      },
      openVideo: (_v: string, snapshot: string | undefined) => void reopened.push(snapshot),
      closeVideo() {},
    };
    const r = await buildRound({ runner: quietRunner, processor: tracker, log }, [s], FENCE, 0);
    const ck = r.units[0]!.unit.checkpoint;
    expect(Object.keys(ck.analytics!.tracks)).toHaveLength(120);
    expect(asked).toBeLessThan(280_000);
    expect(estimatedBytes(ck)).toBeLessThanOrEqual(MAX_CHECKPOINT_BYTES);
    // The live tracker continues from the very snapshot it checkpointed (issue 32): a
    // successor restoring the checkpoint then assigns the same track ids.
    expect(reopened.at(-1)).toBe(ck.processor);
  });
});
