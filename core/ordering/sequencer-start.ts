/**
 * The automatic start of a video (docs/decisions.md, decision 4): pure decisions over the
 * sequencer's state, kept apart from core/ordering/sequencer.ts so each stays readable.
 *
 * A video starts at the lowest frame that exists for it, decided at first sight: when its
 * first frame is seen, one S3 listing from frame 0 (strongly consistent: it sees every frame
 * uploaded so far), and the lowest frame listed or known is the start, provided the listing
 * proves nothing exists below it (it covered `[0, lowest - 1]`, core/ordering/listing-coverage.ts).
 * Frame 0 needs no listing. A listing that failed or covered too little falls back to the
 * wait: the start is decided `reorderWaitMs` after the first frame, by a second listing.
 */
import type { ListingRequest, SequencerOptions, SequencerState } from './sequencer-state.ts';

/**
 * When the automatic start may be decided (epoch ms), or null before any frame: at once for
 * frame 0 and for the listing at first sight, `reorderWaitMs` after the first frame when
 * that listing could not decide.
 */
export function startDueMs(s: SequencerState, options: SequencerOptions): number | null {
  if (s.firstSeenAtMs === null) return null;
  if (s.buffered[0]?.frame === 0 || s.listedAtMs === null) return s.firstSeenAtMs;
  return s.firstSeenAtMs + options.reorderWaitMs;
}

/**
 * The start listing due at `nowMs` while the start is undecided, or undefined. The listing
 * at first sight is bounded (`throughFrame`: only what lies below the lowest known frame
 * decides); the one after the wait is not. The caller applies the listing rate limit.
 */
export function startListing(s: SequencerState, options: SequencerOptions, nowMs: number): ListingRequest | undefined {
  const lowest = s.buffered[0]?.frame;
  if (lowest === undefined || lowest === 0) return undefined;
  const due = startDueMs(s, options);
  if (due === null || nowMs < due) return undefined;
  if (s.listedAtMs === null) return { fromFrame: 0, why: 'start', throughFrame: lowest - 1 };
  return s.listedAtMs >= due ? undefined : { fromFrame: 0, why: 'start' };
}

/**
 * The start a listing from `fromFrame` decides, or null when it cannot decide (yet): the
 * lowest frame listed or known, once the listing proves nothing lies below it (listed from
 * 0 and `covered` up to it), or whatever the listing found once the wait is over.
 */
export function startFromListing(s: SequencerState, options: SequencerOptions, fromFrame: number, lowestListed: number | undefined, covered: number, nowMs: number): number | null {
  const lowest = Math.min(lowestListed ?? Infinity, s.buffered[0]?.frame ?? Infinity);
  if (lowest === Infinity) return null;
  const waited = s.firstSeenAtMs === null || nowMs >= s.firstSeenAtMs + options.reorderWaitMs;
  return waited || (fromFrame <= 0 && covered >= lowest - 1) ? lowest : null;
}

/** A start listing at first sight failed: it gives up deciding early (the wait decides). */
export function startListingFailed(s: SequencerState, nowMs: number): void {
  if (s.firstFrame === null && s.listedAtMs === null) s.listedAtMs = nowMs;
}
