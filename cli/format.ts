/** Small text formatting helpers for terminal output (no dependencies). */

/** Renders rows as left-aligned columns; numbers are right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string[] {
  const cells = [header, ...rows.map((r) => r.map((c) => String(c)))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number' || r[i] === '-'));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.slice(1).map(line)];
}

/** `3.2s`, `4m05s`, `2h03m` — compact ages for operators. */
export function formatDurationMs(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const sign = ms < 0 ? '-' : '';
  const a = Math.abs(ms);
  if (a < 60_000) return `${sign}${(a / 1000).toFixed(1)}s`;
  const s = Math.floor(a / 1000);
  if (s < 3600) return `${sign}${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${sign}${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Collapses sorted integers into ranges: [1,2,3,7] -> "1-3, 7". */
export function ranges(sorted: readonly number[]): string {
  const out: string[] = [];
  let i = 0;
  while (i < sorted.length) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    out.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return out.join(', ');
}

/** A one-line progress bar: `[#####.....]  30/60  50%  1.2 MiB  12.3/s`. */
export function progressLine(done: number, total: number, extra: string, widthChars = 24): string {
  const ratio = total > 0 ? Math.min(1, done / total) : 1;
  const filled = Math.round(ratio * widthChars);
  return `[${'#'.repeat(filled)}${'.'.repeat(widthChars - filled)}] ${String(done).padStart(String(total).length)}/${total} ${String(Math.floor(ratio * 100)).padStart(3)}%${extra ? `  ${extra}` : ''}`;
}
