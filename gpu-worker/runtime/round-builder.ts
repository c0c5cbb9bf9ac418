/**
 * Builds one round: asks each eligible video for its plan, runs the frames of all of
 * them together (frame-runner.ts: one cross-video batch for the model), and turns each
 * video's outcomes into a commit unit (commit-builder.ts). A video whose frames failed
 * comes back as a failure to roll back; the others are unaffected.
 */
import { estimatedBytes, MAX_CHECKPOINT_BYTES, unitFits, type CommitUnit } from '../../core/commit/commit-packing.ts';
import { isRuleEvent } from '../../core/analytics/event-packing.ts';
import type { RulesSource } from '../../core/analytics/port.ts';
import type { RulesView } from '../../core/analytics/commit-events.ts';
import type { SlotFence } from '../../core/leases/port.ts';
import type { FrameProcessor, LogSink } from '../../core/ports.ts';
import { buildCommit } from './commit-builder.ts';
import type { FrameRunner } from './frame-runner.ts';
import { markerStall } from './crash/crash-breaker.ts';
import { MARKER_PLAN, stepFrame, type SessionPlan, type VideoSession } from './video-session.ts';
import type { RecordReader } from '../../core/commit/port.ts';
import type { SequencedStep } from '../../core/ordering/sequencer-state.ts';

/** One video's share of a round, built while the round ran, committed after it. */
export interface RoundUnit {
  readonly session: VideoSession;
  readonly plan: SessionPlan;
  readonly unit: CommitUnit;
  /** Frames parked (given up on) in this unit, for the metric once it lands. */
  readonly parked: number;
}

/** A video whose round failed: to be rolled back alone. */
export interface RoundFailure {
  readonly session: VideoSession;
  readonly reason: string;
  readonly detail: string;
  readonly blamed: readonly number[];
  /** An outage (throttling, 5xx, timeouts): retried without counting towards parking. */
  readonly transient: boolean;
}

export interface RoundBuilderDeps {
  readonly runner: Pick<FrameRunner, 'run'>;
  readonly processor: Pick<FrameProcessor, 'snapshot' | 'openVideo' | 'closeVideo'>;
  readonly log: LogSink;
  /** Videos' rules (issue 22); without it, the rules in each checkpoint stay in effect (none for a new video). */
  readonly rules?: RulesSource;
  /** `resultsRetentionDays`: frame records expire this long after their commit; 0 or absent, never. */
  readonly resultsRetentionDays?: number;
  /** Told each video's plan before its frames run: the worker reads its next segments ahead (decision 51). */
  readonly beforeRun?: (session: VideoSession, plan: SessionPlan) => void;
  /**
   * The videos' records: a plan that re-runs frames below an operator's replay's
   * `silentBelow` reads theirs, and a frame without one is recorded instead of silenced
   * ({@link recordsBelowSilent}). Absent: every such frame is silenced.
   */
  readonly records?: Pick<RecordReader, 'range'>;
}

export async function buildRound(
  d: RoundBuilderDeps,
  sessions: readonly VideoSession[],
  fence: SlotFence,
  nowMs: number,
): Promise<{ units: RoundUnit[]; failures: RoundFailure[] }> {
  const plans: { session: VideoSession; plan: SessionPlan }[] = [];
  for (const session of sessions) {
    const plan = session.plan(nowMs);
    if (plan) plans.push({ session, plan });
  }
  return buildPlannedRound(d, plans, fence, nowMs);
}

