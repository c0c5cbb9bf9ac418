import { METRIC_NAMES } from '../core/metric-names.ts';
import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as snsSubscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/**
 * Metric names the code emits (EMF), from core/metric-names.ts. Every metric carries one
 * `service` dimension naming its emitter ({@link METRIC_SERVICE}: Powertools adds it in
 * the Lambdas, the worker's EmfMetrics sets it), plus the extra dimension
 * {@link METRIC_DIMENSIONS} names, if any.
 */
export { METRIC_NAMES };

/** Dimension every metric carries, and its value per emitter. */
export const SERVICE_DIMENSION = 'service';
export const METRIC_SERVICE = { router: 'router', worker: 'worker', janitor: 'janitor' } as const;
type Emitter = keyof typeof METRIC_SERVICE;

/** Extra dimensions: metric name -> dimension name. */
export const METRIC_DIMENSIONS = {
  EventsRejected: 'Reason',
  FramesFailed: 'Reason',
  ExecutionProvider: 'Provider',
  VideoRollbacks: 'Reason',
  WorkerErrors: 'Where',
  FrameListings: 'Why',
} as const;

export interface MonitoringProps {
  /** CloudWatch namespace of the EMF metrics. */
  readonly namespace: string;
  /** Dashboard name. */
  readonly dashboardName: string;
  readonly ingestQueue: sqs.IQueue;
  readonly slotQueues: readonly sqs.IQueue[];
  /** Every DLQ; each gets a not-empty alarm. */
  readonly deadLetterQueues: readonly sqs.IQueue[];
  readonly router: lambda.IFunction;
  readonly janitor: lambda.IFunction;
  /**
   * Ingest queue age above which the ingest alarm fires.
   * @default Duration.minutes(5)
   */
  readonly ingestAgeThreshold?: Duration;
  /**
   * Janitor period: the no-owner alarm needs three periods in a row.
   * @default Duration.minutes(1)
   */
  readonly janitorInterval?: Duration;
  /**
   * E-mail address subscribed to the alarm topic.
   * @default - no subscription
   */
  readonly alarmEmail?: string;
}

const FIVE_MINUTES = Duration.minutes(5);
const ONE_MINUTE = Duration.minutes(1);

/** Dashboard and alarms; alarms notify a KMS-encrypted, TLS-only SNS topic. */
export class Monitoring extends Construct {
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarmTopic: sns.Topic;
  readonly alarmKey: kms.Key;
  readonly alarms: cloudwatch.Alarm[] = [];
  readonly #namespace: string;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.#namespace = props.namespace;

    this.alarmKey = this.#buildAlarmKey();
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', { masterKey: this.alarmKey, enforceSSL: true, displayName: 'FrameAffinity alarms' });
    if (props.alarmEmail) this.alarmTopic.addSubscription(new snsSubscriptions.EmailSubscription(props.alarmEmail));

