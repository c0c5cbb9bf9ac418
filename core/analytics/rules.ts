/**
 * The rules document of a video (issue 22, decision 34): lines, zones (with optional
 * dwell) in source-image pixels, read from `rules/{videoId}.json` or `rules/_default.json`
 * in the frame bucket. This module is the format and its validator: pure, no I/O. A
 * document that fails validation never reaches the rule engine (rule-engine.ts); the
 * worker reports it as a `rules.invalid` event and keeps the last good rules.
 */

/** A point in source-image pixels (x to the right, y down), as detections' boxes are. */
export type Point = readonly [number, number];

/**
 * A counting line: the segment from `a` to `b`. A crossing is `in` when a track's foot
 * point moves from the left-hand side of a→b to its right-hand side as seen on screen
 * (y down), `out` the other way. Crossings count per class, both ways.
 */
export interface LineRule {
  readonly id: string;
  readonly a: Point;
  readonly b: Point;
  /** Classes (detection labels) counted; absent = every class. */
  readonly classes?: readonly string[];
  /**
   * Half-width of the dead band around the line, pixels: a side is taken only farther
   * than this from the line, so a track jittering within it never counts (default
   * {@link DEFAULT_HYSTERESIS_PX}).
   */
  readonly hysteresisPx?: number;
}

/** A zone: a simple polygon. Raises enter/exit, counts per class, and optionally dwell. */
export interface ZoneRule {
  readonly id: string;
  /** Vertices in order (at least 3), source-image pixels. */
  readonly polygon: readonly Point[];
  readonly classes?: readonly string[];
  /** Raise `zone.dwell` once per track and zone when a track stays this long (seconds, by frame numbers and `fps`). */
  readonly dwellSeconds?: number;
}

/** The validated document. */
export interface RulesDocument {
  /** Frames per second of the video's frame numbering: converts frame spans into dwell seconds. */
  readonly fps: number;
  /** A track unseen for more than this many frames is forgotten (zones it was in raise `zone.exited`). */
  readonly forgetAfterFrames: number;
  readonly lines: readonly LineRule[];
  readonly zones: readonly ZoneRule[];
}

export const DEFAULT_FPS = 10;
/** The tracker's default `maxLostFrames` (gpu-worker/vision/tracker.ts): rule state outlives a lost track no longer than the tracker does. */
export const DEFAULT_FORGET_AFTER_FRAMES = 30;
export const DEFAULT_HYSTERESIS_PX = 4;
/** Most rules (lines + zones) per document: bounds the checkpoint (docs/decisions.md, decision 35). */
export const MAX_RULES = 32;
/** Most vertices per zone polygon. */
export const MAX_POLYGON_POINTS = 64;
/** Rule ids: short, safe inside event ids (`#` separates their parts). */
const RULE_ID = /^[A-Za-z0-9_.:-]{1,48}$/;
/** Largest coordinate accepted, pixels (a 65k-pixel-wide image is far beyond any camera). */
const MAX_COORD_PX = 65_536;

/** The result of validating a document: the rules, or every problem found (path: message). */
export type RulesValidation = { readonly ok: true; readonly rules: RulesDocument } | { readonly ok: false; readonly errors: readonly string[] };

/** Parses and validates a rules document's text. */
export function parseRules(text: string): RulesValidation {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, errors: [`not JSON: ${(e as Error).message}`] };
  }
  return validateRules(raw);
}

/** Validates a parsed document; every error names the path of the offending field. */
export function validateRules(raw: unknown): RulesValidation {
  const errors: string[] = [];
  if (!isObject(raw)) return { ok: false, errors: ['document: must be a JSON object'] };
  for (const k of Object.keys(raw)) if (!['fps', 'forgetAfterFrames', 'lines', 'zones', 'description'].includes(k)) errors.push(`${k}: unknown field`);
  const fps = optionalNumber(raw, 'fps', DEFAULT_FPS, errors, (v) => v > 0 && v <= 1000, 'a number in (0, 1000]');
  const forgetAfterFrames = optionalNumber(raw, 'forgetAfterFrames', DEFAULT_FORGET_AFTER_FRAMES, errors, (v) => Number.isInteger(v) && v >= 1 && v <= 100_000, 'an integer in [1, 100000]');
  const ids = new Set<string>();
  const lines = arrayField(raw, 'lines', errors).map((l, i) => lineRule(l, `lines[${i}]`, errors, ids));
  const zones = arrayField(raw, 'zones', errors).map((z, i) => zoneRule(z, `zones[${i}]`, errors, ids));
  if (lines.length + zones.length > MAX_RULES) errors.push(`document: ${lines.length + zones.length} rules, at most ${MAX_RULES}`);
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, rules: { fps, forgetAfterFrames, lines: lines as LineRule[], zones: zones as ZoneRule[] } };
}

