import { METRIC_NAMES } from '../core/metric-names.ts';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as snsSubscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { instanceLaunchFailureRule } from './instance-launch-events.ts';
import { allowCloudWatchToPublish, buildAlarmKey } from './alarm-topic.ts';
import { EVENT_DLQ_ALARM_DESCRIPTION, eventPipeWidget } from './event-delivery-monitoring.ts';

/**
 * Metric names the code emits (EMF), from core/metric-names.ts. Every metric carries one
 * `service` dimension naming its emitter ({@link METRIC_SERVICE}: Powertools adds it in
 * the Lambdas, the worker's EmfMetrics sets it), plus the extra dimension
 * {@link METRIC_DIMENSIONS} names, if any.
 */
export { METRIC_NAMES };

export { SERVICE_DIMENSION, METRIC_SERVICE, METRIC_DIMENSIONS, ALARM_IDS, NAT_INSTANCE_ALARM_IDS, alarmName, type AlarmId, type NatInstanceAlarmId } from './alarm-ids.ts';
import { SERVICE_DIMENSION, METRIC_SERVICE, METRIC_DIMENSIONS, alarmName, type AlarmId, type Emitter, type NatInstanceAlarmId } from './alarm-ids.ts';

export type { MonitoringProps } from './monitoring-props.ts';
import type { MonitoringProps } from './monitoring-props.ts';

const FIVE_MINUTES = Duration.minutes(5);
const ONE_MINUTE = Duration.minutes(1);

/**
 * Evaluation window of the slot-DLQ alarm: one period up to 100 slots (every DLQ is read
 * at every run), else `sweepRuns + 1` periods of which one breaching is enough.
 */
export function slotDlqWindow(sweepRuns: number): Pick<cloudwatch.AlarmProps, 'evaluationPeriods' | 'datapointsToAlarm'> {
  return sweepRuns <= 1 ? { evaluationPeriods: 1 } : { evaluationPeriods: sweepRuns + 1, datapointsToAlarm: 1 };
}

/** Dashboard and alarms; alarms notify a KMS-encrypted, TLS-only SNS topic that CloudWatch may publish to. */
export class Monitoring extends Construct {
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarmTopic: sns.Topic;
  readonly alarmKey: kms.Key;
  readonly alarms: cloudwatch.Alarm[] = [];
  readonly #namespace: string;
  readonly #alarmNamePrefix: string;
  readonly #slotQueueNamePrefix: string;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.#namespace = props.namespace;
    this.#alarmNamePrefix = props.alarmNamePrefix;
    this.#slotQueueNamePrefix = props.slotQueueNamePrefix;

    this.alarmKey = buildAlarmKey(this, props.removalPolicy ?? RemovalPolicy.RETAIN);
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', { masterKey: this.alarmKey, enforceSSL: true, displayName: 'FrameAffinity alarms' });
    allowCloudWatchToPublish(this.alarmTopic, this.#alarmNamePrefix);
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

  /**
   * A SEARCH over an AWS/SQS metric of every slot queue (or every slot DLQ), found by the
   * tokens of the name prefix: `<prefix>-slot-<n>.fifo` and `<prefix>-slot-<n>-dlq.fifo`.
   * A SEARCH returns at most 500 series, and SQS publishes metrics only for queues active
   * in the last six hours, so the idle slots of a large fleet drop out on their own.
   */
  #slotQueueSearch(metricName: string, which: 'queues' | 'dlqs', statistic = 'Maximum'): string {
    const tokens = this.#slotQueueNamePrefix.split(/[^A-Za-z0-9]+/).filter(Boolean);
    const terms = tokens.map((t) => `QueueName=${t}`).join(' AND ');
    const dlq = which === 'dlqs' ? 'AND QueueName=dlq' : 'AND NOT QueueName=dlq';
    return `SEARCH('{AWS/SQS,QueueName} MetricName="${metricName}" AND ${terms} ${dlq}', '${statistic}', 60)`;
  }

