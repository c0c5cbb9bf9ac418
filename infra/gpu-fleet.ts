import { Annotations, Duration, Names, RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import * as autoscaling from 'aws-cdk-lib/aws-autoscaling';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ECS_LAUNCHER_ENV } from '../core/fleet/ecs/ecs-task-launcher.ts';
import { FleetTeardown } from './fleet-teardown.ts';
import { acknowledge, nagArnPrefix } from './nag.ts';
import { workerImageFromDockerfile } from './worker-image.ts';

/** The ECS agent's image pull behaviour on the GPU instances (user data). */
export const ECS_IMAGE_PULL_BEHAVIOR = 'prefer-cached';

export { WORKER_CONTAINER_NAME, HEALTH_ENV, DEFAULT_HEALTH_FILE, HEALTH_CHECK_SCRIPT, WORKER_STOP_TIMEOUT, WORKER_LOG_BUFFER } from './worker-container.ts';
import { WORKER_CONTAINER_NAME, HEALTH_ENV, DEFAULT_HEALTH_FILE, HEALTH_CHECK_SCRIPT, WORKER_STOP_TIMEOUT, WORKER_LOG_BUFFER } from './worker-container.ts';

export interface GpuFleetProps {
  readonly vpc: ec2.IVpc;
  /** Subnets of the instances and task ENIs. */
  readonly subnets: ec2.SubnetSelection;
  /** Security group of the task ENIs. */
  readonly taskSecurityGroup: ec2.ISecurityGroup;
  /** Wiring and tunables for the worker container. */
  readonly environment: Record<string, string>;
  /** Task definition family; also the prefix of the cluster and capacity provider names. */
  readonly family: string;
  /**
   * GPU instance type.
   * @default g5.xlarge
   */
  readonly instanceType?: ec2.InstanceType;
  /**
   * Several GPU instance types, in order of preference: the group becomes a
   * mixed-instances group (on-demand, prioritized), so that when one type has no capacity
   * in an AZ it launches the next. Overrides `instanceType` when it holds two or more.
   * @default [instanceType]
   */
  readonly instanceTypes?: readonly ec2.InstanceType[];
  /**
   * Most instances the capacity provider may start (one worker task per instance GPU).
   * @default 4
   */
  readonly maxInstances?: number;
  /**
   * CPU units reserved per worker task.
   * @default 3072
   */
  readonly taskCpuUnits?: number;
  /**
   * Memory reserved per worker task.
   * @default 12288
   */
  readonly taskMemoryMiB?: number;
  /**
   * Hard memory limit of the worker container (`memoryLimitMiB`): the kernel kills the
   * worker past it, never the instance's other tasks or its agent.
   * @default 14336
   */
  readonly taskMemoryLimitMiB?: number;
  /**
   * libuv's thread pool in the worker (`UV_THREADPOOL_SIZE`: decodes, sharp, DNS share it).
   * @default 16
   */
  readonly threadPoolSize?: number;
  /**
   * The GPU AMI, pinned by id; undefined: the ECS-optimized AL2023 GPU AMI, looked up once
   * and cached in cdk.context.json when the stack's account and region are known.
   */
  readonly gpuAmiId?: string;
  /**
   * Root EBS volume size (the GPU AMI and CUDA image are large).
   * @default 100
   */
  readonly rootVolumeGiB?: number;
  /**
   * How long the slot heartbeat file may go untouched before the container is unhealthy.
   * @default Duration.seconds(45)
   */
  readonly healthMaxAge?: Duration;
  /**
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Fate of the worker log group when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Container Insights (standard) on the cluster: about 20 metrics while instances run
   * (issue 44). Nothing the stack alarms on or draws reads them.
   * @default true
   */
  readonly containerInsights?: boolean;
  /**
   * The worker image. The default is built by `cdk deploy` (Docker needed); a prebuilt
   * image (`workerImageFromEcr`, context `workerImage`) needs none.
   * @default workerImageFromDockerfile(): gpu-worker/Dockerfile, linux/amd64
   */
  readonly image?: ecs.ContainerImage;
}

