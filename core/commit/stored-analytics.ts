/**
 * The analytics state as a stored checkpoint holds it (issue 44, decision 76): the same
 * content as {@link AnalyticsState}, in arrays instead of objects keyed by rule id and
 * label. Rule ids and labels are written once, in a string table `k`; frame numbers are
 * offsets from the newest one, `F`, so most are 0. Arrays keep every object's key order,
 * so a state read back is the state written, key for key: the rule engine and the summary
 * see what an uninterrupted run sees. Only the stored form changes; the engine keeps its
 * readable objects (rule-engine.ts).
 *
 *   { p: 1, etag, invalidEtag?, k: [...strings], F,
 *     L: [[rule, label, in, out, label, in, out, ...], ...],            totals.lines
 *     Z: [[rule, label, entered, exited, dwell, ...], ...],             totals.zones
 *     T: [[id, label, F − f, s, z, zt, d], ...] }                       tracks
 * with, per track (trailing empty lists left out): s = [rule·2 + (side = 1 ? 1 : 0), ...],
 * z = [rule, F − entry frame, ...], zt = [rule, ms, ...], d = [rule, ...]; rules and labels
 * are indexes into `k`.
 */
import type { AnalyticsState, RuleTotals, TrackRuleState } from '../analytics/rule-engine.ts';

/** The packed form's version (the `p` field); a stored analytics object without it is the plain one. */
export const PACKED_ANALYTICS = 1;

type Packed = {
  readonly p: typeof PACKED_ANALYTICS;
  readonly etag: string;
  readonly invalidEtag?: string;
  readonly k: string[];
  readonly F: number;
  readonly L: (number)[][];
  readonly Z: (number)[][];
  readonly T: (number | number[])[][];
};

/** The stored form of `a` (its `rules`, stored out of line, are not included). */
export function packAnalytics(a: Omit<AnalyticsState, 'rules'>): Packed {
  const k: string[] = [];
  const index = new Map<string, number>();
  const ix = (s: string) => {
    let i = index.get(s);
    if (i === undefined) {
      i = k.length;
      k.push(s);
      index.set(s, i);
    }
    return i;
  };
  const counts = (byRule: Record<string, Record<string, readonly number[]>>) =>
    Object.entries(byRule).map(([rule, byLabel]) => [ix(rule), ...Object.entries(byLabel).flatMap(([label, n]) => [ix(label), ...n])]);
  const L = counts(a.totals.lines);
  const Z = counts(a.totals.zones);
  const tracks = Object.entries(a.tracks);
  const F = tracks.reduce((m, [, t]) => Math.max(m, t.f), 0);
  const T = tracks.map(([id, t]) => {
    const row: (number | number[])[] = [
      Number(id),
      ix(t.l),
      F - t.f,
      Object.entries(t.s ?? {}).map(([rule, side]) => ix(rule) * 2 + (side === 1 ? 1 : 0)),
      Object.entries(t.z ?? {}).flatMap(([rule, frame]) => [ix(rule), F - frame]),
      Object.entries(t.zt ?? {}).flatMap(([rule, ms]) => [ix(rule), ms]),
      (t.d ?? []).map(ix),
    ];
    while (row.length > 3 && (row.at(-1) as number[]).length === 0) row.pop();
    return row;
  });
  return { p: PACKED_ANALYTICS, etag: a.etag, ...(a.invalidEtag !== undefined ? { invalidEtag: a.invalidEtag } : {}), k, F, L, Z, T };
}

/**
 * The analytics state a stored checkpoint holds: unpacked when packed
 * ({@link packAnalytics}), as it is otherwise (written before decision 76). Throws on a
 * packed form that does not decode (the caller names the video).
 */
export function unpackAnalytics(stored: Record<string, unknown>): Omit<AnalyticsState, 'rules'> & { readonly rules?: AnalyticsState['rules'] } {
  if (stored.p === undefined) return stored as unknown as AnalyticsState;
  if (stored.p !== PACKED_ANALYTICS) throw new Error(`its analytics state is in packed form ${String(stored.p)}, which this version does not read`);
  const s = stored as unknown as Packed;
  const str = (i: unknown) => {
    const v = typeof i === 'number' ? s.k[i] : undefined;
    if (v === undefined) throw new Error(`its analytics state names string ${String(i)}, which its table lacks`);
    return v;
  };
  const num = (x: unknown) => {
    if (typeof x !== 'number') throw new Error('its analytics state has a count that is not a number');
    return x;
  };
  const counts = <N extends number[]>(rows: unknown, width: number): Record<string, Record<string, N>> => {
    const out: Record<string, Record<string, N>> = {};
    for (const row of rows as unknown[][]) {
      const byLabel: Record<string, N> = {};
      for (let i = 1; i < row.length; i += 1 + width) byLabel[str(row[i])] = row.slice(i + 1, i + 1 + width).map(num) as N;
      out[str(row[0])] = byLabel;
    }
    return out;
  };
  const totals: RuleTotals = { lines: counts<[number, number]>(s.L, 2), zones: counts<[number, number, number]>(s.Z, 3) };
  const tracks: Record<string, TrackRuleState> = {};
  for (const row of s.T as unknown[][]) {
    const [id, label, df, sides = [], zones = [], zoneMs = [], dwelt = []] = row as [number, number, number, number[]?, number[]?, number[]?, number[]?];
    const t: TrackRuleState = { l: str(label), f: s.F - num(df) };
    if (sides.length > 0) t.s = Object.fromEntries(sides.map((x) => [str(Math.floor(x / 2)), x % 2 === 1 ? 1 : -1]));
    if (zones.length > 0) t.z = Object.fromEntries(pairs(zones).map(([r, d]) => [str(r), s.F - num(d)]));
    if (zoneMs.length > 0) t.zt = Object.fromEntries(pairs(zoneMs).map(([r, ms]) => [str(r), num(ms)]));
    if (dwelt.length > 0) t.d = dwelt.map(str);
    tracks[String(num(id))] = t;
  }
  return { etag: s.etag, ...(s.invalidEtag !== undefined ? { invalidEtag: s.invalidEtag } : {}), tracks, totals };
}

function pairs(xs: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i + 1 < xs.length; i += 2) out.push([xs[i]!, xs[i + 1]!]);
  return out;
}
