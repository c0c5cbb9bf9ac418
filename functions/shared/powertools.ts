/**
 * Logger and Metrics for the Lambda functions, configured once (Powertools for AWS
 * Lambda), plus the adapter that lets the pure core emit metrics through them.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { resourceNames } from '../../core/config.ts';
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