    this.#buildAlarms(props);
    this.dashboard = this.#buildDashboard(props);
  }

  /** An EMF metric of one emitter (dimension `service` only). */
  metric(emitter: Emitter, metricName: string, statistic = 'Sum', period = FIVE_MINUTES): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: this.#namespace,
      metricName,
      dimensionsMap: { [SERVICE_DIMENSION]: METRIC_SERVICE[emitter] },
      statistic,
      period,
    });
  }

  /** A SEARCH over every series of a metric with an extra dimension, one line per value (or their SUM). */
  #searchExpression(metricName: keyof typeof METRIC_DIMENSIONS): string {
    return `SEARCH('{${this.#namespace},${METRIC_DIMENSIONS[metricName]},${SERVICE_DIMENSION}} MetricName="${metricName}"', 'Sum', 300)`;
  }

  #byDimension(metricName: keyof typeof METRIC_DIMENSIONS, label: string): cloudwatch.MathExpression {
    return new cloudwatch.MathExpression({ expression: this.#searchExpression(metricName), label, period: FIVE_MINUTES });
  }

  // A customer key: SNS's AWS-managed key does not let CloudWatch alarms publish.
  // The key policy spells out its actions instead of the default `kms:*` for the account.
  #buildAlarmKey(): kms.Key {
    const stack = Stack.of(this);
    const policy = new iam.PolicyDocument({
      statements: [
        new iam.PolicyStatement({
          sid: 'AccountAdministersKey',
          principals: [new iam.AccountRootPrincipal()],
          actions: [
            'kms:DescribeKey',
            'kms:GetKeyPolicy',
            'kms:PutKeyPolicy',
            'kms:GetKeyRotationStatus',
            'kms:EnableKeyRotation',
            'kms:DisableKeyRotation',
            'kms:EnableKey',
            'kms:DisableKey',
            'kms:UpdateKeyDescription',
            'kms:ListResourceTags',
            'kms:TagResource',
            'kms:UntagResource',
            'kms:ScheduleKeyDeletion',
            'kms:CancelKeyDeletion',
            'kms:CreateGrant',
            'kms:ListGrants',
            'kms:RevokeGrant',
            'kms:Encrypt',
            'kms:Decrypt',
            'kms:GenerateDataKey',
          ],
          resources: ['*'],
        }),
        new iam.PolicyStatement({
          sid: 'CloudWatchAlarmsPublish',
          principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
          resources: ['*'],
          conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
        }),
      ],
    });
    return new kms.Key(this, 'AlarmKey', { description: 'FrameAffinity alarm topic', enableKeyRotation: true, policy });
  }

  #alarm(id: string, props: cloudwatch.AlarmProps): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, props);
    alarm.addAlarmAction(new cwActions.SnsAction(this.alarmTopic));
    alarm.addOkAction(new cwActions.SnsAction(this.alarmTopic));
    this.alarms.push(alarm);
    return alarm;
  }

  #buildAlarms(props: MonitoringProps): void {
    props.deadLetterQueues.forEach((dlq, i) => {
      this.#alarm(`Dlq${i}NotEmpty`, {
        alarmDescription: `Dead-letter queue ${i === 0 ? 'ingest' : `slot ${i - 1}`} holds messages: inspect them (they carry the reason) and redrive or discard`,
        metric: dlq.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: ONE_MINUTE }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    });
    this.#alarm('IngestAgeHigh', {
      alarmDescription: 'Oldest ingest message is too old: the router is failing, throttled or at its concurrency limit',
      metric: props.ingestQueue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period: ONE_MINUTE }),
      threshold: (props.ingestAgeThreshold ?? FIVE_MINUTES).toSeconds(),
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const janitorPeriod = props.janitorInterval ?? ONE_MINUTE;
    this.#alarm('SlotWithWorkNoOwner', {
      alarmDescription: 'A slot queue has work but no live worker heartbeat for three janitor runs: tasks are not starting (GPU capacity, image, IAM)',
      metric: this.metric('janitor', METRIC_NAMES.janitor.slotsWithWorkNoOwner, 'Maximum', janitorPeriod),
      threshold: 1,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.#alarm('RouterErrors', {
      alarmDescription: 'Router invocations fail as a whole (not per record): check its logs',
      metric: props.router.metricErrors({ period: FIVE_MINUTES }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.#alarm('JanitorErrors', {
      alarmDescription: 'Janitor runs fail: slots without owners will not be relaunched',
      metric: props.janitor.metricErrors({ period: FIVE_MINUTES }),
      threshold: 2,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  #buildDashboard(props: MonitoringProps): cloudwatch.Dashboard {
    const m = (emitter: Emitter, name: string, stat = 'Sum') => this.metric(emitter, name, stat);
    const perSlot = (f: (q: sqs.IQueue) => cloudwatch.IMetric, label: string) =>
      props.slotQueues.map((q, slot) => {
        const metric = f(q) as cloudwatch.Metric;
        return metric.with({ label: `${label} slot ${slot}` });
      });
    const width = 12;
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName: props.dashboardName });
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Frames routed / processed / failed / gaps',
        width,
        left: [
          m('router', METRIC_NAMES.router.framesRouted),
          m('worker', METRIC_NAMES.worker.framesProcessed),
          new cloudwatch.MathExpression({
            expression: `SUM(${this.#searchExpression('FramesFailed')})`,
            label: 'FramesFailed (all reasons)',
            period: FIVE_MINUTES,
          }),
          m('worker', METRIC_NAMES.worker.framesGap),
          m('worker', METRIC_NAMES.worker.framesLate),
        ],
      }),
      new cloudwatch.GraphWidget({
        title: 'Inference latency (ms)',
        width,
        left: [m('worker', METRIC_NAMES.worker.inferenceLatencyMs, 'p50'), m('worker', METRIC_NAMES.worker.inferenceLatencyMs, 'p99')],
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Slot queue depth (visible + in flight)',
        width,
        left: [
          ...perSlot((q) => q.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum' }), 'visible'),
          ...perSlot((q) => q.metricApproximateNumberOfMessagesNotVisible({ statistic: 'Maximum' }), 'in flight'),
        ],
      }),
      new cloudwatch.GraphWidget({
        title: 'Oldest message age (s)',
        width,
        left: [
          props.ingestQueue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', label: 'ingest' }),
          ...perSlot((q) => q.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum' }), 'age'),
        ],
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Leases: created, adopted, taken over, fenced commits',
        width,
        left: [
          m('router', METRIC_NAMES.router.leasesCreated),
          m('worker', METRIC_NAMES.worker.videoLeasesAdopted),
          m('worker', METRIC_NAMES.worker.videoTakeovers),
          m('worker', METRIC_NAMES.worker.commitsFenced),
        ],
      }),
      new cloudwatch.GraphWidget({
        title: 'Failures by reason',
        width,
        left: [this.#byDimension('EventsRejected', 'rejected'), this.#byDimension('FramesFailed', 'failed')],
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Worker faults: parked frames, video rollbacks, survived errors',
        width,
        left: [
          m('worker', METRIC_NAMES.worker.framesParked),
          this.#byDimension('VideoRollbacks', 'rollback'),
          this.#byDimension('WorkerErrors', 'error in'),
        ],
      }),
      new cloudwatch.GraphWidget({
        title: 'S3 listings and checkpoint size (bytes, max)',
        width,
        left: [this.#byDimension('FrameListings', 'listings')],
        right: [m('worker', METRIC_NAMES.worker.checkpointBytes, 'Maximum')],
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Dead-letter queue depth',
        width,
        left: props.deadLetterQueues.map((q, i) =>
          q.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', label: i === 0 ? 'ingest DLQ' : `slot ${i - 1} DLQ` }),
        ),
      }),
      new cloudwatch.GraphWidget({
        title: 'Fleet: live slots, slots with work and no owner, pinned videos',
        width,
        left: [
          m('janitor', METRIC_NAMES.janitor.liveSlots, 'Maximum'),
          m('janitor', METRIC_NAMES.janitor.slotsWithWorkNoOwner, 'Maximum'),
          m('janitor', METRIC_NAMES.janitor.pinnedVideos, 'Maximum'),
        ],
        right: [
          m('janitor', METRIC_NAMES.janitor.tasksRelaunched),
          m('router', METRIC_NAMES.router.taskLaunchRequested),
          m('router', METRIC_NAMES.router.admissionOverCapacity),
        ],
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Router Lambda',
        width,
        left: [props.router.metricInvocations(), props.router.metricErrors(), props.router.metricThrottles()],
        right: [props.router.metricDuration({ statistic: 'p99' })],
      }),
      new cloudwatch.GraphWidget({
        title: 'Execution provider (worker starts)',
        width,
        left: [this.#byDimension('ExecutionProvider', 'provider')],
      }),
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', width: 24, alarms: this.alarms }),
    );
    return dashboard;
  }
}
