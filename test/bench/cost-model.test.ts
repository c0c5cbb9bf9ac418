/**
 * The cost model's fixed costs (issue 44): what it counts in a template, and what a month
 * of it costs. Pure: fake resources, no synthesis (bench/cost-model.ts synthesizes the
 * real stack when it runs).
 */
import { describe, expect, it } from 'vitest';
import { PROVISIONED_RATIO, fixedMonthly, gpuPerCameraMonth, stackInventory } from '../../bench/cost-model.ts';

const endpoint = (type: 'Interface' | 'Gateway', subnets: number) => ({ Type: 'AWS::EC2::VPCEndpoint', Properties: { VpcEndpointType: type, ...(type === 'Interface' ? { SubnetIds: Array.from({ length: subnets }, (_, i) => `s${i}`) } : {}) } });
const alarm = (metricStats?: number) => ({ Type: 'AWS::CloudWatch::Alarm', Properties: metricStats === undefined ? { MetricName: 'X' } : { Metrics: [...Array.from({ length: metricStats }, () => ({ MetricStat: {} })), { Expression: 'a+b' }] } });

describe('stackInventory', () => {
  it.each([
    {
      name: 'interface endpoints count once per zone, gateway endpoints not at all',
      resources: { a: endpoint('Interface', 2), b: endpoint('Interface', 2), c: endpoint('Gateway', 0) },
      expected: { interfaceEndpoints: 2, interfaceEndpointAzs: 4 },
    },
    {
      name: 'an alarm is billed per metric it evaluates (metric math: each MetricStat)',
      resources: { a: alarm(), b: alarm(2), c: alarm(0) },
      expected: { alarms: 3, alarmMetrics: 4 },
    },
    {
      name: 'NAT gateways, dashboards, keys, pipes and Container Insights',
      resources: {
        n: { Type: 'AWS::EC2::NatGateway' },
        d: { Type: 'AWS::CloudWatch::Dashboard' },
        k: { Type: 'AWS::KMS::Key' },
        p: { Type: 'AWS::Pipes::Pipe' },
        c: { Type: 'AWS::ECS::Cluster', Properties: { ClusterSettings: [{ Name: 'containerInsights', Value: 'enabled' }] } },
      },
      expected: { natGateways: 1, dashboards: 1, kmsKeys: 1, pipes: 1, containerInsights: true },
    },
    {
      name: 'provisioned tables count with their indexes; on-demand ones not at all (provisionedCapacityUnits)',
      resources: {
        a: { Type: 'AWS::DynamoDB::Table', Properties: { ProvisionedThroughput: { ReadCapacityUnits: 1, WriteCapacityUnits: 1 }, GlobalSecondaryIndexes: [{ IndexName: 'i' }] } },
        b: { Type: 'AWS::DynamoDB::Table', Properties: { ProvisionedThroughput: { ReadCapacityUnits: 1, WriteCapacityUnits: 1 } } },
        c: { Type: 'AWS::DynamoDB::Table', Properties: { BillingMode: 'PAY_PER_REQUEST', GlobalSecondaryIndexes: [{ IndexName: 'j' }] } },
      },
      expected: { provisionedTablesAndIndexes: 3 },
    },
  ])('$name', ({ resources, expected }) => {
    expect(stackInventory(resources as unknown as Parameters<typeof stackInventory>[0])).toMatchObject(expected);
  });
});

describe('fixedMonthly', () => {
  const none = { interfaceEndpointAzs: 0, interfaceEndpoints: 0, natGateways: 0, alarmMetrics: 0, alarms: 0, dashboards: 0, kmsKeys: 0, pipes: 0, containerInsights: false, provisionedTablesAndIndexes: 0 };

  it('prices 7 interface endpoints in 2 zones at $0.01 an AZ-hour over 730 hours', () => {
    expect(fixedMonthly({ ...none, interfaceEndpoints: 7, interfaceEndpointAzs: 14 }).idle.interfaceEndpoints).toBe(102.2);
  });

  it('prices a NAT gateway at $0.045 an hour, and a pipe\'s stream polling beyond the free 2.5 million reads', () => {
    const f = fixedMonthly({ ...none, natGateways: 1, pipes: 1 });
    expect(f.idle.natGateways).toBe(32.85);
    // 4 GetRecords a second for 730 hours = 10.5 million; 8.0 million beyond the free tier at $0.02 per 100,000.
    expect(f.idle.pipeStreamPolling).toBeCloseTo(1.6, 1);
  });

  it('adds Container Insights only when the cluster has it, and only while workers run', () => {
    const on = fixedMonthly({ ...none, containerInsights: true });
    const off = fixedMonthly(none);
    expect(on.idleTotal).toBe(off.idleTotal);
    expect(on.runningTotal - off.runningTotal).toBeCloseTo(6, 6);
  });
});

describe('provisioned capacity', () => {
  it('each provisioned table or index keeps 1 write and 1 read unit all month, with no cameras', () => {
    expect(fixedMonthly({ ...none4(), provisionedTablesAndIndexes: 4 }).idle.dynamoDbMinimumCapacity).toBeCloseTo(4 * 730 * (0.00065 + 0.00013), 2);
  });

  it('a unit consumed at 70 % utilisation costs the hourly price over 0.7: about 2.4 times less than on demand for writes', () => {
    expect(PROVISIONED_RATIO.writes * 0.625).toBeCloseTo((0.00065 * 1e6) / 3600 / 0.7, 9);
    expect(1 / PROVISIONED_RATIO.writes).toBeCloseTo(2.42, 2);
  });
});

function none4() {
  return { interfaceEndpointAzs: 0, interfaceEndpoints: 0, natGateways: 0, alarmMetrics: 0, alarms: 0, dashboards: 0, kmsKeys: 0, pipes: 0, containerInsights: false, provisionedTablesAndIndexes: 0 };
}

describe('gpuPerCameraMonth', () => {
  it('is the camera\'s share of a g5.xlarge, and never less than one slot\'s share', () => {
    // 30 fps of 70 frames/s a GPU really does: 0.43 of 730 h at $1.006.
    expect(gpuPerCameraMonth(30, 8)).toBeCloseTo((30 / 70) * 730 * 1.006, 6);
    // 3 fps would be 0.04 of a GPU; a slot holds 8 cameras, so an eighth.
    expect(gpuPerCameraMonth(3, 8)).toBeCloseTo((730 * 1.006) / 8, 6);
  });
});
