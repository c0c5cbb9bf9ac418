/**
 * DynamoDB capacity (issue 44, `provisionedCapacityUnits`): on demand by default; with N,
 * every table and index provisioned and auto scaled, reads and writes, between 1 and N
 * units at 70 % utilisation. The whole stack with the setting still passes cdk-nag.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { PROVISIONED_TARGET_UTILIZATION_PERCENT, StateTables } from '../../infra/tables.ts';
import { stackConfigFromContext } from '../../infra/config.ts';
import { removeSynthOutdirs, synth } from '../support/stack-synth.ts';

afterAll(removeSynthOutdirs);

function tables(units?: number): Template {
  const stack = new Stack(new App(), 'T');
  new StateTables(stack, 'Tables', units === undefined ? {} : { provisionedCapacityUnits: units });
  return Template.fromStack(stack);
}

describe('table capacity', () => {
  it('on demand by default: no capacity, nothing scaled', () => {
    const t = tables();
    expect(Object.values(t.findResources('AWS::DynamoDB::Table')).map((r) => r.Properties.BillingMode)).toEqual(['PAY_PER_REQUEST', 'PAY_PER_REQUEST', 'PAY_PER_REQUEST']);
    t.resourceCountIs('AWS::ApplicationAutoScaling::ScalableTarget', 0);
  });

  it('with N units: every table and the pinned-slot index provisioned, reads and writes scaled between 1 and N at 70 %', () => {
    const t = tables(500);
    const all = Object.values(t.findResources('AWS::DynamoDB::Table'));
    expect(all.map((r) => r.Properties.BillingMode ?? 'PROVISIONED')).toEqual(['PROVISIONED', 'PROVISIONED', 'PROVISIONED']);
    for (const r of all) expect(r.Properties.ProvisionedThroughput).toEqual({ ReadCapacityUnits: 1, WriteCapacityUnits: 1 });
    const gsi = all.flatMap((r) => (r.Properties.GlobalSecondaryIndexes ?? []) as { ProvisionedThroughput: unknown }[]);
    expect(gsi.map((g) => g.ProvisionedThroughput)).toEqual([{ ReadCapacityUnits: 1, WriteCapacityUnits: 1 }]);
    const targets = Object.values(t.findResources('AWS::ApplicationAutoScaling::ScalableTarget')).map((r) => r.Properties);
    // 3 tables and 1 index, reads and writes each.
    expect(targets).toHaveLength(8);
    for (const p of targets) expect(p).toMatchObject({ MinCapacity: 1, MaxCapacity: 500, ServiceNamespace: 'dynamodb' });
    expect(targets.filter((p) => String(p.ScalableDimension).startsWith('dynamodb:index:'))).toHaveLength(2);
    const policies = Object.values(t.findResources('AWS::ApplicationAutoScaling::ScalingPolicy')).map((r) => r.Properties.TargetTrackingScalingPolicyConfiguration);
    expect(policies).toHaveLength(8);
    for (const c of policies) expect(c.TargetValue).toBe(PROVISIONED_TARGET_UTILIZATION_PERCENT);
    expect(new Set(policies.map((c) => c.PredefinedMetricSpecification.PredefinedMetricType))).toEqual(new Set(['DynamoDBReadCapacityUtilization', 'DynamoDBWriteCapacityUtilization']));
  });

  it('the setting: 0 is on demand, anything else 1..40000; the stack with it passes cdk-nag', () => {
    const config = (context: Record<string, unknown>) => stackConfigFromContext((k) => context[k]);
    expect(config({}).provisionedCapacityUnits).toBe(0);
    expect(config({ provisionedCapacityUnits: '500' }).provisionedCapacityUnits).toBe(500);
    expect(() => config({ provisionedCapacityUnits: '50000' })).toThrow(/provisionedCapacityUnits/);
    const { app, template } = synth({ provisionedCapacityUnits: '800', 'aws:cdk:bundling-stacks': [] });
    template.resourceCountIs('AWS::ApplicationAutoScaling::ScalableTarget', 8);
    const report = new AwsSolutionsChecks(app).validateScope(app);
    expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`)).toEqual([]);
  });
});
