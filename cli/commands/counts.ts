/**
 * `affinity counts <video> [--json]`: the video's totals per rule and class, derived from
 * its rule events in the outbox table (`line.crossed` per direction, `zone.entered`,
 * `zone.exited`, `zone.dwell`), not from the worker's summary. The events are the record
 * users receive, so the totals shown are the ones a consumer of the bus would compute;
 * they are counted by event id, so a redelivered or rewritten event counts once.
 */
import type { EventItem } from '../../core/analytics/event-schema.ts';
import { DEFAULT_RULES_KEY, rulesKey } from '../../core/analytics/s3/rules-store.ts';
import { allEvents } from '../../core/analytics/dynamodb/events-reader.ts';
import { table } from '../format.ts';
import { CliError, type Io } from '../io.ts';
import type { Target } from '../target.ts';
import { readRules } from './render.ts';

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

/** What the bucket holds for a video's rules: a valid document (and its size), an invalid one, or none. */
export type RulesStatus = { readonly kind: 'none' } | { readonly kind: 'invalid'; readonly why: string } | { readonly kind: 'valid'; readonly lines: number; readonly zones: number };

/** The rules the worker would run for `videoId` (its own document, else the default), read as `render` reads them. */
export async function rulesStatus(target: Pick<Target, 'clients' | 'bucket'>, videoId: string): Promise<RulesStatus> {
  const problems: string[] = [];
  const rules = await readRules(target as Target, videoId, (l) => problems.push(l));
  if (rules) return { kind: 'valid', lines: rules.lines.length, zones: rules.zones.length };
  return problems.length > 0 ? { kind: 'invalid', why: problems.join('; ') } : { kind: 'none' };
}

/**
 * Why a video has no rule events, and what to do, from what the bucket holds. Counts come
 * only from rules: without a rules document there is nothing to count. Pure.
 */
export function noCountsMessage(videoId: string, bucket: string, rules: RulesStatus): string {
  const head = `no rule events for video "${videoId}"`;
  const example = '{"lines": [{"id": "door", "a": [0, 400], "b": [640, 400]}], "zones": []}';
  const replay = `frames processed before the rules existed are not counted: \`affinity replay ${videoId} --from 0\` counts them`;
  if (rules.kind === 'none') {
    return (
      `${head}: counts come from rules, and the bucket has none for it (neither s3://${bucket}/${rulesKey(videoId)} nor s3://${bucket}/${DEFAULT_RULES_KEY}). ` +
      `Put a rules document there, e.g. ${example} (README, "Rules and events"); workers pick it up within rulesRefreshSeconds, and ${replay}`
    );
  }
  if (rules.kind === 'invalid') return `${head}: its rules document is invalid, so workers count nothing new with it (${rules.why}); fix it, then ${replay}`;
  return (
    `${head}: its rules (${rules.lines} line(s), ${rules.zones} zone(s)) have not been crossed or entered by any track yet. ` +
    `If they were added after the video's frames were processed, ${replay}`
  );
}

export async function countsCommand(
  target: Target,
  o: { videoId: string; json: boolean },
  io: Io,
  rulesOf: (videoId: string) => Promise<RulesStatus> = (v) => rulesStatus(target, v),
): Promise<VideoCounts> {
  const counts = countEvents(await allEvents(target.clients.ddb, target.eventsTable, o.videoId));
  const why = counts.events === 0 ? noCountsMessage(o.videoId, target.bucket, await rulesOf(o.videoId)) : undefined;
  if (o.json) {
    io.out(JSON.stringify({ videoId: o.videoId, ...counts }));
    if (why) io.err(why);
    return counts;
  }
  if (why) throw new CliError(why);
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
