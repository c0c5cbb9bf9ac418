/**
 * The monitoring construct: alarms that can reach a person (topic policy, e-mail), a
 * fixed set of alarms whatever the slot count, and a key that follows retainData.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { resourceNames } from '../../core/config.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import { ALARM_IDS, Monitoring, NAT_INSTANCE_ALARM_IDS, alarmName, type MonitoringProps } from '../../infra/monitoring.ts';

const ACCOUNT = '111122223333';
const REGION = 'eu-west-1';
const names = resourceNames('Fa');

/** A stack holding only the monitoring construct, with a fixed account and region (and `natInstances` instances for it to watch). */
function monitoringTemplate(props: Partial<MonitoringProps> = {}, natInstances = 0): Template {
  const stack = new Stack(new App(), 'M', { env: { account: ACCOUNT, region: REGION } });
  if (natInstances > 0) {
    const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 1, natGateways: 0, subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }] });
    const machineImage = ec2.MachineImage.latestAmazonLinux2023({ cpuType: ec2.AmazonLinuxCpuType.ARM_64 });
    const instances = Array.from({ length: natInstances }, (_, i) => new ec2.Instance(stack, `Nat${i + 1}`, { vpc, machineImage, instanceType: new ec2.InstanceType('t4g.nano') }));
    props = { natInstances: instances, ...props };
  }
  const queue = (id: string, name: string) => sqs.Queue.fromQueueArn(stack, id, `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`);
  new Monitoring(stack, 'Monitoring', {
    namespace: names.metricsNamespace,
    dashboardName: 'Fa-dash',
    alarmNamePrefix: names.prefix,
    ingestQueue: queue('Ingest', names.ingestQueue),
    ingestDeadLetterQueue: queue('IngestDlq', names.ingestDlq),
    slotQueueNamePrefix: names.slotQueuePrefix,
    router: lambda.Function.fromFunctionName(stack, 'Router', 'Fa-router'),
    janitor: lambda.Function.fromFunctionName(stack, 'Janitor', 'Fa-janitor'),
    instanceGroupName: 'Fa-gpu',
    eventDelivery: { deadLetterQueue: queue('EventDlq', `${names.eventBus}-dlq`), pipeName: names.eventBus },
    ...props,
  });
  return Template.fromStack(stack);
}

/** A template value with `Fn::Join` and the partition resolved, as CloudFormation would in the aws partition. */
function rendered(value: unknown): string {
  if (typeof value === 'string') return value;
  const v = value as { 'Fn::Join'?: [string, unknown[]]; Ref?: string };
  if (v.Ref === 'AWS::Partition') return 'aws';
  if (v['Fn::Join']) return v['Fn::Join'][1].map(rendered).join(v['Fn::Join'][0]);
  throw new Error(`cannot render ${JSON.stringify(value)}`);
}

type Statement = { Effect: string; Principal?: { Service?: string }; Action: string | string[]; Condition?: Record<string, Record<string, unknown>> };

const outdirs: string[] = [];
afterAll(() => {
  for (const d of outdirs) rmSync(d, { recursive: true, force: true });
});

/** The whole app, without bundling the Lambdas (not needed to count alarms). */
function appTemplate(slotCount: number): Template {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-mon-'));
  outdirs.push(outdir);
  const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), slotCount, 'aws:cdk:bundling-stacks': [] } }));
  return Template.fromStack(stack);
}

