/**
 * `affinity counts <video> [--json]`: the video's totals per rule and class, derived from
 * its rule events in the outbox table (`line.crossed` per direction, `zone.entered`,
 * `zone.exited`, `zone.dwell`), not from the worker's summary. The events are the record
 * users receive, so the totals shown are the ones a consumer of the bus would compute;
 * they are counted by event id, so a redelivered or rewritten event counts once.
 */
import type { EventItem } from '../../core/analytics/event-schema.ts';
import { allEvents } from '../events-read.ts';
import { table } from '../format.ts';
import { CliError, type Io } from '../io.ts';
import type { Target } from '../target.ts';

/** Crossings of one line by one class. */
export interface LineCount {
  readonly ruleId: string;
  readonly label: string;
  in: number;
  out: number;
}

/** One zone's events for one class; `inside` = entered - exited (tracks in the zone after the last event). */
export interface ZoneCount {
  readonly ruleId: string;
  readonly label: string;
  entered: number;
  exited: number;
  inside: number;
  dwell: number;
}

export interface VideoCounts {
  readonly lines: LineCount[];
  readonly zones: ZoneCount[];
  /** Rule events counted (distinct ids). */
  readonly events: number;
}

/** Totals per rule and class from a video's events. Pure; each event id counts once. */
export function countEvents(events: Iterable<EventItem>): VideoCounts {
  const lines = new Map<string, LineCount>();
  const zones = new Map<string, ZoneCount>();
  const seen = new Set<string>();
  for (const e of events) {
    if (!e.kind.startsWith('line.') && !e.kind.startsWith('zone.')) continue;
    if (seen.has(`${e.videoId}\u0000${e.eventId}`)) continue;
    seen.add(`${e.videoId}\u0000${e.eventId}`);
    const ruleId = e.ruleId ?? '-';
    const label = e.label ?? '-';
    const key = `${ruleId}\u0000${label}`;
    if (e.kind === 'line.crossed') {
      const c = lines.get(key) ?? lines.set(key, { ruleId, label, in: 0, out: 0 }).get(key)!;
      if (e.detail?.direction === 'out') c.out++;
      else c.in++;
      continue;
    }
    const z = zones.get(key) ?? zones.set(key, { ruleId, label, entered: 0, exited: 0, inside: 0, dwell: 0 }).get(key)!;
    if (e.kind === 'zone.entered') z.entered++;
    else if (e.kind === 'zone.exited') z.exited++;
    else if (e.kind === 'zone.dwell') z.dwell++;
    z.inside = z.entered - z.exited;
  }
  const order = <T extends { ruleId: string; label: string }>(m: Map<string, T>) => [...m.values()].sort((a, b) => a.ruleId.localeCompare(b.ruleId) || a.label.localeCompare(b.label));
  return { lines: order(lines), zones: order(zones), events: seen.size };
}

export async function countsCommand(target: Target, o: { videoId: string; json: boolean }, io: Io): Promise<VideoCounts> {
  const counts = countEvents(await allEvents(target, o.videoId));
  if (o.json) {
    io.out(JSON.stringify({ videoId: o.videoId, ...counts }));
    return counts;
  }
  if (counts.events === 0) throw new CliError(`no rule events for video "${o.videoId}" in ${target.description}`);
  if (counts.lines.length > 0) {
    io.out('Lines (crossings per class)');
    for (const l of table(['rule', 'class', 'in', 'out', 'total'], counts.lines.map((c) => [c.ruleId, c.label, c.in, c.out, c.in + c.out]))) io.out(l);
  }
  if (counts.zones.length > 0) {
    if (counts.lines.length > 0) io.out('');
    io.out('Zones (per class)');
    for (const l of table(['zone', 'class', 'entered', 'exited', 'inside', 'dwell'], counts.zones.map((c) => [c.ruleId, c.label, c.entered, c.exited, c.inside, c.dwell]))) io.out(l);
  }
  return counts;
}
