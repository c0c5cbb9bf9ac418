/**
 * Whether a live video's source has stalled (issue 34): a camera's edge segmenter uploads a
 * segment every few seconds, so a video whose segments stop coming for several of those
 * intervals, with no end marker, has lost its camera, its network or its segmenter. The
 * worker then raises `source.stalled`, and `source.resumed` with the next segment: events
 * like the others, committed under the fence with the video's checkpoint, which carries
 * this watch so a successor continues it. Pure: the session feeds arrivals and asks.
 *
 * The interval is learnt from the arrivals themselves (a moving average of the gaps
 * between new segments), not from the segments' length: a source that uploads a 2-s
 * segment every 2 s and one that uploads a backlog of them at once are judged by what
 * they do. Arrivals are when the owner received them, so neither a burst of them nor a
 * change of owner may teach it: see noteSegment and stallDueAtMs. A video made of images is not watched (its frames have no rhythm to keep), nor
 * one whose end marker has come.
 */

/** A video's source as its checkpoint carries it (compact keys are not needed: one per video). */
export interface SourceWatch {
  /** When the last new segment arrived, epoch ms. */
  readonly lastSegmentAtMs: number;
  /** Moving average of the time between new segments, ms; null until a second one came. */
  readonly intervalMs: number | null;
  /** Whether `source.stalled` was raised and no segment came since. */
  readonly stalled: boolean;
  /** Stalls raised so far: tells each stall's events apart (their ids carry it). */
  readonly stalls: number;
}

/** Missed intervals after which a source is stalled. */
export const STALL_INTERVALS = 3;
/** The least interval a stall is judged by, ms: a burst of uploads must not make a pause of a second a stall. */
export const MIN_STALL_INTERVAL_MS = 1_000;
/** A gap shorter than this fraction of the learnt interval is a burst, not learnt. */
export const BURST_FRACTION = 0.25;
/** Weight of the newest gap in the moving average. */
const NEWEST_WEIGHT = 0.5;

/** A new segment arrived at `nowMs`: the watch after it, and whether it ends a stall. */
export function noteSegment(w: SourceWatch | undefined, nowMs: number): { readonly watch: SourceWatch; readonly resumed: boolean } {
  if (!w) return { watch: { lastSegmentAtMs: nowMs, intervalMs: null, stalled: false, stalls: 0 }, resumed: false };
  const gap = Math.max(0, nowMs - w.lastSegmentAtMs);
  // The gap that ends a stall counts for no more than the stall's threshold: an outage of
  // minutes does not teach the source a rhythm of minutes, yet a rhythm learnt too short
  // still corrects itself, the interval doubling (at most) with each stall. Learnt too short
  // it is whenever segments came faster than the source makes them: a backlog uploaded at
  // once, or a new owner receiving a queue of them after a takeover. Were the resuming gap
  // not learnt at all, a source of 10-s segments would then stall and resume on every
  // segment, for good (decision 82).
  //
  // A gap much shorter than the rhythm is a burst, not the rhythm: segments received at once
  // (a backlog uploaded after a reconnect, a takeover's queue) are not learnt, so the next
  // live gap is judged by the rhythm the source had (decision 85). A source that truly
  // speeds up more than fourfold keeps its slower rhythm: its stalls are then seen later,
  // never falsely.
  let intervalMs: number | null;
  if (w.intervalMs === null) intervalMs = gap;
  else if (!w.stalled && gap < BURST_FRACTION * w.intervalMs) intervalMs = w.intervalMs;
  else {
    const learnt = w.stalled ? Math.min(gap, stallThresholdMs(w.intervalMs)) : gap;
    intervalMs = Math.round(NEWEST_WEIGHT * learnt + (1 - NEWEST_WEIGHT) * w.intervalMs);
  }
  return { watch: { lastSegmentAtMs: nowMs, intervalMs, stalled: false, stalls: w.stalls }, resumed: w.stalled };
}

/**
 * When the source counts as stalled (epoch ms), or undefined when it cannot: unwatched,
 * ended, stalled already, or no rhythm learnt yet. Silence counts from the last segment, or
 * from `watchedSinceMs` when later: the owner's tenure began then, and a new owner cannot
 * know what arrived while nobody owned the video (it is in the queue, not lost; decision 85).
 */
export function stallDueAtMs(w: SourceWatch | undefined, ended: boolean, watchedSinceMs = Number.NEGATIVE_INFINITY): number | undefined {
  if (!w || ended || w.stalled || w.intervalMs === null) return undefined;
  return Math.max(w.lastSegmentAtMs, watchedSinceMs) + stallThresholdMs(w.intervalMs);
}

/** Silence after which a source with this learnt interval counts as stalled, ms. */
function stallThresholdMs(intervalMs: number): number {
  return STALL_INTERVALS * Math.max(intervalMs, MIN_STALL_INTERVAL_MS);
}

/** The watch once its stall is raised. */
export function markStalled(w: SourceWatch): SourceWatch {
  return { ...w, stalled: true, stalls: w.stalls + 1 };
}
