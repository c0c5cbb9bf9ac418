/**
 * The stack at 4, 100 and 1,000 slots (issue 10): every stack under CloudFormation's
 * 500-resource limit, every role's inline policies under IAM's 10,240 characters and every
 * managed policy under 6,144, slot queues in nested stacks that cdk-nag checks too, and
 * the wiring that finds them by name. Plus the smaller hardening items: the S3 → SQS
 * policy's SourceAccount, the router's batching window, the ListBucket prefix condition
 * and the versioned model bucket beside the unversioned frame bucket (decision 78).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { DEFAULT_TUNABLES, resourceNames, slotQueueUrl } from '../../core/config.ts';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import { SLOTS_PER_QUEUE_STACK } from '../../infra/queues.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';
import {
  MAX_MANAGED_POLICY_CHARS,
  MAX_RESOURCES_PER_STACK,
  MAX_ROLE_INLINE_POLICY_CHARS,
  measureSynth,
  policyChars,
  roleInlinePolicySizes,
  type CfnTemplate,
  type SynthSize,
} from '../../bench/synth-size.ts';

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown>; DependsOn?: string[] }>;
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: Record<string, Record<string, unknown>> };

const names = resourceNames('FrameAffinity');
const outdirs: string[] = [];
function synth(context: Record<string, unknown> = {}): { app: App; stack: FrameAffinityStack; template: Template } {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-cdk-scale-'));
  outdirs.push(outdir);
  const { app, stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
  return { app, stack, template: Template.fromStack(stack) };
}
const asList = <T>(v: T | T[] | undefined): T[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);

/** Every statement of every AWS::IAM::Policy in the template. */
function identityStatements(resources: Resources): Statement[] {
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .flatMap((r) => (r.Properties!.PolicyDocument as { Statement: Statement[] }).Statement);
}

const measured = new Map<number, SynthSize>();
/** `cdk synth -c slotCount=N`, once per N (cdk-nag included: a finding fails the synthesis). */
const sizes = {
  get(n: number): SynthSize {
    if (!measured.has(n)) measured.set(n, measureSynth(n));
    return measured.get(n)!;
  },
};
let small: { app: App; stack: FrameAffinityStack; template: Template; resources: Resources };

beforeAll(() => {
  const s = synth();
  small = { ...s, resources: s.template.toJSON().Resources as Resources };
});

afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

