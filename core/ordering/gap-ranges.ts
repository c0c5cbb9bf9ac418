/**
 * The frames a video recorded as `gap`, kept in its checkpoint so that a later S3 listing
 * can find the objects that came after their gap (docs/decisions.md, "Gaps are re-checked
 * against S3"): a sorted list of inclusive ranges, so a run of missing frames costs one
 * entry, and never more than {@link MAX_GAP_RANGES} entries (about 4.5 KB at 15-digit
 * frame numbers, well inside the checkpoint budget of core/commit/commit-packing.ts).
 *
 * Past the bound, the two ranges with the smallest hole between them are merged into one
 * *mixed* range (third element 1): it holds every gap it replaced, and also the frames of
 * the hole, which have other records. A listed frame inside a mixed range is therefore
 * only a candidate, for the caller to check against its record.
 */

/** `[from, through]` (every frame a gap) or `[from, through, 1]` (gaps among other frames). */
export type GapRange = [from: number, through: number] | [from: number, through: number, mixed: 1];

/** Most ranges a checkpoint keeps; see the module comment for what happens beyond. */
export const MAX_GAP_RANGES = 128;

/** Whether `frame` lies in a range: `exact` (a recorded gap), `mixed` (maybe one), or not at all. */
export function gapKind(gaps: readonly GapRange[], frame: number): 'exact' | 'mixed' | undefined {
  const r = rangeOf(gaps, frame);
  if (r === undefined) return undefined;
  return gaps[r]!.length === 3 ? 'mixed' : 'exact';
}

/** Adds `frame`, merging with neighbours; keeps the list sorted and bounded. */
export function addGap(gaps: GapRange[], frame: number): void {
  if (rangeOf(gaps, frame) !== undefined) return;
  let at = gaps.findIndex((g) => g[0] > frame);
  if (at === -1) at = gaps.length;
  const before = gaps[at - 1];
  const after = gaps[at];
  if (before && before[1] === frame - 1 && after && after[0] === frame + 1) {
    gaps.splice(at - 1, 2, join(before, after, !isMixed(before) && !isMixed(after)));
  } else if (before && before[1] === frame - 1) {
    before[1] = frame;
  } else if (after && after[0] === frame + 1) {
    after[0] = frame;
  } else {
    gaps.splice(at, 0, [frame, frame]);
  }
  bound(gaps);
}

/** Removes `frame` (its late record replaces the gap, or its record was found not to be one). */
export function removeGap(gaps: GapRange[], frame: number): void {
  const r = rangeOf(gaps, frame);
  if (r === undefined) return;
  const g = gaps[r]!;
  const mixed = isMixed(g);
  const parts: GapRange[] = [];
  if (g[0] <= frame - 1) parts.push(range(g[0], frame - 1, mixed));
  if (frame + 1 <= g[1]) parts.push(range(frame + 1, g[1], mixed));
  gaps.splice(r, 1, ...parts);
  bound(gaps);
}

/** The first range frame at or above `from`, or undefined when none. */
export function firstGapFrom(gaps: readonly GapRange[], from: number): number | undefined {
  const g = gaps.find((x) => x[1] >= from);
  return g ? Math.max(g[0], from) : undefined;
}

/** How many range frames lie at or above `from` (mixed ranges count whole). */
export function gapFramesFrom(gaps: readonly GapRange[], from: number): number {
  let n = 0;
  for (const g of gaps) if (g[1] >= from) n += g[1] - Math.max(g[0], from) + 1;
  return n;
}

/** A re-check in progress: gaps from `fromFrame` on are still to be listed; `atMs`, when it last listed. */
export interface RecheckCursor {
  fromFrame: number;
  atMs: number | null;
}

/** What the due re-check must cover, or undefined when none is due (or no gap is left to check). */
export function recheckSpan(gaps: readonly GapRange[], recheck: RecheckCursor | null): { fromFrame: number; toFrame: number; frames: number } | undefined {
  if (recheck === null) return undefined;
  const fromFrame = firstGapFrom(gaps, recheck.fromFrame);
  if (fromFrame === undefined) return undefined;
  return { fromFrame, toFrame: gaps.at(-1)![1], frames: gapFramesFrom(gaps, fromFrame) };
}

/**
 * The re-check after a listing from `fromFrame` that proved everything up to `covered`:
 * done (null) once every gap is covered, else moved on. A listing that started above the
 * next gap to check does not count. One that proved nothing still moves past one gap: a
 * re-check must never hold a video's completion for ever (`affinity reconcile` is the
 * fallback for what it skipped).
 */
export function advanceRecheck(gaps: readonly GapRange[], recheck: RecheckCursor | null, fromFrame: number, covered: number, nowMs: number): RecheckCursor | null {
  if (recheck === null) return null;
  const first = firstGapFrom(gaps, recheck.fromFrame);
  if (first === undefined || (covered >= gaps.at(-1)![1] && fromFrame <= first)) return null;
  if (fromFrame > first) return recheck;
  return { fromFrame: Math.max(recheck.fromFrame, covered + 1, first + 1), atMs: nowMs };
}

function rangeOf(gaps: readonly GapRange[], frame: number): number | undefined {
  let a = 0;
  let b = gaps.length - 1;
  while (a <= b) {
    const m = (a + b) >> 1;
    const g = gaps[m]!;
    if (frame < g[0]) b = m - 1;
    else if (frame > g[1]) a = m + 1;
    else return m;
  }
  return undefined;
}

function bound(gaps: GapRange[]): void {
  while (gaps.length > MAX_GAP_RANGES) {
    let best = 0;
    for (let i = 1; i + 1 < gaps.length; i++) {
      if (gaps[i + 1]![0] - gaps[i]![1] < gaps[best + 1]![0] - gaps[best]![1]) best = i;
    }
    gaps.splice(best, 2, join(gaps[best]!, gaps[best + 1]!, false));
  }
}

function join(a: GapRange, b: GapRange, exact: boolean): GapRange {
  return range(a[0], b[1], !exact);
}

function range(from: number, through: number, mixed: boolean): GapRange {
  return mixed ? [from, through, 1] : [from, through];
}

function isMixed(g: GapRange): boolean {
  return g.length === 3;
}
