/**
 * The rule engine (issue 22, decision 34): runs a video's rules over its in-order tracker
 * stream and returns the events they raise and the state after them. Pure and
 * deterministic: the same state and the same frames give the same events and the same
 * state, which is what lets a successor after kill -9 continue from the checkpointed
 * state with the same event ids and totals as an uninterrupted run.
 *
 * Geometry, all in source-image pixels:
 * - the point of a box that is tested is its bottom centre (the foot point: where a
 *   person or a car touches the ground, which is what a line drawn on the floor means);
 * - a line's side is taken only when the foot point is farther than `hysteresisPx` from
 *   the (infinite) line; inside that dead band the track keeps its last side. A crossing
 *   is a change of side, counted when the foot point that confirms the new side projects
 *   between the segment's ends. So jitter within the band never counts, a track that
 *   touches the line and leaves on its side never counts, and jitter across the band
 *   counts once per real change of side;
 * - zones test the foot point with the even-odd rule;
 * - dwell time is the stream's time between the entry frame and the frame, when both carry
 *   a presentation timestamp (frames of encoded segments, `ptsMs`) and it runs forward
 *   (a segmenter that restarts its time line per segment falls back); otherwise
 *   (frame − entry frame) / `fps`. Never wall clocks, so a re-run of the same frames
 *   raises the same dwell events.
 */
import type { Detection } from '../ports.ts';
import type { RuleEventKind } from './event-schema.ts';
import type { LineRule, Point, RulesDocument, ZoneRule } from './rules.ts';

/** One track's rule state (compact keys: it lives in the checkpoint). */
export interface TrackRuleState {
  /** The track's label when first seen (counts stay in one class even if the detector's label flickers). */
  readonly l: string;
  /** Last frame the track was seen. */
  f: number;
  /** Side of each line (by rule id): 1 = right-hand side of a→b on screen, -1 = left. */
  s?: Record<string, 1 | -1>;
  /** Zones the track is in (by rule id) with the frame it entered. */
  z?: Record<string, number>;
  /** The entry frame's stream time (ms) per zone, where that frame carried one. */
  zt?: Record<string, number>;
  /** Zones whose dwell event this track has raised. */
  d?: string[];
}

/** Totals per rule and class: line → label → [in, out]; zone → label → [entered, exited, dwell]. */
export interface RuleTotals {
  readonly lines: Record<string, Record<string, [number, number]>>;
  readonly zones: Record<string, Record<string, [number, number, number]>>;
}

/** A video's analytics state, stored in its checkpoint (`VideoCheckpoint.analytics`). */
export interface AnalyticsState {
  /** ETag of the rules document in effect ('' when none was found). */
  readonly etag: string;
  /** The rules in effect (carried so that a successor runs the very same ones). */
  readonly rules?: RulesDocument;
  /** ETag of the last invalid document reported by a `rules.invalid` event. */
  readonly invalidEtag?: string;
  /** Per track id. */
  readonly tracks: Record<string, TrackRuleState>;
  readonly totals: RuleTotals;
}

/** A rule event before it is addressed to a video and a commit (commit-builder.ts does that). */
export interface RuleEvent {
  readonly kind: RuleEventKind;
  readonly frame: number;
  readonly ruleId: string;
  readonly trackId: number;
  readonly label: string;
  readonly detail?: Readonly<Record<string, string | number>>;
  /** Tells apart events that could otherwise share an id (a rules change's exits: the new version's ETag). */
  readonly discriminator?: string;
}

/** One in-order frame's tracked detections. */
export interface TrackedFrame {
  readonly frame: number;
  readonly detections: readonly Detection[];
  /** The frame's presentation time in its stream, ms, when it has one (segments). */
  readonly ptsMs?: number;
}

export function emptyAnalytics(): AnalyticsState {
  return { etag: '', tracks: {}, totals: { lines: {}, zones: {} } };
}

/**
 * Puts a rules version into effect (see {@link changeRules}, which also returns the exits it
 * causes); the state only.
 */
export function withRules(state: AnalyticsState, etag: string, rules: RulesDocument | undefined): AnalyticsState {
  return changeRules(state, etag, rules).state;
}

/**
 * Puts a rules version into effect. A rule whose definition changed (or that is gone)
 * loses its per-track state (sides, memberships, dwell flags), so a moved line or zone
 * starts fresh; totals are kept by rule id. A track inside a zone that changed or went
 * away leaves it with a `zone.exited` event (reason `rule-changed`, at the track's last
 * frame, the new version's ETag as discriminator) counted in the totals: without it
 * entered − exited would drift up for good and a track still inside would be counted as
 * entering twice (issue 32). Same ETag: unchanged, no events.
 */
