/**
 * The CDK stack (infra/stack.ts), synthesized once for this file: its queues, tables, frame
 * bucket, router and janitor, failover trigger, outputs, GPU fleet and monitoring. The
 * network and least privilege (no wildcard actions, cdk-nag) are in stack-security.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { DEFAULT_TUNABLES, WIRING_ENV, resourceNames, routerMaxConcurrencyOf } from '../../core/config.ts';
import { LEASES_TABLE, RESULTS_TABLE } from '../../core/resources.ts';
import { STACK_OUTPUT_KEYS } from '../../core/stack-outputs.ts';
import { MODEL_OUTPUT_KEYS } from '../../infra/model-bucket.ts';
import { ECS_LAUNCHER_ENV } from '../../core/fleet/ecs/ecs-task-launcher.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';
import { allStatements, asList, removeSynthOutdirs, synth, synthDefault, type Resources } from '../support/stack-synth.ts';

let stack: FrameAffinityStack;
let template: Template;
let resources: Resources;
const names = resourceNames('FrameAffinity');

beforeAll(() => {
  // One real synthesis (with esbuild bundling of both Lambdas) shared by the tests.
  ({ stack, template, resources } = synthDefault());
});

afterAll(removeSynthOutdirs);

describe('queues', () => {
  it('makes a standard ingest queue with SQS-managed SSE and a redrive to its DLQ', () => {
    // Prepare
    const dlq = Object.entries(resources).find(([, r]) => r.Type === 'AWS::SQS::Queue' && r.Properties?.QueueName === names.ingestDlq);

    // Act
    const ingest = template.findResources('AWS::SQS::Queue', { Properties: { QueueName: names.ingestQueue } });

    // Assess
    expect(dlq).toBeDefined();
    expect(Object.values(ingest)).toHaveLength(1);
    expect(Object.values(ingest)[0].Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      VisibilityTimeout: DEFAULT_TUNABLES.ingestVisibilitySeconds,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlq![0], 'Arn'] }, maxReceiveCount: DEFAULT_TUNABLES.ingestMaxReceiveCount },
    });
    expect(Object.values(ingest)[0].Properties?.FifoQueue).toBeUndefined();
  });

  it('makes one FIFO queue per slot, named for the URL prefix, each redriving to its own FIFO DLQ, in a nested stack', () => {
    // Prepare
    const slotCount = DEFAULT_TUNABLES.slotCount;
    const nested = Template.fromStack(stack.queues.slotQueueStacks[0]!).toJSON().Resources as Resources;

    // Act
    const queues = Object.entries(nested).filter(([, r]) => r.Type === 'AWS::SQS::Queue');
    const byName = new Map(queues.map(([id, r]) => [r.Properties?.QueueName as string, { id, props: r.Properties! }]));

    // Assess
    for (let slot = 0; slot < slotCount; slot++) {
      const queue = byName.get(names.slotQueue(slot));
      const dlq = byName.get(names.slotDlq(slot));
      expect(queue?.props).toMatchObject({ FifoQueue: true, ContentBasedDeduplication: false, SqsManagedSseEnabled: true });
      expect(dlq?.props).toMatchObject({ FifoQueue: true, SqsManagedSseEnabled: true });
      expect(queue?.props.RedrivePolicy).toEqual({
        deadLetterTargetArn: { 'Fn::GetAtt': [dlq!.id, 'Arn'] },
        maxReceiveCount: DEFAULT_TUNABLES.slotQueueMaxReceiveCount,
      });
    }
    expect(byName.has(names.slotQueue(slotCount))).toBe(false);
    expect(stack.queues.slotQueueStacks).toHaveLength(1);
    // Besides ingest and its DLQ, the parent stack holds only the event pipe's DLQ (test/infra/event-delivery.test.ts).
    expect(Object.values(resources).filter((r) => r.Type === 'AWS::SQS::Queue').map((r) => r.Properties?.QueueName)).toEqual([names.ingestDlq, names.ingestQueue, `${names.eventBus}-dlq`]);
  });

  it('denies non-TLS access on every queue', () => {
    // Act
    const policies = [template, Template.fromStack(stack.queues.slotQueueStacks[0]!)].flatMap((t) => Object.values(t.findResources('AWS::SQS::QueuePolicy')));

    // Assess
    expect(policies).toHaveLength(3 + 2 * DEFAULT_TUNABLES.slotCount);
    for (const p of policies) {
      expect(JSON.stringify(p.Properties)).toContain('"aws:SecureTransport":"false"');
    }
  });

  it('hands resultsRetentionDays to the worker, which writes the results table\'s TTL attribute with it', () => {
    // Act
    const { stack: kept } = synth({ resultsRetentionDays: '90', 'aws:cdk:bundling-stacks': [] });
    const [taskDef] = Object.values(Template.fromStack(kept).findResources('AWS::ECS::TaskDefinition'));
    const [container] = taskDef!.Properties!.ContainerDefinitions as { Environment: { Name: string; Value: unknown }[] }[];
    const env = Object.fromEntries(container!.Environment.map((e) => [e.Name, e.Value]));

    // Assess: the setting reaches the worker; the default (0) writes no TTL, and the table's TTL attribute is the one the worker writes
    expect(env).toHaveProperty('RESULTS_RETENTION_DAYS', '90');
    expect(DEFAULT_TUNABLES.resultsRetentionDays).toBe(0);
    expect(RESULTS_TABLE.ttlAttribute).toBe('ttlEpochSeconds');
    Template.fromStack(kept).hasResourceProperties('AWS::DynamoDB::Table', {
      TimeToLiveSpecification: { AttributeName: 'ttlEpochSeconds', Enabled: true },
      KeySchema: [
        { AttributeName: 'videoId', KeyType: 'HASH' },
        { AttributeName: 'frame', KeyType: 'RANGE' },
      ],
    });
  });

  it('honours slotCount from context', () => {
    // Act
    const { stack: six } = synth({ slotCount: '6', 'aws:cdk:bundling-stacks': [] });
    const nested = Template.fromStack(six.queues.slotQueueStacks[0]!);

    // Assess
    nested.resourcePropertiesCountIs('AWS::SQS::Queue', { FifoQueue: true }, 12);
    nested.hasResourceProperties('AWS::SQS::Queue', { QueueName: names.slotQueue(5) });
  });
});

describe('tables', () => {
  it('makes the leases table on demand with PITR, TTL on the expiry attribute and the pinned-slot GSI', () => {
    // Act & Assess
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      TableName: Match.absent(),
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: LEASES_TABLE.ttlAttribute, Enabled: true },
      KeySchema: [{ AttributeName: LEASES_TABLE.partitionKey.name, KeyType: 'HASH' }],
      GlobalSecondaryIndexes: [
        Match.objectLike({
          IndexName: names.pinnedSlotIndex,
          KeySchema: [
            { AttributeName: 'pinnedSlot', KeyType: 'HASH' },
            { AttributeName: 'pk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        }),
      ],
    });
  });

  it('makes the results table keyed by video and frame with PITR and TTL', () => {
    // Act & Assess
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      TableName: Match.absent(),
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: 'ttlEpochSeconds', Enabled: true },
      KeySchema: [
        { AttributeName: 'videoId', KeyType: 'HASH' },
        { AttributeName: 'frame', KeyType: 'RANGE' },
      ],
    });
  });
});

describe('frame bucket', () => {
  it('notifies the ingest queue of objects created under frames/ only', () => {
    // Prepare
    const ingestId = Object.entries(resources).find(([, r]) => r.Properties?.QueueName === names.ingestQueue)![0];

    // Act & Assess
    template.hasResourceProperties('Custom::S3BucketNotifications', {
      NotificationConfiguration: {
        QueueConfigurations: [
          {
            Events: ['s3:ObjectCreated:*'],
            Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'frames/' }] } },
            QueueArn: { 'Fn::GetAtt': [ingestId, 'Arn'] },
          },
        ],
      },
    });
  });

  it('is encrypted, private, access-logged and expires old frames', () => {
    // Act & Assess
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      LoggingConfiguration: Match.objectLike({ LogFilePrefix: 'frame-bucket/' }),
      LifecycleConfiguration: {
        Rules: Match.arrayWith([Match.objectLike({ Prefix: 'frames/', ExpirationInDays: 30, Status: 'Enabled' })]),
      },
    });
  });

  it('denies every request without TLS in each bucket policy', () => {
    // Act
    const policies = Object.values(template.findResources('AWS::S3::BucketPolicy'));

    // Assess: the frame bucket, the model bucket and the access-log bucket
    expect(policies).toHaveLength(3);
    for (const p of policies) {
      expect(p.Properties?.PolicyDocument).toMatchObject({
        Statement: expect.arrayContaining([
          expect.objectContaining({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      });
    }
  });
});

describe('model bucket (decision 78)', () => {
  it('is versioned, encrypted, private and access-logged into the frame bucket\'s log bucket', () => {
    // Act
    const props = resources[stack.getLogicalId(stack.models.bucket.node.defaultChild as never)]!.Properties!;

    // Assess
    expect(props).toMatchObject({
      VersioningConfiguration: { Status: 'Enabled' },
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      LoggingConfiguration: { DestinationBucketName: { Ref: stack.getLogicalId(stack.frames.accessLogBucket.node.defaultChild as never) }, LogFilePrefix: 'model-bucket/' },
    });
    const deletionOf = (b: { node: { defaultChild?: unknown } }) => (resources[stack.getLogicalId(b.node.defaultChild as never)] as { DeletionPolicy?: string }).DeletionPolicy;
    expect(deletionOf(stack.models.bucket)).toBe(deletionOf(stack.frames.bucket));
    expect(deletionOf(stack.models.bucket)).toMatch(/^Retain/);
  });

  it('is named by the ModelBucketName output, and the frame bucket keeps its logical id (an update must not replace it)', () => {
    // Act
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;

    // Assess
    expect(outputs[MODEL_OUTPUT_KEYS.bucketName]!.Value).toEqual({ Ref: stack.getLogicalId(stack.models.bucket.node.defaultChild as never) });
    expect(outputs[STACK_OUTPUT_KEYS.frameBucketName]!.Value).toEqual({ Ref: stack.getLogicalId(stack.frames.bucket.node.defaultChild as never) });
    expect(stack.getLogicalId(stack.frames.bucket.node.defaultChild as never)).toMatch(/^FramesBucket[0-9A-F]{8}$/);
  });
});

describe('router and janitor', () => {
  it('consumes the ingest queue with partial batch responses, the tuned batch size and bounded concurrency', () => {
    // Act & Assess
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: DEFAULT_TUNABLES.routerBatchSize,
      ScalingConfig: { MaximumConcurrency: routerMaxConcurrencyOf(DEFAULT_TUNABLES) },
    });
  });

  it('runs both functions on Node.js 24, arm64, with the wiring and launcher environment', () => {
    // Prepare
    const expectedEnv = [
      ...Object.values(WIRING_ENV).filter((n) => n !== 'AWS_REGION'),
      ...Object.values(ECS_LAUNCHER_ENV),
      'SLOT_COUNT',
      'HEARTBEAT_INTERVAL_SECONDS',
    ];

    // Act
    const functions = [stack.router.function, stack.janitor.function].map(
      (f) => resources[stack.getLogicalId(f.node.defaultChild as never)].Properties!,
    );

    // Assess
    for (const props of functions) {
      expect(props).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'] });
      const env = (props.Environment as { Variables: Record<string, unknown> }).Variables;
      for (const name of expectedEnv) expect(env, name).toHaveProperty(name);
      expect(env).not.toHaveProperty('AWS_REGION');
    }
  });

  it('schedules the janitor and gives every function a log group with retention', () => {
    // Act & Assess
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(1 minute)' });
    const groups = Object.values(template.findResources('AWS::Logs::LogGroup'));
    expect(groups.length).toBeGreaterThanOrEqual(4);
    for (const g of groups) expect(g.Properties?.RetentionInDays).toBe(30);
  });
});

describe('failover trigger and outputs', () => {
  it('runs the janitor at once when a worker task of this cluster stops', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.ecs'],
        'detail-type': ['ECS Task State Change'],
        detail: { lastStatus: ['STOPPED'], startedBy: [{ prefix: 'slot-' }], clusterArn: [Match.anyValue()] },
      },
      Targets: Match.arrayWith([Match.objectLike({ Arn: Match.anyValue() })]),
    });
  });

  it('exports the outputs the operator CLI reads', () => {
    const outputs = template.toJSON().Outputs as Record<string, unknown>;
    for (const key of Object.values(STACK_OUTPUT_KEYS)) expect(outputs).toHaveProperty(key);
  });
});

describe('GPU fleet', () => {
  it('asks for one GPU on the worker container, with a drain-length stop timeout, health check and awslogs', () => {
    // Act
    const taskDefs = Object.values(template.findResources('AWS::ECS::TaskDefinition'));

    // Assess
    expect(taskDefs).toHaveLength(1);
    const props = taskDefs[0].Properties!;
    expect(props).toMatchObject({ NetworkMode: 'awsvpc', RequiresCompatibilities: ['EC2'] });
    const [container] = props.ContainerDefinitions as Record<string, unknown>[];
    expect(container).toMatchObject({
      Name: 'worker',
      ResourceRequirements: [{ Type: 'GPU', Value: '1' }],
      StopTimeout: 120,
      LinuxParameters: { InitProcessEnabled: true },
      HealthCheck: { Command: ['CMD', 'node', '-e', expect.stringContaining('HEALTH_FILE')] },
      LogConfiguration: { LogDriver: 'awslogs' },
    });
    const env = Object.fromEntries((container.Environment as { Name: string; Value: unknown }[]).map((e) => [e.Name, e.Value]));
    expect(env).toHaveProperty('HEALTH_FILE', '/tmp/worker-heartbeat');
    expect(env).toHaveProperty('AWS_REGION');
    expect(env).toHaveProperty('SLOT_QUEUE_URL_PREFIX');
  });

  it('scales GPU instances from zero through a managed capacity provider', () => {
    // Act & Assess
    template.hasResourceProperties('AWS::AutoScaling::AutoScalingGroup', { MinSize: '0', MaxSize: String(DEFAULT_TUNABLES.slotCount) });
    template.hasResourceProperties('AWS::ECS::CapacityProvider', {
      AutoScalingGroupProvider: { ManagedScaling: { Status: 'ENABLED' } },
    });
    template.hasResourceProperties('AWS::ECS::ClusterCapacityProviderAssociations', {
      CapacityProviders: [Match.anyValue()],
    });
  });

  it('launches the ECS GPU AMI with IMDSv2 and encrypted EBS', () => {
    // Act
    const lt = Object.values(template.findResources('AWS::EC2::LaunchTemplate'))[0].Properties!;
    const params = template.toJSON().Parameters as Record<string, { Default?: string }>;

    // Assess
    expect(lt.LaunchTemplateData).toMatchObject({
      InstanceType: 'g5.xlarge',
      MetadataOptions: { HttpTokens: 'required' },
      BlockDeviceMappings: [{ Ebs: { Encrypted: true } }],
    });
    expect(Object.values(params).some((p) => p.Default === '/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id')).toBe(true);
  });

  it('lets only the router and janitor run this task definition in this cluster and pass only its two roles', () => {
    // Prepare
    const taskDefId = stack.getLogicalId(stack.fleet.taskDefinition.node.defaultChild as never);
    const statements = allStatements(resources).map((s) => s.statement);

    // Act
    const runTask = statements.filter((s) => asList(s.Action).includes('ecs:RunTask'));
    const passRole = statements.filter((s) => asList(s.Action).includes('iam:PassRole'));

    // Assess
    expect(runTask).toHaveLength(2);
    expect(taskDefId).toBeDefined();
    for (const s of runTask) {
      // The family's revisions (a deploy's old and new revision both launchable, issue 35).
      expect(JSON.stringify(s.Resource)).toContain(`:task-definition/${names.prefix}-worker:*`);
      expect(s.Condition).toMatchObject({ ArnEquals: { 'ecs:cluster': expect.anything() } });
    }
    expect(passRole).toHaveLength(2);
    for (const s of passRole) {
      expect(asList(s.Resource)).toHaveLength(2);
      expect(s.Condition).toEqual({ StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } });
    }
  });

  it('lets the janitor, and only the janitor, describe the tasks of this cluster (it checks launches still starting)', () => {
    const describe = allStatements(resources).filter((s) => asList(s.statement.Action).includes('ecs:DescribeTasks'));
    const janitorRole = stack.getLogicalId(stack.janitor.function.role!.node.defaultChild as never);
    const byJanitor = describe.filter((s) => JSON.stringify(resources[s.resource]?.Properties?.Roles ?? []).includes(janitorRole));
    expect(byJanitor).toHaveLength(1);
    expect(byJanitor[0]!.statement.Condition).toMatchObject({ ArnEquals: { 'ecs:cluster': expect.anything() } });
    expect(JSON.stringify(byJanitor[0]!.statement.Resource)).toContain(':task/');
  });
});

describe('monitoring', () => {
  it('alarms on the ingest DLQ, the slot DLQs (one gauge), the event DLQ, ingest age, slots without owner and router errors into an encrypted topic', () => {
    // Act
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties!);

    // Assess (test/infra/monitoring.test.ts has the rest: topic policy, alarm set, scale)
    const dlqAlarms = alarms.filter((a) => a.MetricName === 'ApproximateNumberOfMessagesVisible' || a.MetricName === 'SlotDlqMessages');
    expect(dlqAlarms).toHaveLength(3);
    expect(alarms.some((a) => a.MetricName === 'ApproximateAgeOfOldestMessage')).toBe(true);
    const noOwner = alarms.find((a) => a.MetricName === 'SlotsWithWorkNoOwner');
    expect(noOwner).toMatchObject({ Namespace: 'FrameAffinity', Dimensions: [{ Name: 'service', Value: 'janitor' }], Threshold: 1 });
    expect(alarms.some((a) => a.MetricName === 'Errors' && a.Namespace === 'AWS/Lambda')).toBe(true);
    for (const a of alarms) expect(asList(a.AlarmActions)).toHaveLength(1);
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
  });

  it('has a dashboard with the pipeline metrics', () => {
    // Act
    const body = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0].Properties?.DashboardBody);

    // Assess
    for (const metric of ['FramesRouted', 'FramesProcessed', 'InferenceLatencyMs', 'UploadToRecordMs', 'LiveSlots', 'VideoTakeovers', 'EventsRejected', 'p99', 'FramesLate', 'FramesParked', 'VideoRollbacks', 'WorkerErrors', 'FrameListings', 'CheckpointBytes']) {
      expect(body, metric).toContain(metric);
    }
  });
});
