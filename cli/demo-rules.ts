/**
 * The demo's rules (issue 22): a document sized to the synthetic clips, the ground-truth
 * totals (the same rules run on the clip's truth tracks, as bench/analytics.ts does) and
 * the per-video comparison the demo prints. Pure: demo.ts puts the document in the
 * bucket and reads the worker's totals from the video summary.
 */
import { emptyAnalytics, runRules, withRules, type RuleTotals, type TrackedFrame } from '../core/analytics/rule-engine.ts';
import { validateRules, type RulesDocument } from '../core/analytics/rules.ts';

/**
 * One counting line down the middle of the image (a→b top to bottom, so `in` is a move
 * to the left half: the right-hand side of a downward segment on screen) and the left
 * half as a zone with a 1 s dwell, at the clips' 10 frames per second.
 */
export function demoRules(size: { readonly widthPx: number; readonly heightPx: number }): RulesDocument {
  const midX = Math.round(size.widthPx / 2);
  const r = validateRules({
    fps: 10,
    lines: [{ id: 'middle', a: [midX, 0], b: [midX, size.heightPx] }],
    zones: [{ id: 'left-half', polygon: [[0, 0], [midX, 0], [midX, size.heightPx], [0, size.heightPx]], dwellSeconds: 1 }],
  });
  // The document is built here, so an invalid one is this module's bug, not input.
  if (!r.ok) throw new Error(`demo rules invalid: ${r.errors.join('; ')}`);
  return r.rules;
}

/** A clip's ground truth as the rule engine's input (truth ids as track ids, score 1). */
export interface TruthFrame {
  readonly frame: number;
  readonly objects: readonly { readonly id: number; readonly label: string; readonly box: readonly [number, number, number, number] }[];
}

/** Totals of `rules` over the clip's truth tracks: what a perfect detector and tracker would count. */
export function truthTotals(groundTruth: readonly TruthFrame[], rules: RulesDocument): RuleTotals {
  const frames: TrackedFrame[] = [...groundTruth]
    .sort((a, b) => a.frame - b.frame)
    .map((g) => ({ frame: g.frame, detections: g.objects.map((o) => ({ trackId: o.id, label: o.label, score: 1, box: [...o.box] as [number, number, number, number] })) }));
  return runRules(withRules(emptyAnalytics(), 'truth', rules), frames).state.totals;
}

/** Totals as read (the summary's `ruleTotals` is readonly): line → label → [in, out]; zone → label → [entered, exited, dwell]. */
export interface TotalsView {
  readonly lines: Readonly<Record<string, Readonly<Record<string, readonly number[]>>>>;
  readonly zones: Readonly<Record<string, Readonly<Record<string, readonly number[]>>>>;
}

/** One rule and class: the worker's counts next to the truth's. */
export interface RuleCountRow {
  readonly kind: 'line' | 'zone';
  readonly ruleId: string;
  readonly label: string;
  /** Line: [in, out]; zone: [entered, exited, dwell]. Zeros where the worker counted nothing. */
  readonly counted: readonly number[];
  readonly truth: readonly number[];
  readonly match: boolean;
}

/**
 * Rows for every rule of `rules` and every class either side saw, sorted by rule then
 * class; a rule nobody crossed still gets a row (label `-`, zeros) so the table shows
 * every rule. `counted` undefined (no `ruleTotals` in the summary) compares as all zeros.
 */
export function compareTotals(rules: RulesDocument, counted: TotalsView | undefined, truth: TotalsView): RuleCountRow[] {
  const rows: RuleCountRow[] = [];
  const add = (kind: 'line' | 'zone', ruleId: string, width: number, c: Readonly<Record<string, readonly number[]>> | undefined, t: Readonly<Record<string, readonly number[]>> | undefined) => {
    const labels = [...new Set([...Object.keys(c ?? {}), ...Object.keys(t ?? {})])].sort();
    const zeros = Array.from({ length: width }, () => 0);
    if (labels.length === 0) rows.push({ kind, ruleId, label: '-', counted: zeros, truth: zeros, match: true });
    for (const label of labels) {
      const cv = c?.[label] ?? zeros;
      const tv = t?.[label] ?? zeros;
      rows.push({ kind, ruleId, label, counted: [...cv], truth: [...tv], match: cv.length === tv.length && cv.every((n, i) => n === tv[i]) });
    }
  };
  for (const l of rules.lines) add('line', l.id, 2, counted?.lines[l.id], truth.lines[l.id]);
  for (const z of rules.zones) add('zone', z.id, 3, counted?.zones[z.id], truth.zones[z.id]);
  return rows;
}

/** A video's comparison, for {@link ruleCountTable}. */
export interface VideoRuleCounts {
  readonly videoId: string;
  readonly rows: readonly RuleCountRow[];
  /** Events of the video in the events table (all kinds), when read. */
  readonly events?: number;
}

/** The table the demo prints: per video and rule, counts next to the truth, and a verdict line per video. Pure. */
export function ruleCountTable(videos: readonly VideoRuleCounts[]): string[] {
  const cells = videos.flatMap((v) =>
    v.rows.map((r) => [v.videoId, `${r.kind} ${r.ruleId}`, r.label, r.kind === 'line' ? 'in/out' : 'entered/exited/dwell', r.counted.join('/'), r.truth.join('/'), r.match ? 'ok' : 'DIFFERS']),
  );
  const header = ['video', 'rule', 'class', 'counts', 'counted', 'truth', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const fmt = (c: readonly string[]) => c.map((x, i) => x.padEnd(widths[i]!)).join('  ').trimEnd();
  const verdicts = videos.map((v) => {
    const differ = v.rows.filter((r) => !r.match).length;
    const events = v.events === undefined ? '' : `; ${v.events} event(s) in the events table`;
    return `${v.videoId}: ${differ === 0 ? 'every count matches the ground truth' : `${differ} of ${v.rows.length} count row(s) differ from the ground truth`}${events}`;
  });
  return [fmt(header), ...cells.map(fmt), '', ...verdicts];
}

/** Whether every row of every video matches. */
export function allMatch(videos: readonly VideoRuleCounts[]): boolean {
  return videos.every((v) => v.rows.every((r) => r.match));
}