export function changeRules(state: AnalyticsState, etag: string, rules: RulesDocument | undefined): { state: AnalyticsState; events: RuleEvent[] } {
  if (state.etag === etag) return { state, events: [] };
  const before = new Map<string, string>([...(state.rules?.lines ?? []), ...(state.rules?.zones ?? [])].map((r) => [r.id, JSON.stringify(r)]));
  const after = new Map<string, string>([...(rules?.lines ?? []), ...(rules?.zones ?? [])].map((r) => [r.id, JSON.stringify(r)]));
  const kept = (id: string) => before.get(id) !== undefined && before.get(id) === after.get(id);
  const tracks: Record<string, TrackRuleState> = {};
  const totals = structuredClone(state.totals) as RuleTotals;
  const events: RuleEvent[] = [];
  const fps = state.rules?.fps ?? 1;
  for (const [id, t] of Object.entries(state.tracks).sort(([a], [b]) => Number(a) - Number(b))) {
    const s = t.s ? pick(t.s, kept) : undefined;
    const z = t.z ? pick(t.z, kept) : undefined;
    const d = t.d?.filter(kept);
    for (const [zoneId, entered] of Object.entries(t.z ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
      if (kept(zoneId)) continue;
      (((totals.zones as Record<string, Record<string, [number, number, number]>>)[zoneId] ??= {})[t.l] ??= [0, 0, 0])[1]++;
      events.push({ kind: 'zone.exited', frame: t.f, ruleId: zoneId, trackId: Number(id), label: t.l, detail: { seconds: round3((t.f - entered) / fps), enteredFrame: entered, reason: 'rule-changed' }, discriminator: etag });
    }
    tracks[id] = { l: t.l, f: t.f, ...(s ? { s } : {}), ...(z ? { z } : {}), ...(d && d.length > 0 ? { d } : {}) };
  }
  const { rules: _old, ...rest } = state;
  return { state: { ...rest, etag, ...(rules ? { rules } : {}), tracks, totals }, events };
}

/** Runs the rules in effect over in-order frames (ascending). Frames before `state`'s are the caller's bug. */
export function runRules(state: AnalyticsState, frames: readonly TrackedFrame[]): { state: AnalyticsState; events: RuleEvent[] } {
  const rules = state.rules;
  if (!rules || frames.length === 0) return { state, events: [] };
  const next = structuredClone(state) as { -readonly [K in keyof AnalyticsState]: AnalyticsState[K] };
  const events: RuleEvent[] = [];
  for (const f of frames) stepFrame(next, rules, f, events);
  return { state: next, events };
}

function stepFrame(st: AnalyticsState, rules: RulesDocument, f: TrackedFrame, events: RuleEvent[]): void {
  for (const det of f.detections) {
    if (det.trackId <= 0) continue; // unassociated: no track to follow
    const key = String(det.trackId);
    const t: TrackRuleState = st.tracks[key] ?? (st.tracks[key] = { l: det.label, f: f.frame });
    t.f = f.frame;
    const p = footPoint(det.box);
    for (const line of rules.lines) {
      if (!applies(line.classes, t.l)) continue;
      const side = sideOf(line, p);
      if (side === 0) continue;
      const prev = t.s?.[line.id];
      (t.s ??= {})[line.id] = side;
      if (prev === undefined || prev === side || !withinSegment(line, p)) continue;
      const direction = prev === -1 ? 'in' : 'out';
      const c = ((st.totals.lines[line.id] ??= {})[t.l] ??= [0, 0]);
      c[direction === 'in' ? 0 : 1]++;
      events.push({ kind: 'line.crossed', frame: f.frame, ruleId: line.id, trackId: det.trackId, label: t.l, detail: { direction } });
    }
    for (const zone of rules.zones) {
      if (!applies(zone.classes, t.l)) continue;
      const inside = insidePolygon(zone.polygon, p);
      const entered = t.z?.[zone.id];
      if (inside && entered === undefined) {
        (t.z ??= {})[zone.id] = f.frame;
        if (f.ptsMs !== undefined) (t.zt ??= {})[zone.id] = f.ptsMs;
        zoneCount(st, zone.id, t.l)[0]++;
        events.push({ kind: 'zone.entered', frame: f.frame, ruleId: zone.id, trackId: det.trackId, label: t.l });
      } else if (!inside && entered !== undefined) {
        exitZone(st, t, zone.id, det.trackId, f, rules.fps, 'left', events);
      } else if (inside && entered !== undefined && zone.dwellSeconds !== undefined && !t.d?.includes(zone.id)) {
        const seconds = dwellSeconds(t, zone.id, f, rules.fps);
        if (seconds >= zone.dwellSeconds) {
          (t.d ??= []).push(zone.id);
          zoneCount(st, zone.id, t.l)[2]++;
          events.push({ kind: 'zone.dwell', frame: f.frame, ruleId: zone.id, trackId: det.trackId, label: t.l, detail: { seconds: round3(seconds), enteredFrame: entered } });
        }
      }
    }
  }
  // Tracks unseen for longer than the tracker keeps lost tracks are gone: leave their zones, drop their state.
  for (const key of Object.keys(st.tracks).sort((a, b) => Number(a) - Number(b))) {
    const t = st.tracks[key]!;
    if (f.frame - t.f <= rules.forgetAfterFrames) continue;
    for (const zoneId of Object.keys(t.z ?? {}).sort()) exitZone(st, t, zoneId, Number(key), f, rules.fps, 'track-lost', events);
    delete st.tracks[key];
  }
}

function exitZone(st: AnalyticsState, t: TrackRuleState, zoneId: string, trackId: number, at: { readonly frame: number; readonly ptsMs?: number }, fps: number, reason: string, events: RuleEvent[]): void {
  const entered = t.z![zoneId]!;
  const seconds = dwellSeconds(t, zoneId, at, fps);
  delete t.z![zoneId];
  if (Object.keys(t.z!).length === 0) delete t.z;
  if (t.zt) {
    delete t.zt[zoneId];
    if (Object.keys(t.zt).length === 0) delete t.zt;
  }
  zoneCount(st, zoneId, t.l)[1]++;
  events.push({ kind: 'zone.exited', frame: at.frame, ruleId: zoneId, trackId, label: t.l, detail: { seconds: round3(seconds), enteredFrame: entered, reason } });
}

/** Time in a zone: the stream's, when the entry frame and this one carry timestamps that run forward; else frames over `fps`. */
function dwellSeconds(t: TrackRuleState, zoneId: string, at: { readonly frame: number; readonly ptsMs?: number }, fps: number): number {
  const entered = t.z![zoneId]!;
  const enteredMs = t.zt?.[zoneId];
  if (enteredMs !== undefined && at.ptsMs !== undefined && at.ptsMs >= enteredMs) return (at.ptsMs - enteredMs) / 1000;
  return (at.frame - entered) / fps;
}

function zoneCount(st: AnalyticsState, zoneId: string, label: string): [number, number, number] {
  return ((st.totals.zones[zoneId] ??= {})[label] ??= [0, 0, 0]);
}

/** Tracks in each zone now, per class (the "count in a zone"), from the state. */
export function occupancy(state: AnalyticsState): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const t of Object.values(state.tracks)) for (const zoneId of Object.keys(t.z ?? {})) (out[zoneId] ??= {})[t.l] = ((out[zoneId] ??= {})[t.l] ?? 0) + 1;
  return out;
}