/** Names ECS refuses for a capacity provider, in any case. */
export const RESERVED_CAPACITY_PROVIDER_PREFIX = /^(aws|ecs|fargate)/i;

/**
 * An unnamed capacity provider gets a name from the stack name, which ECS refuses when it
 * starts with `aws`, `ecs` or `fargate` in any case (aws-cdk#29151). aws-cdk-lib 2.276
 * renames it (`cp-<unique name>`) only for a lowercase prefix (its check is case
 * sensitive; aws-cdk#36584 is open); this does the same for every case, with the name
 * aws-cdk-lib would give, so a stack it already renamed keeps its name, and any other
 * stack keeps its generated one (issue 35, item 7).
 */
function nameCapacityProviderValidly(provider: ecs.AsgCapacityProvider): void {
  const stackName = Stack.of(provider).stackName;
  if (Token.isUnresolved(stackName) || !RESERVED_CAPACITY_PROVIDER_PREFIX.test(stackName)) return;
  const cfn = provider.node.findChild(provider.node.id) as ecs.CfnCapacityProvider;
  cfn.name ??= `cp-${Names.uniqueResourceName(provider, { maxLength: 252, allowedSpecialCharacters: '-_' })}`;
}

/**
 * The ECS cluster, GPU capacity provider (scales from zero, and back to zero when the
 * workers exit for idleness), the worker task definition, and the teardown that lets the
 * stack be deleted while the fleet is in use.
 */
export class GpuFleet extends Construct {
  readonly cluster: ecs.Cluster;
  readonly capacityProvider: ecs.AsgCapacityProvider;
  readonly autoScalingGroup: autoscaling.AutoScalingGroup;
  readonly taskDefinition: ecs.Ec2TaskDefinition;
  readonly container: ecs.ContainerDefinition;
  readonly taskRole: iam.Role;
  readonly executionRole: iam.Role;
  readonly instanceRole: iam.Role;
  readonly logGroup: logs.LogGroup;
  /** Security group of the GPU container instances (the ECS agent's traffic); no egress until the network opens it. */
  readonly instanceSecurityGroup: ec2.SecurityGroup;
  /** Stops the fleet when the stack is deleted, before its cluster, capacity provider and group go. */
  readonly teardown: FleetTeardown;
  readonly #subnetIds: string[];
  readonly #taskSecurityGroup: ec2.ISecurityGroup;
  readonly #family: string;