describe('alarm topic', () => {
  it('lets CloudWatch publish for this account\'s alarms named with the prefix, and still denies non-TLS requests', () => {
    // Act
    const template = monitoringTemplate();
    const policies = Object.values(template.findResources('AWS::SNS::TopicPolicy'));
    const statements = policies.flatMap((p) => (p.Properties.PolicyDocument.Statement as Statement[]));

    // Assess: exactly one policy on the topic, with the Allow for CloudWatch (and one for
    // EventBridge, limited to the launch-failure rule: test/infra/hardening.test.ts)...
    expect(policies).toHaveLength(1);
    const allow = statements.filter((s) => s.Effect === 'Allow');
    expect(allow.map((s) => s.Principal?.Service)).toEqual(['cloudwatch.amazonaws.com', 'events.amazonaws.com']);
    expect(allow[0]).toMatchObject({
      Principal: { Service: 'cloudwatch.amazonaws.com' },
      Action: 'sns:Publish',
      Condition: {
        StringEquals: { 'aws:SourceAccount': ACCOUNT },
        ArnLike: { 'aws:SourceArn': expect.anything() },
      },
    });
    expect(rendered(allow[0]!.Condition!.ArnLike!['aws:SourceArn'])).toBe(`arn:aws:cloudwatch:${REGION}:${ACCOUNT}:alarm:${names.prefix}-*`);
    // ... and the enforce-SSL Deny kept
    expect(statements).toContainEqual(expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }));
  });

  it('names every alarm so that the topic policy\'s source pattern covers it', () => {
    // Act
    const alarms = Object.values(monitoringTemplate().findResources('AWS::CloudWatch::Alarm'));

    // Assess
    expect(alarms.map((a) => a.Properties.AlarmName).sort()).toEqual(ALARM_IDS.map((id) => `${names.prefix}-${id}`).sort());
  });

  it('subscribes the alarm e-mail address when one is given, and nothing otherwise', () => {
    // Act
    const withEmail = monitoringTemplate({ alarmEmail: 'ops@example.com' });
    const without = monitoringTemplate();

    // Assess
    withEmail.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com', TopicArn: Match.anyValue() });
    without.resourceCountIs('AWS::SNS::Subscription', 0);
  });

  it('wires the e-mail from -c alarmEmail through the stack', () => {
    // Act
    const outdir = mkdtempSync(join(tmpdir(), 'fa-mon-'));
    outdirs.push(outdir);
    const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), alarmEmail: 'oncall@example.org', 'aws:cdk:bundling-stacks': [] } }));

    // Assess
    Template.fromStack(stack).hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.org' });
  });
});

describe('alarm key', () => {
  it('is retained by default and scheduled for deletion with the stack when data is not retained', () => {
    // Act
    const retained = monitoringTemplate().findResources('AWS::KMS::Key');
    const destroyed = monitoringTemplate({ removalPolicy: RemovalPolicy.DESTROY }).findResources('AWS::KMS::Key');

    // Assess
    expect(Object.values(retained).map((k) => k.DeletionPolicy)).toEqual(['Retain']);
    expect(Object.values(destroyed).map((k) => [k.DeletionPolicy, k.Properties.PendingWindowInDays])).toEqual([['Delete', 7]]);
  });

  it('follows retainData in the deployed stack', () => {
    // Act
    const outdir = mkdtempSync(join(tmpdir(), 'fa-mon-'));
    outdirs.push(outdir);
    const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), retainData: false, 'aws:cdk:bundling-stacks': [] } }));

    // Assess
    expect(Object.values(Template.fromStack(stack).findResources('AWS::KMS::Key')).map((k) => k.DeletionPolicy)).toEqual(['Delete']);
  });
});

