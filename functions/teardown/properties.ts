/**
 * The contract between the fleet-teardown custom resource (infra/fleet-teardown.ts) and
 * its handler (./handler.ts), kept apart so the CDK app need not import the handler.
 */

/** Properties of the custom resource. */
export const TEARDOWN_PROPERTIES = {
  /** The ECS cluster of the worker tasks (ARN). */
  cluster: 'ClusterArn',
  /** The GPU Auto Scaling group (name). */
  autoScalingGroupName: 'AutoScalingGroupName',
} as const;
