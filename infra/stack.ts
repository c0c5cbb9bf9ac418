import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { STACK_OUTPUT_KEYS } from '../core/stack-outputs.ts';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { DEFAULT_TUNABLES, resourceNames, routerMaxConcurrencyOf, tunablesToEnv, wiringToEnv, type Tunables, type Wiring } from '../core/config.ts';
import {
  DEFAULT_STACK_CONFIG,
  instanceTypesOf,
  workerThreadPoolSize,
  janitorRateMinutes,
  listOf,
  routerTimeoutSeconds,
  validateStackConfig,
  workloadSubnetPlan,
  type StackConfig,
} from './config.ts';
import { MODEL_SHA256_ENV } from '../gpu-worker/vision/model-pin.ts';
import { MODEL_BUCKET_ENV } from '../gpu-worker/vision/model-location.ts';
import { modelObjectArns } from './model-grants.ts';
import { queueSweepRuns } from '../core/fleet/janitor.ts';
import { EventDelivery } from './event-delivery.ts';
import { FrameBucket } from './frame-bucket.ts';
import { MODEL_OUTPUT_KEYS, ModelBucket } from './model-bucket.ts';
import { GpuFleet } from './gpu-fleet.ts';
import { giveLogGroupsToInternalFunctions } from './internal-function-logs.ts';
import { Janitor } from './janitor.ts';
import { Monitoring } from './monitoring.ts';
import { acknowledge } from './nag.ts';
import { Network } from './network.ts';
import { Router } from './router.ts';
import { WorkQueues } from './queues.ts';
import { UPLOADER_OUTPUT_KEYS, UploaderAccess } from './uploader-access.ts';
import { StateTables } from './tables.ts';
import { workerImageFromEcr } from './worker-image.ts';

export interface FrameAffinityStackProps extends StackProps {
  /**
   * Tunables and deployment settings.
   * @default DEFAULT_STACK_CONFIG
   */
  readonly config?: StackConfig;
}

/** The runtime tunables out of the stack configuration (deployment settings stay out of the environment). */
function tunablesOf(config: StackConfig): Tunables {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(DEFAULT_TUNABLES) as (keyof Tunables)[]) out[key] = config[key];
  return out as unknown as Tunables;
}

