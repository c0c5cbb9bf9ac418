/**
 * Issue 23, item 3: the workload subnets must hold the fleet. Each GPU instance takes two
 * addresses (its ENI and its task's awsvpc ENI), each subnet also holds one ENI per
 * interface endpoint and AWS's 5 reserved addresses, and by default the whole fleet must
 * fit in any one AZ (a GPU type can run out in the other). Synthesis sizes the subnets
 * from slotCount, or fails naming the setting to change.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { ConfigError } from '../../core/config.ts';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import { stackConfigFromContext, workloadSubnetPlan } from '../../infra/config.ts';
import { INTERFACE_ENDPOINTS } from '../../infra/network.ts';
import { planWorkloadSubnets, type SubnetPlanInput } from '../../infra/subnet-plan.ts';

const ENDPOINTS = Object.keys(INTERFACE_ENDPOINTS).length;
const base: SubnetPlanInput = { slotCount: 4, maxInstances: 0, azCount: 2, interfaceEndpoints: ENDPOINTS, oneAzHoldsFleet: true, workloadSubnetMask: 0, publicSubnets: false };

const outdirs: string[] = [];
afterAll(() => {
  for (const d of outdirs) rmSync(d, { recursive: true, force: true });
});
function synth(context: Record<string, unknown>): Template {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-subnets-'));
  outdirs.push(outdir);
  const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
  return Template.fromStack(stack);
}
const workloadCidrs = (t: Template) =>
  Object.entries(t.findResources('AWS::EC2::Subnet'))
    .filter(([id]) => id.includes('workload'))
    .map(([, r]) => ({ cidr: String(r.Properties.CidrBlock), az: r.Properties.AvailabilityZone as unknown }));

describe('planWorkloadSubnets', () => {
  it.each([
    // slots, maxInstances, AZs, one AZ holds all, mask (0 = auto) -> prefix, addresses needed, problem
    // Never smaller than the /22 of stacks deployed before sizing (their subnets stay as they are).
    { slotCount: 4, maxInstances: 0, azCount: 2, oneAzHoldsFleet: true, workloadSubnetMask: 0, prefix: 22, needed: 20, problem: undefined },
    { slotCount: 500, maxInstances: 0, azCount: 2, oneAzHoldsFleet: true, workloadSubnetMask: 0, prefix: 22, needed: 1012, problem: undefined },
    { slotCount: 510, maxInstances: 0, azCount: 2, oneAzHoldsFleet: true, workloadSubnetMask: 0, prefix: 21, needed: 1032, problem: undefined },
    { slotCount: 4, maxInstances: 0, azCount: 2, oneAzHoldsFleet: true, workloadSubnetMask: 27, prefix: 27, needed: 20, problem: undefined },
    { slotCount: 1000, maxInstances: 0, azCount: 2, oneAzHoldsFleet: true, workloadSubnetMask: 0, prefix: 21, needed: 2012, problem: undefined },
    { slotCount: 1000, maxInstances: 0, azCount: 1, oneAzHoldsFleet: true, workloadSubnetMask: 0, prefix: 21, needed: 2012, problem: undefined },
    { slotCount: 1000, maxInstances: 0, azCount: 2, oneAzHoldsFleet: false, workloadSubnetMask: 0, prefix: 22, needed: 1012, problem: undefined },
    { slotCount: 1000, maxInstances: 300, azCount: 2, oneAzHoldsFleet: true, workloadSubnetMask: 0, prefix: 21, needed: 1312, problem: undefined },
    // The /22 the stack used to have: 1,019 usable addresses cannot hold 1,000 instances in one AZ.
    { slotCount: 1000, maxInstances: 0, azCount: 2, oneAzHoldsFleet: true, workloadSubnetMask: 22, prefix: 22, needed: 2012, problem: /workloadSubnetMask \/22 holds 1019 usable addresses, but 1000 GPU instances in one AZ need 2012 .*set workloadSubnetMask to 21 or less/ },
    { slotCount: 500, maxInstances: 0, azCount: 2, oneAzHoldsFleet: true, workloadSubnetMask: 22, prefix: 22, needed: 1012, problem: undefined },
  ])('$slotCount slots, $azCount AZs, oneAzHoldsFleet=$oneAzHoldsFleet, mask $workloadSubnetMask -> /$prefix', (row) => {
    // Act
    const plan = planWorkloadSubnets({ ...base, ...row });

    // Assess
    expect(plan.prefixLength).toBe(row.prefix);
    expect(plan.addressesNeeded).toBe(row.needed);
    if (row.problem) expect(plan.problem).toMatch(row.problem);
    else {
      expect(plan.problem).toBeUndefined();
      expect(plan.usableAddresses + 5).toBeGreaterThanOrEqual(plan.addressesNeeded);
      expect(plan.instancesPerSubnet).toBeGreaterThanOrEqual(row.oneAzHoldsFleet ? row.maxInstances || row.slotCount : 0);
    }
  });

  it('fails when the subnets no longer fit the /16 VPC', () => {
    // Act
    const plan = planWorkloadSubnets({ ...base, slotCount: 1000, azCount: 6, workloadSubnetMask: 17, publicSubnets: true });

    // Assess
    expect(plan.problem).toMatch(/6 workload subnets of \/17 do not fit the \/16 VPC/);
  });
});

describe('subnet capacity at synthesis', () => {
  it('rejects a fixed mask too small for the fleet, naming the setting', () => {
    // Act
    const act = () => stackConfigFromContext((k) => ({ slotCount: '1000', workloadSubnetMask: '22' })[k]);

    // Assess
    expect(act).toThrow(ConfigError);
    expect(act).toThrow(/set workloadSubnetMask to 21 or less \(or 0 to size it from slotCount\)/);
  });

  it.each([
    { label: '1 AZ', context: { maxAzs: 1 }, azs: 1 },
    { label: '2 AZs', context: { availabilityZones: 'us-east-1a,us-east-1c' }, azs: 2 },
  ])('holds 1,000 instances in each workload subnet with $label', ({ label, context, azs }) => {
    // Prepare
    const config = stackConfigFromContext((k) => ({ slotCount: '1000', ...context })[k as 'slotCount']);
    const plan = workloadSubnetPlan(config);

    // Act
    const subnets = workloadCidrs(synth({ slotCount: 1000, ...context }));

    // Assess
    console.log(
      `subnet capacity, 1,000 slots, ${label}: ${subnets.length} workload subnet(s) of /${plan.prefixLength}, ${plan.usableAddresses} usable addresses each, ` +
        `${plan.addressesNeeded} needed (2 x 1,000 instance/task ENIs + ${ENDPOINTS} endpoint ENIs + 5 reserved): ${plan.instancesPerSubnet} instances fit in one subnet`,
    );
    expect(subnets).toHaveLength(azs);
    for (const s of subnets) expect(s.cidr).toMatch(/\/21$/);
    expect(plan.instancesPerSubnet).toBeGreaterThanOrEqual(1000);
    if (azs === 2) expect(subnets.map((s) => s.az).sort()).toEqual(['us-east-1a', 'us-east-1c']);
  }, 600_000); // a 1,000-slot synthesis writes 10 nested stacks of 400 resources: minutes on a shared machine
});
