import { CustomResource, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type * as autoscaling from 'aws-cdk-lib/aws-autoscaling';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct, type IConstruct } from 'constructs';
import { TEARDOWN_PROPERTIES } from '../functions/teardown/properties.ts';
import { buildServiceFunction } from './lambda-defaults.ts';
import { acknowledge, nagArnPrefix } from './nag.ts';

/** CloudFormation type of the teardown resource. */
export const FLEET_TEARDOWN_RESOURCE_TYPE = 'Custom::FleetTeardown';

/**
 * How long the teardown may wait for worker tasks to stop: their drain (stop timeout,
 * 120 s) with room for ECS to deprovision them, below Lambda's 15-minute limit.
 */
export const FLEET_TEARDOWN_TIMEOUT = Duration.minutes(10);

export interface FleetTeardownProps {
  readonly cluster: ecs.ICluster;
  readonly autoScalingGroup: autoscaling.AutoScalingGroup;
  /** Deleted only after the teardown has run (with the cluster and the group). */
  readonly capacityProvider: ecs.AsgCapacityProvider;
  /**
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Fate of the log groups when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * Makes `cdk destroy` succeed on a used stack (aws-cdk#18179): a custom resource that,
 * when the stack is deleted, sets the GPU Auto Scaling group to zero, stops the cluster's
 * worker tasks and waits for them, and removes the instances' scale-in protection
 * (functions/teardown/handler.ts), before CloudFormation deletes the capacity provider,
 * the group and the cluster (it depends on all three, and CloudFormation deletes
 * dependents first). Call {@link runsAfter} with whatever could start a task, so that
 * it is gone before the teardown runs.
 */
export class FleetTeardown extends Construct {
  readonly function: nodejs.NodejsFunction;
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: FleetTeardownProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.function = buildServiceFunction(this, 'Function', {
      entry: 'functions/teardown/handler.ts',
      description: 'FrameAffinity fleet teardown on stack deletion: GPU group to zero, tasks stopped, instances unprotected',
      environment: { POWERTOOLS_SERVICE_NAME: 'teardown' },
      timeout: FLEET_TEARDOWN_TIMEOUT,
      memorySize: 256,
      logRetention,
      removalPolicy,
    });
    const role = this.function.role!;
    const clusterName = props.cluster.clusterName;
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['ecs:ListTasks'],
        resources: ['*'],
        conditions: { ArnEquals: { 'ecs:cluster': props.cluster.clusterArn } },
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['ecs:StopTask', 'ecs:DescribeTasks'],
        resources: [`arn:${stack.partition}:ecs:${stack.region}:${stack.account}:task/${clusterName}/*`],
        conditions: { ArnEquals: { 'ecs:cluster': props.cluster.clusterArn } },
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['autoscaling:UpdateAutoScalingGroup', 'autoscaling:SetInstanceProtection'],
        resources: [props.autoScalingGroup.autoScalingGroupArn],
      }),
    );
    // Describe* has no resource-level permissions in Auto Scaling.
    role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['autoscaling:DescribeAutoScalingGroups'], resources: ['*'] }));
    const clusterId = stack.getLogicalId(props.cluster.node.defaultChild as ecs.CfnCluster);
    const groupId = stack.getLogicalId(props.autoScalingGroup.node.defaultChild as autoscaling.CfnAutoScalingGroup);
    acknowledge(
      role,
      {
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'ecs:ListTasks is limited by the ecs:cluster condition to this cluster, and autoscaling:DescribeAutoScalingGroups has no resource-level permissions (read only).',
      },
      {
        id: `AwsSolutions-IAM5[Resource::${nagArnPrefix(stack, 'ecs')}task/<${clusterId}>/*]`,
        reason: 'Task ids are made at launch; the ARN pattern (and the ecs:cluster condition) limits stopping and describing to tasks of this cluster.',
      },
      {
        id: `AwsSolutions-IAM5[Resource::${nagArnPrefix(stack, 'autoscaling')}autoScalingGroup:*:autoScalingGroupName/<${groupId}>]`,
        reason: 'The group ARN holds a UUID CloudFormation does not expose; the pattern names this group exactly.',
      },
    );

    // The framework's own function gets a role that writes only to its log group, in
    // place of the AWS-managed basic execution role the Provider would attach.
    const frameworkLogs = new logs.LogGroup(this, 'ProviderLogs', { retention: logRetention, removalPolicy });
    const frameworkRole = new iam.Role(this, 'ProviderRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'FrameAffinity fleet teardown: custom resource provider framework (invokes the teardown function)',
    });
    frameworkRole.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [frameworkLogs.logGroupArn] }));
    const provider = new cr.Provider(this, 'Provider', {
      onEventHandler: this.function,
      frameworkOnEventRole: frameworkRole,
      logGroup: frameworkLogs,
    });
    const fnId = stack.getLogicalId(this.function.node.defaultChild as never);
    acknowledge(frameworkRole, {
      id: `AwsSolutions-IAM5[Resource::<${fnId}.Arn>:*]`,
      reason: 'Added by the custom resource Provider framework: invoking any version or alias of the teardown function, and nothing else.',
    });

    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: provider.serviceToken,
      resourceType: FLEET_TEARDOWN_RESOURCE_TYPE,
      properties: {
        [TEARDOWN_PROPERTIES.cluster]: props.cluster.clusterArn,
        [TEARDOWN_PROPERTIES.autoScalingGroupName]: props.autoScalingGroup.autoScalingGroupName,
      },
    });
    // Deleted before all of these (the cluster's capacity-provider association included).
    this.resource.node.addDependency(props.cluster, props.autoScalingGroup, props.capacityProvider);
  }

  /**
   * Orders the teardown before `constructs` on stack deletion (it depends on them, so
   * CloudFormation deletes them only after it has finished): the network the draining
   * workers and the ECS agent need while it runs, that is the VPC endpoints, their
   * security groups and rules, and with NAT the gateway and its routes (issue 23: deleted
   * in parallel, they took `ecs`, SQS, DynamoDB and logs away from the drain, the
   * teardown timed out and the protected instances kept the group alive).
   */
  outlives(...constructs: IConstruct[]): void {
    this.resource.node.addDependency(...constructs);
  }

  /**
   * Orders the teardown after `constructs` on stack deletion: they are deleted first, so
   * (for an IAM policy that grants ecs:RunTask) nothing can start a task behind it.
   */
  runsAfter(...constructs: IConstruct[]): void {
    for (const c of constructs) c.node.addDependency(this.resource);
  }
}
