import { beforeEach, describe, expect, it } from 'vitest';
import 'aws-sdk-client-mock-vitest/extend';
import { mockClient } from 'aws-sdk-client-mock';
import { DescribeTasksCommand, ECSClient, RunTaskCommand } from '@aws-sdk/client-ecs';
import {
  ECS_LAUNCHER_ENV,
  EcsTaskLauncher,
  ecsTaskLauncherFromEnv,
  classifyRunTaskError,
  launchClientToken,
  placementOf,
  STANDBY_TASK_GROUP,
  WORKER_TASK_GROUP,
  type EcsTaskLauncherOptions,
} from '../../../../core/fleet/ecs/ecs-task-launcher.ts';
import { ConfigError } from '../../../../core/config.ts';

const ecsMock = mockClient(ECSClient);

const options: EcsTaskLauncherOptions = {
  cluster: 'arn:aws:ecs:us-east-1:111122223333:cluster/fa',
  taskDefinition: 'FrameAffinityWorker',
  containerName: 'worker',
  capacityProvider: 'fa-gpu',
  subnets: ['subnet-a', 'subnet-b'],
  securityGroups: ['sg-1'],
};

const fullEnv = {
  AWS_REGION: 'us-east-1',
  [ECS_LAUNCHER_ENV.cluster]: options.cluster,
  [ECS_LAUNCHER_ENV.taskDefinition]: options.taskDefinition,
  [ECS_LAUNCHER_ENV.containerName]: options.containerName,
  [ECS_LAUNCHER_ENV.capacityProvider]: options.capacityProvider,
  [ECS_LAUNCHER_ENV.subnets]: 'subnet-a, subnet-b',
  [ECS_LAUNCHER_ENV.securityGroups]: 'sg-1',
};

describe('EcsTaskLauncher', () => {
  beforeEach(() => {
    ecsMock.reset();
  });

  it('runs one task on the capacity provider with the slot in SLOT_ID and an idempotency token', async () => {
    // Prepare
    ecsMock.on(RunTaskCommand).resolves({ tasks: [{ taskArn: 'arn:aws:ecs:us-east-1:111122223333:task/fa/abc' }] });
    const launcher = new EcsTaskLauncher(new ECSClient({ region: 'us-east-1' }), options);

    // Act
    const result = await launcher.launch({ slot: 3, launchSeq: 7, reason: 'slot has work and no owner' });

    // Assess
    expect(result).toEqual({ launched: true, taskId: 'arn:aws:ecs:us-east-1:111122223333:task/fa/abc' });
    expect(ecsMock).toHaveReceivedCommandExactlyOnceWith(RunTaskCommand, {
      cluster: options.cluster,
      taskDefinition: 'FrameAffinityWorker',
      count: 1,
      capacityProviderStrategy: [{ capacityProvider: 'fa-gpu', weight: 1, base: 0 }],
      networkConfiguration: {
        awsvpcConfiguration: { subnets: ['subnet-a', 'subnet-b'], securityGroups: ['sg-1'], assignPublicIp: 'DISABLED' },
      },
      overrides: { containerOverrides: [{ name: 'worker', environment: [{ name: 'SLOT_ID', value: '3' }, { name: 'WORKER_ID', value: expect.stringMatching(/^slot3-launch\d+$/) }] }] },
      startedBy: 'slot-3',
      clientToken: launchClientToken(options, { slot: 3, launchSeq: 7 }),
    });
  });

  it('derives the same client token for a retried launch and a new one for the next launch', () => {
    // Prepare
    const request = { slot: 12, launchSeq: 41 };

    // Act
    const first = launchClientToken(options, request);
    const retry = launchClientToken(options, { ...request });
    const next = launchClientToken(options, { slot: 12, launchSeq: 42 });
    const otherSlot = launchClientToken(options, { slot: 13, launchSeq: 41 });
    const otherStack = launchClientToken({ ...options, cluster: 'arn:aws:ecs:us-east-1:111122223333:cluster/other' }, request);

    // Assess
    expect(retry).toBe(first);
    expect(new Set([first, next, otherSlot, otherStack]).size).toBe(4);
    expect(first.length).toBeLessThanOrEqual(64);
    expect(first).toMatch(/^[0-9a-f]{16}-slot-12-launch-41$/);
  });

  it('reports a capacity failure as not launched with the reason', async () => {
    // Prepare
    ecsMock.on(RunTaskCommand).resolves({
      tasks: [],
      failures: [{ reason: 'RESOURCE:GPU', arn: 'arn:aws:ecs:us-east-1:111122223333:container-instance/fa/i1' }],
    });
    const launcher = new EcsTaskLauncher(new ECSClient({ region: 'us-east-1' }), options);

    // Act
    const result = await launcher.launch({ slot: 0, launchSeq: 1, reason: 'test' });

    // Assess
    expect(result.launched).toBe(false);
    expect(result.taskId).toBeUndefined();
    expect(result.detail).toContain('RESOURCE:GPU');
  });

  it('reports an API error as not launched instead of throwing', async () => {
    // Prepare
    const denied = Object.assign(new Error('not authorized to perform ecs:RunTask'), { name: 'AccessDeniedException' });
    ecsMock.on(RunTaskCommand).rejects(denied);
    const launcher = new EcsTaskLauncher(new ECSClient({ region: 'us-east-1' }), options);

    // Act
    const result = await launcher.launch({ slot: 1, launchSeq: 1, reason: 'test' });

    // Assess
    expect(result).toEqual({ launched: false, reason: 'access-denied', detail: expect.stringContaining('AccessDeniedException') });
  });

  it('reports an empty response as not launched', async () => {
    // Prepare
    ecsMock.on(RunTaskCommand).resolves({});
    const launcher = new EcsTaskLauncher(new ECSClient({ region: 'us-east-1' }), options);

    // Act
    const result = await launcher.launch({ slot: 1, launchSeq: 2, reason: 'test' });

    // Assess
    expect(result.launched).toBe(false);
    expect(result.detail).toMatch(/neither a task nor a failure/);
  });
});

