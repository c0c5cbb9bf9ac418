/**
 * Workload subnet sizing (issue 23, item 3): how many private IPv4 addresses one
 * workload subnet must hold for the GPU fleet, and the prefix length that holds them.
 * Pure arithmetic, no CDK: `validateStackConfig` runs it at synthesis, so a fleet that
 * cannot fit fails `cdk synth` with the setting to change instead of stalling at 700
 * instances in production.
 */

/** AWS keeps the first four addresses and the last one of every subnet. */
export const AWS_RESERVED_ADDRESSES_PER_SUBNET = 5;
/** Addresses per GPU instance: its primary ENI, and the awsvpc ENI of its one worker task. */
export const ADDRESSES_PER_INSTANCE = 2;
/** The VPC's CIDR (aws-cdk-lib's default, `10.0.0.0/16`). */
export const VPC_PREFIX_LENGTH = 16;
/** Public subnets (NAT gateways only) are /26 each. */
export const PUBLIC_SUBNET_PREFIX_LENGTH = 26;
/** EC2 accepts subnets from /16 to /28. */
export const MIN_SUBNET_PREFIX_LENGTH = 16;
export const MAX_SUBNET_PREFIX_LENGTH = 28;
/**
 * Sized subnets are never smaller than /22, the fixed size before subnets were sized:
 * a stack deployed then keeps its subnets (a new CIDR replaces a subnet, and the new one
 * would overlap the old), and a /16 VPC has room for /22s in six AZs anyway.
 */
export const LARGEST_SIZED_PREFIX_LENGTH = 22;

export interface SubnetPlanInput {
  /** Worker slots: at most this many tasks (one awsvpc ENI each). */
  readonly slotCount: number;
  /** Most GPU instances (0 = `slotCount`): one primary ENI each. */
  readonly maxInstances: number;
  /** Availability zones, one workload subnet each. */
  readonly azCount: number;
  /** Interface VPC endpoints: one ENI each in every workload subnet. */
  readonly interfaceEndpoints: number;
  /** Whether one AZ's subnet must hold the whole fleet (else the fleet is spread evenly). */
  readonly oneAzHoldsFleet: boolean;
  /** Fixed prefix length of the workload subnets, or 0 to size them. */
  readonly workloadSubnetMask: number;
  /** Whether public /26 subnets are added too (NAT gateways). */
  readonly publicSubnets: boolean;
}

export interface SubnetPlan {
  /** Prefix length of each workload subnet. */
  readonly prefixLength: number;
  /** Addresses one workload subnet must hold: reserved + endpoint ENIs + fleet ENIs. */
  readonly addressesNeeded: number;
  /** Addresses one workload subnet holds for use (size minus AWS's 5). */
  readonly usableAddresses: number;
  /** GPU instances (with their task) one subnet can hold beside the endpoint ENIs. */
  readonly instancesPerSubnet: number;
  /** The problem, if the fleet cannot fit; names the setting to change. */
  readonly problem?: string;
}

const sizeOf = (prefixLength: number) => 2 ** (32 - prefixLength);

/**
 * The workload subnet plan for a fleet. Each instance takes {@link ADDRESSES_PER_INSTANCE}
 * addresses; each subnet also holds one ENI per interface endpoint and AWS's 5 reserved
 * addresses. By default (`oneAzHoldsFleet`) every instance must fit in any one AZ's
 * subnet, since a GPU type can run out in one AZ and the group then launches everything
 * in the other. With `workloadSubnetMask` 0 the smallest subnet that fits is chosen, but
 * never one smaller than /{@link LARGEST_SIZED_PREFIX_LENGTH}.
 */
export function planWorkloadSubnets(input: SubnetPlanInput): SubnetPlan {
  const instances = input.maxInstances > 0 ? input.maxInstances : input.slotCount;
  // Every slot's task has its own ENI, whatever instance it lands on (a multi-GPU type holds several).
  const fleetAddresses = instances + input.slotCount;
  const perSubnet = input.oneAzHoldsFleet ? fleetAddresses : Math.ceil(fleetAddresses / Math.max(1, input.azCount));
  const addressesNeeded = AWS_RESERVED_ADDRESSES_PER_SUBNET + input.interfaceEndpoints + perSubnet;
  const fitting = Math.min(LARGEST_SIZED_PREFIX_LENGTH, 32 - Math.ceil(Math.log2(addressesNeeded)));
  const prefixLength = input.workloadSubnetMask > 0 ? input.workloadSubnetMask : Math.max(MIN_SUBNET_PREFIX_LENGTH, fitting);
  const usableAddresses = sizeOf(prefixLength) - AWS_RESERVED_ADDRESSES_PER_SUBNET;
  const instancesPerSubnet = Math.max(0, Math.floor((usableAddresses - input.interfaceEndpoints) / ADDRESSES_PER_INSTANCE));
  const base = { prefixLength, addressesNeeded, usableAddresses, instancesPerSubnet };
  const where = input.oneAzHoldsFleet ? 'in one AZ' : `spread over ${input.azCount} AZs`;
  const need =
    `${instances} GPU instances ${where} need ${addressesNeeded} addresses per workload subnet ` +
    `(${ADDRESSES_PER_INSTANCE} per instance: its ENI and its task's awsvpc ENI; ${input.interfaceEndpoints} endpoint ENIs; ${AWS_RESERVED_ADDRESSES_PER_SUBNET} reserved by AWS)`;
  if (addressesNeeded > sizeOf(prefixLength)) {
    const fix = input.workloadSubnetMask > 0 ? `set workloadSubnetMask to ${fitting} or less (or 0 to size it from slotCount)` : 'lower slotCount or maxInstances';
    return { ...base, problem: `workloadSubnetMask /${prefixLength} holds ${usableAddresses} usable addresses, but ${need}: ${fix}` };
  }
  const vpcAddresses = input.azCount * sizeOf(prefixLength) + (input.publicSubnets ? input.azCount * sizeOf(PUBLIC_SUBNET_PREFIX_LENGTH) : 0);
  if (vpcAddresses > sizeOf(VPC_PREFIX_LENGTH)) {
    return {
      ...base,
      problem: `${input.azCount} workload subnets of /${prefixLength} do not fit the /${VPC_PREFIX_LENGTH} VPC: lower slotCount or maxInstances, use fewer AZs (maxAzs, availabilityZones), or set oneAzHoldsFleet=false`,
    };
  }
  return base;
}
