/**
 * Event delivery (issue 22, docs/decisions.md 36): the events outbox table's stream,
 * piped by EventBridge Pipes onto the stack's event bus. No code of ours runs in the
 * delivery path: Pipes reads the stream, filters, shapes and retries; what it cannot
 * deliver goes to a dead-letter queue with an alarm (infra/monitoring.ts).
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as pipes from 'aws-cdk-lib/aws-pipes';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DELIVERY_FILTER_PATTERNS, DETAIL_TYPE_PATH, PIPE_INPUT_TEMPLATE } from '../core/analytics/event-delivery.ts';
import { EVENT_SOURCE } from '../core/analytics/event-schema.ts';
import { acknowledge } from './nag.ts';

/**
 * How the pipe reads the stream. Each value is a trade-off stated in decision 36:
 * - TRIM_HORIZON: a pipe created after the table (or replaced by an update) starts at the
 *   oldest record still in the stream (24 h), so the events written while it was being
 *   created are delivered, not skipped as LATEST would; the price is duplicates, which
 *   consumers drop by eventId.
 * - batch of 10: PutEvents takes at most 10 entries per call.
 * - retries and record age: a record that still fails after 10 retries (exponential
 *   backoff) or is an hour old goes to the DLQ; the stream keeps records 24 h only, so
 *   waiting longer would lose them anyway.
 * - parallelization 1: one batch per shard at a time, so a video's events reach the bus in
 *   stream order (a video's items share a partition key, hence a shard).
 */
export const EVENT_PIPE_SOURCE = {
  startingPosition: 'TRIM_HORIZON',
  batchSize: 10,
  maximumBatchingWindowInSeconds: 1,
  maximumRetryAttempts: 10,
  maximumRecordAgeInSeconds: 3600,
  parallelizationFactor: 1,
} as const;

/** DLQ retention: the 14-day maximum, time for an operator to read and redeliver. */
const DLQ_RETENTION = Duration.days(14);

export interface EventDeliveryProps {
  /** The events outbox table; it must stream NEW_IMAGE (core/resources.ts EVENTS_TABLE). */
  readonly table: dynamodb.ITable;
  /** Event bus name (resourceNames().eventBus): stack-scoped through the prefix. */
  readonly busName: string;
  /** Pipe name (at most 64 characters). */
  readonly pipeName: string;
  /** Name of the dead-letter queue for batches the pipe could not deliver. */
  readonly deadLetterQueueName: string;
  /**
   * Retention of the pipe's error log.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * What happens to the pipe's error log group when the stack is deleted (the bus, the
   * pipe and the DLQ hold no data of record and are always deleted with the stack).
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** The event bus, the pipe from the outbox stream to it, the pipe's role, DLQ and error log. */
export class EventDelivery extends Construct {
  readonly bus: events.EventBus;
  readonly pipe: pipes.CfnPipe;
  readonly role: iam.Role;
  readonly deadLetterQueue: sqs.Queue;
  readonly logGroup: logs.LogGroup;
  readonly pipeName: string;

  constructor(scope: Construct, id: string, props: EventDeliveryProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const streamArn = props.table.tableStreamArn;
    if (!streamArn) throw new Error('EventDelivery: the events table has no stream (EVENTS_TABLE.stream must be set)');
    this.pipeName = props.pipeName;

    this.bus = new events.EventBus(this, 'Bus', { eventBusName: props.busName, description: 'FrameAffinity analytics events (source frame-affinity)' });
    this.deadLetterQueue = new sqs.Queue(this, 'Dlq', {
      queueName: props.deadLetterQueueName,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DLQ_RETENTION,
    });
    acknowledge(this.deadLetterQueue, {
      id: 'AwsSolutions-SQS3',
      reason: 'This queue is the pipe\'s dead-letter queue: it has no DLQ of its own.',
    });
    // Named by CloudFormation: a retained log group with a fixed name would collide with the next deployment.
    this.logGroup = new logs.LogGroup(this, 'PipeLog', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });

    // Confused-deputy protection: only this account's pipes may assume the role.
    this.role = new iam.Role(this, 'PipeRole', {
      assumedBy: new iam.ServicePrincipal('pipes.amazonaws.com', { conditions: { StringEquals: { 'aws:SourceAccount': stack.account } } }),
      description: 'EventBridge Pipe: events outbox stream -> event bus',
    });
    this.role.addToPolicy(
      new iam.PolicyStatement({ actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'], resources: [streamArn] }),
    );
    // ListStreams has no resource-level permissions (the Service Authorization Reference lists it with "*").
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['dynamodb:ListStreams'], resources: ['*'] }));
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['events:PutEvents'], resources: [this.bus.eventBusArn] }));
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.deadLetterQueue.queueArn] }));
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [this.logGroup.logGroupArn] }));
    acknowledge(this.role, {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'dynamodb:ListStreams supports no resource-level permission; every other action of the pipe role names its resource.',
    });

    this.pipe = new pipes.CfnPipe(this, 'Pipe', {
      name: props.pipeName,
      description: 'Outbox stream INSERTs (and redeliveries) -> event bus, as {source, detail-type, detail}',
      roleArn: this.role.roleArn,
      source: streamArn,
      sourceParameters: {
        dynamoDbStreamParameters: { ...EVENT_PIPE_SOURCE, deadLetterConfig: { arn: this.deadLetterQueue.queueArn } },
        filterCriteria: { filters: DELIVERY_FILTER_PATTERNS.map((p) => ({ pattern: JSON.stringify(p) })) },
      },
      target: this.bus.eventBusArn,
      targetParameters: {
        inputTemplate: PIPE_INPUT_TEMPLATE,
        eventBridgeEventBusParameters: { source: EVENT_SOURCE, detailType: DETAIL_TYPE_PATH },
      },
      // ERROR: a failed target call is logged with its reason (and no event data).
      logConfiguration: { level: 'ERROR', cloudwatchLogsLogDestination: { logGroupArn: this.logGroup.logGroupArn } },
    });
    // Pipes checks the role's permissions when it creates the pipe: the policy must exist first.
    this.pipe.node.addDependency(this.role);
  }
}