  constructor(scope: Construct, id: string, props: GpuFleetProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.#taskSecurityGroup = props.taskSecurityGroup;
    this.#family = props.family;
    this.#subnetIds = props.vpc.selectSubnets(props.subnets).subnetIds;

    const insights = props.containerInsights ?? true;
    this.cluster = new ecs.Cluster(this, 'Cluster', { vpc: props.vpc, containerInsightsV2: insights ? ecs.ContainerInsights.ENABLED : ecs.ContainerInsights.DISABLED });
    if (!insights) {
      acknowledge(this.cluster, {
        id: 'AwsSolutions-ECS4',
        reason: 'containerInsights=false (issue 44, decision 79): no alarm or dashboard widget reads its metrics; the operator chose to save about $6 a month of them while workers run.',
      });
    }

    // The instance role gets an explicit policy (below). CDK's cluster wiring would add `ecs:Submit*`
    // and account-wide logs/ECR access to it, so the launch template gets a view that ignores additions.
    this.instanceRole = new iam.Role(this, 'InstanceRole', {
      assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
      description: 'GPU container instances: ECS agent registration and polling for this cluster only',
    });
    this.#grantAgent(this.instanceRole);
    acknowledge(this.instanceRole, {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ecs:DiscoverPollEndpoint has no resource type; IAM accepts only "*" for it. Every other agent action is scoped to this cluster.',
    });

    const instanceSecurityGroup = (this.instanceSecurityGroup = new ec2.SecurityGroup(this, 'InstanceSecurityGroup', {
      vpc: props.vpc,
      description: 'GPU container instances: no inbound; outbound HTTPS to AWS APIs',
      allowAllOutbound: false,
    }));
    // No egress of its own: the network opens what the ECS agent needs (Network.allowEndpointsFrom, restrictEgress).

    const userData = ec2.UserData.forLinux();
    userData.addCommands(
      `echo ECS_CONTAINER_STOP_TIMEOUT=${WORKER_STOP_TIMEOUT.toSeconds()}s >> /etc/ecs/ecs.config`,
      'echo ECS_ENABLE_GPU_SUPPORT=true >> /etc/ecs/ecs.config',
      // Tasks have their own ENI; they get credentials from the agent, never from the instance.
      'echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config',
      // A replacement task on a warm instance uses the image already there: the default
      // behaviour pulls it again on every start, seconds on the failover path (issue 42;
      // docs/deploy.md "Failover on AWS's timeline"). Safe because every release is a new
      // image tag/digest in the task definition, so a cached image is never a stale one.
      `echo ECS_IMAGE_PULL_BEHAVIOR=${ECS_IMAGE_PULL_BEHAVIOR} >> /etc/ecs/ecs.config`,
    );
    const instanceTypes = props.instanceTypes?.length ? props.instanceTypes : [props.instanceType ?? new ec2.InstanceType('g5.xlarge')];
    const launchTemplate = new ec2.LaunchTemplate(this, 'LaunchTemplate', {
      machineImage: gpuMachineImage(this, props.gpuAmiId),
      instanceType: instanceTypes[0],
      role: this.instanceRole.withoutPolicyUpdates(),
      securityGroup: instanceSecurityGroup,
      userData,
      requireImdsv2: true,
      httpPutResponseHopLimit: 1,
      detailedMonitoring: true,
      blockDevices: [
        {
          deviceName: '/dev/xvda',
          volume: ec2.BlockDeviceVolume.ebs(props.rootVolumeGiB ?? 100, { encrypted: true, volumeType: ec2.EbsDeviceVolumeType.GP3 }),
        },
      ],
    });

    // No instance when no task: minimum 0 and no desired capacity (CloudFormation starts at
    // the minimum; the capacity provider sets it from then on).
    // With several types, a prioritized on-demand mixed-instances policy: an
    // InsufficientInstanceCapacity for the first type in an AZ makes the group try the
    // next one there, instead of leaving tasks in PROVISIONING until capacity returns.
    const capacity: Pick<autoscaling.AutoScalingGroupProps, 'launchTemplate' | 'mixedInstancesPolicy'> =
      instanceTypes.length > 1
        ? {
            mixedInstancesPolicy: {
              launchTemplate,
              launchTemplateOverrides: instanceTypes.map((instanceType) => ({ instanceType })),
              instancesDistribution: {
                onDemandBaseCapacity: 0,
                onDemandPercentageAboveBaseCapacity: 100,
                onDemandAllocationStrategy: autoscaling.OnDemandAllocationStrategy.PRIORITIZED,
              },
            },
          }
        : { launchTemplate };
    this.autoScalingGroup = new autoscaling.AutoScalingGroup(this, 'Instances', {
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      ...capacity,
      minCapacity: 0,
      maxCapacity: props.maxInstances ?? 4,
    });
    if (instanceTypes.length > 1) {
      acknowledge(this.autoScalingGroup, {
        id: 'AwsSolutions-EC26',
        reason: 'The launch template encrypts the root volume (test/infra/stack.test.ts); cdk-nag cannot follow the launch template reference inside a mixed-instances policy.',
      });
    }
    acknowledge(
      this.autoScalingGroup,
      {
        id: 'AwsSolutions-AS3',
        reason: 'Scaling is driven by the ECS capacity provider; its events are visible in ECS and the dashboard shows live slots. Per-instance notifications would only add noise.',
      },
    );

    // Scale to zero: a worker exits when idle (workerIdleExitSeconds), and managed scaling
    // at a 100 % target wants exactly the instances that tasks need, so with no task it
    // scales the group in to zero. Managed termination protection protects only
    // instances that run a task: ECS sets scale-in protection when it places a task and
    // removes it once the instance's last task has stopped, so an idle instance is retired
    // and a busy one never is. (Stack deletion removes the protection itself: FleetTeardown.)
    this.capacityProvider = new ecs.AsgCapacityProvider(this, 'CapacityProvider', {
      autoScalingGroup: this.autoScalingGroup,
      enableManagedScaling: true,
      enableManagedTerminationProtection: true,
      minimumScalingStepSize: 1,
      targetCapacityPercent: 100,
      machineImageType: ecs.MachineImageType.AMAZON_LINUX_2,
    });
    nameCapacityProviderValidly(this.capacityProvider);
    this.cluster.addAsgCapacityProvider(this.capacityProvider);

    this.logGroup = new logs.LogGroup(this, 'WorkerLogs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    // Both roles may be assumed by ECS only on behalf of this account's tasks in this
    // region (confused-deputy protection; ECS sets both keys for task and execution roles).
    const ecsTasksHere = () =>
      new iam.ServicePrincipal('ecs-tasks.amazonaws.com', {
        conditions: {
          ArnLike: { 'aws:SourceArn': `arn:${stack.partition}:ecs:${stack.region}:${stack.account}:*` },
          StringEquals: { 'aws:SourceAccount': stack.account },
        },
      });
    this.taskRole = new iam.Role(this, 'TaskRole', {
      assumedBy: ecsTasksHere(),
      description: 'GPU worker task: frames, models, leases/results tables, slot queues',
    });
    this.executionRole = new iam.Role(this, 'ExecutionRole', {
      assumedBy: ecsTasksHere(),
      description: 'GPU worker task execution: image pull and awslogs',
    });

    this.taskDefinition = new ecs.Ec2TaskDefinition(this, 'Worker', {
      family: props.family,
      networkMode: ecs.NetworkMode.AWS_VPC,
      taskRole: this.taskRole,
      executionRole: this.executionRole,
    });
    const healthMaxAge = props.healthMaxAge ?? Duration.seconds(45);
    this.container = this.taskDefinition.addContainer(WORKER_CONTAINER_NAME, {
      image: props.image ?? workerImageFromDockerfile(),
      essential: true,
      gpuCount: 1,
      // tini in front of node: forwards SIGTERM for the drain and reaps children.
      linuxParameters: new ecs.LinuxParameters(this, 'WorkerLinux', { initProcessEnabled: true }),
      cpu: props.taskCpuUnits ?? 3072,
      memoryReservationMiB: props.taskMemoryMiB ?? 12288,
      // A hard limit too: without one, segment decoders that outgrow the reservation take the instance's memory.
      memoryLimitMiB: props.taskMemoryLimitMiB ?? 14336,
      stopTimeout: WORKER_STOP_TIMEOUT,
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: 'worker', mode: ecs.AwsLogDriverMode.NON_BLOCKING, maxBufferSize: WORKER_LOG_BUFFER }),
      environment: {
        ...props.environment,
        [HEALTH_ENV.file]: DEFAULT_HEALTH_FILE,
        [HEALTH_ENV.maxAgeSeconds]: String(healthMaxAge.toSeconds()),
        // aws-embedded-metrics would look for a CloudWatch agent sidecar on ECS; stdout EMF via awslogs needs none.
        AWS_EMF_ENVIRONMENT: 'Local',
        // Read by libuv when the pool first starts: before the worker's first decode.
        UV_THREADPOOL_SIZE: String(props.threadPoolSize ?? 16),
      },
      healthCheck: {
        command: ['CMD', 'node', '-e', HEALTH_CHECK_SCRIPT],
        interval: Duration.seconds(15),
        timeout: Duration.seconds(5),
        retries: 3,
        startPeriod: Duration.seconds(120),
      },
    });
    acknowledge(this.executionRole, {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ecr:GetAuthorizationToken (added by CDK for the image pull) has no resource type; IAM accepts only "*". Layer pulls are scoped to the image\'s repository.',
    });
    acknowledge(this.taskDefinition, {
      id: 'AwsSolutions-ECS2',
      reason: 'The environment holds only resource names, URLs and tunables (see core/config.ts); there are no secrets to move to Secrets Manager.',
    });