describe('EcsTaskLauncher outcomes', () => {
  beforeEach(() => {
    ecsMock.reset();
  });

  it.each([
    { name: 'ThrottlingException', message: 'Rate exceeded', reason: 'throttled' },
    { name: 'ClientException', message: 'Rate exceeded', reason: 'throttled' },
    { name: 'AccessDeniedException', message: 'not authorized', reason: 'access-denied' },
    { name: 'InvalidParameterException', message: 'bad subnet', reason: 'invalid-request' },
    { name: 'ClusterNotFoundException', message: 'no cluster', reason: 'invalid-request' },
    { name: 'ServerException', message: 'internal', reason: 'error' },
    // The PROVISIONING quota: RunTask raises (aws/aws-sdk-ruby#3047); queued by the caller, not failed.
    { name: 'ClientException', message: 'You have reached the limit on the number of tasks in PROVISIONING state for this cluster', reason: 'provisioning-quota' },
    { name: 'LimitExceededException', message: 'Tasks in the PROVISIONING state per cluster exceeded', reason: 'provisioning-quota' },
  ])('classifies a RunTask $name ("$message") as $reason', ({ name, message, reason }) => {
    expect(classifyRunTaskError({ name, message })).toBe(reason);
  });

  it('describes tasks 100 per DescribeTasks call: coming, gone (STOPPED, MISSING), unknown on an error', async () => {
    // Prepare: 150 tasks; the second call fails
    const arns = Array.from({ length: 150 }, (_, i) => `arn:aws:ecs:us-east-1:111122223333:task/fa/t${i}`);
    ecsMock
      .on(DescribeTasksCommand)
      .resolvesOnce({
        tasks: [
          { taskArn: arns[0], lastStatus: 'PROVISIONING' },
          { taskArn: arns[1], lastStatus: 'RUNNING' },
          { taskArn: arns[2], lastStatus: 'STOPPED', stopCode: 'TaskFailedToStart', stoppedReason: 'CannotPullContainerError' },
        ],
        failures: [{ arn: arns[3], reason: 'MISSING' }],
      })
      .rejectsOnce(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    const launcher = new EcsTaskLauncher(new ECSClient({ region: 'us-east-1' }), options);

    // Act
    const states = await launcher.describe(arns);

    // Assess
    expect(ecsMock.commandCalls(DescribeTasksCommand).map((c) => c.args[0].input.tasks!.length)).toEqual([100, 50]);
    expect([0, 1, 2, 3].map((i) => states.get(arns[i]!)?.state)).toEqual(['coming', 'coming', 'gone', 'gone']);
    expect(states.get(arns[2]!)?.detail).toContain('CannotPullContainerError');
    expect(states.has(arns[4]!)).toBe(false);
    expect(states.get(arns[120]!)?.state).toBe('unknown');
  });
});

describe('ecsTaskLauncherFromEnv', () => {
  beforeEach(() => {
    ecsMock.reset();
  });

  it('reads every setting from the environment, splitting the id lists', async () => {
    // Prepare
    ecsMock.on(RunTaskCommand).resolves({ tasks: [{ taskArn: 'arn:task' }] });

    // Act
    const launcher = ecsTaskLauncherFromEnv(fullEnv);
    const input = launcher.runTaskInput({ slot: 2, launchSeq: 1, reason: 'test' });

    // Assess
    expect(input.cluster).toBe(options.cluster);
    expect(input.taskDefinition).toBe(options.taskDefinition);
    expect(input.capacityProviderStrategy).toEqual([{ capacityProvider: 'fa-gpu', weight: 1, base: 0 }]);
    expect(input.networkConfiguration?.awsvpcConfiguration?.subnets).toEqual(['subnet-a', 'subnet-b']);
    expect(input.networkConfiguration?.awsvpcConfiguration?.securityGroups).toEqual(['sg-1']);
    expect(input.overrides?.containerOverrides?.[0]?.name).toBe('worker');
  });

  it('names every missing variable', () => {
    // Prepare
    const env = { ...fullEnv, [ECS_LAUNCHER_ENV.cluster]: undefined, [ECS_LAUNCHER_ENV.subnets]: ' ' };

    // Act
    const act = () => ecsTaskLauncherFromEnv(env);

    // Assess
    expect(act).toThrow(ConfigError);
    expect(act).toThrow(/ECS_CLUSTER_ARN.*ECS_SUBNETS/);
  });

  it('rejects a subnet list with no ids', () => {
    // Prepare
    const env = { ...fullEnv, [ECS_LAUNCHER_ENV.subnets]: ' , ' };

    // Act
    const act = () => ecsTaskLauncherFromEnv(env);

    // Assess
    expect(act).toThrow(/ECS_SUBNETS lists no subnet/);
  });
});

describe('placement with standbys (decision 75)', () => {
  it.each([
    { what: 'no standbys: no group, no constraint', slot: 3, from: undefined, want: {} },
    { what: 'a worker slot: off every instance that runs a standby', slot: 3, from: 4, want: { group: WORKER_TASK_GROUP, placementConstraints: [{ type: 'memberOf', expression: `not(task:group == ${STANDBY_TASK_GROUP})` }] } },
    { what: 'a standby seat: off every instance that runs a worker', slot: 4, from: 4, want: { group: STANDBY_TASK_GROUP, placementConstraints: [{ type: 'memberOf', expression: `not(task:group == ${WORKER_TASK_GROUP})` }] } },
  ])('$what', ({ slot, from, want }) => {
    expect(placementOf(slot, from)).toEqual(want);
  });

  it('reads the first seat from the tunables in the environment, only when there are standbys', () => {
    const launcher = (extra: Record<string, string>) => ecsTaskLauncherFromEnv({ ...fullEnv, ...extra }, new ECSClient({ region: 'us-east-1' }));
    expect(launcher({}).runTaskInput({ slot: 2, launchSeq: 1, reason: 'r' }).placementConstraints).toBeUndefined();
    const input = launcher({ SLOT_COUNT: '4', STANDBY_WORKERS: '1' }).runTaskInput({ slot: 4, launchSeq: 1, reason: 'standby seat empty' });
    expect(input.group).toBe(STANDBY_TASK_GROUP);
    expect(input.overrides?.containerOverrides?.[0]?.environment).toContainEqual({ name: 'SLOT_ID', value: '4' });
  });
});
