import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { JANITOR_TIMEOUT_SECONDS } from '../core/fleet/janitor.ts';
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
   * The run lock of scheduled runs holds this long when a run cannot give it back
   * (functions/janitor/handler.ts): keep the two equal.
   * @default Duration.seconds(JANITOR_TIMEOUT_SECONDS), 60 s
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
   * Opt-in: Lambda lets an account reserve only up to its concurrency quota minus 100, and
   * new accounts often have a quota of 10 or 50, where any reservation fails the deploy
   * (issue 35, item 1). Single flight of scheduled runs does not depend on it (run lock).
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
      timeout: props.timeout ?? Duration.seconds(JANITOR_TIMEOUT_SECONDS),
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
