/**
 * Issue 23: deploy without Docker (workerImage), several GPU types and chosen AZs,
 * launch failures that alarm, a janitor with reserved concurrency, and the hardening
 * items, each read from the synthesized template.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import { MODEL_SHA256_ENV } from '../../gpu-worker/vision/model-pin.ts';
import { MODEL_BUCKET_ENV } from '../../gpu-worker/vision/model-location.ts';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import { LEGACY_MODEL_ACTIONS, LEGACY_MODEL_DENY_SIDS } from '../../infra/frame-bucket.ts';
import { MODEL_DENY_SIDS, MODEL_WRITE_ACTIONS } from '../../infra/model-bucket.ts';
import { LAUNCH_UNSUCCESSFUL } from '../../infra/instance-launch-events.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';

type Resource = { Type: string; Properties?: Record<string, unknown>; DependsOn?: string[] };
type Resources = Record<string, Resource>;
type Statement = { Effect: string; Action: string | string[]; Resource?: unknown; Principal?: unknown; Condition?: Record<string, Record<string, unknown>> };

const DIGEST = `sha256:${'ab'.repeat(32)}`;
const IMAGE = `123456789012.dkr.ecr.us-east-1.amazonaws.com/team/frame-affinity-worker@${DIGEST}`;
const WRITER = 'arn:aws:iam::123456789012:role/ci-model-publisher';
const MODEL_SHA = 'cd'.repeat(32);

const outdirs: string[] = [];
function synth(context: Record<string, unknown> = {}): { stack: FrameAffinityStack; resources: Resources } {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-hardening-'));
  outdirs.push(outdir);
  const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
  return { stack, resources: Template.fromStack(stack).toJSON().Resources as Resources };
}
const idOf = (stack: FrameAffinityStack, c: { node: { defaultChild?: unknown } }) => stack.getLogicalId(c.node.defaultChild as never);
const asList = <T>(v: T | T[] | undefined): T[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);

/** Statements of the AWS::IAM::Policy resources attached to a role. */
function roleStatements(resources: Resources, roleId: string): Statement[] {
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && asList(r.Properties!.Roles as unknown[]).some((x) => (x as { Ref?: string }).Ref === roleId))
    .flatMap((r) => (r.Properties!.PolicyDocument as { Statement: Statement[] }).Statement);
}
const roleIdOf = (resources: Resources, fnId: string) => ((resources[fnId]!.Properties!.Role as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0])!;

/** Egress of a security group: its inline rules and its SecurityGroupEgress resources. */
function egressOf(resources: Resources, groupId: string): Record<string, unknown>[] {
  const inline = (resources[groupId]!.Properties!.SecurityGroupEgress as Record<string, unknown>[] | undefined) ?? [];
  const separate = Object.values(resources)
    .filter((r) => r.Type === 'AWS::EC2::SecurityGroupEgress' && JSON.stringify(r.Properties!.GroupId) === JSON.stringify({ 'Fn::GetAtt': [groupId, 'GroupId'] }))
    .map((r) => r.Properties!);
  return [...inline, ...separate];
}

let plain: { stack: FrameAffinityStack; resources: Resources };
let hardened: { stack: FrameAffinityStack; resources: Resources };

beforeAll(() => {
  plain = synth();
  hardened = synth({
    natGateways: 1,
    workerImage: IMAGE,
    instanceTypes: 'g5.xlarge,g6.xlarge,g4dn.xlarge',
    availabilityZones: 'us-east-1a,us-east-1c',
    modelWriterRoleArn: WRITER,
    modelUri: 's3://model-bucket/yolo/v3.onnx',
    modelSha256: MODEL_SHA,
  });
}, 600_000);

afterAll(() => {
  for (const d of outdirs) rmSync(d, { recursive: true, force: true });
});

