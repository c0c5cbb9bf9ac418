/**
 * Fleet teardown: the onEvent handler of a custom resource (aws-cdk-lib `custom_resources.Provider`)
 * that lets `cdk destroy` finish on a stack whose GPU fleet has been used (aws-cdk#18179).
 *
 * Why it is needed: with managed termination protection the Auto Scaling group's instances
 * are protected from scale-in, so CloudFormation's deletion of the group waits on
 * instances it may not terminate; and the capacity provider cannot be detached from the
 * cluster while worker tasks still run on it. Nothing in the stack stops a busy worker.
 *
 * On Delete (the stack orders it after the router's and janitor's RunTask permission is
 * gone, and before the capacity provider, the group and the cluster are deleted):
 *   1. the group's minimum, maximum and desired capacity go to 0, so no instance starts;
 *   2. every task of the cluster is stopped (SIGTERM: workers drain and hand their videos
 *      off), and the handler waits until none is left running or stopping;
 *   3. scale-in protection is removed from the group's instances, so the group can
 *      terminate them.
 * Create and Update do nothing. Everything it touches may already be gone: a missing
 * cluster or group counts as done.
 */
import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda';
import { ClusterNotFoundException, DescribeTasksCommand, ECSClient, ListTasksCommand, StopTaskCommand, type DesiredStatus } from '@aws-sdk/client-ecs';
import { AutoScalingClient, DescribeAutoScalingGroupsCommand, SetInstanceProtectionCommand, UpdateAutoScalingGroupCommand } from '@aws-sdk/client-auto-scaling';
import { Logger } from '@aws-lambda-powertools/logger';
import { TEARDOWN_PROPERTIES } from './properties.ts';
import { sleep as sleepMs } from '../../core/async.ts';

export { TEARDOWN_PROPERTIES };

/** Reason recorded on every task this stops (visible in ECS and the task-stopped event). */
export const TEARDOWN_STOP_REASON = 'FrameAffinity stack deletion: fleet teardown';

/** How long the handler keeps for itself after its waiting ends (to report before the Lambda timeout). */
export const TEARDOWN_MARGIN_MS = 30_000;

/** Instances per SetInstanceProtection call (the API's limit). */
const PROTECTION_BATCH = 50;
/** Tasks per DescribeTasks call (the API's limit). */
const DESCRIBE_BATCH = 100;

export interface FleetTeardownDeps {
  readonly ecs: ECSClient;
  readonly autoScaling: AutoScalingClient;
  /** Cluster name or ARN. */
  readonly cluster: string;
  readonly autoScalingGroupName: string;
  /** Give up (throw) once this time has passed with tasks still active. */
  readonly deadlineMs: number;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Between checks while tasks stop. @default 5000 */
  readonly pollMs?: number;
  readonly log?: (message: string, fields?: Record<string, unknown>) => void;
}

export interface FleetTeardownReport {
  /** StopTask calls made (a task still running at a later check is stopped again). */
  readonly tasksStopped: number;
  /** Instances whose scale-in protection was removed. */
  readonly instancesUnprotected: number;
  /** Checks made until no task was left running or stopping. */
  readonly checks: number;
}

/** Stops the fleet so that CloudFormation can delete the capacity provider, the group and the cluster. */
export async function teardownFleet(d: FleetTeardownDeps): Promise<FleetTeardownReport> {
  const now = d.now ?? Date.now;
  const sleep = d.sleep ?? sleepMs;
  const log = d.log ?? (() => {});
  const groupExists = await scaleGroupToZero(d);
  log('auto scaling group capacity set to 0', { autoScalingGroupName: d.autoScalingGroupName, found: groupExists });
  let tasksStopped = 0;
  let checks = 0;
  for (;;) {
    checks++;
    // Stop whatever runs (a task placed before the capacity went to 0 included), then
    // count what is still stopping: only a fully stopped task releases the capacity provider.
    const running = await listTasks(d, 'RUNNING');
    for (const task of running) {
      await d.ecs.send(new StopTaskCommand({ cluster: d.cluster, task, reason: TEARDOWN_STOP_REASON }));
      tasksStopped++;
    }
    const stopping = running.length > 0 ? running.length : await countStopping(d);
    log('fleet teardown check', { running: running.length, stopping });
    if (stopping === 0) break;
    if (now() >= d.deadlineMs) {
      throw new Error(
        `${stopping} worker task(s) of ${d.cluster} are still running or stopping; run the deletion again once they have stopped (they drain for up to 120 s)`,
      );
    }
    await sleep(d.pollMs ?? 5_000);
  }
  const instancesUnprotected = groupExists ? await unprotectInstances(d) : 0;
  log('fleet torn down', { tasksStopped, instancesUnprotected, checks });
  return { tasksStopped, instancesUnprotected, checks };
}

