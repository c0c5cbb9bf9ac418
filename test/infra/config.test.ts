import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_TUNABLES } from '../../core/config.ts';
import {
  DEFAULT_STACK_CONFIG,
  janitorRateMinutes,
  routerTimeoutSeconds,
  stackConfigFromContext,
} from '../../infra/config.ts';

const contextOf = (values: Record<string, unknown>) => (key: string) => values[key];

describe('stackConfigFromContext', () => {
  it('returns the documented defaults when the context is empty', () => {
    // Act
    const config = stackConfigFromContext(contextOf({}));

    // Assess
    expect(config).toEqual(DEFAULT_STACK_CONFIG);
    expect(config.slotCount).toBe(DEFAULT_TUNABLES.slotCount);
    expect(config.instanceType).toBe('g5.xlarge');
  });

  it('parses -c strings into numbers, booleans and strings', () => {
    // Act
    const config = stackConfigFromContext(
      contextOf({ slotCount: '8', retainData: 'false', instanceType: 'g6.2xlarge', modelUri: 's3://models/yolo.onnx' }),
    );

    // Assess
    expect(config.slotCount).toBe(8);
    expect(config.retainData).toBe(false);
    expect(config.instanceType).toBe('g6.2xlarge');
    expect(config.modelUri).toBe('s3://models/yolo.onnx');
  });

  it('rejects a non-GPU instance type and a bad tunable together, naming both', () => {
    // Act
    const act = () => stackConfigFromContext(contextOf({ instanceType: 'm5.large', heartbeatIntervalSeconds: 10 }));

    // Assess
    expect(act).toThrow(ConfigError);
    expect(act).toThrow(/instanceType must be an NVIDIA GPU instance type/);
    expect(act).toThrow(/heartbeatIntervalSeconds \(10\) must be at most half/);
  });

  it('rejects a number that does not parse and a log retention CloudWatch does not offer', () => {
    // Act & Assess
    expect(() => stackConfigFromContext(contextOf({ slotCount: 'four' }))).toThrow(/slotCount must be a number/);
    expect(() => stackConfigFromContext(contextOf({ logRetentionDays: 10 }))).toThrow(/logRetentionDays must be one of/);
    expect(() => stackConfigFromContext(contextOf({ natGateways: 3, maxAzs: 2 }))).toThrow(/natGateways \(3\) cannot exceed maxAzs/);
  });
});

describe('scale limits', () => {
  it('accepts up to 1,000 slots and a batching window of 0..300 s, and names what is out of range', () => {
    // Act & Assess
    expect(stackConfigFromContext(contextOf({ slotCount: '1000', routerBatchWindowSeconds: '0' }))).toMatchObject({ slotCount: 1000, routerBatchWindowSeconds: 0 });
    // A 300 s window needs a visibility timeout that holds it and the router timeout (decision 33).
    expect(stackConfigFromContext(contextOf({ routerBatchWindowSeconds: '300', ingestVisibilitySeconds: '360' })).routerBatchWindowSeconds).toBe(300);
    expect(() => stackConfigFromContext(contextOf({ routerBatchWindowSeconds: '300' }))).toThrow(/would be delivered twice/);
    expect(() => stackConfigFromContext(contextOf({ slotCount: '1001' }))).toThrow(/slotCount must be an integer between 1 and 1000 \(got 1001\)/);
    expect(() => stackConfigFromContext(contextOf({ routerBatchWindowSeconds: '-1' }))).toThrow(/routerBatchWindowSeconds must be an integer between 0 and 300/);
    expect(() => stackConfigFromContext(contextOf({ routerBatchWindowSeconds: '1.5' }))).toThrow(/routerBatchWindowSeconds/);
  });
});