/** Everything the product deploys: bucket, queues, tables, router, janitor, GPU fleet, network, monitoring. */
export class FrameAffinityStack extends Stack {
  readonly config: StackConfig;
  readonly network: Network;
  readonly queues: WorkQueues;
  readonly tables: StateTables;
  /** The events outbox's stream piped onto the stack's event bus (issue 22). */
  readonly eventDelivery: EventDelivery;
  readonly frames: FrameBucket;
  /** Versioned, written only by `modelWriterRoleArn`: where models go (decision 78). */
  readonly models: ModelBucket;
  /** The edge uploaders' least privilege: a policy (and, with a Roles Anywhere trust anchor, a role) for `frames/<site>.*` (issue 45). */
  readonly uploader: UploaderAccess;
  readonly fleet: GpuFleet;
  readonly router: Router;
  readonly janitor: Janitor;
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: FrameAffinityStackProps = {}) {
    super(scope, id, props);
    const config = validateStackConfig(props.config ?? DEFAULT_STACK_CONFIG);
    this.config = config;
    const names = resourceNames(config.namePrefix);
    const tunables = tunablesOf(config);
    // RetainExceptOnCreate (RETAIN_ON_UPDATE_OR_DELETE): kept on stack deletion and
    // replacement, but deleted when the operation that created it rolls back, so a failed
    // first deploy leaves no buckets, tables, key or log groups behind (issue 35, item 5).
    const removalPolicy = config.retainData ? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE : RemovalPolicy.DESTROY;
    const logRetention = config.logRetentionDays as logs.RetentionDays;

    this.network = new Network(this, 'Network', {
      maxAzs: config.maxAzs,
      availabilityZones: listOf(config.availabilityZones),
      workloadSubnetMask: workloadSubnetPlan(config).prefixLength,
      natGateways: config.natGateways,
      ...(config.natInstanceType ? { natInstanceType: config.natInstanceType } : {}),
      interfaceEndpoints: config.interfaceEndpoints,
      allowInternetEgress: config.allowInternetEgress,
      flowLogRetention: logRetention,
      removalPolicy,
    });
    this.queues = new WorkQueues(this, 'Queues', { names, tunables });
    this.tables = new StateTables(this, 'Tables', { names, removalPolicy, provisionedCapacityUnits: config.provisionedCapacityUnits, pointInTimeRecovery: config.pointInTimeRecovery });
    this.eventDelivery = new EventDelivery(this, 'EventDelivery', {
      table: this.tables.events,
      busName: names.eventBus,
      pipeName: names.eventBus,
      deadLetterQueueName: `${names.eventBus}-dlq`,
      logRetention,
      removalPolicy,
    });
    this.frames = new FrameBucket(this, 'Frames', {
      ingestQueue: this.queues.ingestQueue,
      frameRetention: Duration.days(config.frameRetentionDays),
      removalPolicy,
    });
    this.frames.retireModels(config.modelWriterRoleArn || undefined);
    this.models = new ModelBucket(this, 'Models', { accessLogBucket: this.frames.accessLogBucket, removalPolicy });
    this.models.restrictModelWrites(config.modelWriterRoleArn || undefined);
    this.uploader = new UploaderAccess(this, 'Uploader', {
      bucket: this.frames.bucket,
      siteTag: config.uploaderSiteTag,
      ...(config.uploaderTrustAnchorArn ? { trustAnchorArn: config.uploaderTrustAnchorArn } : {}),
    });

    const wiring: Wiring = {
      region: this.region,
      bucket: this.frames.bucket.bucketName,
      leasesTable: this.tables.leases.tableName,
      resultsTable: this.tables.results.tableName,
      eventsTable: this.tables.events.tableName,
      ingestQueueUrl: this.queues.ingestQueue.queueUrl,
      ingestDlqUrl: this.queues.ingestDlq.queueUrl,
      slotQueueUrlPrefix: this.queues.slotQueueUrlPrefix,
      pinnedSlotIndex: names.pinnedSlotIndex,
      metricsNamespace: names.metricsNamespace,
    };
    // AWS_REGION is reserved in Lambda (the runtime sets it); ECS tasks get it from the agent too.
    const { AWS_REGION: _region, ...wiringEnv } = wiringToEnv(wiring);
    const sharedEnv = { ...wiringEnv, ...tunablesToEnv(tunables), POWERTOOLS_METRICS_NAMESPACE: names.metricsNamespace };

    this.fleet = new GpuFleet(this, 'Fleet', {
      vpc: this.network.vpc,
      subnets: this.network.workloadSubnets,
      taskSecurityGroup: this.network.taskSecurityGroup,
      environment: {
        ...sharedEnv,
        AWS_REGION: this.region,
        AWS_EMF_NAMESPACE: names.metricsNamespace,
        AWS_EMF_SERVICE_NAME: 'worker',
        ...(config.modelSha256 ? { [MODEL_SHA256_ENV]: config.modelSha256 } : {}),
        // Where models belong: a worker whose modelUri names the frame bucket says so (decision 78).
        [MODEL_BUCKET_ENV]: this.models.bucket.bucketName,
      },
      family: `${names.prefix}-worker`,
      instanceType: new ec2.InstanceType(config.instanceType),
      instanceTypes: instanceTypesOf(config).map((t) => new ec2.InstanceType(t)),
      ...(config.workerImage ? { image: workerImageFromEcr(this, 'WorkerImageRepository', config.workerImage, { internetEgress: config.natGateways > 0 && (config.allowInternetEgress || !config.interfaceEndpoints) }) } : {}),
      // A standby runs on an instance of its own (decision 75).
      maxInstances: config.maxInstances > 0 ? config.maxInstances : config.slotCount + config.standbyWorkers,
      taskCpuUnits: config.taskCpuUnits,
      taskMemoryMiB: config.taskMemoryMiB,
      taskMemoryLimitMiB: config.taskMemoryLimitMiB,
      threadPoolSize: workerThreadPoolSize(config),
      ...(config.gpuAmiId ? { gpuAmiId: config.gpuAmiId } : {}),
      rootVolumeGiB: config.rootVolumeGiB,
      containerInsights: config.containerInsights,
      healthMaxAge: Duration.seconds(config.slotLeaseTtlSeconds * 3),
      logRetention,
      removalPolicy,
    });
    this.network.allowEndpointsFrom(this.fleet.instanceSecurityGroup);
    this.network.restrictEgress(this.fleet.instanceSecurityGroup);
    // On stack deletion the teardown drains the fleet through the network: endpoints,
    // their security groups and rules, NAT gateway and routes go only after it.
    this.fleet.teardown.outlives(this.network);
    this.#grantWorker(tunables);
    // The drain ("checkpoint, release the slot") runs as the worker: its roles and their
    // policies, the slot queues (nested stacks), the tables it commits to and its log group
    // go only after the teardown has stopped every task (issue 35, item 6).
    this.fleet.teardown.outlives(
      this.fleet.taskRole,
      this.fleet.executionRole,
      this.fleet.logGroup,
      this.tables.leases,
      this.tables.results,
      this.tables.events,
      ...this.queues.slotQueueStacks,
    );

    const controlEnv = { ...sharedEnv, ...this.fleet.launcherEnvironment() };
    this.router = new Router(this, 'Router', {
      ingestQueue: this.queues.ingestQueue,
      environment: controlEnv,
      batchSize: config.routerBatchSize,
      maxBatchingWindow: Duration.seconds(config.routerBatchWindowSeconds),
      // 0 derives it from slotCount (core/config/tunables.ts, routerMaxConcurrencyOf).
      maxConcurrency: routerMaxConcurrencyOf(config),
      timeout: Duration.seconds(routerTimeoutSeconds(config)),
      memorySize: config.routerMemoryMb,
      logRetention,
      removalPolicy,
    });
    // The slot queues are in nested stacks and found by name: make the router (and its
    // event source) wait for them, so no frame is routed before its queue exists.
    for (const slots of this.queues.slotQueueStacks) this.router.node.addDependency(slots);
    this.tables.grantLeasesReadWrite(this.router);
    this.queues.grantSendToIngestDlq(this.router);
    this.queues.grantSendToSlots(this.router);
    // No frame access: the router routes by key (the S3 event) and never reads an object.
    this.fleet.grantLaunch(this.router);

    this.janitor = new Janitor(this, 'Janitor', {
      environment: controlEnv,
      interval: Duration.minutes(janitorRateMinutes(config)),
      workerClusterArn: this.fleet.cluster.clusterArn,
      ...(config.janitorReservedConcurrency > 0 ? { reservedConcurrentExecutions: config.janitorReservedConcurrency } : {}),
      logRetention,
      removalPolicy,
    });
    for (const slots of this.queues.slotQueueStacks) this.janitor.node.addDependency(slots);
    this.tables.grantLeasesReadWrite(this.janitor);
    this.tables.grantScanPinnedIndex(this.janitor);
    this.queues.grantReadSlotAttributes(this.janitor);
    this.fleet.grantLaunch(this.janitor);
    this.fleet.grantDescribeTasks(this.janitor);

    this.monitoring = new Monitoring(this, 'Monitoring', {
      namespace: names.metricsNamespace,
      dashboardName: `${names.prefix}-${this.region}`,
      alarmNamePrefix: names.prefix,
      ingestQueue: this.queues.ingestQueue,
      ingestDeadLetterQueue: this.queues.ingestDlq,
      // Slot queues are found by name (SEARCH, janitor gauges): nothing here grows with slotCount.
      slotQueueNamePrefix: names.slotQueuePrefix,
      router: this.router.function,
      janitor: this.janitor.function,
      instanceGroupName: this.fleet.autoScalingGroup.autoScalingGroupName,
      ingestAgeThreshold: Duration.seconds(config.ingestAgeAlarmSeconds),
      janitorInterval: Duration.minutes(janitorRateMinutes(config)),
      slotDlqSweepRuns: queueSweepRuns(config.slotCount),
      // Every instance type is an NVIDIA GPU type (validated in infra/config.ts).
      gpuFleet: true,
      eventDelivery: { deadLetterQueue: this.eventDelivery.deadLetterQueue, pipeName: this.eventDelivery.pipeName },
      // natInstanceType: every worker's way to ECS, ECR, Logs and SQS; their alarms recover and tell (decision 84).
      natInstances: this.network.natInstances,
      alarmEmail: config.alarmEmail || undefined,
      removalPolicy,
    });

    this.#acknowledgeScopedWildcards();
    // aws-cdk-lib's own functions (default-SG restriction, bucket notifications, prefix-list
    // lookup) get log groups with the stack's retention too (issue 35, item 9).
    giveLogGroupsToInternalFunctions(this, logRetention, removalPolicy);
    this.#outputs(wiring);
  }

  /** What the operator CLI (`affinity --stack <name>`) and users need to find the stack's parts. */
  #outputs(wiring: Wiring): void {
    const out = (id: string, value: string, description: string) => new CfnOutput(this, id, { value, description });
    out(STACK_OUTPUT_KEYS.frameBucketName, wiring.bucket, 'Upload frames to s3://<bucket>/frames/{videoId}/{frame}.jpg');
    out(MODEL_OUTPUT_KEYS.bucketName, this.models.bucket.bucketName, 'Publish models to s3://<bucket>/models/<name>.onnx with the modelWriterRoleArn role, then deploy with -c modelUri=s3://<bucket>/models/<name>.onnx (versioned: an overwritten model can be restored)');
    out(STACK_OUTPUT_KEYS.leasesTableName, wiring.leasesTable, 'Slot and video leases with checkpoints');
    out(STACK_OUTPUT_KEYS.resultsTableName, wiring.resultsTable, 'Per-frame results (videoId, frame) and per-video summary (frame = -1)');
    out(STACK_OUTPUT_KEYS.ingestQueueUrl, wiring.ingestQueueUrl, 'S3 notifications in');
    out(STACK_OUTPUT_KEYS.ingestDlqUrl, wiring.ingestDlqUrl, 'Rejected and undeliverable events, with reason attributes');
    out(STACK_OUTPUT_KEYS.slotQueueUrlPrefix, wiring.slotQueueUrlPrefix, 'Slot queue URL = prefix + slot + .fifo');
    out(STACK_OUTPUT_KEYS.slotCount, String(this.config.slotCount), 'Worker slots');
    out(STACK_OUTPUT_KEYS.eventsTableName, wiring.eventsTable, 'Analytics events outbox (videoId, eventId); its stream is piped to the event bus');
    out(STACK_OUTPUT_KEYS.eventBusName, this.eventDelivery.bus.eventBusName, 'EventBridge bus of the analytics events (source frame-affinity): route them with rules');
    out(STACK_OUTPUT_KEYS.eventBusArn, this.eventDelivery.bus.eventBusArn, 'ARN of the analytics event bus');
    out(UPLOADER_OUTPUT_KEYS.policyArn, this.uploader.policy.managedPolicyArn, `Attach to an edge uploader tagged ${this.uploader.siteTag}=<site>: it may write only frames/<site>.* (docs/deploy.md §14)`);
    if (this.uploader.role) out(UPLOADER_OUTPUT_KEYS.roleArn, this.uploader.role.roleArn, 'Edge uploader role for IAM Roles Anywhere certificates of the trust anchor (docs/deploy.md §14)');
    out('DashboardUrl', `https://${this.region}.console.aws.amazon.com/cloudwatch/home?region=${this.region}#dashboards:name=${this.monitoring.dashboard.dashboardName}`, 'CloudWatch dashboard');
  }

  #grantWorker(tunables: Tunables): void {
    const task = this.fleet.taskRole;
    this.frames.grantReadFrames(task);
    this.models.grantReadModels(task);
    // One release more: a fleet whose modelUri still names the frame bucket's models/ keeps starting (decision 78).
    this.frames.grantReadLegacyModels(task);
    this.frames.grantReadRules(task);
    const modelObjects = modelObjectArns(tunables, this.partition);
    if (modelObjects.length > 0) task.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: modelObjects }));
    this.tables.grantLeasesReadWrite(task);
    this.tables.grantResultsReadWrite(task);
    this.tables.grantEventsReadWrite(task);
    this.queues.grantConsumeSlots(task);
    this.queues.grantSendToSlots(task);
  }

  /**
   * Resource wildcards that remain after scoping; each is listed with its reason in docs/deploy.md.
   * (No action wildcards exist: test/infra asserts it.)
   */
  #acknowledgeScopedWildcards(): void {
    const frameObjects = `Resource::<${this.getLogicalId(this.frames.bucket.node.defaultChild as never)}.Arn>/frames/*`;
    const modelObjects = `Resource::<${this.getLogicalId(this.frames.bucket.node.defaultChild as never)}.Arn>/models/*`;
    const framesReason = 'Object-level read on the frames/ prefix of the stack\'s own bucket: keys are per video and frame, so they cannot be listed in advance.';
    acknowledge(this.fleet.taskRole, { id: `AwsSolutions-IAM5[${frameObjects}]`, reason: framesReason });
    const notifications = this.node.tryFindChild('BucketNotificationsHandler050a0587b7544547bf325f094a3db834');
    if (notifications) {
      acknowledge(notifications, {
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        reason: 'CDK-internal handler that configures the bucket notification at deploy time; its role is defined by aws-cdk-lib.',
      });

    }
    acknowledge(this.fleet.taskRole, {
      id: `AwsSolutions-IAM5[${modelObjects}]`,
      reason: 'Object-level read on the models/ prefix of the frame bucket, where an older deploy kept the models: readable for one release so that a modelUri still naming one keeps working (decision 78).',
    });
    const modelBucketObjects = `Resource::<${this.getLogicalId(this.models.bucket.node.defaultChild as never)}.Arn>/models/*`;
    acknowledge(this.fleet.taskRole, {
      id: `AwsSolutions-IAM5[${modelBucketObjects}]`,
      reason: 'Object-level read on the models/ prefix of the stack\'s model bucket, where operators put the ONNX model named by modelUri.',
    });
    const rulesObjects = `Resource::<${this.getLogicalId(this.frames.bucket.node.defaultChild as never)}.Arn>/rules/*`;
    acknowledge(this.fleet.taskRole, {
      id: `AwsSolutions-IAM5[${rulesObjects}]`,
      reason: 'Object-level read on the rules/ prefix of the stack\'s own bucket: one rules document per video (rules/{videoId}.json) plus rules/_default.json, keys not known in advance.',
    });
  }
}