/** Sets the group's capacity to 0; false when the group no longer exists. */
async function scaleGroupToZero(d: FleetTeardownDeps): Promise<boolean> {
  try {
    await d.autoScaling.send(new UpdateAutoScalingGroupCommand({ AutoScalingGroupName: d.autoScalingGroupName, MinSize: 0, MaxSize: 0, DesiredCapacity: 0 }));
    return true;
  } catch (e) {
    if (isGroupMissing(e)) return false;
    throw e;
  }
}

/** Task ARNs of the cluster with this desired status; none when the cluster is gone. */
async function listTasks(d: FleetTeardownDeps, desiredStatus: DesiredStatus): Promise<string[]> {
  const arns: string[] = [];
  let nextToken: string | undefined;
  try {
    do {
      const page = await d.ecs.send(new ListTasksCommand({ cluster: d.cluster, desiredStatus, nextToken }));
      arns.push(...(page.taskArns ?? []));
      nextToken = page.nextToken;
    } while (nextToken);
  } catch (e) {
    if (e instanceof ClusterNotFoundException || (e as Error)?.name === 'ClusterNotFoundException') return [];
    throw e;
  }
  return arns;
}

/** Tasks told to stop that have not reached STOPPED yet (still draining). */
async function countStopping(d: FleetTeardownDeps): Promise<number> {
  const arns = await listTasks(d, 'STOPPED');
  let stopping = 0;
  for (let i = 0; i < arns.length; i += DESCRIBE_BATCH) {
    const r = await d.ecs.send(new DescribeTasksCommand({ cluster: d.cluster, tasks: arns.slice(i, i + DESCRIBE_BATCH) }));
    stopping += (r.tasks ?? []).filter((t) => t.lastStatus !== 'STOPPED').length;
  }
  return stopping;
}

/** Removes scale-in protection from every instance of the group that has it. */
async function unprotectInstances(d: FleetTeardownDeps): Promise<number> {
  const r = await d.autoScaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [d.autoScalingGroupName] }));
  const ids = (r.AutoScalingGroups?.[0]?.Instances ?? []).filter((i) => i.ProtectedFromScaleIn && i.InstanceId).map((i) => i.InstanceId!);
  for (let i = 0; i < ids.length; i += PROTECTION_BATCH) {
    await d.autoScaling.send(
      new SetInstanceProtectionCommand({ AutoScalingGroupName: d.autoScalingGroupName, InstanceIds: ids.slice(i, i + PROTECTION_BATCH), ProtectedFromScaleIn: false }),
    );
  }
  return ids.length;
}

/** Auto Scaling reports an unknown group as a ValidationError naming it "not found". */
function isGroupMissing(e: unknown): boolean {
  const err = e as { name?: string; message?: string };
  return err?.name === 'ValidationError' && /not found/i.test(err.message ?? '');
}

const logger = new Logger({ serviceName: 'teardown' });

/** Provider framework onEvent handler: tears the fleet down on Delete, does nothing otherwise. */
export const handler = async (event: CloudFormationCustomResourceEvent, context?: Context): Promise<{ PhysicalResourceId?: string; Data?: Record<string, number> }> => {
  if (context) logger.addContext(context);
  // Create: the framework uses the request id; Update: keeping the id means CloudFormation
  // never sends a Delete for a replaced id, which would stop a live fleet.
  if (event.RequestType !== 'Delete') return {};
  const props = event.ResourceProperties;
  const remainingMs = context?.getRemainingTimeInMillis() ?? 600_000;
  const report = await teardownFleet({
    ecs: new ECSClient({}),
    autoScaling: new AutoScalingClient({}),
    cluster: String(props[TEARDOWN_PROPERTIES.cluster]),
    autoScalingGroupName: String(props[TEARDOWN_PROPERTIES.autoScalingGroupName]),
    deadlineMs: Date.now() + remainingMs - TEARDOWN_MARGIN_MS,
    log: (message, fields) => logger.info(message, fields ?? {}),
  });
  return { PhysicalResourceId: event.PhysicalResourceId, Data: { ...report } };
};
