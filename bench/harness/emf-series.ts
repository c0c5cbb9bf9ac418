/**
 * The CloudWatch custom metric series a process defines by the Embedded Metric Format lines
 * it prints (issue 44: what `customMetrics` costs). CloudWatch bills each distinct
 * namespace + metric name + dimension set (names and values) as one metric, prorated by the
 * hours in which it receives data; an EMF line defines one series per metric per dimension
 * set of each of its directives. The worker's lines (aws-embedded-metrics) and the Lambda
 * functions' (Powertools Metrics) are the same format.
 */

/** One series, written `Namespace/Name{dim=value,...}` with the dimensions in their declared order. */
export type SeriesKey = string;

interface EmfDirective {
  readonly Namespace?: unknown;
  readonly Dimensions?: unknown;
  readonly Metrics?: unknown;
}

/**
 * The series of one printed line: [] for a line that is not an EMF document (logs, JSON
 * without `_aws.CloudWatchMetrics`). The document may follow a prefix on the line (a log
 * driver's or the local stack's tag): it is read from the first `{`.
 */
export function emfSeries(line: string): SeriesKey[] {
  const start = line.indexOf('{');
  if (start < 0 || !line.includes('"_aws"')) return [];
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(line.slice(start)) as Record<string, unknown>;
  } catch {
    return [];
  }
  const directives = (doc._aws as { CloudWatchMetrics?: unknown } | undefined)?.CloudWatchMetrics;
  if (!Array.isArray(directives)) return [];
  const out: SeriesKey[] = [];
  for (const d of directives as EmfDirective[]) {
    if (typeof d.Namespace !== 'string' || !Array.isArray(d.Metrics)) continue;
    // No dimension set at all is one series without dimensions.
    const sets = Array.isArray(d.Dimensions) && d.Dimensions.length > 0 ? (d.Dimensions as unknown[][]) : [[]];
    for (const m of d.Metrics as { Name?: unknown }[]) {
      if (typeof m?.Name !== 'string') continue;
      for (const set of sets) {
        const dims = set.filter((x): x is string => typeof x === 'string').map((name) => `${name}=${String(doc[name])}`);
        out.push(`${d.Namespace}/${m.Name}{${dims.join(',')}}`);
      }
    }
  }
  return out;
}

/** The value of dimension `service` in a series key (router | worker | janitor), or '?' without it. */
export function serviceOf(key: SeriesKey): string {
  return /[{,]service=([^,}]*)/.exec(key)?.[1] ?? '?';
}

/** The metric name of a series key. */
export function metricNameOf(key: SeriesKey): string {
  return key.slice(key.indexOf('/') + 1, key.indexOf('{'));
}

/** Distinct series seen, grouped by service, each service's list sorted. */
export class SeriesTally {
  readonly #seen = new Set<SeriesKey>();

  /** Records the series of one printed line; returns whether it was an EMF document. */
  offer(line: string): boolean {
    const keys = emfSeries(line);
    for (const k of keys) this.#seen.add(k);
    return keys.length > 0;
  }

  clear(): void {
    this.#seen.clear();
  }

  byService(): Record<string, SeriesKey[]> {
    const out: Record<string, SeriesKey[]> = {};
    for (const k of [...this.#seen].sort()) (out[serviceOf(k)] ??= []).push(k);
    return out;
  }
}
