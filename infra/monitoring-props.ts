/**
 * What the dashboard and alarms (monitoring.ts) are built from: the resources they watch
 * and their thresholds. Kept apart from the construct so each file reads as one thing.
 */
import type { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { EventDeliveryMonitoring } from './event-delivery-monitoring.ts';

export interface MonitoringProps {
  /** CloudWatch namespace of the EMF metrics. */
  readonly namespace: string;
  /** Dashboard name. */
  readonly dashboardName: string;
  /**
   * Prefix of every alarm name (`<prefix>-IngestDlqNotEmpty`, ...). The topic lets
   * CloudWatch publish only for alarms of this account and region named so.
   */
  readonly alarmNamePrefix: string;
  readonly ingestQueue: sqs.IQueue;
  /** The ingest DLQ; it gets the one not-empty alarm on an AWS/SQS metric. */
  readonly ingestDeadLetterQueue: sqs.IQueue;
  /**
   * Name prefix of every slot queue and slot DLQ (`<prefix>-slot-`). The dashboard finds
   * them with SEARCH expressions, so no widget or alarm grows with the slot count.
   */
  readonly slotQueueNamePrefix: string;
  readonly router: lambda.IFunction;
  readonly janitor: lambda.IFunction;
  /** The GPU Auto Scaling group: its failed launches reach the topic and raise `InstanceLaunchFailures`. */
  readonly instanceGroupName: string;
  /**
   * Ingest queue age above which the ingest alarm fires.
   * @default Duration.minutes(5)
   */
  readonly ingestAgeThreshold?: Duration;
  /**
   * Oldest slot-queue message age at receive (the workers' `SlotMessageAgeMs`) above which
   * the slot-queue age alarm fires.
   * @default Duration.minutes(5)
   */
  readonly slotAgeThreshold?: Duration;
  /**
   * Janitor period: its gauges are read at this period, and the no-owner alarm needs
   * three periods in a row.
   * @default Duration.minutes(1)
   */
  readonly janitorInterval?: Duration;
  /**
   * Janitor runs one sweep of the idle slots' DLQs takes (`queueSweepRuns(slotCount)`,
   * core/fleet/queue-sweep.ts): the slot-DLQ alarm fires on one breaching run and clears only after
   * this many runs plus one without any, so a DLQ read once per sweep keeps it in ALARM.
   * @default 1
   */
  readonly slotDlqSweepRuns?: number;
  /**
   * The workers run on GPU instances: a worker whose model runs on the CPU provider (a
   * silent CUDA fallback) raises `WorkerOnCpu`. The stack's instance types are all NVIDIA
   * GPU types (infra/config.ts), so the stack always passes true.
   * @default true
   */
  readonly gpuFleet?: boolean;
  /**
   * The NAT instances (`natInstanceType`, infra/network.ts `natInstances`), in the order of
   * their public subnets: each gets the two status-check alarms of `NAT_INSTANCE_ALARM_IDS`,
   * which recover or reboot it and notify the topic (decision 84).
   * @default - none (NAT gateways, or no NAT)
   */
  readonly natInstances?: readonly ec2.IInstance[];
  /** The analytics event pipe (infra/event-delivery.ts): its DLQ gets an alarm, the pipe a widget. @default - none */
  readonly eventDelivery?: EventDeliveryMonitoring;
  /**
   * E-mail address subscribed to the alarm topic.
   * @default - no subscription
   */
  readonly alarmEmail?: string;
  /**
   * What happens to the topic's KMS key when the stack is deleted: follows `retainData`
   * (DESTROY schedules its deletion after the 7-day minimum waiting period).
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}
