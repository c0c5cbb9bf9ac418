/**
 * The lean profile's settings (issue 44, decision 79): NAT instances instead of NAT
 * gateways (`natInstanceType`), point-in-time recovery off (`pointInTimeRecovery`) and
 * Container Insights off (`containerInsights`), each from a real synthesis of the stack.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { NAT_INSTANCE_ROOT_GIB } from '../../infra/network.ts';
import { fixedMonthly, metricSeriesBill, stackInventory, storageTerms } from '../../bench/cost-model.ts';
import { asList, removeSynthOutdirs, synth, type Resources } from '../support/stack-synth.ts';

const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
const LEAN = { natGateways: 1, interfaceEndpoints: false, natInstanceType: 't4g.nano', provisionedCapacityUnits: 1000, pointInTimeRecovery: false, containerInsights: false, ...NO_BUNDLING };

let leanApp: App;
let lean: Template;
let leanResources: Resources;

beforeAll(() => {
  ({ app: leanApp, template: lean } = synth(LEAN));
  leanResources = lean.toJSON().Resources as Resources;
});

afterAll(removeSynthOutdirs);

const ofType = (resources: Resources, type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);

/** Egress rules of the task and container-instance security groups: inline and as separate resources. */
function workloadEgress(resources: Resources): unknown[] {
  const groups = ofType(resources, 'AWS::EC2::SecurityGroup').filter(([id]) => id.startsWith('NetworkTaskSecurityGroup') || id.startsWith('FleetInstanceSecurityGroup'));
  const inline = groups.flatMap(([id, r]) => asList(r.Properties?.SecurityGroupEgress).map((e) => ({ group: id, ...(e as object) })));
  const separate = ofType(resources, 'AWS::EC2::SecurityGroupEgress').map(([, r]) => r.Properties);
  return [...inline, ...separate];
}

describe('NAT instances (natInstanceType)', () => {
  it('replace the NAT gateway: one t4g.nano per NAT, forwarding (no source/dest check), the workload subnets\' default routes through it', () => {
    // Act
    const instances = ofType(leanResources, 'AWS::EC2::Instance');
    const routes = ofType(leanResources, 'AWS::EC2::Route').filter(([id]) => id.includes('workloadSubnet')).map(([, r]) => r.Properties);

    // Assess
    lean.resourceCountIs('AWS::EC2::NatGateway', 0);
    lean.resourceCountIs('AWS::EC2::EIP', 0);
    expect(instances).toHaveLength(1);
    const [natId, nat] = instances[0]!;
    expect(nat.Properties).toMatchObject({ InstanceType: 't4g.nano', SourceDestCheck: false, MetadataOptions: { HttpTokens: 'required' } });
    expect(nat.Properties?.BlockDeviceMappings).toEqual([{ DeviceName: '/dev/xvda', Ebs: { DeleteOnTermination: true, Encrypted: true, VolumeSize: NAT_INSTANCE_ROOT_GIB, VolumeType: 'gp3' } }]);
    expect(asList(nat.Properties?.NetworkInterfaces)).toEqual([expect.objectContaining({ AssociatePublicIpAddress: true })]);
    expect(routes).toHaveLength(2);
    for (const r of routes) expect(r).toMatchObject({ DestinationCidrBlock: '0.0.0.0/0', InstanceId: { Ref: natId } });
  });

  it('admit only the workload subnets, on 443, and send only HTTPS', () => {
    // Prepare
    const workloadCidrs = ofType(leanResources, 'AWS::EC2::Subnet').filter(([id]) => id.includes('workloadSubnet')).map(([, r]) => r.Properties?.CidrBlock).sort();
    const natGroupId = (asList(ofType(leanResources, 'AWS::EC2::Instance')[0]![1].Properties?.NetworkInterfaces)[0] as { GroupSet: { 'Fn::GetAtt': [string] }[] }).GroupSet[0]!['Fn::GetAtt'][0];

    // Act
    const group = leanResources[natGroupId]!.Properties!;
    const ingress = asList(group.SecurityGroupIngress) as { CidrIp: string; FromPort: number; ToPort: number; IpProtocol: string }[];
    const separateRules = [...ofType(leanResources, 'AWS::EC2::SecurityGroupIngress'), ...ofType(leanResources, 'AWS::EC2::SecurityGroupEgress')].filter(([, r]) => JSON.stringify(r.Properties?.GroupId).includes(natGroupId));

    // Assess
    expect(ingress.map((i) => i.CidrIp).sort()).toEqual(workloadCidrs);
    for (const i of ingress) expect(i).toMatchObject({ IpProtocol: 'tcp', FromPort: 443, ToPort: 443 });
    expect(asList(group.SecurityGroupEgress)).toEqual([expect.objectContaining({ CidrIp: '0.0.0.0/0', IpProtocol: 'tcp', FromPort: 443, ToPort: 443 })]);
    expect(separateRules).toEqual([]);
  });

  it('leave the workloads\' egress exactly as with a NAT gateway: with interface endpoints, only the endpoints and the S3 and DynamoDB prefix lists', () => {
    // Act
    const gateway = synth({ natGateways: 1, ...NO_BUNDLING }).template.toJSON().Resources as Resources;
    const instance = synth({ natGateways: 1, natInstanceType: 't4g.nano', ...NO_BUNDLING }).template.toJSON().Resources as Resources;
    const withoutEndpoints = synth({ natGateways: 1, interfaceEndpoints: false, ...NO_BUNDLING }).template.toJSON().Resources as Resources;

    // Assess
    expect(workloadEgress(instance)).toEqual(workloadEgress(gateway));
    expect(JSON.stringify(workloadEgress(instance))).not.toContain('0.0.0.0/0');
    expect(JSON.stringify(workloadEgress(instance))).toContain('DestinationPrefixListId');
    // Without interface endpoints both open HTTPS to any address (those APIs have no prefix list), and equally.
    expect(workloadEgress(leanResources)).toEqual(workloadEgress(withoutEndpoints));
  });

  it('get a system-status-check alarm whose action is EC2 recover', () => {
    const natId = ofType(leanResources, 'AWS::EC2::Instance')[0]![0];
    const alarm = ofType(leanResources, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties!).find((a) => a.MetricName === 'StatusCheckFailed_System');
    expect(alarm).toMatchObject({ Namespace: 'AWS/EC2', Dimensions: [{ Name: 'InstanceId', Value: { Ref: natId } }], Threshold: 1 });
    expect(JSON.stringify(alarm!.AlarmActions)).toContain(':ec2:recover');
  });

  it('are refused without natGateways (how many, one per zone) and for a type that is not a small instance type', () => {
    expect(() => synth({ natInstanceType: 't4g.nano', ...NO_BUNDLING })).toThrow(/natInstanceType \(t4g\.nano\) replaces NAT gateways by NAT instances: set natGateways=1 or more/);
    expect(() => synth({ natGateways: 1, natInstanceType: 'g5.xlarge', ...NO_BUNDLING })).toThrow(/natInstanceType must be a burstable or network-optimised instance type/);
  });
});

