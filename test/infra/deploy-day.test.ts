/**
 * Issue 35, "Deploy day, round two": what a first deploy and its first week would hit,
 * read from the synthesized templates (no bundling). One test per confirmed item; each
 * fails on the template before its fix.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TUNABLES } from '../../core/config.ts';
import { ingestQueueShape } from '../../core/resources.ts';
import { EVENTBRIDGE_KEY_STATEMENT_SID } from '../../infra/alarm-topic.ts';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';

type Resource = { Type: string; Properties?: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string; DependsOn?: string[] };
type Resources = Record<string, Resource>;

const outdirs: string[] = [];
function synth(context: Record<string, unknown> = {}): { stack: FrameAffinityStack; template: Template; resources: Resources } {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-deploy-day-'));
  outdirs.push(outdir);
  const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
  const template = Template.fromStack(stack);
  return { stack, template, resources: template.toJSON().Resources as Resources };
}
const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

let byDefault: ReturnType<typeof synth>;
beforeAll(() => {
  byDefault = synth();
});
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

describe('item 2: capacity-failure messages reach the encrypted alarm topic', () => {
  it('lets EventBridge use the topic key without the aws:SourceAccount condition SNS does not support for it', () => {
    // Act
    const keys = Object.values(byDefault.resources).filter((r) => r.Type === 'AWS::KMS::Key');
    const statements = keys.flatMap((k) => (k.Properties!.KeyPolicy as { Statement: Record<string, unknown>[] }).Statement);
    const events = statements.filter((s) => s.Sid === EVENTBRIDGE_KEY_STATEMENT_SID);

    // Assess
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ Principal: { Service: 'events.amazonaws.com' }, Effect: 'Allow' });
    expect(events[0]!.Condition).toBeUndefined();
  });

  it('still gates EventBridge on the topic policy: this stack\'s launch-failure rule only', () => {
    const policies = Object.values(byDefault.resources).filter((r) => r.Type === 'AWS::SNS::TopicPolicy');
    const statements = policies.flatMap((p) => (p.Properties!.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement);
    const publish = statements.find((s) => (s.Principal as { Service?: string })?.Service === 'events.amazonaws.com');
    expect(publish?.Condition).toMatchObject({ ArnEquals: { 'aws:SourceArn': expect.anything() } });
  });
});

describe('item 10: the runbook tells the template\'s ingest retention', () => {
  it('says the ingest queue keeps unrouted events as many days as the template sets', () => {
    // Prepare
    const ingest = Object.values(byDefault.resources).find((r) => r.Type === 'AWS::SQS::Queue' && r.Properties?.QueueName === 'FrameAffinity-ingest');
    const days = Number(ingest?.Properties?.MessageRetentionPeriod) / 86_400;

    // Act
    const said = [...read('docs/deploy.md').matchAll(/ingest queue keeps unrouted events (\d+) days/g)].map((m) => Number(m[1]));

    // Assess
    expect(days).toBe(ingestQueueShape(DEFAULT_TUNABLES).retentionSeconds / 86_400);
    expect(said.length).toBeGreaterThan(0);
    expect(said.every((d) => d === days)).toBe(true);
  });
});

describe('item 3: SlotDlqNotEmpty does not flap at 1,000 slots', () => {
  const slotDlqAlarm = (resources: Resources) =>
    Object.values(resources).find((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties?.AlarmName === 'FrameAffinity-SlotDlqNotEmpty')!.Properties!;

  it('keeps one period up to 100 slots, where every slot DLQ is read at every run', () => {
    expect(slotDlqAlarm(byDefault.resources)).toMatchObject({ EvaluationPeriods: 1, Threshold: 1 });
  });

  it('at 1,000 slots fires on one breaching run and clears only after a whole sweep of 10 runs and one more', () => {
    // Act
    const alarm = slotDlqAlarm(synth({ slotCount: 1000 }).resources);

    // Assess: a DLQ read once every 10 runs keeps the alarm in ALARM between its reads
    expect(alarm).toMatchObject({ EvaluationPeriods: 11, DatapointsToAlarm: 1, Threshold: 1, Statistic: 'Maximum', Period: 60 });
  });
});

describe('item 9: every log group expires', () => {
  const check = (resources: Resources) => {
    const groups = new Map(Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Logs::LogGroup'));
    const functions = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
    const unnamed = functions.filter(([, r]) => (r.Properties?.LoggingConfig as { LogGroup?: unknown } | undefined)?.LogGroup === undefined).map(([id]) => id);
    const groupOf = (r: Resource) => (r.Properties?.LoggingConfig as { LogGroup?: { Ref?: string } } | undefined)?.LogGroup?.Ref;
    const notOurs = functions.filter(([id, r]) => !unnamed.includes(id) && !groups.has(groupOf(r) ?? '')).map(([id]) => id);
    const forever = [...groups].filter(([, g]) => g.Properties?.RetentionInDays !== DEFAULT_RETENTION_DAYS).map(([id]) => id);
    return { functions: functions.length, unnamed, notOurs, forever };
  };
  const DEFAULT_RETENTION_DAYS = 30;

  it.each([
    ['the default stack', {}],
    ['with NAT (the prefix-list lookup function)', { natGateways: 1 }],
  ] as const)('%s: each Lambda function writes to a log group of the stack with logRetentionDays', (_name, context) => {
    // Act
    const { resources } = Object.keys(context).length === 0 ? byDefault : synth(context);
    const found = check(resources);

    // Assess: the VPC default-SG restriction and the bucket notifications handler included
    expect(found.functions).toBeGreaterThanOrEqual(5);
    expect(found.unnamed).toEqual([]);
    expect(found.notOurs).toEqual([]);
    expect(found.forever).toEqual([]);
  });
});

describe('item 7: a namePrefix starting with ecs, aws or fargate in any case deploys', () => {
  const providerName = (resources: Resources) =>
    Object.values(resources).find((r) => r.Type === 'AWS::ECS::CapacityProvider')!.Properties!.Name as string | undefined;

  it.each(['EcsVideo', 'AWSFrames', 'Fargate1', 'ecs-lower'])('namePrefix %s: the capacity provider gets a name ECS accepts', (namePrefix) => {
    // Act
    const name = providerName(synth({ namePrefix }).resources);

    // Assess: without a name, CloudFormation would name it after the stack (`<namePrefix>-...`)
    expect(name).toMatch(/^cp-/);
    expect(name).not.toMatch(/^(aws|ecs|fargate)/i);
    expect(name!.length).toBeLessThanOrEqual(255);
  });

  it('leaves the generated name of any other stack alone (no replacement on update)', () => {
    expect(providerName(byDefault.resources)).toBeUndefined();
  });
});

describe('item 8: a workerImage from another region is refused, or made to work', () => {
  const image = (region: string) => `123456789012.dkr.ecr.${region}.amazonaws.com/frame-affinity/worker@sha256:${'a'.repeat(64)}`;
  const inRegion = <T>(region: string, fn: () => T): T => {
    const saved = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
    process.env.CDK_DEFAULT_ACCOUNT = '123456789012';
    process.env.CDK_DEFAULT_REGION = region;
    try {
      return fn();
    } finally {
      for (const [k, v] of [['CDK_DEFAULT_ACCOUNT', saved.account], ['CDK_DEFAULT_REGION', saved.region]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  };

  it('fails synthesis for an image in another region than the stack, saying how to make it work', () => {
    expect(() => inRegion('us-east-1', () => synth({ workerImage: image('eu-west-1') }))).toThrow(/eu-west-1.*us-east-1.*(replicate|Replicate).*allowInternetEgress=true/s);
  });

  it('accepts an image of the stack\'s region, and one of another region when tasks have internet egress', () => {
    expect(() => inRegion('us-east-1', () => synth({ workerImage: image('us-east-1') }))).not.toThrow();
    expect(() => inRegion('us-east-1', () => synth({ workerImage: image('eu-west-1'), natGateways: 1, allowInternetEgress: true }))).not.toThrow();
  });

  it('without a known region, the template holds a rule that CloudFormation checks before creating anything', () => {
    // Act
    const rules = (synth({ workerImage: image('eu-west-1') }).template.toJSON().Rules ?? {}) as Record<string, { Assertions: { Assert: unknown }[] }>;

    // Assess
    const asserts = Object.values(rules).flatMap((r) => r.Assertions.map((a) => a.Assert));
    expect(asserts).toContainEqual({ 'Fn::Equals': [{ Ref: 'AWS::Region' }, 'eu-west-1'] });
  });
});

describe('item 5: a failed first deploy leaves no litter', () => {
  it('retains data with RetainExceptOnCreate (kept on delete and replacement, deleted by the rollback of its own create), never Retain', () => {
    // Act
    const all = Object.entries(byDefault.resources);
    const retain = all.filter(([, r]) => r.DeletionPolicy === 'Retain').map(([id]) => id);
    const kept = all.filter(([, r]) => r.DeletionPolicy === 'RetainExceptOnCreate');

    // Assess: the buckets, tables, alarm key and every log group
    expect(retain).toEqual([]);
    expect(kept.map(([, r]) => r.Type)).toEqual(expect.arrayContaining(['AWS::S3::Bucket', 'AWS::DynamoDB::Table', 'AWS::KMS::Key', 'AWS::Logs::LogGroup']));
    expect(kept.length).toBeGreaterThanOrEqual(13);
    for (const [, r] of kept) expect(r.UpdateReplacePolicy).toBe('Retain');
  });

  it('leaves table deletion protection unmanaged, so the rollback can delete the tables it created', () => {
    const tables = Object.values(byDefault.resources).filter((r) => r.Type === 'AWS::DynamoDB::Table');
    expect(tables).toHaveLength(3);
    for (const t of tables) expect(t.Properties).not.toHaveProperty('DeletionProtectionEnabled');
  });
});

describe('item 1: the defaults deploy in any account', () => {
  it('reserves no Lambda concurrency anywhere (Lambda allows reserving only up to the account quota minus 100)', () => {
    const functions = Object.entries(byDefault.resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
    expect(functions.length).toBeGreaterThan(0);
    expect(functions.filter(([, r]) => r.Properties && 'ReservedConcurrentExecutions' in r.Properties).map(([id]) => id)).toEqual([]);
  });
});

describe('item 4: a worker that fell back to CPU is loud, and the GPU is on the dashboard', () => {
  const dashboardBody = (resources: Resources): { widgets: { x: number; y: number; properties: { title?: string; metrics?: unknown[] } }[] } => {
    const dash = Object.values(resources).find((r) => r.Type === 'AWS::CloudWatch::Dashboard')!;
    const body = dash.Properties!.DashboardBody as { 'Fn::Join': [string, unknown[]] };
    const text = body['Fn::Join'][1].map((p) => (typeof p === 'string' ? p : 'X')).join('');
    return JSON.parse(text);
  };

  it('alarms on ExecutionProvider{Provider=cpu} of the workers', () => {
    // Act
    const alarm = Object.values(byDefault.resources).find((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties?.AlarmName === 'FrameAffinity-WorkerOnCpu')?.Properties;

    // Assess
    expect(alarm).toMatchObject({
      MetricName: 'ExecutionProvider',
      Namespace: 'FrameAffinity',
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect(alarm!.Dimensions).toEqual(expect.arrayContaining([{ Name: 'Provider', Value: 'cpu' }, { Name: 'service', Value: 'worker' }]));
    expect(alarm!.AlarmActions).toHaveLength(1);
  });

  it('plots GPU utilisation and memory in the row of the inference latency', () => {
    // Act
    const widgets = dashboardBody(byDefault.resources).widgets;
    const latency = widgets.find((w) => w.properties.title?.includes('inference per frame'))!;
    const gpu = widgets.find((w) => JSON.stringify(w.properties.metrics ?? []).includes('GpuUtilizationPercent'));

    // Assess
    expect(gpu).toBeDefined();
    expect(JSON.stringify(gpu!.properties.metrics)).toContain('GpuMemoryUsedPercent');
    expect(gpu!.y).toBe(latency.y);
    expect(gpu!.x).toBeGreaterThan(latency.x);
  });
});

describe('settled: a routine deploy does not make the launchers\' RunTask grant and task definition disagree', () => {
  it('grants RunTask on every revision of the stack\'s worker family (the policy is updated before the function that reads the revision)', () => {
    // Prepare
    const resources = byDefault.resources;
    const policies = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::IAM::Policy');
    const runTask = policies.flatMap(([id, r]) =>
      (r.Properties!.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] }).Statement.filter((s) => [s.Action].flat().includes('ecs:RunTask')).map((s) => ({ id, s })),
    );
    const router = Object.entries(resources).find(([id, r]) => r.Type === 'AWS::Lambda::Function' && id.startsWith('RouterFunction'))!;

    // Assess: the function waits for its policy, so only a family grant covers both revisions
    expect(router[1].DependsOn).toEqual(expect.arrayContaining([expect.stringMatching(/^RouterFunctionRoleDefaultPolicy/)]));
    expect(runTask).toHaveLength(2);
    for (const { s } of runTask) expect(JSON.stringify(s.Resource)).toMatch(/:task-definition\/FrameAffinity-worker:\*"/);
  });
});
