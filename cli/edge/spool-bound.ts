/**
 * The bound on a camera's spool (`spoolMaxBytes` in the edge config): closed segments wait
 * on disk while S3 cannot take them (an uplink outage, refused credentials), and a site
 * whose uplink stays down must not fill its disk. Over the bound, the OLDEST waiting
 * segments are dropped first (the newest video is worth most to a live site, and what
 * was dropped is gone either way), and every drop is counted and reported: its frames
 * become a gap the worker records after its bounded wait, never a silent hole.
 *
 * The segment whose PUT is in flight is never dropped (its upload may land; dropping it
 * would count a loss that did not happen), so the spool may exceed the bound by that one
 * segment. Pure: the caller deletes the files and reports.
 */
import type { JournalSegment, StreamState } from '../video/stream-journal.ts';

/** The pending segments to drop, oldest first, so that the rest fit in `maxBytes`. */
export function segmentsOverBound(pending: readonly JournalSegment[], maxBytes: number, inFlightKey: string | null): JournalSegment[] {
  let total = pending.reduce((n, p) => n + p.bytes, 0);
  const drop: JournalSegment[] = [];
  for (const p of pending) {
    if (total <= maxBytes) break;
    if (p.key === inFlightKey) continue;
    drop.push(p);
    total -= p.bytes;
  }
  return drop;
}

/** The journal without the dropped segments (their numbers are not reused: `nextFrame` stays). */
export function dropPending(state: StreamState, keys: ReadonlySet<string>): StreamState {
  const pending = state.pending.filter((p) => !keys.has(p.key));
  return pending.length === state.pending.length ? state : { ...state, pending };
}

/** Bytes waiting in the spool. */
export function spooledBytes(state: StreamState): number {
  return state.pending.reduce((n, p) => n + p.bytes, 0);
}