describe('alarms', () => {
  it('alarm on fleet-wide series: the ingest DLQ, the janitor\'s slot DLQ and no-owner gauges, the workers\' slot queue age', () => {
    // Act
    const alarms = Object.values(monitoringTemplate().findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);
    const byName = new Map(alarms.map((a) => [String(a.AlarmName).slice(names.prefix.length + 1), a]));

    // Assess
    expect(byName.get('IngestDlqNotEmpty')).toMatchObject({ Namespace: 'AWS/SQS', Dimensions: [{ Name: 'QueueName', Value: names.ingestDlq }], Threshold: 1 });
    expect(byName.get('SlotDlqNotEmpty')).toMatchObject({ MetricName: METRIC_NAMES.janitor.slotDlqMessages, Dimensions: [{ Name: 'service', Value: 'janitor' }], Threshold: 1 });
    expect(byName.get('SlotQueueAgeHigh')).toMatchObject({ MetricName: METRIC_NAMES.worker.slotMessageAgeMs, Dimensions: [{ Name: 'service', Value: 'worker' }], Statistic: 'Maximum', Threshold: 300_000 });
    expect(byName.get('SlotWithWorkNoOwner')).toMatchObject({ MetricName: METRIC_NAMES.janitor.slotsWithWorkNoOwner, EvaluationPeriods: 3 });
    // No alarm reads a single slot queue
    for (const a of alarms) expect(JSON.stringify(a)).not.toContain(names.slotQueuePrefix);
  });

  it('sums the router\'s and the janitor\'s counters for task start timeouts (launch failures: test/infra/hardening.test.ts)', () => {
    // Act
    const alarms = Object.values(monitoringTemplate().findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);

    // Assess
    for (const [id, metric] of [['TaskStartTimedOut', METRIC_NAMES.router.taskStartTimeouts]] as const) {
      const alarm = alarms.find((a) => a.AlarmName === `${names.prefix}-${id}`)!;
      const stats = (alarm.Metrics as { MetricStat?: { Metric: { MetricName: string; Dimensions: { Value: string }[] } } }[])
        .filter((q) => q.MetricStat)
        .map((q) => `${q.MetricStat!.Metric.Dimensions[0]!.Value}:${q.MetricStat!.Metric.MetricName}`);
      expect(stats.sort()).toEqual([`janitor:${metric}`, `router:${metric}`]);
      expect(alarm).toMatchObject({ Threshold: 1, TreatMissingData: 'notBreaching' });
    }
  });

  it('notify the topic on alarm and on recovery', () => {
    // Act
    const template = monitoringTemplate();
    const topic = Object.keys(template.findResources('AWS::SNS::Topic'))[0]!;
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);

    // Assess
    for (const a of alarms) {
      expect(a.AlarmActions, a.AlarmName).toEqual([{ Ref: topic }]);
      expect(a.OKActions, a.AlarmName).toEqual([{ Ref: topic }]);
    }
  });

  it('give each NAT instance its pair of status-check alarms, numbered from 1 on its own instance, acting on it and notifying the topic', () => {
    // Act
    const template = monitoringTemplate({}, 2);
    const topic = Object.keys(template.findResources('AWS::SNS::Topic'))[0]!;
    const instances = Object.keys(template.findResources('AWS::EC2::Instance'));
    const natAlarmsById = Object.entries(template.findResources('AWS::CloudWatch::Alarm')).filter(([, a]) => a.Properties.Namespace === 'AWS/EC2');
    const natAlarms = natAlarmsById.map(([, a]) => a.Properties);
    const dashboard = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]!.Properties.DashboardBody);

    // Assess
    expect(instances).toHaveLength(2);
    const expected = [1, 2].flatMap((n) => NAT_INSTANCE_ALARM_IDS.map((id) => ({ name: alarmName(names.prefix, id, n), instance: instances[n - 1] })));
    expect(natAlarms.map((a) => ({ name: a.AlarmName, instance: a.Dimensions[0].Value.Ref })).sort((x, y) => x.name.localeCompare(y.name))).toEqual(expected.sort((x, y) => x.name.localeCompare(y.name)));
    for (const a of natAlarms) {
      const ec2Actions = (a.AlarmActions as unknown[]).filter((x) => JSON.stringify(x).includes(':ec2:'));
      expect(JSON.stringify(ec2Actions), a.AlarmName).toContain(a.MetricName === 'StatusCheckFailed_System' ? ':ec2:recover' : ':ec2:reboot');
      expect(a.AlarmActions, a.AlarmName).toEqual([ec2Actions[0], { Ref: topic }]);
      expect(a.OKActions, a.AlarmName).toEqual([{ Ref: topic }]);
    }
    // On the dashboard's alarm status widget with the others
    for (const [id] of natAlarmsById) expect(dashboard).toContain(`"${id}"`);
    expect(natAlarms).toHaveLength(2 * NAT_INSTANCE_ALARM_IDS.length);
  });

  it('do not grow with the slot count, and neither does the dashboard', () => {
    // Act
    const small = appTemplate(4);
    const large = appTemplate(300);
    const dashboard = (t: Template) => JSON.stringify(Object.values(t.findResources('AWS::CloudWatch::Dashboard'))[0]!.Properties.DashboardBody);

    // Assess
    expect(Object.keys(small.findResources('AWS::CloudWatch::Alarm'))).toHaveLength(ALARM_IDS.length);
    expect(Object.keys(large.findResources('AWS::CloudWatch::Alarm'))).toHaveLength(ALARM_IDS.length);
    expect(dashboard(large)).toEqual(dashboard(small));
    expect(dashboard(large)).toContain('ApproximateAgeOfOldestMessage\\\\\\" AND QueueName=FrameAffinity AND QueueName=slot AND NOT QueueName=dlq');
    expect(dashboard(large)).toContain('ApproximateNumberOfMessagesVisible\\\\\\" AND QueueName=FrameAffinity AND QueueName=slot AND QueueName=dlq');
  });
});
