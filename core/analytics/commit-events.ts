/**
 * The events one commit unit carries (issue 22, decision 34): the rule events of its
 * in-order frames, and the life events its writes mean (the video's first commit, its
 * completion, failed and parked frames, a rules document found invalid). Pure: the
 * commit builder calls it with the committed state and gets the outbox items to write
 * in the same fenced transaction, and the analytics state for the new checkpoint.
 *
 * Ids are deterministic ({@link eventId}): the same frames committed by a successor after
 * kill -9 give the same ids, and a commit retried after a lost answer writes the same items.
 */
import type { FrameResultItem } from '../commit/results.ts';
import type { Detection } from '../ports.ts';
import { changeRules, emptyAnalytics, runRules, type AnalyticsState, type TrackedFrame } from './rule-engine.ts';
import { DETAIL_TYPE, eventId, type EventItem, type EventKind } from './event-schema.ts';
import type { RulesDocument } from './rules.ts';

/** The rules the worker's rules store holds for a video at the time of the round. */
export interface RulesView {
  /** ETag of the document in effect ('' = no document: the video runs no rules). */
  readonly etag: string;
  readonly rules?: RulesDocument;
  /** The newest document, when it failed validation (the last good rules stay in effect). */
  readonly invalid?: { readonly etag: string; readonly errors: readonly string[] };
}

export interface CommitEventsInput {
  readonly videoId: string;
  readonly token: number;
  readonly nowMs: number;
  /** The committed analytics state (undefined: none yet). */
  readonly analytics: AnalyticsState | undefined;
  /** Undefined: no rules store or no read: the rules in the committed state stay in effect. */
  readonly rules: RulesView | undefined;
  /** In-order frames with status ok and their tracked detections, ascending. */
  readonly inOrder: readonly { readonly frame: number; readonly detections: readonly Detection[]; readonly ptsMs?: number }[];
  /** The unit's results (life events: failed and parked frames, the first frame). */
  readonly results: readonly FrameResultItem[];
  /** Frames recorded as parked (given up on) in this unit. */
  readonly parked: ReadonlySet<number>;
  /** Whether the video had no committed frame before this unit. */
  readonly firstCommit: boolean;
  /** Whether this unit completes the video. */
  readonly completes: boolean;
  readonly lastFrame: number | undefined;
  /** A live source's stall raised, or its end, since the last commit (core/ingest/source-watch.ts). */
  readonly source?: readonly SourceEvent[];
}

/** `source.stalled` / `source.resumed`: `stalls` numbers the stall (each one's pair of events has its own ids). */
export interface SourceEvent {
  readonly kind: 'source.stalled' | 'source.resumed';
  /** The next frame the video waits for (stalled), or the first frame of the segment that came (resumed). */
  readonly frame: number;
  readonly stalls: number;
  /** When the last segment before the stall arrived (epoch ms), and the interval the source kept, ms. */
  readonly lastSegmentAtMs: number;
  readonly intervalMs: number | null;
}

/** The outbox items of a unit and the analytics state its checkpoint carries. */
export function commitEvents(input: CommitEventsInput): { events: EventItem[]; analytics: AnalyticsState | undefined } {
  const events: EventItem[] = [];
  const item = (e: { kind: EventKind; frame: number; ruleId?: string; trackId?: number; label?: string; detail?: Record<string, string | number | boolean>; discriminator?: string }): EventItem => ({
    videoId: input.videoId,
    eventId: eventId(e),
    kind: e.kind,
    detailType: DETAIL_TYPE[e.kind],
    frame: e.frame,
    ...(e.ruleId !== undefined ? { ruleId: e.ruleId } : {}),
    ...(e.trackId !== undefined ? { trackId: e.trackId } : {}),
    ...(e.label !== undefined ? { label: e.label } : {}),
    ...(e.detail ? { detail: e.detail } : {}),
    token: input.token,
    atMs: input.nowMs,
  });
  const firstResult = input.results.length > 0 ? Math.min(...input.results.map((r) => r.frame)) : -1;
  if (input.firstCommit && input.results.length > 0) events.push(item({ kind: 'video.started', frame: firstResult }));

  let analytics = input.analytics;
  if (input.rules) {
    const v = input.rules;
    if (analytics !== undefined || v.etag !== '' || v.invalid) {
      const changed = changeRules(analytics ?? emptyAnalytics(), v.etag, v.rules);
      analytics = changed.state;
      for (const e of changed.events) events.push(item({ kind: e.kind, frame: e.frame, ruleId: e.ruleId, trackId: e.trackId, label: e.label, ...(e.detail ? { detail: { ...e.detail } } : {}), ...(e.discriminator ? { discriminator: e.discriminator } : {}) }));
    }
    if (v.invalid && analytics && analytics.invalidEtag !== v.invalid.etag) {
      analytics = { ...analytics, invalidEtag: v.invalid.etag };
      events.push(item({ kind: 'rules.invalid', frame: firstResult, discriminator: v.invalid.etag, detail: { etag: v.invalid.etag, errors: v.invalid.errors.join('; ').slice(0, 1000), keptEtag: v.etag } }));
    }
  }
  if (analytics?.rules && input.inOrder.length > 0) {
    const ran = runRules(analytics, input.inOrder as readonly TrackedFrame[]);
    analytics = ran.state;
    for (const e of ran.events) events.push(item({ kind: e.kind, frame: e.frame, ruleId: e.ruleId, trackId: e.trackId, label: e.label, ...(e.detail ? { detail: { ...e.detail } } : {}) }));
  }

  for (const r of input.results) {
    if (r.status !== 'failed') continue;
    const parked = input.parked.has(r.frame);
    events.push(item({ kind: parked ? 'frame.parked' : 'frame.failed', frame: r.frame, detail: { reason: r.reason ?? 'unknown', token: input.token, ...(r.key ? { key: r.key } : {}) } }));
  }
  for (const e of input.source ?? []) {
    events.push(item({ kind: e.kind, frame: e.frame, discriminator: `stall${e.stalls}`, detail: { stall: e.stalls, lastSegmentAtMs: e.lastSegmentAtMs, ...(e.intervalMs !== null ? { intervalMs: e.intervalMs } : {}) } }));
  }
  if (input.completes) events.push(item({ kind: 'video.completed', frame: input.lastFrame ?? -1 }));
  return { events, analytics };
}