/** Runs plans already taken (an isolated video's, after its marker landed) and builds their units. */
export async function buildPlannedRound(
  d: RoundBuilderDeps,
  plans: readonly { readonly session: VideoSession; readonly plan: SessionPlan }[],
  fence: SlotFence,
  nowMs: number,
): Promise<{ units: RoundUnit[]; failures: RoundFailure[] }> {
  if (plans.length === 0) return { units: [], failures: [] };
  const failures: RoundFailure[] = [];
  // Only while an operator's replay re-runs frames silently: one read per such plan.
  const unrecorded = new Map<VideoSession, ReadonlySet<number>>();
  const ready: { readonly session: VideoSession; readonly plan: SessionPlan }[] = [];
  for (const p of plans) {
    try {
      const below = await recordsBelowSilent(d, p.session, p.plan);
      if (!below) {
        ready.push(p);
        continue;
      }
      if (below.missing.size > 0) {
        unrecorded.set(p.session, below.missing);
        d.log.warn('frames below a replay\'s --from have no record: recorded instead of re-run silently', { videoId: p.session.videoId, frames: [...below.missing].slice(0, 20), count: below.missing.size });
      }
      ready.push({ session: p.session, plan: rebuildPlan(p.plan, below) });
    } catch (e) {
      failures.push({ session: p.session, reason: 'records-read', detail: String(e), blamed: [], transient: true });
    }
  }
  plans = ready;
  if (plans.length === 0) return { units: [], failures };
  for (const { session, plan } of plans) d.beforeRun?.(session, plan);
  // Rules are (re)read while the frames run: a refresh, when one is due, adds no latency to the round.
  const views = Promise.all(plans.map(({ session }) => rulesView(d, session, nowMs)));
  const runs = await d.runner.run(plans.map(({ session, plan }) => ({ videoId: session.videoId, steps: plan.steps, parked: plan.parked })));
  const rules = await views;
  const units: RoundUnit[] = [];
  for (const [i, { session, plan }] of plans.entries()) {
    const run = runs.get(session.videoId)!;
    if (!run.ok) {
      failures.push({ session, reason: run.reason, detail: run.detail, blamed: run.blamed, transient: run.transient === true });
      continue;
    }
    const build = (processor: string) => buildCommit({
      videoId: session.videoId,
      token: session.token,
      workerId: fence.workerId,
      slot: fence.slot,
      committed: session.committed,
      steps: plan.steps,
      outcomes: run.outcomes,
      sequencer: session.sequencer.checkpointState(),
      complete: session.sequencer.isComplete(),
      processor,
      nowMs,
      ...(rules[i] ? { rules: rules[i] } : {}),
      parked: plan.parked,
      ...(plan.source ? { source: plan.source } : {}),
      resultsRetentionDays: d.resultsRetentionDays,
      ...(unrecorded.has(session) ? { unrecordedBelowSilent: unrecorded.get(session)! } : {}),
    });
    let built = build(processorSnapshot(d, session));
    // The rule state may have grown in this round (new tracks): the tracker makes room for it.
    const overBytes = estimatedBytes(built.unit.checkpoint) - MAX_CHECKPOINT_BYTES;
    if (overBytes > 0) {
      const processorBytes = Buffer.byteLength(built.unit.checkpoint.processor ?? '');
      const room = Math.max(0, Math.floor((processorBytes - overBytes) * 0.97) - 64);
      d.log.warn('checkpoint over its cap after the rules ran: processor state compacted', { videoId: session.videoId, overBytes, room });
      built = build(compacted(d, session.videoId, d.processor.snapshot(session.videoId, room)));
    }
    if (!unitFits(built.unit) && plan.steps.length > 1) {
      // A frame and its events commit together: re-run the round with fewer frames
      // (the session halves its next plan), never splitting a frame from its events.
      session.capNextPlan(Math.max(1, Math.floor(plan.steps.length / 2)));
      d.log.warn('round raised more events than fit one transaction: re-running it with fewer frames', { videoId: session.videoId, steps: plan.steps.length, events: built.unit.events?.length ?? 0 });
      failures.push({ session, reason: 'events-over-transaction', detail: `${built.unit.events?.length ?? 0} events`, blamed: [], transient: true });
      continue;
    }
    const unit = unitFits(built.unit) ? built.unit : trimmedEvents(d, built.unit);
    for (const f of built.failures) d.log.warn('frame failed', { videoId: session.videoId, ...f });
    units.push({ session, plan, unit, parked: session.parkedIn(plan) });
  }
  return { units, failures };
}

/** What the records say of the frames a plan re-runs below its video's replay `silentBelow`. */
interface BelowSilent {
  /** No record: re-run silently, they would never get one (issue 40, defect 3): recorded as usual. */
  readonly missing: ReadonlySet<number>;
  /**
   * A record that is not `ok` (`late`, `failed`): the tracker of the run being rebuilt never
   * saw the frame, so the rebuild must not feed it either, or every track ID after it moves
   * (found by the simulation, decision 61).
   */
  readonly notSeen: ReadonlySet<number>;
  /** A `gap` record whose frame now exists: recorded `late` in its place, the tracker untouched. */
  readonly gapNowHere: ReadonlySet<number>;
}

/**
 * Reads the records of the frames `plan` re-runs below its video's replay `silentBelow`
 * (decision 46), one range query. Undefined when the plan re-runs no such frame (no read
 * then).
 */
async function recordsBelowSilent(d: RoundBuilderDeps, s: VideoSession, plan: SessionPlan): Promise<BelowSilent | undefined> {
  const silentBelow = s.committed.replay?.silentBelow;
  if (silentBelow === undefined || !d.records) return undefined;
  const silent = plan.steps.filter((st) => (st.type === 'frame' || st.type === 'gap') && stepFrame(st) < silentBelow).map(stepFrame);
  if (silent.length === 0) return undefined;
  const status = new Map<number, string>();
  for (const r of await d.records.range(s.videoId, Math.min(...silent), Math.max(...silent))) {
    for (let f = r.frame; f <= (r.throughFrame ?? r.frame); f++) status.set(f, r.status);
  }
  const frames = new Set(plan.steps.filter((st) => st.type === 'frame' && st.ref.frame < silentBelow).map(stepFrame));
  return {
    missing: new Set(silent.filter((f) => !status.has(f))),
    notSeen: new Set([...frames].filter((f) => status.has(f) && status.get(f) !== 'ok' && status.get(f) !== 'gap')),
    gapNowHere: new Set([...frames].filter((f) => status.get(f) === 'gap')),
  };
}

