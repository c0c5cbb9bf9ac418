/**
 * `affinity events <video> [--follow] [--json] [--from-frame N] [--redeliver]`: a video's
 * analytics events from the outbox table, in id order (by frame). `--follow` keeps polling
 * for new ones; `--json` prints one EventItem per line; `--redeliver` makes the pipe (or
 * the local relay) deliver them again, the way back from the event DLQ.
 */
import type { EventItem } from '../../core/analytics/event-schema.ts';
import { allEvents, queryEvents, redeliverEvents } from '../../core/analytics/dynamodb/events-reader.ts';
import { CliError, type Io } from '../io.ts';
import type { Target } from '../target.ts';

/** Poll period of `--follow`. */
export const FOLLOW_POLL_MS = 1_000;

/** One line for an event. Pure. */
export function formatEvent(e: EventItem, json: boolean): string {
  if (json) return JSON.stringify(e);
  const facts = Object.entries(e.detail ?? {})
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(' ');
  return [String(e.frame).padStart(6), e.kind.padEnd(16), e.ruleId ?? '-', e.trackId !== undefined ? `track ${e.trackId}` : '-', e.label ?? '-', facts || '-', `token ${e.token}`].join('\t');
}

export interface EventsOptions {
  readonly videoId: string;
  readonly json: boolean;
  readonly follow: boolean;
  readonly fromFrame?: number;
  readonly redeliver?: boolean;
  /** Stops `--follow` (the CLI process stops on Ctrl-C instead). */
  readonly signal?: AbortSignal;
  /** @default FOLLOW_POLL_MS */
  readonly pollMs?: number;
}

export async function eventsCommand(target: Target, o: EventsOptions, io: Io): Promise<{ printed: number; redelivered?: number }> {
  if (o.redeliver) {
    if (o.follow) throw new CliError('--redeliver and --follow do not go together', 2);
    const n = await redeliverEvents(target.clients.ddb, target.eventsTable, o.videoId, o.fromFrame);
    if (n === 0) throw new CliError(`no events for video "${o.videoId}" in ${target.description}`);
    io.out(`redelivered ${n} event(s) of ${o.videoId}: the pipe delivers them again (consumers drop duplicates by eventId)`);
    return { printed: 0, redelivered: n };
  }
  let printed = 0;
  // The key of the last stored item printed: a batch of rule events is one item (event-packing.ts).
  let last: string | undefined;
  const print = (page: readonly EventItem[]) => {
    for (const e of page) {
      io.out(formatEvent(e, o.json));
      printed++;
    }
  };
  if (!o.follow) {
    const events = await allEvents(target.clients.ddb, target.eventsTable, o.videoId);
    print(o.fromFrame !== undefined ? events.filter((e) => e.frame >= o.fromFrame!) : events);
    if (printed === 0) throw new CliError(`no events for video "${o.videoId}" in ${target.description}`);
    return { printed };
  }
  if (!o.json) io.err(`following ${o.videoId}'s events (Ctrl-C stops)`);
  while (!o.signal?.aborted) {
    for await (const page of queryEvents(target.clients.ddb, target.eventsTable, o.videoId, last !== undefined ? { afterKey: last } : o.fromFrame !== undefined ? { fromFrame: o.fromFrame } : {})) {
      print(page.events);
      last = page.lastKey;
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, o.pollMs ?? FOLLOW_POLL_MS);
      o.signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    });
  }
  return { printed };
}
