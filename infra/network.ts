import { Names, RemovalPolicy } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { acknowledge } from './nag.ts';
import { GatewayPrefixLists } from './prefix-lists.ts';

export interface NetworkProps {
  /**
   * Availability zones used.
   * @default 2
   */
  readonly maxAzs?: number;
  /**
   * The availability zones, by name; when set, `maxAzs` is ignored. Choose zones that
   * offer the GPU instance types.
   * @default the region's first `maxAzs` zones
   */
  readonly availabilityZones?: readonly string[];
  /**
   * Prefix length of each workload subnet (see infra/subnet-plan.ts for the sizing).
   * @default 22
   */
  readonly workloadSubnetMask?: number;
  /**
   * NAT gateways. With 0 the private subnets are isolated and every AWS API is
   * reached through a VPC endpoint; with NAT the interface endpoints are still
   * created (traffic to AWS stays off the NAT data-processing charge) but the tasks
   * can also reach the internet (e.g. a model URL).
   * @default 0
   */
  readonly natGateways?: number;
  /**
   * NAT instances of this type (`t4g.nano`) instead of NAT gateways, `natGateways` of them
   * (one per zone): see {@link Network} for their security group. Needs `natGateways` >= 1.
   * @default undefined (NAT gateways)
   */
  readonly natInstanceType?: string;
  /**
   * Create the interface endpoints ({@link INTERFACE_ENDPOINTS}). false needs NAT gateways:
   * those APIs are then reached through the NAT, and the workload security groups may
   * reach any HTTPS address (their public endpoints have no prefix list).
   * @default true
   */
  readonly interfaceEndpoints?: boolean;
  /**
   * With NAT gateways, let the task and instance security groups reach any HTTPS address
   * (a model hosted outside AWS). When false they reach only the interface endpoints and
   * the S3 and DynamoDB prefix lists (the gateway endpoints). Without NAT the subnets have
   * no route out, so this changes nothing.
   * @default false
   */
  readonly allowInternetEgress?: boolean;
  /**
   * Retention of the VPC flow log (rejected traffic).
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly flowLogRetention?: logs.RetentionDays;
  /**
   * What happens to the flow log group when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * Interface endpoints the GPU container instances and tasks need when the subnets
 * have no route to the internet: the ECS agent (ecs, ecs-agent, ecs-telemetry),
 * image pulls (ecr.api, ecr.dkr; layers come from S3 through the gateway endpoint),
 * awslogs (logs) and the slot queues (sqs).
 */
export const INTERFACE_ENDPOINTS: Readonly<Record<string, ec2.InterfaceVpcEndpointAwsService>> = {
  Ecs: ec2.InterfaceVpcEndpointAwsService.ECS,
  EcsAgent: ec2.InterfaceVpcEndpointAwsService.ECS_AGENT,
  EcsTelemetry: ec2.InterfaceVpcEndpointAwsService.ECS_TELEMETRY,
  EcrApi: ec2.InterfaceVpcEndpointAwsService.ECR,
  EcrDocker: ec2.InterfaceVpcEndpointAwsService.ECR_DOCKER,
  Logs: ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
  Sqs: ec2.InterfaceVpcEndpointAwsService.SQS,
};

/** Root volume of a NAT instance (the Amazon Linux 2023 AMI's own size). */
export const NAT_INSTANCE_ROOT_GIB = 8;

/** VPC for the GPU fleet: private subnets, S3/DynamoDB gateway endpoints, interface endpoints, flow log. */
export class Network extends Construct {
  readonly vpc: ec2.Vpc;
  /** Security group of the worker tasks: no ingress, egress to the endpoints and gateways. */
  readonly taskSecurityGroup: ec2.SecurityGroup;
  /** Subnets the tasks and instances live in. */
  readonly workloadSubnets: ec2.SubnetSelection;
  /** Interface endpoints; closed until {@link allowEndpointsFrom} opens them to a security group. */
  readonly interfaceEndpoints: readonly ec2.InterfaceVpcEndpoint[];
  /**
   * The NAT instances (`natInstanceType`), in the order of their public subnets; empty with
   * NAT gateways or none. Monitoring gives each its status-check alarms (decision 84).
   */
  readonly natInstances: readonly ec2.Instance[];
  readonly #openEgress: boolean;
  #gatewayPrefixLists?: GatewayPrefixLists;