/**
 * The plan a replay's rebuild runs: frames the rebuilt run's tracker never saw are left out
 * (a silent gap step: nothing processed, nothing recorded), and a frame whose record is a
 * gap is processed `late` in its place. Pure.
 */
export function rebuildPlan(plan: SessionPlan, below: Pick<BelowSilent, 'notSeen' | 'gapNowHere'>): SessionPlan {
  if (below.notSeen.size === 0 && below.gapNowHere.size === 0) return plan;
  const steps = plan.steps.map((st): SequencedStep => {
    if (st.type !== 'frame') return st;
    if (below.notSeen.has(st.ref.frame)) return { type: 'gap', frame: st.ref.frame, reason: 'missing-frame' };
    if (below.gapNowHere.has(st.ref.frame)) return { type: 'late', ref: { ...st.ref, replacesGap: true } };
    return st;
  });
  return { ...plan, steps };
}

/**
 * A crash-loop marker for an isolated video (decision 28): its committed checkpoint again,
 * with `stall.trying` = the frame about to run alone. No results, no handles.
 */
export function buildMarker(session: VideoSession, fence: SlotFence, frame: number, nowMs: number): RoundUnit {
  const ck = session.committed;
  const { unit } = buildCommit({
    videoId: session.videoId,
    token: session.token,
    workerId: fence.workerId,
    slot: fence.slot,
    committed: ck,
    steps: [],
    outcomes: new Map(),
    sequencer: ck.sequencer,
    complete: ck.complete,
    processor: ck.processor,
    stall: markerStall(ck.stall, frame, session.token),
    nowMs,
  });
  return { session, plan: MARKER_PLAN, unit, parked: 0 };
}

/**
 * One frame whose events alone overflow a transaction (rule events are batched, so only
 * past the transaction's bytes: tens of thousands at one frame) cannot be split further:
 * its life events are kept, its rule events beyond the room are not written (the totals
 * in the checkpoint still count them), loudly.
 */
function trimmedEvents(d: RoundBuilderDeps, unit: CommitUnit): CommitUnit {
  const events = unit.events ?? [];
  const life = events.filter((e) => !isRuleEvent(e));
  const rules = events.filter((e) => isRuleEvent(e));
  // Rule events are stored in batches (event-packing.ts): keep the most that still fit.
  let n = rules.length;
  while (n > 0 && !unitFits({ ...unit, events: [...life, ...rules.slice(0, n)] })) n = Math.floor(n / 2);
  const kept = [...life, ...rules.slice(0, n)];
  d.log.error('one frame raised more events than one transaction holds: rule events beyond the limit not written', { videoId: unit.videoId, events: events.length, written: kept.length });
  return { ...unit, events: kept };
}

/** The video's rules for this round; a failed read keeps the rules in effect (the store logs it). */
async function rulesView(d: RoundBuilderDeps, s: VideoSession, nowMs: number): Promise<RulesView | undefined> {
  if (!d.rules) return undefined;
  try {
    return await d.rules.view(s.videoId, s.committed.analytics, nowMs);
  } catch (e) {
    d.log.warn('rules view failed: keeping the rules in effect', { videoId: s.videoId, error: String(e) });
    const a = s.committed.analytics;
    return a ? { etag: a.etag, ...(a.rules ? { rules: a.rules } : {}) } : undefined;
  }
}

/**
 * The processor's snapshot for the checkpoint, compacted when the checkpoint would
 * outgrow {@link MAX_CHECKPOINT_BYTES} (the tracker evicts its oldest lost tracks).
 */
function processorSnapshot(d: RoundBuilderDeps, s: VideoSession): string {
  const full = d.processor.snapshot(s.videoId);
  const rest = estimatedBytes({ ...s.committed, processor: undefined, sequencer: s.sequencer.checkpointState() });
  // The snapshot is stored as a string: JSON escaping of its quotes and its key add a
  // few percent to the estimate, so the processor gets a little less than the gap.
  const room = Math.floor((MAX_CHECKPOINT_BYTES - rest) * 0.97) - 64;
  if (Buffer.byteLength(full) <= room) return full;
  const compact = d.processor.snapshot(s.videoId, Math.max(0, room));
  d.log.warn('checkpoint over its cap: processor state compacted', { videoId: s.videoId, fullBytes: Buffer.byteLength(full), compactBytes: Buffer.byteLength(compact), room });
  return compacted(d, s.videoId, compact);
}

/**
 * The live tracker continues from the compacted snapshot it checkpoints, not from its fuller
 * self: otherwise it could re-associate a track the checkpoint evicted, and a successor
 * after kill -9 or a rollback (which restore the checkpoint) would assign other track ids
 * than the run it replaces (issue 32). Returns the snapshot.
 */
function compacted(d: RoundBuilderDeps, videoId: string, snapshot: string): string {
  d.processor.closeVideo(videoId);
  d.processor.openVideo(videoId, snapshot);
  return snapshot;
}