function lineRule(v: unknown, path: string, errors: string[], ids: Set<string>): LineRule | undefined {
  if (!isObject(v)) return void errors.push(`${path}: must be an object`);
  for (const k of Object.keys(v)) if (!['id', 'a', 'b', 'classes', 'hysteresisPx'].includes(k)) errors.push(`${path}.${k}: unknown field`);
  const id = ruleId(v, path, errors, ids);
  const a = point(v.a, `${path}.a`, errors);
  const b = point(v.b, `${path}.b`, errors);
  if (a && b && a[0] === b[0] && a[1] === b[1]) errors.push(`${path}: a and b are the same point`);
  const classes = classList(v, path, errors);
  const hysteresisPx = optionalNumber(v, 'hysteresisPx', DEFAULT_HYSTERESIS_PX, errors, (x) => x >= 0 && x <= 1000, 'a number in [0, 1000]', path);
  if (!id || !a || !b) return undefined;
  return { id, a, b, ...(classes ? { classes } : {}), hysteresisPx };
}

function zoneRule(v: unknown, path: string, errors: string[], ids: Set<string>): ZoneRule | undefined {
  if (!isObject(v)) return void errors.push(`${path}: must be an object`);
  for (const k of Object.keys(v)) if (!['id', 'polygon', 'classes', 'dwellSeconds'].includes(k)) errors.push(`${path}.${k}: unknown field`);
  const id = ruleId(v, path, errors, ids);
  let polygon: Point[] | undefined;
  if (!Array.isArray(v.polygon) || v.polygon.length < 3 || v.polygon.length > MAX_POLYGON_POINTS) {
    errors.push(`${path}.polygon: must be an array of 3 to ${MAX_POLYGON_POINTS} points`);
  } else {
    const pts = v.polygon.map((p, i) => point(p, `${path}.polygon[${i}]`, errors));
    if (pts.every((p) => p !== undefined)) polygon = pts as Point[];
    if (polygon && Math.abs(polygonArea(polygon)) === 0) errors.push(`${path}.polygon: has no area`);
  }
  const classes = classList(v, path, errors);
  let dwellSeconds: number | undefined;
  if (v.dwellSeconds !== undefined) {
    if (typeof v.dwellSeconds !== 'number' || !(v.dwellSeconds > 0) || v.dwellSeconds > 86_400) errors.push(`${path}.dwellSeconds: must be a number in (0, 86400]`);
    else dwellSeconds = v.dwellSeconds;
  }
  if (!id || !polygon) return undefined;
  return { id, polygon, ...(classes ? { classes } : {}), ...(dwellSeconds !== undefined ? { dwellSeconds } : {}) };
}

function ruleId(v: Record<string, unknown>, path: string, errors: string[], ids: Set<string>): string | undefined {
  if (typeof v.id !== 'string' || !RULE_ID.test(v.id)) return void errors.push(`${path}.id: must be 1-48 characters of A-Z a-z 0-9 _ . : -`);
  if (ids.has(v.id)) return void errors.push(`${path}.id: "${v.id}" is used by another rule`);
  ids.add(v.id);
  return v.id;
}

function point(v: unknown, path: string, errors: string[]): Point | undefined {
  if (!Array.isArray(v) || v.length !== 2 || !v.every((c) => typeof c === 'number' && Number.isFinite(c) && Math.abs(c) <= MAX_COORD_PX)) {
    return void errors.push(`${path}: must be [x, y] in pixels (finite numbers, |c| <= ${MAX_COORD_PX})`);
  }
  return [v[0] as number, v[1] as number];
}

function classList(v: Record<string, unknown>, path: string, errors: string[]): readonly string[] | undefined {
  if (v.classes === undefined) return undefined;
  if (!Array.isArray(v.classes) || v.classes.length === 0 || !v.classes.every((c) => typeof c === 'string' && c.length > 0 && c.length <= 64)) {
    return void errors.push(`${path}.classes: must be a non-empty array of labels`);
  }
  return v.classes as string[];
}

function optionalNumber(v: Record<string, unknown>, key: string, dflt: number, errors: string[], ok: (x: number) => boolean, what: string, path?: string): number {
  const x = v[key];
  if (x === undefined) return dflt;
  if (typeof x !== 'number' || !Number.isFinite(x) || !ok(x)) {
    errors.push(`${path ? path + '.' : ''}${key}: must be ${what}`);
    return dflt;
  }
  return x;
}

function arrayField(v: Record<string, unknown>, key: string, errors: string[]): unknown[] {
  const x = v[key];
  if (x === undefined) return [];
  if (!Array.isArray(x)) {
    errors.push(`${key}: must be an array`);
    return [];
  }
  return x;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Signed area (shoelace), square pixels. */
export function polygonArea(p: readonly Point[]): number {
  let s = 0;
  for (let i = 0; i < p.length; i++) {
    const [x1, y1] = p[i]!;
    const [x2, y2] = p[(i + 1) % p.length]!;
    s += x1 * y2 - x2 * y1;
  }
  return s / 2;
}
