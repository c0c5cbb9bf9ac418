/**
 * The cost model's fixed costs (issue 44): what it counts in a template, and what a month
 * of it costs. Pure: fake resources, no synthesis (bench/cost-model.ts synthesizes the
 * real stack when it runs).
 */
import { describe, expect, it } from 'vitest';
import { ASSUMPTIONS, PROVISIONED_RATIO, fixedMonthly as fixedMonthlyOf, gpuPerCameraMonth, metricSeriesBill, stackInventory, storageTerms, type StackInventory } from '../../bench/cost-model.ts';
import { SAMPLED_METRICS } from '../../gpu-worker/runtime/gpu-sampler.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';

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

describe('stackInventory: the lean profile\'s resources (decision 79)', () => {
  const table = (pitr: boolean) => ({ Type: 'AWS::DynamoDB::Table', Properties: { BillingMode: 'PAY_PER_REQUEST', PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: pitr } } });
  const bucket = (status: string | undefined, noncurrentDays?: number) => ({
    Type: 'AWS::S3::Bucket',
    Properties: {
      ...(status ? { VersioningConfiguration: { Status: status } } : {}),
      LifecycleConfiguration: { Rules: [{ Id: 'expire-frames', Prefix: 'frames/', ExpirationInDays: 7, Status: 'Enabled', ...(noncurrentDays ? { NoncurrentVersionExpiration: { NoncurrentDays: noncurrentDays } } : {}) }, { Id: 'models', Prefix: 'models/', Status: 'Enabled' }] },
    },
  });
  const logs = { Type: 'AWS::S3::Bucket', Properties: { LifecycleConfiguration: { Rules: [{ ExpirationInDays: 90, Status: 'Enabled' }] } } };

  it.each([
    {
      name: 'a NAT instance (source/destination check off) counts with its type, root volume and public address; an instance that forwards nothing does not',
      resources: {
        nat: { Type: 'AWS::EC2::Instance', Properties: { InstanceType: 't4g.nano', SourceDestCheck: false, BlockDeviceMappings: [{ DeviceName: '/dev/xvda', Ebs: { VolumeSize: 8 } }], NetworkInterfaces: [{ AssociatePublicIpAddress: true, DeviceIndex: '0' }] } },
        other: { Type: 'AWS::EC2::Instance', Properties: { InstanceType: 't3.micro' } },
      },
      expected: { natInstanceTypes: ['t4g.nano'], natInstanceVolumeGb: 8, publicIpv4Addresses: 1, natGateways: 0 },
    },
    {
      name: 'a NAT gateway\'s Elastic IP is a public IPv4 address too',
      resources: { n: { Type: 'AWS::EC2::NatGateway' }, e: { Type: 'AWS::EC2::EIP' } },
      expected: { natGateways: 1, publicIpv4Addresses: 1, natInstanceTypes: [] },
    },
    {
      name: 'PITR per table; the results table (logical id TablesResults...) decides the per-camera line',
      resources: { TablesLeasesA: table(true), TablesResultsB: table(false), TablesEventsC: table(true) },
      expected: { tables: 3, tablesWithPitr: 2, resultsTablePitr: false },
    },
    {
      name: 'the frame bucket is the one whose lifecycle expires frames/: versioned, and its non-current days',
      resources: { logs, frames: bucket('Enabled', 1) },
      expected: { frameBucket: { versioned: true, noncurrentDays: 1 } },
    },
    {
      name: 'an unversioned frame bucket (no VersioningConfiguration, or Suspended)',
      resources: { logs, frames: bucket('Suspended') },
      expected: { frameBucket: { versioned: false } },
    },
    {
      name: 'an unversioned frame bucket whose rule names frames/ in a Filter',
      resources: { logs, frames: { Type: 'AWS::S3::Bucket', Properties: { LifecycleConfiguration: { Rules: [{ Filter: { Prefix: 'frames/' }, ExpirationInDays: 7, Status: 'Enabled' }] } } } },
      expected: { frameBucket: { versioned: false } },
    },
  ])('$name', ({ resources, expected }) => {
    expect(stackInventory(resources as unknown as Parameters<typeof stackInventory>[0])).toMatchObject(expected);
  });
});

