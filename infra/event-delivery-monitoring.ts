/**
 * The event pipe's share of the dashboard and alarms (infra/monitoring.ts builds them):
 * Pipes publishes its own metrics (namespace AWS/EventBridge/Pipes, dimension PipeName),
 * and the pipe's DLQ gets the not-empty alarm, whose description is the runbook.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as sqs from 'aws-cdk-lib/aws-sqs';

/** What the monitoring needs of the event delivery. */
export interface EventDeliveryMonitoring {
  /** The pipe's dead-letter queue. */
  readonly deadLetterQueue: sqs.IQueue;
  /** The pipe's name (its metrics' PipeName dimension). */
  readonly pipeName: string;
}

/** The alarm's runbook: what a DLQ message says and the operator command that delivers the events again. */
export const EVENT_DLQ_ALARM_DESCRIPTION =
  'The event pipe could not put analytics events on the bus after its retries (the pipe error log, EventDelivery/PipeLog in the stack, has the reason). ' +
  'Each DLQ message names the stream shard, sequence range and the arrival times of the batch; the events themselves are still in the events table (the outbox). ' +
  'Fix the cause (bus policy, role, throttling), then run the operator command `affinity events <video> --redeliver [--from-frame N]` for the videos of that time range ' +
  '(the pipe delivers them again; consumers drop duplicates by eventId), and purge the DLQ. See docs/deploy.md "Analytics events".';

const PIPES_NAMESPACE = 'AWS/EventBridge/Pipes';

/** Events through the pipe, failed executions and target calls, and the DLQ depth. */
export function eventPipeWidget(d: EventDeliveryMonitoring, width: number): cloudwatch.GraphWidget {
  const pipeMetric = (metricName: string) =>
    new cloudwatch.Metric({ namespace: PIPES_NAMESPACE, metricName, dimensionsMap: { PipeName: d.pipeName }, statistic: 'Sum', period: Duration.minutes(5) });
  return new cloudwatch.GraphWidget({
    title: 'Analytics event pipe: events, failures, DLQ',
    width,
    left: [pipeMetric('EventCount'), pipeMetric('ExecutionFailed'), pipeMetric('TargetStageFailed'), pipeMetric('ExecutionThrottled')],
    right: [d.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', label: 'event DLQ' })],
  });
}