  /**
   * A line over slot queue SEARCH results; without a label, one line per series, each
   * labelled with its queue name (a CloudWatch dynamic label).
   */
  #slotQueueLine(expression: string, label = "${PROP('Dim.QueueName')}"): cloudwatch.MathExpression {
    return new cloudwatch.MathExpression({ expression, label, period: ONE_MINUTE });
  }

  #alarm(id: AlarmId, props: Omit<cloudwatch.AlarmProps, 'alarmName'>): cloudwatch.Alarm {
    return this.#notifying(new cloudwatch.Alarm(this, id, { ...props, alarmName: alarmName(this.#alarmNamePrefix, id) }));
  }

  /** Sends an alarm's ALARM and OK transitions to the topic, and puts it on the dashboard. */
  #notifying(alarm: cloudwatch.Alarm): cloudwatch.Alarm {
    alarm.addAlarmAction(new cwActions.SnsAction(this.alarmTopic));
    alarm.addOkAction(new cwActions.SnsAction(this.alarmTopic));
    this.alarms.push(alarm);
    return alarm;
  }

  /** Router + janitor sum of a counter both emit, as one series (a missing side counts 0). */
  #routerAndJanitor(metricName: string, label: string): cloudwatch.MathExpression {
    return new cloudwatch.MathExpression({
      // Ids unique per metric: a widget may hold several of these expressions.
      expression: `FILL(router${metricName}, 0) + FILL(janitor${metricName}, 0)`,
      usingMetrics: { [`router${metricName}`]: this.metric('router', metricName), [`janitor${metricName}`]: this.metric('janitor', metricName) },
      label,
      period: FIVE_MINUTES,
    });
  }

  #buildAlarms(props: MonitoringProps): void {
    const atLeastOnce = {
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    };
    const janitorPeriod = props.janitorInterval ?? ONE_MINUTE;
    this.#alarm('IngestDlqNotEmpty', {
      alarmDescription:
        'The ingest DLQ holds messages: read them (each carries a reason attribute); fix the uploader or the cause, then run the operator command `affinity redrive` to send the retryable ones back (or purge what is only a record)',
      metric: props.ingestDeadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: ONE_MINUTE }),
      ...atLeastOnce,
    });
    this.#alarm('SlotDlqNotEmpty', {
      alarmDescription:
        'A slot DLQ of a slot active in the last minutes holds messages (janitor SlotDlqMessages): a malformed slot message or one received slotQueueMaxReceiveCount times; read it, check the worker logs, fix the cause, then run the operator command `affinity redrive` to move them back to the slot queue',
      metric: this.metric('janitor', METRIC_NAMES.janitor.slotDlqMessages, 'Maximum', janitorPeriod),
      ...atLeastOnce,
      // Above 100 slots an idle slot's DLQ is read once per sweep of several runs: ALARM on
      // any breaching run, OK only after a whole sweep (and one run of jitter) without one,
      // instead of ALARM/OK at every sweep (issue 35, item 3).
      ...slotDlqWindow(props.slotDlqSweepRuns ?? 1),
    });
    this.#alarm('IngestAgeHigh', {
      alarmDescription: 'Oldest ingest message is too old: the router is failing, throttled or at its concurrency limit',
      metric: props.ingestQueue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period: ONE_MINUTE }),
      threshold: (props.ingestAgeThreshold ?? FIVE_MINUTES).toSeconds(),
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.#alarm('SlotQueueAgeHigh', {
      alarmDescription:
        'Frames waited too long in a slot queue before a worker received them (worker SlotMessageAgeMs, the oldest over the fleet): a worker is over capacity or stalled; see the slot-queue widgets for which slot',
      metric: this.metric('worker', METRIC_NAMES.worker.slotMessageAgeMs, 'Maximum', ONE_MINUTE),
      threshold: (props.slotAgeThreshold ?? FIVE_MINUTES).toMilliseconds(),
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.#alarm('SlotWithWorkNoOwner', {
      alarmDescription:
        'A slot has work, no live worker and no launch inside its start grace for three janitor runs: launches are not being requested (no launcher, DynamoDB errors)',
      metric: this.metric('janitor', METRIC_NAMES.janitor.slotsWithWorkNoOwner, 'Maximum', janitorPeriod),
      threshold: 1,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.#alarm('TaskStartTimedOut', {
      alarmDescription:
        'A worker task launched for a slot did not heartbeat within taskStartGraceSeconds and was launched again: GPU capacity or quota, image pull, or the worker failing at start (check ECS stopped tasks)',
      metric: this.#routerAndJanitor(METRIC_NAMES.router.taskStartTimeouts, 'task starts timed out'),
      ...atLeastOnce,
    });
    this.#alarm('TaskLaunchFailures', {
      alarmDescription:
        'ECS RunTask failed or started nothing for a slot (router or janitor; throttling, failures[], AccessDenied, bad parameters): see the Reason in their logs; the janitor retries. Persisting: docs/deploy.md, day-2 runbook "a stuck launch"',
      // A Metrics Insights query over the namespace: every TaskLaunchFailures series,
      // whatever its dimensions (service alone, or service and Reason), summed into one.
      metric: new cloudwatch.MathExpression({
        expression: `SELECT SUM(${METRIC_NAMES.router.taskLaunchFailures}) FROM "${this.#namespace}"`,
        label: 'task launch failures (all emitters and reasons)',
        period: FIVE_MINUTES,
      }),
      ...atLeastOnce,
    });
    const launchFailures = instanceLaunchFailureRule(this, 'InstanceLaunchFailuresRule', props.instanceGroupName, this.alarmTopic);
    this.#alarm('InstanceLaunchFailures', {
      alarmDescription:
        'The GPU Auto Scaling group failed to launch instances (the topic also gets each failure\'s StatusMessage): InsufficientInstanceCapacity, a vCPU quota, or a subnet out of addresses. See docs/deploy.md, day-2 runbook "capacity shortage"',
      metric: new cloudwatch.Metric({ namespace: 'AWS/Events', metricName: 'Invocations', dimensionsMap: { RuleName: launchFailures.ruleName }, statistic: 'Sum', period: FIVE_MINUTES }),
      ...atLeastOnce,
    });
    this.#alarm('FramesCrashedWorker', {
      alarmDescription:
        'A frame killed the worker process 3 times and was parked as a failed record (reason crashed-worker; the crash-loop breaker, decision 28): its key is in the record; fix the cause (an image that exhausts memory, a native crash), then run `affinity replay <video> --from <frame>`',
      metric: this.metric('worker', METRIC_NAMES.worker.framesCrashedWorker, 'Sum', FIVE_MINUTES),
      ...atLeastOnce,
    });
    if (props.gpuFleet ?? true) {
      this.#alarm('WorkerOnCpu', {
        alarmDescription:
          'A worker on a GPU instance runs its model on the CPU provider (onnxruntime fell back silently when CUDA failed to load, microsoft/onnxruntime#23372): it pays for the GPU and runs several times slower. Read the worker log line `processor ready` (provider and why), check the image (the CUDA provider library, the CUDA/cuDNN versions) and the instance (ECS GPU AMI, gpuCount), then stop the task: the janitor launches another',
        // Workers count their provider at start and once a minute (gpu-worker/runtime/gpu-sampler.ts):
        // the alarm stays up for as long as a CPU worker runs, and clears once it is gone.
        metric: new cloudwatch.Metric({
          namespace: this.#namespace,
          metricName: METRIC_NAMES.worker.executionProvider,
          dimensionsMap: { [SERVICE_DIMENSION]: METRIC_SERVICE.worker, [METRIC_DIMENSIONS.ExecutionProvider]: 'cpu' },
          statistic: 'Sum',
          period: FIVE_MINUTES,
        }),
        ...atLeastOnce,
      });
      this.#alarm('WorkerDecodingOnCpu', {
        alarmDescription:
          'A worker asked for NVDEC decodes video segments on the CPU (FFmpeg falls back silently when NVDEC cannot take a stream): about 8 core-ms per 1080p frame, so a few cameras use up the task\'s vCPUs. Read the worker log lines `video decoded on the CPU: NVDEC not used` (video, codec and reason: H.264 4:4:4, 4:2:2 or 10-bit, over 4096 px, or NVDEC unusable) and `segment decoder choice`; fix the camera\'s encoder settings (H.264 4:2:0 8-bit, or HEVC) or the image (NVIDIA_DRIVER_CAPABILITIES must include video), then stop the task',
        // Workers count where their segments decode at start, on every change and once a minute
        // (gpu-worker/runtime/gpu-sampler.ts): the alarm stays up while one decodes on the CPU.
        metric: new cloudwatch.Metric({
          namespace: this.#namespace,
          metricName: METRIC_NAMES.worker.segmentDecoderInUse,
          dimensionsMap: { [SERVICE_DIMENSION]: METRIC_SERVICE.worker, [METRIC_DIMENSIONS.SegmentDecoderInUse]: 'cpu-fallback' },
          statistic: 'Sum',
          period: FIVE_MINUTES,
        }),
        ...atLeastOnce,
      });
    }
    this.#alarm('CommitsInvalid', {
      alarmDescription:
        'A worker refused a commit unit as malformed (two operations on one item, or a DynamoDB ValidationException): a bug, never an outage. The video was rolled back and its frames are parked as failed (reason invalid-commit) after 4 such rounds; the worker log line "commit unit refused as malformed" names the video and the reason. Report it; replay the frames with `affinity replay <video> --from <frame>` once fixed',
      metric: this.metric('worker', METRIC_NAMES.worker.commitsInvalid, 'Sum', FIVE_MINUTES),
      ...atLeastOnce,
    });
    this.#alarm('SourceStalled', {
      alarmDescription:
        'A live video stopped producing segments for 3 of its usual intervals with no end marker (its camera, network or edge segmenter is down): the worker raised source.stalled (the event names the video and the last segment time) and raises source.resumed when segments come again. Check the camera and `affinity stream`; a recorded file uploaded without --end also ends this way',
      metric: this.metric('worker', METRIC_NAMES.worker.sourcesStalled, 'Sum', FIVE_MINUTES),
      ...atLeastOnce,
    });
    if (props.eventDelivery) {
      this.#alarm('EventDlqNotEmpty', {
        alarmDescription: EVENT_DLQ_ALARM_DESCRIPTION,
        metric: props.eventDelivery.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: ONE_MINUTE }),
        ...atLeastOnce,
      });
    }
    for (const [i, instance] of (props.natInstances ?? []).entries()) this.#natInstanceAlarms(instance, i + 1);
    this.#alarm('RouterErrors', {
      alarmDescription: 'Router invocations fail as a whole (not per record): check its logs',
      metric: props.router.metricErrors({ period: FIVE_MINUTES }),
      ...atLeastOnce,
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

  /**
   * The status-check alarms of the n-th NAT instance (decision 84). Status checks are
   * published every minute at no charge, with or without detailed monitoring. While either
   * check fails, every worker is cut off from what goes through the NAT (the ECS agent,
   * ECR's API, CloudWatch Logs, SQS): the other alarms show only its effects, so these name
   * the cause. Each acts on its own (EC2 recovers a failed host, reboots a hung OS) and
   * notifies the topic on ALARM and on OK, so the operator knows both that it happened and
   * whether it worked.
   */
  #natInstanceAlarms(instance: ec2.IInstance, n: number): void {
    const check = (metricName: string) =>
      new cloudwatch.Metric({ namespace: 'AWS/EC2', metricName, dimensionsMap: { InstanceId: instance.instanceId }, statistic: 'Maximum', period: ONE_MINUTE });
    const failing = (id: NatInstanceAlarmId, props: Omit<cloudwatch.AlarmProps, 'alarmName' | 'threshold' | 'comparisonOperator'>, action: cwActions.Ec2InstanceAction) => {
      const alarm = new cloudwatch.Alarm(this, `${id}${n}`, {
        ...props,
        alarmName: alarmName(this.#alarmNamePrefix, id, n),
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      });
      alarm.addAlarmAction(new cwActions.Ec2Action(action));
      this.#notifying(alarm);
    };
    failing(
      'NatSystemCheckFailed',
      {
        alarmDescription: `NAT instance ${n} (${instance.instanceId}) failed its system status check (its host: power, network, hardware) for 2 minutes: workers cannot reach the ECS agent endpoint, ECR, CloudWatch Logs or SQS through it. EC2 recovers it onto healthy hardware (same id, addresses and volume; a few minutes) and this alarm returns to OK. Still in ALARM after 15 minutes (recovery failed, e.g. no capacity): stop and start it (aws ec2 stop-instances, then start-instances); see docs/deploy.md section 4`,
        metric: check('StatusCheckFailed_System'),
        evaluationPeriods: 2,
      },
      cwActions.Ec2InstanceAction.RECOVER,
    );
    failing(
      'NatInstanceCheckFailed',
      {
        alarmDescription: `NAT instance ${n} (${instance.instanceId}) failed its instance status check (its operating system: hung, out of memory, kernel panic, broken network configuration) for 3 minutes: workers cannot reach the ECS agent endpoint, ECR, CloudWatch Logs or SQS through it. EC2's recover does not fix this; this alarm reboots it (its iptables NAT rules and IP forwarding are restored at boot) and returns to OK. Still in ALARM after 10 minutes: read aws ec2 get-console-output --instance-id, then stop and start it; see docs/deploy.md section 4`,
        metric: check('StatusCheckFailed_Instance'),
        evaluationPeriods: 3,
      },
      cwActions.Ec2InstanceAction.REBOOT,
    );
  }

  #buildDashboard(props: MonitoringProps): cloudwatch.Dashboard {
    const m = (emitter: Emitter, name: string, stat = 'Sum') => this.metric(emitter, name, stat);
    const width = 12;
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName: props.dashboardName });
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Frames routed / processed / failed / gaps',
        width: 8,
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
        title: 'Latency (ms): upload -> record (left), inference per frame (right), p50 / p99',
        width: 8,
        left: [
          m('worker', METRIC_NAMES.worker.uploadToRecordMs, 'p50').with({ label: 'upload -> record p50' }),
          m('worker', METRIC_NAMES.worker.uploadToRecordMs, 'p99').with({ label: 'upload -> record p99' }),
        ],
        right: [
          m('worker', METRIC_NAMES.worker.inferenceLatencyMs, 'p50').with({ label: 'inference p50' }),
          m('worker', METRIC_NAMES.worker.inferenceLatencyMs, 'p99').with({ label: 'inference p99' }),
        ],
      }),
      // Beside inference latency: whether the GPUs are busy (nvidia-smi in each task, once a minute).
      new cloudwatch.GraphWidget({
        title: 'GPU (workers): utilisation and NVDEC % (left), memory used % (right), average / max / min over tasks',
        width: 8,
        leftYAxis: { min: 0, max: 100 },
        rightYAxis: { min: 0, max: 100 },
        left: [
          m('worker', METRIC_NAMES.worker.gpuUtilizationPercent, 'Average').with({ label: 'GPU utilisation, average' }),
          m('worker', METRIC_NAMES.worker.gpuUtilizationPercent, 'Maximum').with({ label: 'GPU utilisation, max' }),
          m('worker', METRIC_NAMES.worker.gpuUtilizationPercent, 'Minimum').with({ label: 'GPU utilisation, min' }),
          // 0 while segments decode means NVDEC is idle: the CPU decodes (WorkerDecodingOnCpu says why).
          m('worker', METRIC_NAMES.worker.gpuDecoderUtilizationPercent, 'Average').with({ label: 'NVDEC utilisation, average' }),
        ],
        right: [
          m('worker', METRIC_NAMES.worker.gpuMemoryUsedPercent, 'Average').with({ label: 'GPU memory used, average' }),
          m('worker', METRIC_NAMES.worker.gpuMemoryUsedPercent, 'Maximum').with({ label: 'GPU memory used, max' }),
        ],
      }),
    );
    // Per-slot queues appear as aggregates and the ten busiest slots, whatever slotCount is.
    const visible = this.#slotQueueSearch('ApproximateNumberOfMessagesVisible', 'queues');
    const age = this.#slotQueueSearch('ApproximateAgeOfOldestMessage', 'queues');
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Slot queues: messages, all slots and the 10 deepest',
        width,
        left: [
          this.#slotQueueLine(`SUM(${visible})`, 'visible, all slots (a SEARCH sums at most 500 queues)'),
          this.#slotQueueLine(`SUM(${this.#slotQueueSearch('ApproximateNumberOfMessagesNotVisible', 'queues')})`, 'in flight, all slots (at most 500 queues)'),
          this.#slotQueueLine(`SORT(${visible}, MAX, DESC, 10)`),
        ],
      }),
      new cloudwatch.GraphWidget({
        title: 'Oldest message age (s): ingest, slots (max and the 10 oldest)',
        width,
        left: [
          props.ingestQueue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', label: 'ingest' }),
          this.#slotQueueLine(`MAX(${age})`, 'slot queues, max (of at most 500)'),
          this.#slotQueueLine(`SORT(${age}, MAX, DESC, 10)`),
        ],
        right: [m('worker', METRIC_NAMES.worker.slotMessageAgeMs, 'Maximum').with({ label: 'age at receive (ms, workers)' })],
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
        title: 'Worker faults: parked frames, crash-loop breaker, video rollbacks, survived errors',
        width,
        left: [
          m('worker', METRIC_NAMES.worker.framesParked),
          // The crash-loop breaker (decisions 28, 41): frames parked for killing the worker, the probe's child deaths, frames it could not probe.
          m('worker', METRIC_NAMES.worker.framesCrashedWorker),
          m('worker', METRIC_NAMES.worker.crashProbeDeaths),
          m('worker', METRIC_NAMES.worker.crashProbeUnavailable),
          m('worker', METRIC_NAMES.worker.commitsInvalid),
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
    const dlqVisible = this.#slotQueueSearch('ApproximateNumberOfMessagesVisible', 'dlqs');
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Dead-letter queues: ingest, slots (all and the 10 fullest)',
        width,
        left: [
          props.ingestDeadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', label: 'ingest DLQ' }),
          this.#slotQueueLine(`SUM(${dlqVisible})`, 'slot DLQs, all (at most 500; the alarm reads the janitor gauge)'),
          m('janitor', METRIC_NAMES.janitor.slotDlqMessages, 'Maximum').with({ label: 'slot DLQs of active slots (alarm)' }),
          this.#slotQueueLine(`SORT(${dlqVisible}, MAX, DESC, 10)`),
        ],
        right: [m('router', METRIC_NAMES.router.s3TestEvents).with({ label: 'S3 test events (acknowledged)' })],
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
          this.#routerAndJanitor(METRIC_NAMES.router.taskStartTimeouts, 'task starts timed out'),
          this.#routerAndJanitor(METRIC_NAMES.router.taskLaunchFailures, 'task launch failures'),
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
        title: 'Execution provider and segment decoder: workers on each (per minute; cpu raises WorkerOnCpu, cpu-fallback WorkerDecodingOnCpu)',
        width,
        left: [
          new cloudwatch.MathExpression({
            expression: `SEARCH('{${this.#namespace},${METRIC_DIMENSIONS.ExecutionProvider},${SERVICE_DIMENSION}} MetricName="${METRIC_NAMES.worker.executionProvider}"', 'Sum', 60)`,
            label: 'provider',
            period: ONE_MINUTE,
          }),
          new cloudwatch.MathExpression({
            expression: `SEARCH('{${this.#namespace},${METRIC_DIMENSIONS.SegmentDecoderInUse},${SERVICE_DIMENSION}} MetricName="${METRIC_NAMES.worker.segmentDecoderInUse}"', 'Sum', 60)`,
            label: 'segment decoder',
            period: ONE_MINUTE,
          }),
        ],
      }),
      ...(props.eventDelivery ? [eventPipeWidget(props.eventDelivery, width)] : []),
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', width: 24, alarms: this.alarms }),
    );
    return dashboard;
  }
}
