/**
 * Issue 22, delivery in AWS: the events outbox table's stream piped by EventBridge Pipes
 * onto the stack's bus, filtered and shaped, with a DLQ that alarms, a least-privilege
 * role, the outputs, and everything deleted with the stack.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { resourceNames } from '../../core/config.ts';
import { DELIVERY_FILTER_PATTERNS, DETAIL_TYPE_PATH, PIPE_INPUT_TEMPLATE } from '../../core/analytics/event-delivery.ts';
import { EVENT_SOURCE } from '../../core/analytics/event-schema.ts';
import { STACK_OUTPUT_KEYS } from '../../core/stack-outputs.ts';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import { EVENT_PIPE_SOURCE } from '../../infra/event-delivery.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';

type Resource = { Type: string; Properties?: Record<string, unknown>; DependsOn?: string | string[]; DeletionPolicy?: string };
type Resources = Record<string, Resource>;
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Principal?: unknown; Condition?: unknown };

const names = resourceNames('FrameAffinity');
const outdirs: string[] = [];
let app: App;
let stack: FrameAffinityStack;
let resources: Resources;
let outputs: Record<string, { Value: unknown }>;

function synth(context: Record<string, unknown> = {}) {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-events-'));
  outdirs.push(outdir);
  const built = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
  const json = Template.fromStack(built.stack).toJSON();
  return { ...built, resources: json.Resources as Resources, outputs: json.Outputs as Record<string, { Value: unknown }> };
}

const idOf = (type: string, match: (r: Resource) => boolean = () => true): string => {
  const found = Object.entries(resources).filter(([, r]) => r.Type === type && match(r));
  expect(found, type).toHaveLength(1);
  return found[0]![0];
};
const asList = <T>(v: T | T[] | undefined): T[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);

beforeAll(() => {
  ({ app, stack, resources, outputs } = synth());
});
afterAll(() => {
  for (const d of outdirs) rmSync(d, { recursive: true, force: true });
});

describe('the event pipe', () => {
  it('reads the events table stream from TRIM_HORIZON in batches of 10, retries, and dead-letters to its own queue', () => {
    // Prepare
    const eventsTable = stack.getLogicalId(stack.tables.events.node.defaultChild as never);
    const dlq = idOf('AWS::SQS::Queue', (r) => r.Properties?.QueueName === `${names.eventBus}-dlq`);

    // Act
    const pipe = resources[idOf('AWS::Pipes::Pipe')]!.Properties!;

    // Assess
    expect(pipe.Source).toEqual({ 'Fn::GetAtt': [eventsTable, 'StreamArn'] });
    expect(pipe.SourceParameters).toMatchObject({
      DynamoDBStreamParameters: {
        StartingPosition: 'TRIM_HORIZON',
        BatchSize: 10,
        MaximumRetryAttempts: EVENT_PIPE_SOURCE.maximumRetryAttempts,
        MaximumRecordAgeInSeconds: EVENT_PIPE_SOURCE.maximumRecordAgeInSeconds,
        ParallelizationFactor: 1,
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [dlq, 'Arn'] } },
      },
    });
    expect(resources[dlq]!.Properties).toMatchObject({ SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 24 * 3600 });
  });

  it('passes INSERTs and redelivery MODIFYs only', () => {
    // Act
    const pipe = resources[idOf('AWS::Pipes::Pipe')]!.Properties!;
    const patterns = (pipe.SourceParameters as { FilterCriteria: { Filters: { Pattern: string }[] } }).FilterCriteria.Filters.map((f) => JSON.parse(f.Pattern) as unknown);

    // Assess
    expect(patterns).toEqual(DELIVERY_FILTER_PATTERNS);
    expect(patterns[0]).toEqual({ eventName: ['INSERT'] });
    expect(JSON.stringify(patterns)).not.toContain('REMOVE');
  });

  it('targets the stack bus with source frame-affinity, the stored display name as detail-type and the templated detail', () => {
    // Prepare
    const bus = idOf('AWS::Events::EventBus');

    // Act
    const pipe = resources[idOf('AWS::Pipes::Pipe')]!.Properties!;

    // Assess
    expect(resources[bus]!.Properties?.Name).toBe(names.eventBus);
    expect(pipe.Target).toEqual({ 'Fn::GetAtt': [bus, 'Arn'] });
    expect(pipe.TargetParameters).toEqual({
      InputTemplate: PIPE_INPUT_TEMPLATE,
      EventBridgeEventBusParameters: { Source: EVENT_SOURCE, DetailType: DETAIL_TYPE_PATH },
    });
    expect(pipe.Enrichment).toBeUndefined();
    expect(pipe.LogConfiguration).toMatchObject({ Level: 'ERROR' });
  });

  it('runs under a role only pipes of this account assume, allowed stream read, PutEvents on the bus, send to the DLQ and its log', () => {
    // Prepare
    const pipe = resources[idOf('AWS::Pipes::Pipe')]!;
    const roleId = ((pipe.Properties!.RoleArn as { 'Fn::GetAtt': string[] })['Fn::GetAtt'])[0]!;
    const policies = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties?.Roles).includes(roleId));

    // Act
    const statements = policies.flatMap(([, p]) => (p.Properties!.PolicyDocument as { Statement: Statement[] }).Statement);
    const trust = (resources[roleId]!.Properties!.AssumeRolePolicyDocument as { Statement: Statement[] }).Statement;
    const actions = statements.flatMap((s) => asList(s.Action)).sort();

    // Assess
    expect(actions).toEqual(
      ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams', 'events:PutEvents', 'logs:CreateLogStream', 'logs:PutLogEvents', 'sqs:SendMessage'].sort(),
    );
    for (const s of statements) {
      const wildcard = asList(s.Resource).includes('*');
      expect(wildcard, JSON.stringify(s)).toBe(asList(s.Action).includes('dynamodb:ListStreams'));
    }
    expect(trust).toEqual([expect.objectContaining({ Principal: { Service: 'pipes.amazonaws.com' }, Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } } })]);
    // Pipes validates the role on create: the pipe must wait for the policy.
    expect(asList(pipe.DependsOn)).toEqual(expect.arrayContaining(policies.map(([id]) => id)));
  });

  it('alarms when the DLQ holds a message, with the redelivery command in the description', () => {
    // Prepare
    const dlqName = `${names.eventBus}-dlq`;

    // Act
    const alarm = Object.values(resources).find((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties?.AlarmName === `${names.prefix}-EventDlqNotEmpty`);

    // Assess
    expect(alarm?.Properties).toMatchObject({ MetricName: 'ApproximateNumberOfMessagesVisible', Threshold: 1, Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [expect.any(String), 'QueueName'] } }] });
    expect(String(alarm?.Properties?.AlarmDescription)).toContain('affinity events <video> --redeliver');
    const dimension = ((alarm!.Properties!.Dimensions as { Value: { 'Fn::GetAtt': string[] } }[])[0]!.Value['Fn::GetAtt'])[0]!;
    expect(resources[dimension]!.Properties?.QueueName).toBe(dlqName);
    const dashboard = JSON.stringify(Object.values(resources).find((r) => r.Type === 'AWS::CloudWatch::Dashboard')!.Properties!.DashboardBody);
    for (const metric of ['AWS/EventBridge/Pipes', 'EventCount', 'TargetStageFailed', 'ExecutionFailed']) expect(dashboard, metric).toContain(metric);
  });

  it('exports the bus name and ARN and the events table name', () => {
    // Act & Assess
    expect(outputs[STACK_OUTPUT_KEYS.eventBusName]!.Value).toEqual({ Ref: idOf('AWS::Events::EventBus') });
    expect(outputs[STACK_OUTPUT_KEYS.eventBusArn]!.Value).toEqual({ 'Fn::GetAtt': [idOf('AWS::Events::EventBus'), 'Arn'] });
    expect(outputs[STACK_OUTPUT_KEYS.eventsTableName]!.Value).toEqual({ Ref: stack.getLogicalId(stack.tables.events.node.defaultChild as never) });
  });

  it('passes cdk-nag with only the acknowledged ListStreams wildcard', () => {
    // Act
    const report = new AwsSolutionsChecks(app).validateScope(stack.eventDelivery);

    // Assess
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });
});

describe('stack deletion', () => {
  it.each([{ retainData: 'true' }, { retainData: 'false' }])('deletes the bus, pipe, role and DLQ with the stack (retainData=$retainData), the pipe before the table', (context) => {
    // Prepare
    const { resources: r, stack: s } = synth(context);
    const types = ['AWS::Events::EventBus', 'AWS::Pipes::Pipe', 'AWS::IAM::Role', 'AWS::SQS::Queue'];
    const delivery = Object.entries(r).filter(([id, res]) => types.includes(res.Type) && id.startsWith('EventDelivery'));

    // Act
    const retained = delivery.filter(([, res]) => res.DeletionPolicy === 'Retain').map(([id]) => id);
    const pipe = delivery.find(([, res]) => res.Type === 'AWS::Pipes::Pipe')![1];

    // Assess
    expect(delivery.map(([, res]) => res.Type).sort()).toEqual([...types].sort());
    expect(retained).toEqual([]);
    // The pipe names the table's stream: CloudFormation deletes the pipe first, so it never reads a stream being deleted.
    expect(JSON.stringify(pipe.Properties?.Source)).toContain(s.getLogicalId(s.tables.events.node.defaultChild as never));
  });
});