describe('a prebuilt worker image (-c workerImage)', () => {
  it('runs the ECR image by digest, with no image asset to build, and lets the execution role pull exactly that repository', () => {
    // Prepare
    const { stack, resources } = hardened;
    const container = (resources[idOf(stack, stack.fleet.taskDefinition)]!.Properties!.ContainerDefinitions as Record<string, unknown>[])[0]!;
    const statements = roleStatements(resources, idOf(stack, stack.fleet.executionRole));

    // Act
    const pull = statements.find((s) => asList(s.Action).includes('ecr:BatchGetImage'))!;
    const token = statements.find((s) => asList(s.Action).includes('ecr:GetAuthorizationToken'))!;

    // Assess
    expect(JSON.stringify(container.Image)).toContain(`/team/frame-affinity-worker@${DIGEST}`);
    expect(JSON.stringify(container.Image)).toContain('123456789012.dkr.ecr.us-east-1.');
    expect(asList(pull.Action).sort()).toEqual(['ecr:BatchCheckLayerAvailability', 'ecr:BatchGetImage', 'ecr:GetDownloadUrlForLayer']);
    expect(JSON.stringify(pull.Resource)).toContain(':ecr:us-east-1:123456789012:repository/team/frame-affinity-worker');
    expect(token.Resource).toBe('*');
    // No Docker: the assembly holds no container image asset to build.
    const assets = stack.node.root.node.findAll().filter((c) => c instanceof ecrAssets.DockerImageAsset);
    expect(assets).toEqual([]);
  });

  it('builds from the Dockerfile when no image is given', () => {
    // Act
    const assets = plain.stack.node.findAll().filter((c) => c instanceof ecrAssets.DockerImageAsset);

    // Assess
    expect(assets).toHaveLength(1);
  });
});

describe('GPU capacity', () => {
  it('launches a prioritized on-demand mix of the listed types in the chosen AZs', () => {
    // Prepare
    const { stack, resources } = hardened;

    // Act
    const group = resources[idOf(stack, stack.fleet.autoScalingGroup)]!.Properties!;
    const subnets = Object.values(resources).filter((r) => r.Type === 'AWS::EC2::Subnet').map((r) => r.Properties!.AvailabilityZone);

    // Assess
    expect(group).not.toHaveProperty('LaunchTemplate');
    expect(group.MixedInstancesPolicy).toMatchObject({
      InstancesDistribution: { OnDemandAllocationStrategy: 'prioritized', OnDemandBaseCapacity: 0, OnDemandPercentageAboveBaseCapacity: 100 },
      LaunchTemplate: { Overrides: [{ InstanceType: 'g5.xlarge' }, { InstanceType: 'g6.xlarge' }, { InstanceType: 'g4dn.xlarge' }] },
    });
    expect(new Set(subnets)).toEqual(new Set(['us-east-1a', 'us-east-1c']));
  });

  it('keeps one launch template type (no mixed policy) by default', () => {
    // Act
    const group = plain.resources[idOf(plain.stack, plain.stack.fleet.autoScalingGroup)]!.Properties!;

    // Assess
    expect(group).toHaveProperty('LaunchTemplate');
    expect(group).not.toHaveProperty('MixedInstancesPolicy');
  });
});