    this.teardown = new FleetTeardown(this, 'Teardown', {
      cluster: this.cluster,
      autoScalingGroup: this.autoScalingGroup,
      capacityProvider: this.capacityProvider,
      ...(props.logRetention !== undefined ? { logRetention: props.logRetention } : {}),
      ...(props.removalPolicy !== undefined ? { removalPolicy: props.removalPolicy } : {}),
    });
    // The instances' egress rules (to the endpoints) must outlive the teardown's drain.
    this.teardown.outlives(instanceSecurityGroup);
  }

  /** Subnet ids of the task ENIs. */
  get subnetIds(): readonly string[] {
    return this.#subnetIds;
  }

  /** Environment for {@link ecsTaskLauncherFromEnv} (router and janitor). */
  launcherEnvironment(): Record<string, string> {
    return {
      [ECS_LAUNCHER_ENV.cluster]: this.cluster.clusterArn,
      // The exact revision: RunTask is granted on it alone, and a stack update rolls both forward together.
      [ECS_LAUNCHER_ENV.taskDefinition]: this.taskDefinition.taskDefinitionArn,
      [ECS_LAUNCHER_ENV.containerName]: WORKER_CONTAINER_NAME,
      [ECS_LAUNCHER_ENV.capacityProvider]: this.capacityProvider.capacityProviderName,
      [ECS_LAUNCHER_ENV.subnets]: this.#subnetIds.join(','),
      [ECS_LAUNCHER_ENV.securityGroups]: this.#taskSecurityGroup.securityGroupId,
    };
  }

  /**
   * Start worker tasks: ecs:RunTask on the revisions of this task definition family in this
   * cluster only, and iam:PassRole on its two roles, only towards ECS tasks.
   *
   * On stack deletion the grantee (its function, rules and event source) and its role are
   * deleted before the fleet teardown runs (they depend on it): a router or janitor can
   * then no longer start a task behind the teardown, for instance the janitor replacing
   * a worker the teardown has just stopped.
   */
  grantLaunch(grantee: iam.IGrantable): iam.Grant {
    // Every revision of this family, not the one revision: a deploy that makes a new
    // revision updates the grantee's policy before its function (the function depends on
    // it), so for that window, and while IAM propagates, a launcher still on the previous
    // revision (or one already on the new) would meet AccessDenied and raise
    // TaskLaunchFailures (issue 35, docs/deploy.md §13). The environment still names the
    // exact revision; the family is this stack's (`<namePrefix>-worker`).
    const stack = Stack.of(this);
    const family = stack.formatArn({ service: 'ecs', resource: 'task-definition', resourceName: `${this.#family}:*` });
    const run = iam.Grant.addToPrincipal({
      grantee,
      actions: ['ecs:RunTask'],
      resourceArns: [family],
      conditions: { ArnEquals: { 'ecs:cluster': this.cluster.clusterArn } },
    });
    const principal = grantee.grantPrincipal;
    if (Construct.isConstruct(principal)) {
      acknowledge(principal, {
        id: `AwsSolutions-IAM5[Resource::${nagArnPrefix(stack, 'ecs')}task-definition/${this.#family}:*]`,
        reason: 'RunTask on the revisions of this stack\'s worker task definition family only (and in this cluster only, ecs:cluster): during a deploy the previous and the new revision must both be launchable.',
      });
    }
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['iam:PassRole'],
      resourceArns: [this.taskRole.roleArn, this.executionRole.roleArn],
      conditions: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } },
    });
    // The grant's own dependables are filled only at synthesis (policy splitting), so the
    // order is set on the grantee (a Router or Janitor construct: function, rules, event
    // source) and on its principal (the role holding the policy).
    this.teardown.runsAfter(...new Set([grantee, grantee.grantPrincipal].filter((c) => Construct.isConstruct(c))));
    return run;
  }

  /**
   * Read the state of worker tasks in this cluster (ecs:DescribeTasks): the janitor checks
   * launches still starting, so one whose task stopped before its first heartbeat is
   * retried within a period instead of after `taskStartGraceSeconds`.
   */
  grantDescribeTasks(grantee: iam.IGrantable & { readonly node?: unknown }): iam.Grant {
    const stack = Stack.of(this);
    const grant = iam.Grant.addToPrincipal({
      grantee,
      actions: ['ecs:DescribeTasks'],
      resourceArns: [stack.formatArn({ service: 'ecs', resource: 'task', resourceName: `${this.cluster.clusterName}/*` })],
      conditions: { ArnEquals: { 'ecs:cluster': this.cluster.clusterArn } },
    });
    const principal = grantee.grantPrincipal;
    if (principal instanceof iam.Role) {
      const clusterId = stack.getLogicalId(this.cluster.node.defaultChild as ecs.CfnCluster);
      acknowledge(principal, {
        id: `AwsSolutions-IAM5[Resource::${nagArnPrefix(stack, 'ecs')}task/<${clusterId}>/*]`,
        reason: 'Task ids are made at launch; the ARN pattern and the ecs:cluster condition limit describing to tasks of this cluster (read only).',
      });
    }
    return grant;
  }

  // What AmazonEC2ContainerServiceforEC2Role gives the ECS agent, with actions spelled out and scoped to this cluster.
  #grantAgent(role: iam.Role): void {
    const stack = Stack.of(this);
    const containerInstances = `arn:${stack.partition}:ecs:${stack.region}:${stack.account}:container-instance/${this.cluster.clusterName}/*`;
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: [
          'ecs:RegisterContainerInstance',
          'ecs:DeregisterContainerInstance',
          'ecs:SubmitAttachmentStateChanges',
          'ecs:SubmitContainerStateChange',
          'ecs:SubmitTaskStateChange',
        ],
        resources: [this.cluster.clusterArn],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['ecs:Poll', 'ecs:StartTelemetrySession', 'ecs:UpdateContainerInstancesState'],
        resources: [containerInstances],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['ecs:TagResource'],
        resources: [containerInstances],
        conditions: { StringEquals: { 'ecs:CreateAction': 'RegisterContainerInstance' } },
      }),
    );
    acknowledge(role, {
      id: `AwsSolutions-IAM5[Resource::${nagArnPrefix(Stack.of(this), 'ecs')}container-instance/<${Stack.of(this).getLogicalId(this.cluster.node.defaultChild as ecs.CfnCluster)}>/*]`,
      reason: 'Container instances get their ids when they register; the ARN pattern is limited to instances of this cluster.',
    });
    // DiscoverPollEndpoint has no resource type: IAM only accepts "*" for it.
    role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['ecs:DiscoverPollEndpoint'], resources: ['*'] }));
  }
}

