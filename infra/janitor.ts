import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { buildServiceFunction } from './lambda-defaults.ts';

export interface JanitorProps {
  /** Wiring, tunables and launcher settings. */
  readonly environment: Record<string, string>;
  /**
   * How often the janitor runs (EventBridge rates are whole minutes).
   * @default Duration.minutes(1)
   */
  readonly interval?: Duration;
  /**
   * Worker cluster: when one of its tasks stops, the janitor runs at once to launch a
   * successor, so a crashed GPU task costs seconds rather than a schedule period.
   * @default no task-stopped trigger
   */
  readonly workerClusterArn?: string;
  /**
   * @default Duration.seconds(60)
   */
  readonly timeout?: Duration;
  /**
   * @default 256
   */
  readonly memorySize?: number;
  /**
   * Reserved concurrency: the most janitor runs at once, so that a storm of task-stopped
   * events (a whole fleet exiting idle together) cannot take the Lambda concurrency the
   * router needs. Invocations over it are throttled; EventBridge invokes asynchronously,
   * so Lambda keeps and retries them (up to 6 hours) rather than dropping them.
   * @default none (unreserved)
   */
  readonly reservedConcurrentExecutions?: number;
  /**
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Fate of the log group when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** Scheduled janitor: relaunches tasks for slots with work and no owner, repairs leases, publishes fleet metrics. */
export class Janitor extends Construct implements iam.IGrantable {
  readonly function: nodejs.NodejsFunction;
  readonly rule: events.Rule;
  /** Runs the janitor when a worker task stops (ECS Task State Change, STOPPED). */
  readonly taskStoppedRule?: events.Rule;
  readonly grantPrincipal: iam.IPrincipal;

  constructor(scope: Construct, id: string, props: JanitorProps) {
    super(scope, id);
    this.function = buildServiceFunction(this, 'Function', {
      entry: 'functions/janitor/handler.ts',
      description: 'FrameAffinity janitor: relaunches idle slots with work, repairs leases, fleet metrics',
      environment: { POWERTOOLS_SERVICE_NAME: 'janitor', ...props.environment },
      timeout: props.timeout ?? Duration.seconds(60),
      memorySize: props.memorySize ?? 256,
      logRetention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    if (props.reservedConcurrentExecutions) {
      (this.function.node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions = props.reservedConcurrentExecutions;
    }
    this.grantPrincipal = this.function.grantPrincipal;
    this.rule = new events.Rule(this, 'Schedule', {
      description: 'Runs the FrameAffinity janitor',
      schedule: events.Schedule.rate(props.interval ?? Duration.minutes(1)),
      targets: [new targets.LambdaFunction(this.function, { retryAttempts: 0 })],
    });
    if (props.workerClusterArn) {
      this.taskStoppedRule = new events.Rule(this, 'WorkerStopped', {
        description: 'Runs the FrameAffinity janitor when a worker task stops',
        eventPattern: {
          source: ['aws.ecs'],
          detailType: ['ECS Task State Change'],
          detail: { clusterArn: [props.workerClusterArn], lastStatus: ['STOPPED'], startedBy: [{ prefix: 'slot-' }] },
        },
        targets: [new targets.LambdaFunction(this.function, { retryAttempts: 2 })],
      });
    }
  }
}
