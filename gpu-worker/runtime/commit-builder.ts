/**
 * Turns one video's sequenced steps and their outcomes into a commit unit: one result
 * per frame (with its TTL when `resultsRetentionDays` is set), the counts, the checkpoint
 * that covers them and the summary (which never expires). Pure: the
 * worker hands it the state, the store writes what it returns in one fenced transaction.
 */
import { newCommitId, summaryOf, type StallEvidence, type VideoCheckpoint } from '../../core/commit/checkpoint.ts';
import type { CommitUnit } from '../../core/commit/commit-packing.ts';
import type { FrameOutcome } from '../../core/ports.ts';
import type { FrameResultItem } from '../../core/commit/results.ts';
import type { SequencedStep, SequencerState } from '../../core/ordering/sequencer.ts';
import type { Detection } from '../../core/ports.ts';
import { commitEvents, type RulesView, type SourceEvent } from '../../core/analytics/commit-events.ts';
import type { SourceWatch } from '../../core/ingest/source-watch.ts';

export interface CommitInput {
  readonly videoId: string;
  readonly token: number;
  readonly workerId: string;
  readonly slot: number;
  /** Last committed checkpoint. */
  readonly committed: VideoCheckpoint;
  readonly steps: readonly SequencedStep[];
  /** Outcomes of the frame and late steps, by frame number. */
  readonly outcomes: ReadonlyMap<number, FrameOutcome>;
  /** The sequencer after the steps were taken. */
  readonly sequencer: SequencerState;
  readonly complete: boolean;
  /**
   * The crash-loop evidence to write (decision 28): undefined (the default) clears it,
   * since a unit of frames is progress; a marker unit sets `trying`.
   */
  readonly stall?: StallEvidence;
  /** The processor's snapshot after the frames were processed. */
  readonly processor: string | undefined;
  readonly nowMs: number;
  /**
   * The video's rules at this round (issue 22): rule events of the in-order frames and the
   * analytics state ride in the unit. Undefined: the rules in the committed checkpoint stay in effect.
   */
  readonly rules?: RulesView;
  /** Frames recorded as parked in this unit (their events are `frame.parked`, not `frame.failed`). */
  readonly parked?: ReadonlyMap<number, string>;
  /** The video's source watch to checkpoint, and its stall events to raise with this unit. */
  readonly source?: { readonly watch: SourceWatch | undefined; readonly events: readonly SourceEvent[] };
  /** `resultsRetentionDays`: the unit's frame records expire this long after `nowMs`; 0 or absent, never. */
  readonly resultsRetentionDays?: number;
  /**
   * Frames below an operator's replay's `silentBelow` that have no record (round-builder.ts
   * reads them): recorded as usual instead of re-run silently, since nothing else would
   * ever record them (issue 40, defect 3).
   */
  readonly unrecordedBelowSilent?: ReadonlySet<number>;
}

/** The TTL attribute of a frame record committed at `nowMs` (none when `retentionDays` is 0 or absent: never expires). */
export function resultExpiry(nowMs: number, retentionDays: number | undefined): { ttlEpochSeconds?: number } {
  return retentionDays ? { ttlEpochSeconds: Math.floor(nowMs / 1000) + retentionDays * 86_400 } : {};
}

export interface BuiltCommit {
  readonly unit: CommitUnit;
  /** Failures, for logs: frame, reason, detail. */
  readonly failures: readonly { frame: number; reason: string; detail?: string }[];
}

