import { describe, expect, it } from 'vitest';
import { emptyCheckpoint, summaryOf, upgradeCheckpoint, withNewOwner, type VideoCheckpoint } from '../../../core/commit/checkpoint.ts';
import { emptyAnalytics, runRules, withRules, type AnalyticsState } from '../../../core/analytics/rule-engine.ts';
import { validateRules } from '../../../core/analytics/rules.ts';
import { estimatedBytes, MAX_CHECKPOINT_BYTES } from '../../../core/commit/commit-packing.ts';

const doc = validateRules({
  lines: Array.from({ length: 5 }, (_, i) => ({ id: `line-${i}`, a: [0, 100 * (i + 1)], b: [1280, 100 * (i + 1)] })),
  zones: Array.from({ length: 5 }, (_, i) => ({ id: `zone-${i}`, polygon: [[200 * i, 0], [200 * i + 400, 0], [200 * i + 400, 720], [200 * i, 720]], dwellSeconds: 2 })),
});
if (!doc.ok) throw new Error(doc.errors.join('; '));
const RULES = doc.rules;

/** 50 tracks each on a side of every line, in every zone, every dwell raised: the largest state 10 rules and 50 tracks make. */
function worstCase(): AnalyticsState {
  const s = runRules(withRules(emptyAnalytics(), 'video:"0123456789abcdef0123456789abcdef"', RULES), [
    { frame: 0, detections: Array.from({ length: 50 }, (_, i) => ({ trackId: 100_000 + i, label: 'person', score: 1, box: [10, 10, 20, 30] as [number, number, number, number] })) },
  ]).state;
  const worst = structuredClone(s) as { tracks: Record<string, { s?: Record<string, 1 | -1>; z?: Record<string, number>; d?: string[] }> };
  for (const t of Object.values(worst.tracks)) {
    t.s = Object.fromEntries(RULES.lines.map((l) => [l.id, -1 as const]));
    t.z = Object.fromEntries(RULES.zones.map((z) => [z.id, 1_234_567]));
    t.d = RULES.zones.map((z) => z.id);
  }
  return worst as unknown as AnalyticsState;
}

describe('rule state in the checkpoint', () => {
  it('survives a JSON round trip, an upgrade and an adoption unchanged', () => {
    const ck: VideoCheckpoint = { ...emptyCheckpoint(0), analytics: worstCase() };
    const stored = JSON.parse(JSON.stringify(ck)) as VideoCheckpoint;
    expect(upgradeCheckpoint(stored).analytics).toEqual(ck.analytics);
    expect(withNewOwner(stored, { worker: 'w2', token: 2, sinceMs: 0 }).analytics).toEqual(ck.analytics);
  });

  it('10 rules and 50 tracks, worst case, take under 5 % of the checkpoint budget', () => {
    expect(estimatedBytes(worstCase())).toBeLessThan(0.05 * MAX_CHECKPOINT_BYTES);
  });

  it('the summary carries the totals once anything was counted', () => {
    const lease = { token: 1, worker: 'w', slot: 0 };
    expect(summaryOf('v', emptyCheckpoint(0), lease, 0).ruleTotals).toBeUndefined();
    const totals = { lines: { 'line-0': { person: [2, 1] as [number, number] } }, zones: {} };
    const ck = { ...emptyCheckpoint(0), analytics: { ...emptyAnalytics(), totals } };
    expect(summaryOf('v', ck, lease, 0).ruleTotals).toEqual(totals);
  });
});
