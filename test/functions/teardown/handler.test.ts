/**
 * The fleet-teardown custom resource's handler (functions/teardown/handler.ts) against
 * mocked ECS and Auto Scaling (no emulator exists for either): what it calls, in which
 * order, and when it gives up.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import 'aws-sdk-client-mock-vitest/extend';
import { mockClient } from 'aws-sdk-client-mock';
import { ClusterNotFoundException, DescribeTasksCommand, ECSClient, ListTasksCommand, StopTaskCommand } from '@aws-sdk/client-ecs';
import { AutoScalingClient, DescribeAutoScalingGroupsCommand, SetInstanceProtectionCommand, UpdateAutoScalingGroupCommand } from '@aws-sdk/client-auto-scaling';
import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda';
import type { FleetTeardownDeps } from '../../../functions/teardown/handler.ts';

// The handler's Powertools logger is made at import: keep its lines out of the test output.
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
const { TEARDOWN_PROPERTIES, TEARDOWN_STOP_REASON, handler, teardownFleet } = await import('../../../functions/teardown/handler.ts');

const ecsMock = mockClient(ECSClient);
const asgMock = mockClient(AutoScalingClient);

const CLUSTER = 'arn:aws:ecs:us-east-1:111122223333:cluster/FrameAffinity-Cluster';
const GROUP = 'FrameAffinity-FleetInstancesASG-XYZ';

/** Every call to either service, in the order made. */
let journal: string[];
/** A clock that only moves when the code under test sleeps. */
let clock: number;

function deps(overrides: Partial<FleetTeardownDeps> = {}): FleetTeardownDeps {
  return {
    ecs: new ECSClient({ region: 'us-east-1' }),
    autoScaling: new AutoScalingClient({ region: 'us-east-1' }),
    cluster: CLUSTER,
    autoScalingGroupName: GROUP,
    deadlineMs: 600_000,
    now: () => clock,
    sleep: async (ms) => {
      journal.push(`sleep ${ms}`);
      clock += ms;
    },
    pollMs: 5_000,
    ...overrides,
  };
}

function instances(count: number, isProtected: (i: number) => boolean) {
  return Array.from({ length: count }, (_, i) => ({ InstanceId: `i-${i}`, ProtectedFromScaleIn: isProtected(i), AvailabilityZone: 'us-east-1a', LifecycleState: 'InService' as const, HealthStatus: 'Healthy' }));
}

beforeEach(() => {
  ecsMock.reset();
  asgMock.reset();
  journal = [];
  clock = 0;
  asgMock.on(UpdateAutoScalingGroupCommand).callsFake(() => void journal.push('asg capacity 0'));
  asgMock.on(SetInstanceProtectionCommand).callsFake((input: { InstanceIds: string[] }) => void journal.push(`unprotect ${input.InstanceIds.length}`));
  ecsMock.on(StopTaskCommand).callsFake((input: { task: string }) => void journal.push(`stop ${input.task}`));
});