export function buildCommit(input: CommitInput): BuiltCommit {
  const prev = input.committed;
  const results: FrameResultItem[] = [];
  const replacesGap: number[] = [];
  const failures: { frame: number; reason: string; detail?: string }[] = [];
  let { framesOk, framesLate, framesFailed, framesGap, firstFrame, lastFrame } = prev;
  // Rules see the in-order tracker stream only: `frame` steps that came out ok (never late frames).
  const inOrder: { frame: number; detections: readonly Detection[]; ptsMs?: number }[] = [];
  const base = { videoId: input.videoId, token: input.token, worker: input.workerId, committedAtMs: input.nowMs, ...resultExpiry(input.nowMs, input.resultsRetentionDays) };
  const note = (frame: number) => {
    firstFrame = firstFrame === undefined ? frame : Math.min(firstFrame, frame);
    lastFrame = lastFrame === undefined ? frame : Math.max(lastFrame, frame);
  };
  const failed = (frame: number, reason: string, detail: string | undefined, key: string | undefined): FrameResultItem => {
    failures.push({ frame, reason, ...(detail ? { detail } : {}) });
    return { ...base, frame, status: 'failed', detections: [], reason, ...(detail ? { detail: detail.slice(0, 500) } : {}), ...(key ? { key } : {}) };
  };
  // An operator's replay re-runs the frames below `silentBelow` in order only to rebuild the
  // tracker and the rules (decision 46): their records and events exist already.
  // A frame below it without a record is recorded as usual: silent, it would never get one.
  const silentBelow = prev.replay?.silentBelow ?? -1;
  const silent = (frame: number) => frame < silentBelow && !input.unrecordedBelowSilent?.has(frame);
  for (const step of input.steps) {
    if (step.type === 'gap' && silent(step.frame)) continue;
    if (step.type === 'frame' && silent(step.ref.frame)) {
      const outcome = input.outcomes.get(step.ref.frame);
      if (outcome?.status === 'ok') inOrder.push({ frame: step.ref.frame, detections: outcome.detections, ...(outcome.ptsMs !== undefined ? { ptsMs: outcome.ptsMs } : {}) });
      continue;
    }
    if (step.type === 'gap') {
      framesGap++;
      note(step.frame);
      results.push({ ...base, frame: step.frame, status: 'gap', detections: [], reason: step.reason });
    } else if (step.type === 'reject') {
      framesFailed++;
      results.push(failed(step.ref.frame, step.reason, undefined, step.ref.key));
    } else {
      const frame = step.ref.frame;
      const outcome = input.outcomes.get(frame);
      if (!outcome) throw new Error(`no outcome for ${input.videoId} frame ${frame}`);
      note(frame);
      const late = step.type === 'late';
      if (late && step.ref.replacesGap) {
        framesGap--;
        replacesGap.push(frame);
      }
      if (outcome.status === 'ok') {
        if (late) framesLate++;
        else {
          framesOk++;
          inOrder.push({ frame, detections: outcome.detections, ...(outcome.ptsMs !== undefined ? { ptsMs: outcome.ptsMs } : {}) });
        }
        results.push({ ...base, frame, status: late ? 'late' : 'ok', detections: outcome.detections, key: outcome.sourceKey ?? step.ref.key, ...(outcome.ptsMs !== undefined ? { ptsMs: outcome.ptsMs } : {}) });
      } else {
        framesFailed++;
        results.push(failed(frame, outcome.reason, outcome.detail, step.ref.key));
      }
    }
  }
  const { events: raised, analytics } = commitEvents({
    videoId: input.videoId,
    token: input.token,
    nowMs: input.nowMs,
    analytics: prev.analytics,
    rules: input.rules,
    inOrder,
    results,
    parked: new Set(input.parked?.keys() ?? []),
    // The video's first records: nothing was committed before (a reject-only unit counts too).
    firstCommit: prev.framesOk + prev.framesLate + prev.framesFailed + prev.framesGap === 0 && prev.firstFrame === undefined,
    completes: input.complete && !prev.complete,
    lastFrame,
    ...(input.source ? { source: input.source.events } : {}),
  });
  const events = silentBelow < 0 ? raised : raised.filter((e) => e.frame < 0 || e.frame >= silentBelow);
  // Progress clears the crash-loop evidence: `stall` counts adoptions since the last one.
  const { stall: _cleared, analytics: _before, source: _watched, ...kept } = prev;
  const watch = input.source ? input.source.watch : prev.source;
  const checkpoint: VideoCheckpoint = {
    ...kept,
    ...(watch ? { source: watch } : {}),
    ...(analytics ? { analytics } : {}),
    ...(input.stall ? { stall: input.stall } : {}),
    seq: prev.seq + 1,
    // Every unit is a new write: a retry after a rollback gets another id, so the store can
    // tell which of the two (if any) landed.
    commitId: newCommitId(),
    sequencer: input.sequencer,
    ...(input.processor !== undefined ? { processor: input.processor } : {}),
    framesOk,
    framesLate,
    framesFailed,
    framesGap,
    ...(firstFrame !== undefined ? { firstFrame } : {}),
    ...(lastFrame !== undefined ? { lastFrame } : {}),
    complete: input.complete,
  };
  return {
    unit: {
      videoId: input.videoId,
      token: input.token,
      expectedSeq: prev.seq,
      expectedCommitId: prev.commitId,
      checkpoint,
      results,
      ...(replacesGap.length > 0 ? { replacesGap } : {}),
      summary: summaryOf(input.videoId, checkpoint, { token: input.token, worker: input.workerId, slot: input.slot }, input.nowMs),
      ...(events.length > 0 ? { events } : {}),
    },
    failures,
  };
}
