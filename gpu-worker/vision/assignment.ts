/**
 * Optimal assignment with a cost limit, on top of the `munkres` package
 * (Hungarian algorithm, rectangular matrices, MIT, typed, maintained).
 */
import { munkres } from 'munkres';

export interface AssignmentResult {
  /** [row, col] pairs, sorted by row. */
  readonly matches: [number, number][];
  readonly unmatchedRows: number[];
  readonly unmatchedCols: number[];
}

/**
 * Minimum-cost assignment where a pair costing more than `maxCost` never
 * matches. Same semantics as lapjv's `extend_cost` + `cost_limit` used by
 * ByteTrack: the matrix is padded to (rows + cols) square with `maxCost / 2`
 * for leaving a row or a column unmatched, so a pair is used only when it is
 * cheaper than leaving both sides unmatched. Pass `columnCount` so that an
 * empty matrix still reports every column as unmatched.
 */
export function assign(cost: readonly (readonly number[])[], maxCost: number, columnCount?: number): AssignmentResult {
  const rows = cost.length;
  // With no rows the matrix cannot tell how many columns there are.
  const cols = rows > 0 ? cost[0].length : (columnCount ?? 0);
  const matches: [number, number][] = [];
  if (rows > 0 && cols > 0) {
    const n = rows + cols;
    const unmatchedCost = maxCost / 2;
    const forbidden = 2 * maxCost + 1;
    const matrix: number[][] = [];
    for (let r = 0; r < n; r++) {
      const row = new Array<number>(n);
      for (let c = 0; c < n; c++) {
        if (r < rows && c < cols) row[c] = cost[r][c] <= maxCost ? cost[r][c] : forbidden;
        else if (r >= rows && c >= cols) row[c] = 0;
        else row[c] = unmatchedCost;
      }
      matrix.push(row);
    }
    for (const [r, c] of munkres(matrix)) {
      if (r < rows && c < cols && cost[r][c] <= maxCost) matches.push([r, c]);
    }
    matches.sort((a, b) => a[0] - b[0]);
  }
  const rowUsed = new Set(matches.map((m) => m[0]));
  const colUsed = new Set(matches.map((m) => m[1]));
  return {
    matches,
    unmatchedRows: Array.from({ length: rows }, (_, i) => i).filter((i) => !rowUsed.has(i)),
    unmatchedCols: Array.from({ length: cols }, (_, i) => i).filter((i) => !colUsed.has(i)),
  };
}
