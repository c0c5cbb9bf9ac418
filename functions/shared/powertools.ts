/**
 * Logger and Metrics for the Lambda functions, configured once (Powertools for AWS
 * Lambda), plus the adapter that lets the pure core emit metrics through them.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { DEFAULT_TUNABLES, WIRING_ENV, envNameOf, resourceNames } from '../../core/config.ts';
import type { MetricSink } from '../../core/ports.ts';

export function createPowertools(serviceName: string): { logger: Logger; metrics: Metrics; sink: MetricSink } {
  const namespace = process.env.METRICS_NAMESPACE ?? resourceNames().metricsNamespace;
  const logger = new Logger({ serviceName });
  const metrics = new Metrics({ namespace, serviceName });
  const sink: MetricSink = {
    count(name, value = 1, dimensions) {
      if (dimensions) metrics.singleMetric().addDimensions(dimensions).addMetric(name, MetricUnit.Count, value);
      else metrics.addMetric(name, MetricUnit.Count, value);
    },
    milliseconds(name, value, dimensions) {
      if (dimensions) metrics.singleMetric().addDimensions(dimensions).addMetric(name, MetricUnit.Milliseconds, value);
      else metrics.addMetric(name, MetricUnit.Milliseconds, value);
    },
  };
  return { logger, metrics, sink };
}

/** Identifies the stack a process is configured for: wiring, tunables and endpoints. */
export function environmentKey(env: Record<string, string | undefined> = process.env): string {
  const names = [
    ...Object.values(WIRING_ENV),
    ...Object.keys(DEFAULT_TUNABLES).map((k) => envNameOf(k as keyof typeof DEFAULT_TUNABLES)),
    ...Object.keys(env).filter((k) => k.startsWith('AWS_ENDPOINT_URL')),
  ].sort();
  return names.map((k) => `${k}=${env[k] ?? ''}`).join(';');
}