describe('launch failures alarm', () => {
  const alarms = (resources: Resources) => new Map(Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm').map((r) => [String(r.Properties!.AlarmName).replace(/^FrameAffinity-/, ''), r.Properties!]));

  it('sends every failed GPU instance launch of the group to the alarm topic, and alarms on them', () => {
    // Prepare
    const { stack, resources } = plain;
    const groupId = idOf(stack, stack.fleet.autoScalingGroup);
    const topicId = idOf(stack, stack.monitoring.alarmTopic);

    // Act
    const [ruleId, rule] = Object.entries(resources).find(([, r]) => r.Type === 'AWS::Events::Rule' && String(JSON.stringify(r.Properties!.EventPattern)).includes(LAUNCH_UNSUCCESSFUL))!;
    const alarm = alarms(resources).get('InstanceLaunchFailures')!;
    const topicPolicy = Object.values(resources).find((r) => r.Type === 'AWS::SNS::TopicPolicy')!;
    const eventsPublish = (topicPolicy.Properties!.PolicyDocument as { Statement: Statement[] }).Statement.find((s) => String(JSON.stringify(s.Principal)).includes('events.amazonaws.com'))!;
    const keyPolicy = JSON.stringify(resources[idOf(stack, stack.monitoring.alarmKey)]!.Properties!.KeyPolicy);

    // Assess
    expect(rule.Properties!.EventPattern).toEqual({ source: ['aws.autoscaling'], 'detail-type': [LAUNCH_UNSUCCESSFUL], detail: { AutoScalingGroupName: [{ Ref: groupId }] } });
    expect(rule.Properties!.Targets).toMatchObject([{ Arn: { Ref: topicId }, InputTransformer: { InputPathsMap: { 'detail-StatusMessage': '$.detail.StatusMessage' } } }]);
    expect(alarm).toMatchObject({ Namespace: 'AWS/Events', MetricName: 'Invocations', Dimensions: [{ Name: 'RuleName', Value: { Ref: ruleId } }], Threshold: 1 });
    expect(eventsPublish.Condition).toMatchObject({ ArnEquals: { 'aws:SourceArn': { 'Fn::GetAtt': [ruleId, 'Arn'] } } });
    expect(keyPolicy).toContain('events.amazonaws.com');
  });

  it('alarms on TaskLaunchFailures from any emitter with any dimensions (a Metrics Insights sum over the namespace)', () => {
    // Act
    const alarm = alarms(plain.resources).get('TaskLaunchFailures')!;

    // Assess
    expect(alarm.Metrics).toEqual([
      expect.objectContaining({ Expression: `SELECT SUM(${METRIC_NAMES.router.taskLaunchFailures}) FROM "FrameAffinity"`, Period: 300, ReturnData: true }),
    ]);
    expect(alarm).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
  });

  it('names the operator command `affinity redrive` on both dead-letter alarms', () => {
    // Act
    const byId = alarms(plain.resources);

    // Assess
    for (const id of ['IngestDlqNotEmpty', 'SlotDlqNotEmpty']) expect(byId.get(id)!.AlarmDescription, id).toContain('`affinity redrive`');
  });

  it('reserves no concurrency by default (a new account\'s quota of 10 or 50 leaves none to reserve), and the janitor\'s on request', () => {
    // Act
    const janitor = plain.resources[idOf(plain.stack, plain.stack.janitor.function)]!.Properties!;
    const router = plain.resources[idOf(plain.stack, plain.stack.router.function)]!.Properties!;
    const reserved = synth({ janitorReservedConcurrency: 4 });

    // Assess (issue 35, item 1)
    expect(janitor).not.toHaveProperty('ReservedConcurrentExecutions');
    expect(router).not.toHaveProperty('ReservedConcurrentExecutions');
    expect(reserved.resources[idOf(reserved.stack, reserved.stack.janitor.function)]!.Properties!.ReservedConcurrentExecutions).toBe(4);
  });
});

describe('riding out a capacity shortage', () => {
  it('keeps frames in the slot queues for 14 days (the SQS maximum) while no task can start', () => {
    // Act
    const nested = Template.fromStack(plain.stack.queues.slotQueueStacks[0]!).toJSON().Resources as Resources;
    const slotQueues = Object.values(nested).filter((r) => r.Type === 'AWS::SQS::Queue' && !String(r.Properties!.QueueName).includes('-dlq'));

    // Assess
    expect(slotQueues.length).toBeGreaterThan(0);
    for (const q of slotQueues) expect(q.Properties!.MessageRetentionPeriod).toBe(14 * 24 * 3600);
  });
});

describe('hardening', () => {
  it('gives the router no S3 access at all: it routes by the event\'s key and never reads a frame', () => {
    // Act
    const statements = roleStatements(plain.resources, roleIdOf(plain.resources, idOf(plain.stack, plain.stack.router.function)));

    // Assess
    expect(statements.length).toBeGreaterThan(0);
    expect(statements.flatMap((s) => asList(s.Action)).filter((a) => a.startsWith('s3:'))).toEqual([]);
  });

  it('denies every write to the model bucket to everyone but the named deploy role, and to everyone when none is named', () => {
    // Prepare: the Deny statements of one bucket's policy
    const denyOf = ({ stack, resources }: typeof plain, bucket: { node: { defaultChild?: unknown } }) =>
      Object.values(resources)
        .filter((r) => r.Type === 'AWS::S3::BucketPolicy' && (r.Properties!.Bucket as { Ref?: string }).Ref === idOf(stack, bucket))
        .flatMap((r) => (r.Properties!.PolicyDocument as { Statement: Statement[] }).Statement)
        .filter((s) => s.Effect === 'Deny' && !JSON.stringify(s.Condition ?? {}).includes('aws:SecureTransport'));
    const objectsOf = (stack: FrameAffinityStack, bucket: { node: { defaultChild?: unknown } }, suffix: string) => ({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [idOf(stack, bucket), 'Arn'] }, suffix]] });

    // Act
    const named = denyOf(hardened, hardened.stack.models.bucket);
    const none = denyOf(plain, plain.stack.models.bucket);

    // Assess: the whole model bucket (it holds only models), every write action
    expect(named).toHaveLength(1);
    expect(named[0]).toMatchObject({ Sid: MODEL_DENY_SIDS.writer, Principal: { AWS: '*' }, Condition: { ArnNotEquals: { 'aws:PrincipalArn': WRITER } } });
    expect(named[0]!.Resource).toEqual(objectsOf(hardened.stack, hardened.stack.models.bucket, '/*'));
    expect(asList(named[0]!.Action).sort()).toEqual([...MODEL_WRITE_ACTIONS].sort());
    expect(asList(named[0]!.Action)).toContain('s3:PutObject');
    expect(none).toHaveLength(1);
    expect(none[0]).toMatchObject({ Sid: MODEL_DENY_SIDS.none, Resource: objectsOf(plain.stack, plain.stack.models.bucket, '/*') });
    expect(none[0]!.Condition).toBeUndefined();
  });

  it("lets no one put a model in the frame bucket's old models/ any more, and only the deploy role remove the old ones (decision 78)", () => {
    // Prepare
    const denyOf = ({ stack, resources }: typeof plain) =>
      Object.values(resources)
        .filter((r) => r.Type === 'AWS::S3::BucketPolicy' && (r.Properties!.Bucket as { Ref?: string }).Ref === idOf(stack, stack.frames.bucket))
        .flatMap((r) => (r.Properties!.PolicyDocument as { Statement: Statement[] }).Statement)
        .filter((s) => s.Effect === 'Deny' && JSON.stringify(s.Resource).includes('/models/*'));

    // Act
    const named = denyOf(hardened);
    const none = denyOf(plain);

    // Assess: with a writer, puts denied to all, deletes to all but the writer; without one, everything denied to all
    const bySid = (list: Statement[], sid: string) => list.find((s) => (s as { Sid?: string }).Sid === sid);
    expect(named).toHaveLength(2);
    expect(asList(bySid(named, LEGACY_MODEL_DENY_SIDS.noNewModels)!.Action).sort()).toEqual([...LEGACY_MODEL_ACTIONS.none].sort());
    expect(bySid(named, LEGACY_MODEL_DENY_SIDS.noNewModels)!.Condition).toBeUndefined();
    expect(bySid(named, LEGACY_MODEL_DENY_SIDS.deleteByWriter)).toMatchObject({ Action: [...LEGACY_MODEL_ACTIONS.writerOnly], Condition: { ArnNotEquals: { 'aws:PrincipalArn': WRITER } } });
    expect([...LEGACY_MODEL_ACTIONS.none, ...LEGACY_MODEL_ACTIONS.writerOnly].sort()).toEqual([...MODEL_WRITE_ACTIONS].sort());
    expect(none).toHaveLength(1);
    expect(none[0]).toMatchObject({ Sid: LEGACY_MODEL_DENY_SIDS.keep });
    expect(asList(none[0]!.Action).sort()).toEqual([...MODEL_WRITE_ACTIONS].sort());
    expect(none[0]!.Condition).toBeUndefined();
  });

  it('tells the worker the model bucket, so a modelUri still naming the frame bucket is said at start (decision 78)', () => {
    // Act
    const container = (plain.resources[idOf(plain.stack, plain.stack.fleet.taskDefinition)]!.Properties!.ContainerDefinitions as Record<string, unknown>[])[0]!;
    const env = Object.fromEntries((container.Environment as { Name: string; Value: unknown }[]).map((e) => [e.Name, e.Value]));

    // Assess
    expect(env[MODEL_BUCKET_ENV]).toEqual({ Ref: idOf(plain.stack, plain.stack.models.bucket) });
  });

  it('pins the model by sha256 in the worker environment', () => {
    // Act
    const container = (hardened.resources[idOf(hardened.stack, hardened.stack.fleet.taskDefinition)]!.Properties!.ContainerDefinitions as Record<string, unknown>[])[0]!;
    const env = Object.fromEntries((container.Environment as { Name: string; Value: unknown }[]).map((e) => [e.Name, e.Value]));
    const plainContainer = (plain.resources[idOf(plain.stack, plain.stack.fleet.taskDefinition)]!.Properties!.ContainerDefinitions as Record<string, unknown>[])[0]!;

    // Assess
    expect(env[MODEL_SHA256_ENV]).toBe(MODEL_SHA);
    expect(JSON.stringify(plainContainer.Environment)).not.toContain(MODEL_SHA256_ENV);
  });

  it('lets ECS assume the task and execution roles only for this account\'s tasks in this region', () => {
    // Act
    const trust = [plain.stack.fleet.taskRole, plain.stack.fleet.executionRole].map(
      (role) => (plain.resources[idOf(plain.stack, role)]!.Properties!.AssumeRolePolicyDocument as { Statement: Statement[] }).Statement,
    );

    // Assess
    for (const statements of trust) {
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatchObject({ Principal: { Service: 'ecs-tasks.amazonaws.com' }, Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } } });
      expect(JSON.stringify(statements[0]!.Condition!.ArnLike!['aws:SourceArn'])).toContain(':ecs:');
    }
  });

  it('with NAT, lets tasks and instances reach only the endpoints and the S3/DynamoDB prefix lists, unless allowInternetEgress', () => {
    // Prepare
    const groups = (s: typeof plain) => [idOf(s.stack, s.stack.network.taskSecurityGroup), idOf(s.stack, s.stack.fleet.instanceSecurityGroup)];
    const open = synth({ natGateways: 1, allowInternetEgress: true });

    // Act
    const restricted = groups(hardened).map((g) => egressOf(hardened.resources, g));
    const opened = groups(open).map((g) => egressOf(open.resources, g));

    // Assess
    for (const rules of restricted) {
      expect(rules.filter((r) => r.CidrIp !== undefined)).toEqual([]);
      expect(rules.filter((r) => r.DestinationPrefixListId !== undefined)).toHaveLength(2);
      expect(rules.filter((r) => r.DestinationSecurityGroupId !== undefined)).toHaveLength(7);
      for (const r of rules) expect([r.FromPort, r.ToPort]).toEqual([443, 443]);
    }
    for (const rules of opened) expect(rules.filter((r) => r.CidrIp === '0.0.0.0/0')).toHaveLength(1);
  });
});