describe('teardownFleet', () => {
  it('sets the group to zero, stops every task, waits until they have stopped, then unprotects the protected instances', async () => {
    // Prepare: three running tasks over two pages; after the stop they drain for two checks
    let listRunning = 0;
    ecsMock.on(ListTasksCommand, { desiredStatus: 'RUNNING' }).callsFake((input: { nextToken?: string }) => {
      journal.push('list running');
      listRunning++;
      if (listRunning > 2) return { taskArns: [] };
      return input.nextToken ? { taskArns: ['t3'] } : { taskArns: ['t1', 't2'], nextToken: 'page2' };
    });
    ecsMock.on(ListTasksCommand, { desiredStatus: 'STOPPED' }).resolves({ taskArns: ['t1', 't2', 't3', 'old'] });
    let describes = 0;
    ecsMock.on(DescribeTasksCommand).callsFake(() => {
      describes++;
      journal.push('describe');
      const draining = describes === 1 ? ['t1', 't2'] : [];
      return { tasks: ['t1', 't2', 't3', 'old'].map((taskArn) => ({ taskArn, lastStatus: draining.includes(taskArn) ? 'DEACTIVATING' : 'STOPPED' })) };
    });
    asgMock.on(DescribeAutoScalingGroupsCommand).resolves({
      AutoScalingGroups: [{ AutoScalingGroupName: GROUP, MinSize: 0, MaxSize: 0, DesiredCapacity: 0, DefaultCooldown: 300, AvailabilityZones: [], HealthCheckType: 'EC2', CreatedTime: new Date(), Instances: instances(62, (i) => i !== 5) }],
    });

    // Act
    const report = await teardownFleet(deps());

    // Assess: the order is what lets CloudFormation delete the rest
    expect(journal).toEqual([
      'asg capacity 0',
      'list running',
      'list running',
      'stop t1',
      'stop t2',
      'stop t3',
      'sleep 5000',
      'list running',
      'describe',
      'sleep 5000',
      'list running',
      'describe',
      'unprotect 50',
      'unprotect 11',
    ]);
    expect(asgMock).toHaveReceivedCommandWith(UpdateAutoScalingGroupCommand, { AutoScalingGroupName: GROUP, MinSize: 0, MaxSize: 0, DesiredCapacity: 0 });
    expect(ecsMock).toHaveReceivedCommandWith(StopTaskCommand, { cluster: CLUSTER, task: 't1', reason: TEARDOWN_STOP_REASON });
    const unprotected = asgMock.commandCalls(SetInstanceProtectionCommand).flatMap((c) => c.args[0].input.InstanceIds ?? []);
    expect(unprotected).toHaveLength(61);
    expect(unprotected).not.toContain('i-5');
    expect(asgMock).toHaveReceivedCommandWith(SetInstanceProtectionCommand, { AutoScalingGroupName: GROUP, ProtectedFromScaleIn: false });
    expect(report).toEqual({ tasksStopped: 3, instancesUnprotected: 61, checks: 3 });
  });

  it('counts a cluster and a group that are already gone as done', async () => {
    // Prepare
    asgMock.on(UpdateAutoScalingGroupCommand).rejects(Object.assign(new Error(`AutoScalingGroup name not found - AutoScalingGroup ${GROUP} not found`), { name: 'ValidationError' }));
    ecsMock.on(ListTasksCommand).rejects(new ClusterNotFoundException({ message: 'Cluster not found.', $metadata: {} }));

    // Act
    const report = await teardownFleet(deps());

    // Assess
    expect(report).toEqual({ tasksStopped: 0, instancesUnprotected: 0, checks: 1 });
    expect(asgMock).not.toHaveReceivedCommand(DescribeAutoScalingGroupsCommand);
    expect(asgMock).not.toHaveReceivedCommand(SetInstanceProtectionCommand);
  });

  it('fails, naming the tasks, when they are still stopping at the deadline, and leaves instance protection alone', async () => {
    // Prepare: a task that never finishes draining
    ecsMock.on(ListTasksCommand, { desiredStatus: 'RUNNING' }).resolves({ taskArns: [] });
    ecsMock.on(ListTasksCommand, { desiredStatus: 'STOPPED' }).resolves({ taskArns: ['stuck'] });
    ecsMock.on(DescribeTasksCommand).resolves({ tasks: [{ taskArn: 'stuck', lastStatus: 'DEPROVISIONING' }] });

    // Act
    const run = teardownFleet(deps({ deadlineMs: 20_000 }));

    // Assess
    await expect(run).rejects.toThrow(/1 worker task\(s\) of .*FrameAffinity-Cluster are still running or stopping/);
    expect(clock).toBe(20_000);
    expect(asgMock).not.toHaveReceivedCommand(SetInstanceProtectionCommand);
  });

  it('does not hide other errors (an access denied stops the deletion instead of skipping the teardown)', async () => {
    // Prepare
    ecsMock.on(ListTasksCommand).rejects(Object.assign(new Error('not authorized to perform ecs:ListTasks'), { name: 'AccessDeniedException' }));

    // Act & Assess
    await expect(teardownFleet(deps())).rejects.toThrow(/not authorized/);
  });
});

describe('handler', () => {
  const event = (requestType: 'Create' | 'Update' | 'Delete'): CloudFormationCustomResourceEvent =>
    ({
      RequestType: requestType,
      ServiceToken: 'arn:aws:lambda:us-east-1:111122223333:function:provider',
      ResponseURL: 'https://example.invalid/response',
      StackId: 'arn:aws:cloudformation:us-east-1:111122223333:stack/FrameAffinity/1',
      RequestId: 'req-1',
      LogicalResourceId: 'FleetTeardown',
      ResourceType: 'Custom::FleetTeardown',
      ResourceProperties: { ServiceToken: 'x', [TEARDOWN_PROPERTIES.cluster]: CLUSTER, [TEARDOWN_PROPERTIES.autoScalingGroupName]: GROUP },
      ...(requestType === 'Create' ? {} : { PhysicalResourceId: 'teardown-1' }),
      ...(requestType === 'Update' ? { OldResourceProperties: {} } : {}),
    }) as CloudFormationCustomResourceEvent;
  const context = { getRemainingTimeInMillis: () => 600_000 } as unknown as Context;

  it('does nothing on Create and Update, and keeps the physical id so no Delete follows an update', async () => {
    // Act
    const created = await handler(event('Create'), context);
    const updated = await handler(event('Update'), context);

    // Assess
    expect(created).toEqual({});
    expect(updated).toEqual({});
    expect(ecsMock.calls()).toHaveLength(0);
    expect(asgMock.calls()).toHaveLength(0);
  });

  it('tears down the cluster and group named in its properties on Delete', async () => {
    // Prepare: an idle fleet
    ecsMock.on(ListTasksCommand).resolves({ taskArns: [] });
    asgMock.on(DescribeAutoScalingGroupsCommand).resolves({ AutoScalingGroups: [] });

    // Act
    const r = await handler(event('Delete'), context);

    // Assess
    expect(r.PhysicalResourceId).toBe('teardown-1');
    expect(asgMock).toHaveReceivedCommandWith(UpdateAutoScalingGroupCommand, { AutoScalingGroupName: GROUP, MaxSize: 0 });
    expect(ecsMock).toHaveReceivedCommandWith(ListTasksCommand, { cluster: CLUSTER, desiredStatus: 'RUNNING' });
  });
});