describe('issue 23 settings', () => {
  const digest = `sha256:${'0f'.repeat(32)}`;

  it.each([
    { key: 'workerImage', value: `123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/worker@${digest}`, ok: true },
    { key: 'workerImage', value: `123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/worker@${digest}`, ok: true },
    { key: 'workerImage', value: '123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/worker:latest', ok: false },
    { key: 'workerImage', value: `docker.io/library/worker@${digest}`, ok: false },
    { key: 'instanceTypes', value: 'g5.xlarge, g6.xlarge,g4dn.xlarge', ok: true },
    { key: 'instanceTypes', value: 'g5.xlarge,m5.xlarge', ok: false },
    { key: 'instanceTypes', value: 'g5.xlarge,g5.xlarge', ok: false },
    { key: 'availabilityZones', value: 'us-east-1a,us-east-1c', ok: true },
    { key: 'availabilityZones', value: 'us-west-2-lax-1a', ok: true },
    { key: 'availabilityZones', value: 'us-east-1', ok: false },
    { key: 'modelWriterRoleArn', value: 'arn:aws:iam::123456789012:role/ci/model-publisher', ok: true },
    { key: 'modelWriterRoleArn', value: 'arn:aws:iam::123456789012:user/alice', ok: false },
    { key: 'workloadSubnetMask', value: '29', ok: false },
    { key: 'workloadSubnetMask', value: '15', ok: false },
    { key: 'workloadSubnetMask', value: '22', ok: true },
    { key: 'availabilityZones', value: 'us-east-1a,us-east-1a', ok: false },
    { key: 'janitorReservedConcurrency', value: '-1', ok: false },
  ])('$key=$value -> valid: $ok', ({ key, value, ok }) => {
    // Act
    const act = () => stackConfigFromContext(contextOf({ [key]: value }));

    // Assess
    if (ok) expect(act()).toHaveProperty(key);
    else expect(act).toThrow(new RegExp(`${key} must`));
  });

  it('takes modelSha256 only as 64 hex digits and only with a modelUri', () => {
    // Act & Assess
    expect(stackConfigFromContext(contextOf({ modelUri: 's3://b/m.onnx', modelSha256: 'ab'.repeat(32) })).modelSha256).toBe('ab'.repeat(32));
    expect(() => stackConfigFromContext(contextOf({ modelUri: 's3://b/m.onnx', modelSha256: 'xyz' }))).toThrow(/modelSha256 must be 64 lowercase hex digits/);
    expect(() => stackConfigFromContext(contextOf({ modelSha256: 'ab'.repeat(32) }))).toThrow(/modelSha256 pins the model named by modelUri: set modelUri too/);
  });

  it('takes natInstanceType only as a small instance type and only with natGateways (how many NAT instances), and the lean flags as booleans (decision 79)', () => {
    expect(stackConfigFromContext(contextOf({ natGateways: '1', natInstanceType: 't4g.nano', pointInTimeRecovery: 'false', containerInsights: 'false' }))).toMatchObject({ natInstanceType: 't4g.nano', pointInTimeRecovery: false, containerInsights: false });
    expect(() => stackConfigFromContext(contextOf({ natInstanceType: 't4g.nano' }))).toThrow(/natInstanceType \(t4g\.nano\) replaces NAT gateways by NAT instances: set natGateways=1 or more/);
    expect(() => stackConfigFromContext(contextOf({ natGateways: '1', natInstanceType: 'm5.large' }))).toThrow(/natInstanceType must be a burstable or network-optimised instance type/);
    expect(() => stackConfigFromContext(contextOf({ pointInTimeRecovery: 'off' }))).toThrow(/pointInTimeRecovery must be true or false/);
  });

  it('checks natGateways against the listed availability zones', () => {
    expect(() => stackConfigFromContext(contextOf({ availabilityZones: 'us-east-1a', natGateways: 2 }))).toThrow(/natGateways \(2\) cannot exceed the 1 availabilityZones/);
  });
});

describe('derived settings', () => {
  it('rounds the janitor interval up to whole minutes, at least one', () => {
    // Act & Assess
    expect(janitorRateMinutes({ janitorIntervalSeconds: 20 })).toBe(1);
    expect(janitorRateMinutes({ janitorIntervalSeconds: 60 })).toBe(1);
    expect(janitorRateMinutes({ janitorIntervalSeconds: 90 })).toBe(2);
  });

  it('keeps the router timeout at a sixth of the ingest visibility timeout, within Lambda limits', () => {
    // Act & Assess
    expect(routerTimeoutSeconds({ ingestVisibilitySeconds: 180 })).toBe(30);
    expect(routerTimeoutSeconds({ ingestVisibilitySeconds: 30 })).toBe(10);
    expect(routerTimeoutSeconds({ ingestVisibilitySeconds: 43_200 })).toBe(900);
  });
});

describe('resultsRetentionDays (docs/decisions.md 55)', () => {
  // frameRetentionDays defaults to 30: a frame's object must leave S3 before its record may.
  it.each([
    ['the default: never expire', {}, 0],
    ['0: never expire', { resultsRetentionDays: '0' }, 0],
    ['longer than the frames', { resultsRetentionDays: '31' }, 31],
    ['a year, frames kept 7 days', { resultsRetentionDays: '365', frameRetentionDays: '7' }, 365],
  ])('accepts %s', (_name, context, days) => {
    expect(stackConfigFromContext(contextOf(context)).resultsRetentionDays).toBe(days);
  });

  it.each([
    ['as long as the frames', { resultsRetentionDays: '30' }, /resultsRetentionDays \(30\) must be 0 \(never expire\) or more than frameRetentionDays \(30\)/],
    ['shorter than the frames', { resultsRetentionDays: '7', frameRetentionDays: '14' }, /resultsRetentionDays \(7\) must be 0 .* more than frameRetentionDays \(14\)/],
    ['negative', { resultsRetentionDays: '-1' }, /resultsRetentionDays must be 0 \(never expire\) or an integer between 1 and 36500 \(got -1\)/],
  ])('refuses %s', (_name, context, message) => {
    expect(() => stackConfigFromContext(contextOf(context))).toThrow(message);
  });
});