describe('storageTerms', () => {
  const inv = (frameBucket: { versioned: boolean; noncurrentDays?: number } | undefined, resultsTablePitr = true) => ({ ...stackInventory({}), resultsTablePitr, ...(frameBucket ? { frameBucket } : {}) });

  it('bills an expired frame half a day past its retention in any bucket (expiry rounds to the next UTC midnight), and a versioned bucket\'s non-current days plus another half day', () => {
    expect(ASSUMPTIONS.frameExpiryRoundingDays).toBe(0.5);
    expect(storageTerms(inv({ versioned: false })).framesAfterExpiryDays).toBe(0.5);
    expect(storageTerms(inv({ versioned: true, noncurrentDays: 1 })).framesAfterExpiryDays).toBe(2);
    expect(storageTerms(inv({ versioned: true, noncurrentDays: 3 })).framesAfterExpiryDays).toBe(4);
  });

  it('prices PITR on the results only when the results table has it', () => {
    expect(storageTerms(inv({ versioned: false }, true)).resultsPitr).toBe(true);
    expect(storageTerms(inv({ versioned: false }, false)).resultsPitr).toBe(false);
  });

  it('refuses a template without a frame bucket, or one that keeps non-current frames for ever, instead of guessing', () => {
    expect(() => storageTerms(inv(undefined))).toThrow(/no frame bucket/);
    expect(() => storageTerms(inv({ versioned: true }))).toThrow(/keeps non-current frames for ever/);
  });
});

/** A steady scene's series as bench/api-calls-live.ts records them (its run of decision 83, abridged). */
const MEASURED = {
  worker: ['FrameAffinity/CheckpointBytes{service=worker}', 'FrameAffinity/FramesProcessed{service=worker}', 'FrameAffinity/SegmentsDescribed{service=worker,Source=declared}'],
  router: ['FrameAffinity/FramesRouted{service=router}'],
  janitor: ['FrameAffinity/LiveSlots{service=janitor}', 'FrameAffinity/PinnedVideos{service=janitor}'],
};
const SERIES = metricSeriesBill([MEASURED]);
const fixedMonthly = (inv: StackInventory) => fixedMonthlyOf(inv, SERIES);

describe('metricSeriesBill', () => {
  it("bills the measured router and worker series while the fleet runs, plus the GPU sampler's and the hourly fault metrics; the janitor's always", () => {
    expect(SERIES.whileRunning.measured).toHaveLength(4);
    expect(SERIES.whileRunning.sampled).toEqual([...SAMPLED_METRICS]);
    expect(SERIES.whileRunning.faults).toEqual([...ASSUMPTIONS.faultMetricsEveryHour]);
    expect(SERIES.whileRunning.total).toBe(4 + SAMPLED_METRICS.length + ASSUMPTIONS.faultMetricsEveryHour.length);
    expect(SERIES.always).toEqual({ measured: MEASURED.janitor, total: 2 });
  });

  it('counts a series once across runs, and a sampler or fault metric once when measured already', () => {
    const gap = `FrameAffinity/${METRIC_NAMES.worker.framesGap}{service=worker}`;
    const decoder = `FrameAffinity/${METRIC_NAMES.worker.segmentDecoderInUse}{service=worker,Decoder=nvdec}`;
    const bill = metricSeriesBill([MEASURED, { ...MEASURED, worker: [...MEASURED.worker, gap, decoder] }]);
    expect(bill.whileRunning.measured).toHaveLength(6);
    expect(bill.whileRunning.sampled).not.toContain(METRIC_NAMES.worker.segmentDecoderInUse);
    expect(bill.whileRunning.faults).not.toContain(METRIC_NAMES.worker.framesGap);
    expect(bill.whileRunning.total).toBe(SERIES.whileRunning.total);
  });

  it('refuses a live run without series (one from before decision 83), naming the command that measures them', () => {
    expect(() => metricSeriesBill([{}])).toThrow(/no metric series.*bench\/api-calls-live\.ts --processor scene/);
  });

  it('prices each series at $0.30 a month', () => {
    const f = fixedMonthlyOf(stackInventory({}), SERIES);
    expect(f.idle.janitorMetrics).toBeCloseTo(0.6, 6);
    expect(f.running.customMetrics).toBeCloseTo(0.3 * SERIES.whileRunning.total, 6);
  });
});