/** The tested point of a box: its bottom centre. */
export function footPoint(box: readonly [number, number, number, number]): Point {
  return [(box[0] + box[2]) / 2, box[3]];
}

/** 1 right of a→b on screen (y down), -1 left, 0 within the dead band. */
export function sideOf(line: LineRule, p: Point): 1 | -1 | 0 {
  const dx = line.b[0] - line.a[0];
  const dy = line.b[1] - line.a[1];
  const distancePx = (dx * (p[1] - line.a[1]) - dy * (p[0] - line.a[0])) / Math.hypot(dx, dy);
  const band = line.hysteresisPx ?? 0;
  return distancePx > band ? 1 : distancePx < -band ? -1 : 0;
}

/** Whether p projects between the segment's ends. */
export function withinSegment(line: LineRule, p: Point): boolean {
  const dx = line.b[0] - line.a[0];
  const dy = line.b[1] - line.a[1];
  const t = ((p[0] - line.a[0]) * dx + (p[1] - line.a[1]) * dy) / (dx * dx + dy * dy);
  return t >= 0 && t <= 1;
}

/** Even-odd point-in-polygon. */
export function insidePolygon(poly: readonly Point[], p: Point): boolean {
  let inside = false;
  for (let i = 0, j = poly.length - 1; i < poly.length; j = i++) {
    const [xi, yi] = poly[i]!;
    const [xj, yj] = poly[j]!;
    if (yi > p[1] !== yj > p[1] && p[0] < ((xj - xi) * (p[1] - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

function applies(classes: readonly string[] | undefined, label: string): boolean {
  return classes === undefined || classes.includes(label);
}

function pick<V>(o: Record<string, V>, keep: (k: string) => boolean): Record<string, V> | undefined {
  const out = Object.fromEntries(Object.entries(o).filter(([k]) => keep(k)));
  return Object.keys(out).length > 0 ? out : undefined;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** Re-exported so callers need one import for rules and their state. */
export type { LineRule, ZoneRule, RulesDocument };