  constructor(scope: Construct, id: string, props: NetworkProps = {}) {
    super(scope, id);
    const natGateways = props.natGateways ?? 0;
    const privateType = natGateways > 0 ? ec2.SubnetType.PRIVATE_WITH_EGRESS : ec2.SubnetType.PRIVATE_ISOLATED;
    const subnetConfiguration: ec2.SubnetConfiguration[] = [{ name: 'workload', subnetType: privateType, cidrMask: props.workloadSubnetMask ?? 22 }];
    if (natGateways > 0) subnetConfiguration.push({ name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 26 });

    const flowLogGroup = new logs.LogGroup(this, 'FlowLogs', {
      retention: props.flowLogRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    if (props.natInstanceType && natGateways === 0) throw new Error(`Network: natInstanceType (${props.natInstanceType}) needs natGateways >= 1 (the number of NAT instances, one per zone)`);
    // NONE: the provider opens nothing; the instances' group is set below (workload subnets in, HTTPS out).
    const natInstanceProvider = props.natInstanceType
      ? ec2.NatProvider.instanceV2({ instanceType: new ec2.InstanceType(props.natInstanceType), defaultAllowedTraffic: ec2.NatTrafficDirection.NONE, associatePublicIpAddress: true })
      : undefined;
    this.vpc = new ec2.Vpc(this, 'Vpc', {
      ...(props.availabilityZones?.length ? { availabilityZones: [...props.availabilityZones] } : { maxAzs: props.maxAzs ?? 2 }),
      natGateways,
      ...(natInstanceProvider ? { natGatewayProvider: natInstanceProvider } : {}),
      subnetConfiguration,
      restrictDefaultSecurityGroup: true,
      gatewayEndpoints: {
        S3: { service: ec2.GatewayVpcEndpointAwsService.S3 },
        DynamoDb: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB },
      },
      flowLogs: {
        // Rejected traffic only: enough to debug a missing endpoint or SG rule, at a fraction of ALL's volume.
        Rejected: { destination: ec2.FlowLogDestination.toCloudWatchLogs(flowLogGroup), trafficType: ec2.FlowLogTrafficType.REJECT },
      },
    });
    this.workloadSubnets = { subnetType: privateType };
    this.natInstances = natInstanceProvider ? this.#hardenNatInstances(natInstanceProvider) : [];

    // open: false — instead of the default ingress from the whole VPC CIDR, only the
    // worker tasks and container instances may reach the endpoints (allowEndpointsFrom).
    const withEndpoints = props.interfaceEndpoints ?? true;
    if (!withEndpoints && natGateways === 0) throw new Error('Network: interfaceEndpoints=false needs natGateways >= 1 (nothing else reaches ECS, ECR, Logs or SQS)');
    this.interfaceEndpoints = withEndpoints
      ? Object.entries(INTERFACE_ENDPOINTS).map(([name, service]) =>
          this.vpc.addInterfaceEndpoint(name, { service, subnets: this.workloadSubnets, privateDnsEnabled: true, open: false }),
        )
      : [];

    this.taskSecurityGroup = new ec2.SecurityGroup(this, 'TaskSecurityGroup', {
      vpc: this.vpc,
      description: 'GPU worker tasks: no inbound; outbound HTTPS to VPC endpoints and gateway endpoints',
      allowAllOutbound: false,
    });
    // Without interface endpoints, ECS, ECR, Logs and SQS are reached at their public
    // addresses through the NAT: no prefix list names them, so egress is any HTTPS address.
    this.#openEgress = natGateways === 0 || props.allowInternetEgress === true || !withEndpoints;
    this.allowEndpointsFrom(this.taskSecurityGroup);
    this.restrictEgress(this.taskSecurityGroup);
  }

  /**
   * Egress of a workload security group on 443. Isolated subnets (or the
   * `allowInternetEgress` opt-out): any address, since only the endpoints are routable (or
   * the internet is wanted). With NAT: only the S3 and DynamoDB prefix lists (the
   * interface endpoints are opened by {@link allowEndpointsFrom}), so a task cannot send
   * data anywhere through the NAT.
   */
  restrictEgress(group: ec2.SecurityGroup): void {
    if (this.#openEgress) {
      group.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(443), 'HTTPS to AWS APIs (endpoints, gateways, NAT)');
      return;
    }
    const lists = (this.#gatewayPrefixLists ??= new GatewayPrefixLists(this, 'GatewayPrefixLists'));
    // Explicit rule resources: addEgressRule names every token peer "IndirectPeer", so the
    // second prefix list would be taken for a duplicate of the first and dropped.
    const id = Names.nodeUniqueId(group.node);
    for (const [name, prefixListId] of [['S3', lists.s3], ['DynamoDb', lists.dynamoDb]] as const) {
      new ec2.CfnSecurityGroupEgress(this, `${id}To${name}`, {
        groupId: group.securityGroupId,
        ipProtocol: 'tcp',
        fromPort: 443,
        toPort: 443,
        destinationPrefixListId: prefixListId,
        description: `HTTPS to ${name} (gateway endpoint)`,
      });
    }
  }

  /**
   * The NAT instances (decision 79): their group admits only the workload subnets, on 443
   * (the only port the workload security groups send to), and sends only HTTPS, so the
   * instance forwards nothing the NAT gateway path would not; an encrypted gp3 root
   * volume; IMDSv2 only. Their status-check alarms are not made here but by Monitoring
   * (infra/monitoring.ts, from {@link natInstances}; decision 84), with the other alarms'
   * name prefix and topic: EC2 recovers an instance whose host fails and reboots one whose
   * OS fails, and the operator is told of both, since every worker depends on it.
   */
  #hardenNatInstances(provider: ec2.NatInstanceProviderV2): ec2.Instance[] {
    const group = provider.securityGroup;
    for (const subnet of this.vpc.selectSubnets(this.workloadSubnets).subnets) {
      group.addIngressRule(ec2.Peer.ipv4(subnet.ipv4CidrBlock), ec2.Port.tcp(443), `HTTPS from the workload subnet in ${subnet.availabilityZone}`);
    }
    group.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(443), 'HTTPS out: what the workloads send, and the instance\'s own package updates');
    const instances = provider.gatewayInstances;
    for (const instance of instances) {
      // The provider takes no block devices: set them on the instance resource itself (AL2023's root is /dev/xvda).
      const cfn = instance.node.defaultChild as ec2.CfnInstance;
      cfn.blockDeviceMappings = [{ deviceName: '/dev/xvda', ebs: { encrypted: true, volumeType: 'gp3', volumeSize: NAT_INSTANCE_ROOT_GIB, deleteOnTermination: true } }];
      // IMDSv2 only (session tokens, one hop): nothing on the instance needs v1.
      cfn.metadataOptions = { httpTokens: 'required', httpPutResponseHopLimit: 1 };
      acknowledge(
        instance,
        { id: 'AwsSolutions-EC28', reason: 'NAT instance: basic (5-minute) monitoring; detailed monitoring would cost about $2.10 a month, two thirds of a t4g.nano.' },
        { id: 'AwsSolutions-EC26', reason: 'The root volume is encrypted (BlockDeviceMappings above; test/infra/lean-profile.test.ts). cdk-nag\'s rule throws on an instance without a launch template in a stack that has one (the GPU fleet\'s).' },
        { id: 'AwsSolutions-EC29', reason: 'NAT instance: a deploy replaces it when the AMI moves on (how it is patched) and stack deletion removes it; termination protection would block both.' },
      );
    }
    return instances;
  }

  /** Lets a security group reach every interface endpoint on 443. */
  allowEndpointsFrom(...peers: ec2.IConnectable[]): void {
    for (const endpoint of this.interfaceEndpoints) {
      for (const peer of peers) endpoint.connections.allowDefaultPortFrom(peer, 'HTTPS from FrameAffinity workloads');
    }
  }
}
