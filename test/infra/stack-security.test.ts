/**
 * The CDK stack (infra/stack.ts), synthesized once for this file: its network (isolated
 * subnets, endpoints, optional NAT) and least privilege (no wildcard actions, cdk-nag with
 * and without an explicit environment). The resources themselves are in stack.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { allStatements, asList, removeSynthOutdirs, synth, synthDefault, type Resources } from '../support/stack-synth.ts';

let app: App;
let template: Template;
let resources: Resources;

beforeAll(() => {
  // One real synthesis (with esbuild bundling of both Lambdas) shared by the tests.
  ({ app, template, resources } = synthDefault());
});

afterAll(removeSynthOutdirs);

describe('network', () => {
  it('uses isolated subnets with S3 and DynamoDB gateway endpoints and the interface endpoints the fleet needs', () => {
    // Prepare
    const endpoints = Object.values(template.findResources('AWS::EC2::VPCEndpoint')).map((r) => JSON.stringify(r.Properties?.ServiceName));

    // Act
    const has = (service: string) => endpoints.some((e) => e.includes(`.${service}"`));

    // Assess
    template.resourceCountIs('AWS::EC2::NatGateway', 0);
    for (const service of ['s3', 'dynamodb', 'ecs', 'ecs-agent', 'ecs-telemetry', 'ecr.api', 'ecr.dkr', 'logs', 'sqs']) {
      expect(has(service), service).toBe(true);
    }
    template.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'REJECT' });
  });

  it('adds a NAT gateway when natGateways is set', () => {
    // Act
    const { template: withNat } = synth({ natGateways: 1, 'aws:cdk:bundling-stacks': [] });

    // Assess
    withNat.resourceCountIs('AWS::EC2::NatGateway', 1);
  });

  it('small-fleet profile (interfaceEndpoints=false, natGateways=1): no interface endpoints, the free S3 and DynamoDB gateways kept, HTTPS egress through the NAT (issue 44)', () => {
    // Act
    const { template: small } = synth({ natGateways: 1, interfaceEndpoints: false, 'aws:cdk:bundling-stacks': [] });
    const endpoints = Object.values(small.findResources('AWS::EC2::VPCEndpoint')).map((r) => ({ type: r.Properties?.VpcEndpointType, service: JSON.stringify(r.Properties?.ServiceName) }));
    const egress = Object.values(small.findResources('AWS::EC2::SecurityGroup')).flatMap((r) => asList(r.Properties?.SecurityGroupEgress) as { CidrIp?: string; FromPort?: number }[]);

    // Assess
    small.resourceCountIs('AWS::EC2::NatGateway', 1);
    expect(endpoints.filter((e) => e.type === 'Interface')).toEqual([]);
    expect(endpoints.map((e) => e.service).sort()).toEqual([expect.stringContaining('.dynamodb"'), expect.stringContaining('.s3"')]);
    expect(egress.some((e) => e.CidrIp === '0.0.0.0/0' && e.FromPort === 443)).toBe(true);
  });

  it('refuses interfaceEndpoints=false without a NAT gateway: nothing would reach ECS, ECR, Logs or SQS', () => {
    expect(() => synth({ interfaceEndpoints: false, 'aws:cdk:bundling-stacks': [] })).toThrow(/interfaceEndpoints=false needs natGateways=1 or more/);
  });
});

describe('least privilege', () => {
  it('has no Allow statement with a wildcard action anywhere (Deny-on-no-TLS statements may use service:*)', () => {
    // Act
    const offenders = allStatements(resources)
      .filter(({ statement }) => statement.Effect === 'Allow')
      .flatMap(({ resource, statement }) => asList(statement.Action).filter((a) => String(a).includes('*')).map((a) => `${resource}: ${String(a)}`));

    // Assess
    expect(offenders).toEqual([]);
  });

  it('passes the cdk-nag AwsSolutions pack with every finding acknowledged', () => {
    // Prepare
    const pack = new AwsSolutionsChecks(app);

    // Act
    const report = pack.validateScope(app);

    // Assess
    expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`)).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('still passes cdk-nag when the stack has an explicit account and region (as under `cdk deploy`)', () => {
    // Prepare
    const saved = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
    process.env.CDK_DEFAULT_ACCOUNT = '111122223333';
    process.env.CDK_DEFAULT_REGION = 'eu-west-1';
    let pinned: App;
    try {
      pinned = synth({ 'aws:cdk:bundling-stacks': [] }).app;
    } finally {
      for (const [k, v] of [['CDK_DEFAULT_ACCOUNT', saved.account], ['CDK_DEFAULT_REGION', saved.region]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }

    // Act
    const report = new AwsSolutionsChecks(pinned).validateScope(pinned);

    // Assess
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });
});
