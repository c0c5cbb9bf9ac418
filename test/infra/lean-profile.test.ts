/**
 * The lean profile's settings (issue 44, decision 79): NAT instances instead of NAT
 * gateways (`natInstanceType`), point-in-time recovery off (`pointInTimeRecovery`) and
 * Container Insights off (`containerInsights`), each from a real synthesis of the stack.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { resourceNames } from '../../core/config.ts';
import { ALARM_IDS, NAT_INSTANCE_ALARM_IDS, alarmName } from '../../infra/alarm-ids.ts';
import { NAT_INSTANCE_ROOT_GIB } from '../../infra/network.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';
import { fixedMonthly, metricSeriesBill, stackInventory, storageTerms } from '../../bench/cost-model.ts';
import { asList, removeSynthOutdirs, synth, type Resources } from '../support/stack-synth.ts';

const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
const LEAN = { natGateways: 1, interfaceEndpoints: false, natInstanceType: 't4g.nano', provisionedCapacityUnits: 1000, pointInTimeRecovery: false, containerInsights: false, ...NO_BUNDLING };

let leanApp: App;
let leanStack: FrameAffinityStack;
let lean: Template;
let leanResources: Resources;

beforeAll(() => {
  ({ app: leanApp, stack: leanStack, template: lean } = synth(LEAN));
  leanResources = lean.toJSON().Resources as Resources;
});

/** The default profile (NAT gateway none, PITR and Container Insights on), synthesized once for the tests that compare with it. */
let defaults: Template | undefined;
const defaultTemplate = (): Template => (defaults ??= synth(NO_BUNDLING).template);

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

  it('get a system-check alarm that recovers the instance and an instance-check alarm that reboots it, each named with the alarm prefix and notifying the alarm topic on ALARM and OK', () => {
    // Prepare
    const natId = ofType(leanResources, 'AWS::EC2::Instance')[0]![0];
    const prefix = resourceNames(leanStack.config.namePrefix).prefix;
    const topics = ofType(leanResources, 'AWS::SNS::Topic').filter(([id]) => id.startsWith('MonitoringAlarmTopic'));
    expect(topics).toHaveLength(1);
    const topic = { Ref: topics[0]![0] };

    // Act
    const natAlarms = ofType(leanResources, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties!).filter((a) => a.Namespace === 'AWS/EC2');
    const byName = new Map(natAlarms.map((a) => [a.AlarmName, a]));

    // Assess: one pair for the one instance, named so that the topic policy (`<prefix>-*`) lets them publish
    expect([...byName.keys()].sort()).toEqual(NAT_INSTANCE_ALARM_IDS.map((id) => alarmName(prefix, id, 1)).sort());
    for (const name of byName.keys()) expect(name).toMatch(new RegExp(`^${prefix}-`));
    const action = (alarm: Record<string, unknown> | undefined, what: string) => asList(alarm?.AlarmActions).filter((a) => JSON.stringify(a).includes(`:ec2:${what}`));
    const system = byName.get(alarmName(prefix, 'NatSystemCheckFailed', 1));
    const instance = byName.get(alarmName(prefix, 'NatInstanceCheckFailed', 1));
    expect(system).toMatchObject({ MetricName: 'StatusCheckFailed_System', Dimensions: [{ Name: 'InstanceId', Value: { Ref: natId } }], Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
    expect(instance).toMatchObject({ MetricName: 'StatusCheckFailed_Instance', Dimensions: [{ Name: 'InstanceId', Value: { Ref: natId } }], Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
    // EC2's recover fixes a failed host, not a hung OS: each alarm takes the action that fixes its check, and only that one
    expect(action(system, 'recover')).toHaveLength(1);
    expect(action(system, 'reboot')).toHaveLength(0);
    expect(action(instance, 'reboot')).toHaveLength(1);
    expect(action(instance, 'recover')).toHaveLength(0);
    for (const alarm of [system, instance]) {
      expect(asList(alarm!.AlarmActions)).toContainEqual(topic);
      expect(asList(alarm!.AlarmActions)).toHaveLength(2);
      expect(alarm!.OKActions).toEqual([topic]);
      // The description names the instance (its id, resolved at deploy) and says what to do when EC2's action did not help
      expect(JSON.stringify(alarm!.AlarmDescription)).toContain(natId);
      expect(JSON.stringify(alarm!.AlarmDescription)).toContain('stop and start it');
    }
  });

  it('put no NAT instance alarm in the default profile (no NAT instance), whose alarms are exactly ALARM_IDS', () => {
    // Act
    const alarms = Object.values(defaultTemplate().findResources('AWS::CloudWatch::Alarm'));

    // Assess
    expect(alarms.filter((a) => a.Properties.Namespace === 'AWS/EC2')).toEqual([]);
    expect(alarms).toHaveLength(ALARM_IDS.length);
  });

  it('are refused without natGateways (how many, one per zone) and for a type that is not a small instance type', () => {
    expect(() => synth({ natInstanceType: 't4g.nano', ...NO_BUNDLING })).toThrow(/natInstanceType \(t4g\.nano\) replaces NAT gateways by NAT instances: set natGateways=1 or more/);
    expect(() => synth({ natGateways: 1, natInstanceType: 'g5.xlarge', ...NO_BUNDLING })).toThrow(/natInstanceType must be a burstable or network-optimised instance type/);
  });
});

describe('point-in-time recovery and Container Insights', () => {
  it('are on by default', () => {
    const template = defaultTemplate();
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
    // The NAT instance's two status-check alarms are billed with the others
    expect(inventory.alarms).toBe(ALARM_IDS.length + NAT_INSTANCE_ALARM_IDS.length);
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
