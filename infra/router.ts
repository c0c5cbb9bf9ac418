import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as lambdaEvents from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { buildServiceFunction } from './lambda-defaults.ts';

export interface RouterProps {
  /** Queue of S3 notifications the router consumes. */
  readonly ingestQueue: sqs.IQueue;
  /** Wiring, tunables and launcher settings (see core/config.ts and core/fleet/ecs/ecs-task-launcher.ts). */
  readonly environment: Record<string, string>;
  /**
   * Records per invocation: up to 10 without a batching window, up to 10,000 with one of
   * at least 1 s (standard queues; Lambda's rule, checked by the tunables too).
   * @default 10
   */
  readonly batchSize?: number;
  /**
   * How long the event source may gather records before it invokes the router with a
   * batch smaller than `batchSize`. Without one, a trickle of frames means about one
   * invocation per frame; with one, at most one invocation per window per poller.
   * `Duration.seconds(0)` turns it off.
   * @default Duration.seconds(1)
   */
  readonly maxBatchingWindow?: Duration;
  /**
   * Most concurrent router invocations the event source starts (2..1000). The stack passes
   * `routerMaxConcurrencyOf(config)`: derived from `slotCount` unless overridden.
   * @default 10
   */
  readonly maxConcurrency?: number;
  /**
   * Function timeout; keep the ingest visibility timeout at six times this or more.
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;
  /**
   * @default 512
   */
  readonly memorySize?: number;
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

/** Router Lambda: consumes the ingest queue with partial batch responses; pins videos and forwards frames. */
export class Router extends Construct implements iam.IGrantable {
  readonly function: nodejs.NodejsFunction;
  readonly grantPrincipal: iam.IPrincipal;

  constructor(scope: Construct, id: string, props: RouterProps) {
    super(scope, id);
    this.function = buildServiceFunction(this, 'Function', {
      entry: 'functions/router/handler.ts',
      description: 'FrameAffinity router: pins videos to worker slots and forwards frames',
      environment: { POWERTOOLS_SERVICE_NAME: 'router', ...props.environment },
      timeout: props.timeout ?? Duration.seconds(30),
      memorySize: props.memorySize ?? 512,
      logRetention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    this.grantPrincipal = this.function.grantPrincipal;
    this.function.addEventSource(
      new lambdaEvents.SqsEventSource(props.ingestQueue, {
        batchSize: props.batchSize ?? 10,
        maxBatchingWindow: props.maxBatchingWindow ?? Duration.seconds(1),
        maxConcurrency: props.maxConcurrency ?? 10,
        reportBatchItemFailures: true,
      }),
    );
  }
}
