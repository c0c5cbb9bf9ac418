/**
 * Issue 23, item 1: `cdk destroy` of a running fleet must not delete the network under the
 * teardown. CloudFormation deletes a resource only after everything that depends on it
 * (DependsOn, Ref, Fn::GetAtt) is gone, and deletes in parallel whatever is unordered.
 * So the teardown (which drains the workers: they and the ECS agent need `ecs`, SQS,
 * DynamoDB, logs) must depend, directly or transitively, on every VPC endpoint, every
 * security-group rule, and with NAT the gateway, its address, the internet gateway
 * attachment and every route and route-table association.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import { FLEET_TEARDOWN_RESOURCE_TYPE } from '../../infra/fleet-teardown.ts';

type Resource = { Type: string; Properties?: unknown; DependsOn?: string | string[] };
type Resources = Record<string, Resource>;

/** What the teardown's drain needs until it has finished. */
const NETWORK_TYPES = [
  'AWS::EC2::VPCEndpoint',
  'AWS::EC2::SecurityGroup',
  'AWS::EC2::SecurityGroupIngress',
  'AWS::EC2::SecurityGroupEgress',
  'AWS::EC2::Route',
  'AWS::EC2::RouteTable',
  'AWS::EC2::SubnetRouteTableAssociation',
  'AWS::EC2::NatGateway',
  'AWS::EC2::EIP',
  'AWS::EC2::InternetGateway',
  'AWS::EC2::VPCGatewayAttachment',
];

const outdirs: string[] = [];
afterAll(() => {
  for (const d of outdirs) rmSync(d, { recursive: true, force: true });
});

function resourcesOf(context: Record<string, unknown>): Resources {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-teardown-'));
  outdirs.push(outdir);
  const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
  return Template.fromStack(stack).toJSON().Resources as Resources;
}

/** Logical ids a resource depends on: DependsOn, and every Ref / Fn::GetAtt in its properties. */
function dependenciesOf(resource: Resource, resources: Resources): Set<string> {
  const out = new Set<string>([resource.DependsOn ?? []].flat());
  const walk = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
        if (k === 'Ref' && typeof v === 'string' && v in resources) out.add(v);
        else if (k === 'Fn::GetAtt' && Array.isArray(v) && String(v[0]) in resources) out.add(String(v[0]));
        else walk(v);
      }
    }
  };
  walk(resource.Properties);
  return out;
}

/** Everything `from` depends on, transitively: all of it is deleted only after `from` is. */
function deletedAfter(from: string, resources: Resources): Set<string> {
  const seen = new Set<string>();
  const stack = [from];
  while (stack.length > 0) {
    for (const next of dependenciesOf(resources[stack.pop()!]!, resources)) {
      if (!seen.has(next)) {
        seen.add(next);
        stack.push(next);
      }
    }
  }
  return seen;
}

describe.each([
  { natGateways: 0, expected: { 'AWS::EC2::VPCEndpoint': 9, 'AWS::EC2::SecurityGroupIngress': 14, 'AWS::EC2::NatGateway': 0 } },
  { natGateways: 1, expected: { 'AWS::EC2::VPCEndpoint': 9, 'AWS::EC2::SecurityGroupIngress': 14, 'AWS::EC2::NatGateway': 1, 'AWS::EC2::Route': 4 } },
])('stack deletion with natGateways=$natGateways', ({ natGateways, expected }) => {
  it('deletes the teardown before every endpoint, security group and rule, and every NAT gateway, route and association', () => {
    // Prepare
    const resources = resourcesOf({ natGateways });
    const teardown = Object.entries(resources).filter(([, r]) => r.Type === FLEET_TEARDOWN_RESOURCE_TYPE).map(([id]) => id);
    const network = Object.entries(resources).filter(([, r]) => NETWORK_TYPES.includes(r.Type));

    // Act
    const after = deletedAfter(teardown[0]!, resources);
    const notAfter = network.filter(([id]) => !after.has(id)).map(([id, r]) => `${r.Type} ${id}`);

    // Assess
    expect(teardown).toHaveLength(1);
    const counts: Record<string, number> = {};
    for (const [, r] of network) counts[r.Type] = (counts[r.Type] ?? 0) + 1;
    for (const [type, n] of Object.entries(expected)) expect(counts[type] ?? 0, type).toBe(n);
    // The figure for the closing note: what the teardown now outlives.
    console.log(
      `natGateways=${natGateways}: the teardown outlives ${network.length} network resources:\n` +
        Object.entries(counts).map(([type, n]) => `  ${type}: ${n}`).join('\n') +
        `\n  ${network.map(([id]) => id).sort().join('\n  ')}`,
    );
    expect(notAfter).toEqual([]);
    // And nothing in the network waits for the teardown (no cycle, no reversed order).
    expect(network.filter(([id]) => deletedAfter(id, resources).has(teardown[0]!)).map(([id]) => id)).toEqual([]);
  });
});

describe('stack deletion: what the draining workers run as and write to (issue 35, item 6)', () => {
  it.each([{ slotCount: 4 }, { slotCount: 250 }])('deletes the teardown before the worker roles and policies, the slot-queue stacks, the tables and the worker logs (slotCount $slotCount)', (context) => {
    // Prepare
    const resources = resourcesOf(context);
    const teardown = Object.entries(resources).find(([, r]) => r.Type === FLEET_TEARDOWN_RESOURCE_TYPE)![0];
    const byPrefix = (type: string, prefix: string) => Object.entries(resources).filter(([id, r]) => r.Type === type && id.startsWith(prefix)).map(([id]) => id);
    const needed = [
      ...byPrefix('AWS::IAM::Role', 'FleetTaskRole'),
      ...byPrefix('AWS::IAM::Policy', 'FleetTaskRole'),
      ...byPrefix('AWS::IAM::Role', 'FleetExecutionRole'),
      ...byPrefix('AWS::IAM::Policy', 'FleetExecutionRole'),
      ...byPrefix('AWS::CloudFormation::Stack', 'QueuesSlots'),
      ...byPrefix('AWS::DynamoDB::Table', 'Tables'),
      ...byPrefix('AWS::Logs::LogGroup', 'FleetWorkerLogs'),
    ];

    // Act
    const after = deletedAfter(teardown, resources);

    // Assess: the task role, its policy, the execution role's policy, every slot-queue stack
    expect(needed.length).toBe(4 + Math.ceil(context.slotCount / 100) + 3 + 1);
    expect(needed.filter((id) => !after.has(id))).toEqual([]);
    expect(needed.filter((id) => deletedAfter(id, resources).has(teardown))).toEqual([]);
  });
});

describe('the graph walk', () => {
  it('follows DependsOn, Ref and Fn::GetAtt transitively, and nothing else', () => {
    // Prepare
    const resources: Resources = {
      A: { Type: 'T', DependsOn: ['B'] },
      B: { Type: 'T', Properties: { X: { Ref: 'C' }, Y: [{ 'Fn::GetAtt': ['D', 'Arn'] }] } },
      C: { Type: 'T', Properties: { Z: { Ref: 'AWS::Region' } } },
      D: { Type: 'T' },
      E: { Type: 'T', DependsOn: 'A' },
    };

    // Act & Assess
    expect([...deletedAfter('A', resources)].sort()).toEqual(['B', 'C', 'D']);
    expect([...deletedAfter('E', resources)].sort()).toEqual(['A', 'B', 'C', 'D']);
    expect([...deletedAfter('D', resources)]).toEqual([]);
  });
});
