/**
 * Worker metrics as CloudWatch Embedded Metric Format lines on stdout (awslabs'
 * aws-embedded-metrics; Powertools Metrics is Lambda-only). With the awslogs driver
 * CloudWatch extracts them; locally the same lines show in the worker's log.
 * Counts are summed and latencies sampled (at most 100 a series, uniformly over the
 * interval), then flushed every `flushIntervalMs`.
 */
import { Configuration, StorageResolution, Unit, createMetricsLogger } from 'aws-embedded-metrics';
import type { MetricSink } from '../../core/ports.ts';

interface Series {
  name: string;
  unit: Unit;
  dimensions: Record<string, string>;
  values: number[];
  /** Values offered since the last flush (latencies: `values` holds a sample of them). */
  seen: number;
}

/** Most values of one latency series per flush: EMF takes at most 100 values per metric in one record. */
export const SAMPLE_VALUES = 100;

/**
 * Offers `value` to a uniform sample of at most `SAMPLE_VALUES` of the values seen since the
 * last flush (reservoir sampling, Algorithm R), so p50 / p99 describe the whole interval:
 * keeping the first 100 would describe only its first moments at a few hundred frames a
 * second. `seen` counts `value` already. `random` returns [0, 1).
 */
export function sampleInto(values: number[], seen: number, value: number, random: () => number = Math.random): void {
  if (values.length < SAMPLE_VALUES) {
    values.push(value);
    return;
  }
  const j = Math.floor(random() * seen);
  if (j < SAMPLE_VALUES) values[j] = value;
}

export class EmfMetrics implements MetricSink {
  private readonly series = new Map<string, Series>();
  private readonly baseDimensions: Record<string, string>;
  private timer: NodeJS.Timeout | undefined;

  constructor(namespace: string, baseDimensions: Record<string, string>, flushIntervalMs = 10_000) {
    Configuration.namespace = namespace;
    // stdout without probing instance metadata (which would hang off AWS).
    Configuration.environmentOverride = (process.env.AWS_EMF_ENVIRONMENT as never) ?? ('Local' as never);
    this.baseDimensions = baseDimensions;
    this.timer = setInterval(() => void this.flush(), flushIntervalMs);
    this.timer.unref();
  }

  count(name: string, value = 1, dimensions: Record<string, string> = {}): void {
    const s = this.get(name, Unit.Count, dimensions);
    if (s.values.length === 0) s.values.push(0);
    s.values[0]! += value;
  }

  milliseconds(name: string, value: number, dimensions: Record<string, string> = {}): void {
    const s = this.get(name, Unit.Milliseconds, dimensions);
    s.seen++;
    sampleInto(s.values, s.seen, value);
  }

  /**
   * A sampled level (GPU utilisation, memory): each value is kept (a sample of at most
   * `SAMPLE_VALUES` per flush), so CloudWatch's Average, Minimum and Maximum describe it.
   */
  gauge(name: string, value: number, unit: 'Percent' | 'Megabytes', dimensions: Record<string, string> = {}): void {
    const s = this.get(name, unit === 'Percent' ? Unit.Percent : Unit.Megabytes, dimensions);
    s.seen++;
    sampleInto(s.values, s.seen, value);
  }

  async flush(): Promise<void> {
    const all = [...this.series.values()];
    this.series.clear();
    for (const s of all) {
      const logger = createMetricsLogger();
      logger.setDimensions({ ...this.baseDimensions, ...s.dimensions });
      for (const v of s.values) logger.putMetric(s.name, v, s.unit, StorageResolution.Standard);
      await logger.flush();
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private get(name: string, unit: Unit, dimensions: Record<string, string>): Series {
    const key = `${name}|${JSON.stringify(dimensions)}`;
    let s = this.series.get(key);
    if (!s) {
      s = { name, unit, dimensions, values: [], seen: 0 };
      this.series.set(key, s);
    }
    return s;
  }
}