/**
 * The GPU AMI, resolved once and kept (issue 43, item 4): an AMI id when one is pinned; else
 * the ECS-optimized AL2023 GPU AMI's SSM parameter, looked up at synth and cached in
 * cdk.context.json (`cachedInContext`) when the stack's account and region are known, so a
 * redeploy launches the same AMI until `cdk context --reset` moves it on. An
 * environment-agnostic stack cannot look up: it resolves the parameter at each deploy
 * (a new AMI replaces the launch template's version), which a warning says.
 */
function gpuMachineImage(scope: Construct, gpuAmiId: string | undefined): ec2.IMachineImage {
  if (gpuAmiId) {
    const userData = ec2.UserData.forLinux();
    return { getImage: () => ({ imageId: gpuAmiId, osType: ec2.OperatingSystemType.LINUX, userData }) };
  }
  const stack = Stack.of(scope);
  const known = !Token.isUnresolved(stack.account) && !Token.isUnresolved(stack.region);
  if (!known) {
    Annotations.of(scope).addWarningV2(
      'frame-affinity:gpu-ami-floats',
      'The GPU AMI is resolved from its SSM parameter at every deploy (the stack has no account and region to look it up once): set -c gpuAmiId=ami-... or deploy with an account and region to pin it in cdk.context.json',
    );
  }
  return ecs.EcsOptimizedImage.amazonLinux2023(ecs.AmiHardwareType.GPU, { cachedInContext: known });
}