describe('fixedMonthly', () => {
  const none = { interfaceEndpointAzs: 0, interfaceEndpoints: 0, natGateways: 0, alarmMetrics: 0, alarms: 0, dashboards: 0, kmsKeys: 0, pipes: 0, containerInsights: false, provisionedTablesAndIndexes: 0, natInstanceTypes: [] as string[], natInstanceVolumeGb: 0, publicIpv4Addresses: 0, tables: 0, tablesWithPitr: 0, resultsTablePitr: false };

  it('prices 7 interface endpoints in 2 zones at $0.01 an AZ-hour over 730 hours', () => {
    expect(fixedMonthly({ ...none, interfaceEndpoints: 7, interfaceEndpointAzs: 14 }).idle.interfaceEndpoints).toBe(102.2);
  });

  it('prices a NAT gateway at $0.045 an hour, and a pipe\'s stream polling beyond the free 2.5 million reads', () => {
    const f = fixedMonthly({ ...none, natGateways: 1, pipes: 1 });
    expect(f.idle.natGateways).toBe(32.85);
    // 4 GetRecords a second for 730 hours = 10.5 million; 8.0 million beyond the free tier at $0.02 per 100,000.
    expect(f.idle.pipeStreamPolling).toBeCloseTo(1.6, 1);
  });

  it('prices a t4g.nano NAT instance at $0.0042 an hour, its 8 GiB gp3 volume and its public IPv4 address at $0.005 an hour', () => {
    const f = fixedMonthly({ ...none, natInstanceTypes: ['t4g.nano'], natInstanceVolumeGb: 8, publicIpv4Addresses: 1 });
    expect(f.idle.natInstances).toBe(3.07);
    expect(f.idle.natInstanceVolumes).toBe(0.64);
    expect(f.idle.publicIpv4).toBe(3.65);
    expect(f.idle.natGateways).toBe(0);
    expect(f.idleTotal).toBeCloseTo(3.07 + 0.64 + 3.65 + f.idle.janitorMetrics! + f.idle.ecrImage!, 2);
  });

  it('refuses a NAT instance type it has no price for, naming where to add it', () => {
    expect(() => fixedMonthly({ ...none, natInstanceTypes: ['c7gn.medium'] })).toThrow(/no price for the NAT instance type c7gn\.medium: add it to PRICES\.ec2InstanceHour/);
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
  return { interfaceEndpointAzs: 0, interfaceEndpoints: 0, natGateways: 0, alarmMetrics: 0, alarms: 0, dashboards: 0, kmsKeys: 0, pipes: 0, containerInsights: false, provisionedTablesAndIndexes: 0, natInstanceTypes: [] as string[], natInstanceVolumeGb: 0, publicIpv4Addresses: 0, tables: 0, tablesWithPitr: 0, resultsTablePitr: false };
}

describe('gpuPerCameraMonth', () => {
  it('is the camera\'s share of a g5.xlarge, and never less than one slot\'s share', () => {
    // 30 fps of 70 frames/s a GPU really does: 0.43 of 730 h at $1.006.
    expect(gpuPerCameraMonth(30, 8)).toBeCloseTo((30 / 70) * 730 * 1.006, 6);
    // 3 fps would be 0.04 of a GPU; a slot holds 8 cameras, so an eighth.
    expect(gpuPerCameraMonth(3, 8)).toBeCloseTo((730 * 1.006) / 8, 6);
  });
});