describe('point-in-time recovery and Container Insights', () => {
  it('are on by default', () => {
    const { template } = synth(NO_BUNDLING);
    const tables = Object.values(template.findResources('AWS::DynamoDB::Table'));
    expect(tables).toHaveLength(3);
    for (const t of tables) expect(t.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    template.hasResourceProperties('AWS::ECS::Cluster', { ClusterSettings: [{ Name: 'containerInsights', Value: 'enabled' }] });
  });

  it('pointInTimeRecovery=false and containerInsights=false turn them off on every table and on the cluster', () => {
    const tables = Object.values(lean.findResources('AWS::DynamoDB::Table'));
    expect(tables).toHaveLength(3);
    for (const t of tables) expect(t.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: false });
    lean.hasResourceProperties('AWS::ECS::Cluster', { ClusterSettings: [{ Name: 'containerInsights', Value: 'disabled' }] });
  });

  it('no alarm or dashboard widget reads Container Insights\' metrics, so turning it off blinds nothing the stack watches', () => {
    const watched = JSON.stringify([...ofType(leanResources, 'AWS::CloudWatch::Alarm'), ...ofType(leanResources, 'AWS::CloudWatch::Dashboard')]);
    expect(watched).not.toContain('ECS/ContainerInsights');
    expect(watched).toContain('AWS/SQS');
  });
});

describe('the lean profile', () => {
  it('is what the cost model counts in its template: one t4g.nano with its volume and address, no PITR, no Container Insights, provisioned tables', () => {
    // Act
    const inventory = stackInventory(leanResources);
    // A few measured series: what this test checks does not depend on their number.
    const fixed = fixedMonthly(inventory, metricSeriesBill([{ worker: ['FrameAffinity/FramesProcessed{service=worker}'], router: ['FrameAffinity/FramesRouted{service=router}'], janitor: ['FrameAffinity/LiveSlots{service=janitor}'] }]));

    // Assess
    expect(inventory).toMatchObject({ natGateways: 0, natInstanceTypes: ['t4g.nano'], natInstanceVolumeGb: NAT_INSTANCE_ROOT_GIB, publicIpv4Addresses: 1, tables: 3, tablesWithPitr: 0, resultsTablePitr: false, containerInsights: false, interfaceEndpoints: 0 });
    expect(inventory.provisionedTablesAndIndexes).toBeGreaterThan(0);
    expect(storageTerms(inventory).resultsPitr).toBe(false);
    expect(fixed.running.containerInsights).toBe(0);
    expect(fixed.idleTotal).toBeLessThan(25);
  });

  it('passes the cdk-nag AwsSolutions pack, each turned-off check acknowledged with its reason', () => {
    const report = new AwsSolutionsChecks(leanApp).validateScope(leanApp);
    expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`)).toEqual([]);
  });
});