describe('1,000 slots in one deployment', () => {
  it.each([4, 100, 1000])('keeps the parent and every nested stack under 500 resources at %i slots', (slots) => {
    // Act
    const m = sizes.get(slots)!;

    // Assess
    expect(m.stacks).toHaveLength(1 + Math.ceil(slots / SLOTS_PER_QUEUE_STACK));
    for (const s of m.stacks) expect(s.resources, s.stack).toBeLessThan(MAX_RESOURCES_PER_STACK);
  });

  it('puts 100 slots (4 resources each) in each nested stack, and the rest in the last', () => {
    // Act
    const nested = sizes.get(1000)!.stacks.slice(1);
    const fewer = sizes.get(4)!.stacks.slice(1);

    // Assess (besides the CDK version-reporting resource the CLI adds to every stack)
    const counted = (t: CfnTemplate) => Object.values(t.Resources).filter((r) => r.Type !== 'AWS::CDK::Metadata').length;
    expect(nested.map((s) => counted(s.template))).toEqual(Array(10).fill(4 * SLOTS_PER_QUEUE_STACK));
    expect(fewer.map((s) => counted(s.template))).toEqual([4 * 4]);
  });

  it('does not grow the parent stack or any IAM policy with the slot count', () => {
    // Act
    const [at4, at100, at1000] = [4, 100, 1000].map((n) => sizes.get(n)!);
    const nonAlarm = (m: SynthSize) => Object.values(m.stacks[0]!.template.Resources).filter((r) => r.Type !== 'AWS::CloudWatch::Alarm' && r.Type !== 'AWS::CloudFormation::Stack').length;

    // Assess: only the nested-stack resources themselves are added to the parent
    expect(nonAlarm(at100!)).toBe(nonAlarm(at4!));
    expect(nonAlarm(at1000!)).toBe(nonAlarm(at4!));
    expect(at1000!.largestRoleInline!.chars).toBe(at4!.largestRoleInline!.chars);
  });

  it('keeps every role\'s inline policies under 10,240 characters and every managed policy under 6,144 at 1,000 slots', () => {
    // Act
    const m = sizes.get(1000)!;

    // Assess
    expect(m.largestRoleInline!.chars).toBeLessThan(MAX_ROLE_INLINE_POLICY_CHARS);
    expect(m.largestManaged?.chars ?? 0).toBeLessThan(MAX_MANAGED_POLICY_CHARS);
  });

  it('measures a policy as IAM would: intrinsics resolved to long stand-ins, no whitespace, summed per role', () => {
    // Prepare
    const doc = { Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': ['B', 'Arn'] }, '/frames/*']] } }] };
    const template: CfnTemplate = {
      Resources: {
        Role: { Type: 'AWS::IAM::Role', Properties: {} },
        P1: { Type: 'AWS::IAM::Policy', Properties: { PolicyDocument: doc, Roles: [{ Ref: 'Role' }] } },
        P2: { Type: 'AWS::IAM::Policy', Properties: { PolicyDocument: doc, Roles: [{ Ref: 'Role' }] } },
      },
    };

    // Act
    const one = policyChars(doc);
    const roles = roleInlinePolicySizes(template);

    // Assess
    expect(one).toBe(JSON.stringify({ Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: `arn:aws-us-gov:service:ap-southeast-2:123456789012:${'x'.repeat(64)}/frames/*` }] }).length);
    expect(roles).toEqual([{ id: 'Role', chars: 2 * one }]);
  });

  it('grants the slot queues by one name-prefix ARN pattern, never by listing queue ARNs', () => {
    // Prepare
    const parent = sizes.get(1000)!.stacks[0]!.template.Resources as Resources;
    const pattern = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':sqs:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, `:${names.slotQueuePrefix}*`]] };

    // Act
    const sqsStatements = identityStatements(parent).filter((s) => asList(s.Action).some((a) => a.startsWith('sqs:')));
    const slotStatements = sqsStatements.filter((s) => JSON.stringify(s.Resource).includes(names.slotQueuePrefix));

    // Assess: router (send), janitor (attributes), worker (send, consume)
    expect(slotStatements.length).toBeGreaterThanOrEqual(3);
    for (const s of slotStatements) {
      const slotResources = asList(s.Resource as object).filter((r) => JSON.stringify(r).includes(names.slotQueuePrefix));
      expect(slotResources).toEqual([pattern]);
    }
    expect(JSON.stringify(parent)).not.toContain(names.slotQueue(0));
    expect(JSON.stringify(parent)).not.toContain(names.slotQueue(999));
  });

  it('keeps the nested stacks self-contained: no parameters, no outputs, nothing imported from the parent', () => {
    // Act
    const nested = sizes.get(1000)!.stacks.slice(1).map((s) => s.template as CfnTemplate & { Parameters?: object; Outputs?: object });

    // Assess
    for (const t of nested) {
      expect(t.Parameters).toBeUndefined();
      expect(t.Outputs).toBeUndefined();
    }
  });

  it('places slot n in nested stack floor(n / 100), so raising slotCount never moves a queue', () => {
    // Act
    const nested = sizes.get(1000)!.stacks.slice(1);
    const queueNames = nested.map((s) =>
      Object.values(s.template.Resources)
        .filter((r) => r.Type === 'AWS::SQS::Queue')
        .map((r) => r.Properties!.QueueName as string),
    );

    // Assess
    queueNames.forEach((list, group) => {
      const expected = Array.from({ length: SLOTS_PER_QUEUE_STACK }, (_, i) => group * SLOTS_PER_QUEUE_STACK + i).flatMap((n) => [names.slotDlq(n), names.slotQueue(n)]);
      expect(list.sort()).toEqual(expected.sort());
    });
  });
});

describe('wiring to the nested slot queues', () => {
  it('gives the router, janitor and worker a URL prefix that yields every slot queue\'s URL', () => {
    // Prepare
    const env = (id: string) => ((small.resources[id]!.Properties!.Environment as { Variables: Record<string, unknown> }).Variables);
    const routerId = small.stack.getLogicalId(small.stack.router.function.node.defaultChild as never);

    // Act
    const prefix = env(routerId).SLOT_QUEUE_URL_PREFIX;
    const url = slotQueueUrl({ slotQueueUrlPrefix: small.stack.queues.slotQueueUrlPrefix }, 3);

    // Assess
    expect(JSON.stringify(prefix)).toContain(`/${names.slotQueuePrefix}`);
    expect(url.endsWith(`/${names.slotQueue(3)}`)).toBe(true);
    const task = Object.values(small.resources).find((r) => r.Type === 'AWS::ECS::TaskDefinition')!;
    const workerEnv = (task.Properties!.ContainerDefinitions as { Environment: { Name: string; Value: unknown }[] }[])[0]!.Environment;
    expect(workerEnv.find((e) => e.Name === 'SLOT_QUEUE_URL_PREFIX')?.Value).toEqual(prefix);
    expect(env(small.stack.getLogicalId(small.stack.janitor.function.node.defaultChild as never)).SLOT_QUEUE_URL_PREFIX).toEqual(prefix);
  });

  it('makes the router\'s event source and the janitor wait for the slot-queue stacks', () => {
    // Prepare
    const nestedId = Object.entries(small.resources).find(([, r]) => r.Type === 'AWS::CloudFormation::Stack')![0];

    // Act
    const mapping = Object.values(small.resources).find((r) => r.Type === 'AWS::Lambda::EventSourceMapping')!;
    const janitorId = small.stack.getLogicalId(small.stack.janitor.function.node.defaultChild as never);

    // Assess
    expect(mapping.DependsOn).toContain(nestedId);
    expect(small.resources[janitorId]!.DependsOn).toContain(nestedId);
  });

  it('lets the janitor Scan the pinned-slot index and nothing else', () => {
    // Prepare
    const janitorRole = small.stack.getLogicalId(small.stack.janitor.function.role!.node.defaultChild as never);

    // Act
    const scans = Object.values(small.resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap((r) => (r.Properties!.PolicyDocument as { Statement: Statement[] }).Statement.map((s) => ({ s, roles: JSON.stringify(r.Properties!.Roles) })))
      .filter(({ s }) => asList(s.Action).includes('dynamodb:Scan'));

    // Assess
    expect(scans).toHaveLength(1);
    expect(scans[0]!.roles).toContain(janitorRole);
    expect(JSON.stringify(scans[0]!.s.Resource)).toMatch(/\/index\/byPinnedSlot"?\]?\]?\}?$/);
  });
});

describe('cdk-nag on nested stacks', () => {
  it('walks the nested slot-queue stacks: a non-compliant queue there is a finding', () => {
    // Prepare
    const { app, stack } = synth({ slotCount: 150 });
    new sqs.Queue(stack.queues.slotQueueStacks[1]!, 'Unencrypted', { encryption: sqs.QueueEncryption.UNENCRYPTED, enforceSSL: false });

    // Act
    const report = new AwsSolutionsChecks(app).validateScope(app);

    // Assess
    const flagged = report.violations.flatMap((v) => v.violatingResources.map((r) => `${v.ruleName} ${r.constructPath}`));
    expect(flagged).toContain('AwsSolutions-SQS4 FrameAffinity/Queues/Slots1/Unencrypted/Resource');
    expect(flagged.every((f) => f.includes('/Unencrypted/'))).toBe(true);
  });

  it('passes with every finding acknowledged at 150 slots (two nested stacks)', () => {
    // Prepare
    const { app } = synth({ slotCount: 150 });

    // Act
    const report = new AwsSolutionsChecks(app).validateScope(app);

    // Assess
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });
});

describe('smaller hardening items', () => {
  it('lets S3 send to the ingest queue only from the frame bucket in this account (SourceArn and SourceAccount)', () => {
    // Prepare
    const ingestId = small.stack.getLogicalId(small.stack.queues.ingestQueue.node.defaultChild as never);
    const bucketId = small.stack.getLogicalId(small.stack.frames.bucket.node.defaultChild as never);

    // Act
    const policies = Object.entries(small.resources).filter(([, r]) => r.Type === 'AWS::SQS::QueuePolicy' && JSON.stringify(r.Properties!.Queues) === JSON.stringify([{ Ref: ingestId }]));
    const notification = Object.values(small.resources).find((r) => r.Type === 'Custom::S3BucketNotifications')!;
    const statements = policies
      .map(([, r]) => r)
      .flatMap((r) => (r.Properties!.PolicyDocument as { Statement: (Statement & { Principal?: unknown })[] }).Statement)
      .filter((s) => s.Effect === 'Allow');

    // Assess
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatchObject({
      Principal: { Service: 's3.amazonaws.com' },
      Condition: {
        ArnLike: { 'aws:SourceArn': { 'Fn::GetAtt': [bucketId, 'Arn'] } },
        StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
      },
    });
    // S3 checks the permission when the notification is configured: the policy must exist first.
    expect(notification.DependsOn).toContain(policies[0]![0]);
  });

  it('gives the router event source a batching window from routerBatchWindowSeconds (default 0: invoke at once)', () => {
    // Act
    const windowOf = (t: Template) => Object.values(t.findResources('AWS::Lambda::EventSourceMapping'))[0]!.Properties?.MaximumBatchingWindowInSeconds;
    const five = synth({ routerBatchWindowSeconds: '5' }).template;
    const off = synth({ routerBatchWindowSeconds: '0' }).template;

    // Assess
    expect(DEFAULT_TUNABLES.routerBatchWindowSeconds).toBe(0);
    expect(windowOf(small.template) ?? 0).toBe(0);
    expect(windowOf(five)).toBe(5);
    expect(windowOf(off) ?? 0).toBe(0);
    expect(() => synth({ routerBatchWindowSeconds: '301' })).toThrow(/routerBatchWindowSeconds must be an integer between 0 and 300/);
  });

  it('limits every s3:ListBucket to the frames/, models/ or rules/ prefix', () => {
    // Act
    const lists = identityStatements(small.resources).filter((s) => asList(s.Action).includes('s3:ListBucket'));

    // Assess: the worker (frames, models, rules documents); the router reads no object, so it lists nothing
    expect(lists).toHaveLength(3);
    for (const s of lists) {
      expect(asList(s.Action)).toEqual(['s3:ListBucket']);
      expect(['frames/*', 'models/*', 'rules/*']).toContain(s.Condition?.StringLike?.['s3:prefix']);
    }
    expect(lists.map((s) => s.Condition!.StringLike!['s3:prefix'])).toEqual(expect.arrayContaining(['frames/*', 'models/*', 'rules/*']));
  });

  it('does not version the frame bucket: the template suspends what an older deploy enabled, and the versions it made drain (decision 78)', () => {
    // Prepare
    const bucketId = small.stack.getLogicalId(small.stack.frames.bucket.node.defaultChild as never);

    // Act
    const props = small.resources[bucketId]!.Properties!;
    const rules = (props.LifecycleConfiguration as { Rules: Record<string, unknown>[] }).Rules;
    const rule = (id: string) => rules.find((r) => r.Id === id);

    // Assess: Suspended, stated (an absent VersioningConfiguration leaves an existing bucket versioned)
    expect(props.VersioningConfiguration).toEqual({ Status: 'Suspended' });
    expect(rule('expire-frames')).toMatchObject({ Prefix: 'frames/', ExpirationInDays: 30, NoncurrentVersionExpiration: { NoncurrentDays: 1 }, Status: 'Enabled' });
    expect(rule('expire-frame-delete-markers')).toMatchObject({ Prefix: 'frames/', ExpiredObjectDeleteMarker: true, Status: 'Enabled' });
    expect(rule('expire-old-rules-versions')).toMatchObject({ Prefix: 'rules/', NoncurrentVersionExpiration: { NoncurrentDays: 1 }, ExpiredObjectDeleteMarker: true });
    expect(rule('expire-old-models')).toMatchObject({ Prefix: 'models/', NoncurrentVersionExpiration: { NoncurrentDays: 90 }, ExpiredObjectDeleteMarker: true });
  });

  it('versions the model bucket, and no other bucket: superseded and deleted models are kept 90 days', () => {
    // Prepare
    const modelsId = small.stack.getLogicalId(small.stack.models.bucket.node.defaultChild as never);

    // Act
    const versioned = Object.entries(small.resources)
      .filter(([, r]) => r.Type === 'AWS::S3::Bucket' && (r.Properties?.VersioningConfiguration as { Status?: string } | undefined)?.Status === 'Enabled')
      .map(([id]) => id);
    const rules = (small.resources[modelsId]!.Properties!.LifecycleConfiguration as { Rules: Record<string, unknown>[] }).Rules;

    // Assess
    expect(versioned).toEqual([modelsId]);
    expect(rules.find((r) => r.Id === 'expire-old-models')).toEqual({ Id: 'expire-old-models', NoncurrentVersionExpiration: { NoncurrentDays: 90 }, ExpiredObjectDeleteMarker: true, Status: 'Enabled' });
    // Nothing in it expires while current: a model stays until the deploy role replaces or deletes it.
    expect(rules.filter((r) => r.ExpirationInDays !== undefined)).toEqual([]);
  });
});
