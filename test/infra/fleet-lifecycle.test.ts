/**
 * Template tests for the fleet's life cycle in AWS: idle exit reaches the worker, the
 * capacity provider can scale the GPU group in to zero, `cdk destroy` tears a used fleet
 * down in the right order, the tables can be redeployed after a destroy that kept them,
 * and the worker's log driver does not drop metric lines under bursts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { DEFAULT_TUNABLES, WIRING_ENV, envNameOf } from '../../core/config.ts';
import { STACK_OUTPUT_KEYS } from '../../core/stack-outputs.ts';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import { FLEET_TEARDOWN_RESOURCE_TYPE, FLEET_TEARDOWN_TIMEOUT } from '../../infra/fleet-teardown.ts';
import { ECS_IMAGE_PULL_BEHAVIOR, WORKER_LOG_BUFFER } from '../../infra/gpu-fleet.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';
import { TEARDOWN_PROPERTIES } from '../../functions/teardown/properties.ts';

type Resource = { Type: string; Properties?: Record<string, unknown>; DependsOn?: string[]; DeletionPolicy?: string };
type Resources = Record<string, Resource>;

const outdirs: string[] = [];
function synth(context: Record<string, unknown> = {}): { stack: FrameAffinityStack; resources: Resources; template: Template } {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-fleet-'));
  outdirs.push(outdir);
  // No Lambda bundling: these tests read the template, not the code assets.
  const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
  const template = Template.fromStack(stack);
  return { stack, template, resources: template.toJSON().Resources as Resources };
}

const idOf = (stack: FrameAffinityStack, c: { node: { defaultChild?: unknown } }) => stack.getLogicalId(c.node.defaultChild as never);
const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);

function workerEnvironment(stack: FrameAffinityStack, resources: Resources): Record<string, unknown> {
  const container = (resources[idOf(stack, stack.fleet.taskDefinition)]!.Properties!.ContainerDefinitions as Record<string, unknown>[])[0]!;
  return Object.fromEntries((container.Environment as { Name: string; Value: unknown }[]).map((e) => [e.Name, e.Value]));
}

let stack: FrameAffinityStack;
let resources: Resources;
let template: Template;

beforeAll(() => {
  ({ stack, resources, template } = synth());
});

afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

describe('idle exit wiring', () => {
  it('gives the worker its idle-exit time (default 10 minutes), and takes it from context', () => {
    // Act
    const byDefault = workerEnvironment(stack, resources);
    const tuned = synth({ workerIdleExitSeconds: '120' });

    // Assess
    expect(DEFAULT_TUNABLES.workerIdleExitSeconds).toBe(600);
    expect(byDefault).toHaveProperty(envNameOf('workerIdleExitSeconds'), '600');
    expect(workerEnvironment(tuned.stack, tuned.resources)).toHaveProperty('WORKER_IDLE_EXIT_SECONDS', '120');
  });

  it('rejects an invalid idle-exit time at synthesis', () => {
    expect(() => synth({ workerIdleExitSeconds: '-5' })).toThrow(/workerIdleExitSeconds must be 0 \(never\) or an integer between 1 and 86400/);
  });
});

describe('hot spare and standbys (decision 75)', () => {
  it('gives the worker and the launchers hotSpare (on) and standbyWorkers (0 by default); each standby adds an instance to the group\'s maximum', () => {
    const byDefault = workerEnvironment(stack, resources);
    expect(byDefault).toHaveProperty(envNameOf('hotSpare'), 'true');
    expect(byDefault).toHaveProperty(envNameOf('standbyWorkers'), '0');
    const group = resources[idOf(stack, stack.fleet.autoScalingGroup)]!.Properties!;
    expect(group.MaxSize).toBe(String(DEFAULT_TUNABLES.slotCount));
    const withStandbys = synth({ standbyWorkers: '2' });
    expect(workerEnvironment(withStandbys.stack, withStandbys.resources)).toHaveProperty('STANDBY_WORKERS', '2');
    expect(withStandbys.resources[idOf(withStandbys.stack, withStandbys.stack.fleet.autoScalingGroup)]!.Properties!.MaxSize).toBe(String(DEFAULT_TUNABLES.slotCount + 2));
  });

  it('rejects an invalid standby count at synthesis', () => {
    expect(() => synth({ standbyWorkers: '101' })).toThrow(/standbyWorkers must be 0 \(none\) or an integer between 1 and 100/);
  });
});

describe('scale in to zero', () => {
  it('lets the group reach zero instances, with ECS protecting only instances that run tasks', () => {
    // Prepare
    const group = resources[idOf(stack, stack.fleet.autoScalingGroup)]!.Properties!;

    // Act & Assess: no floor and no fixed desired count
    expect(group.MinSize).toBe('0');
    expect(group).not.toHaveProperty('DesiredCapacity');
    // Managed termination protection needs the group's scale-in protection; ECS then
    // lifts it from an instance once its last task has stopped.
    expect(group.NewInstancesProtectedFromScaleIn).toBe(true);
    template.hasResourceProperties('AWS::ECS::CapacityProvider', {
      AutoScalingGroupProvider: {
        AutoScalingGroupArn: { Ref: idOf(stack, stack.fleet.autoScalingGroup) },
        // 100 %: exactly the instances tasks need, so none when no task runs.
        ManagedScaling: { Status: 'ENABLED', TargetCapacity: 100 },
        ManagedTerminationProtection: 'ENABLED',
      },
    });
  });
});

describe('teardown on stack deletion', () => {
  const teardownId = () => idOf(stack, stack.fleet.teardown.resource);

  it('passes the cluster and the group to the teardown, which runs before they, the capacity provider and its association are deleted', () => {
    // Prepare
    const teardown = resources[teardownId()]!;
    const clusterResources = Object.entries(resources)
      .filter(([, r]) => r.Type === 'AWS::ECS::Cluster' || r.Type === 'AWS::ECS::ClusterCapacityProviderAssociations')
      .map(([id]) => id);

    // Act & Assess
    expect(teardown.Type).toBe(FLEET_TEARDOWN_RESOURCE_TYPE);
    expect(teardown.Properties).toMatchObject({
      [TEARDOWN_PROPERTIES.cluster]: { 'Fn::GetAtt': [idOf(stack, stack.fleet.cluster), 'Arn'] },
      [TEARDOWN_PROPERTIES.autoScalingGroupName]: { Ref: idOf(stack, stack.fleet.autoScalingGroup) },
    });
    expect(clusterResources).toHaveLength(2);
    expect(teardown.DependsOn).toEqual(
      expect.arrayContaining([...clusterResources, idOf(stack, stack.fleet.autoScalingGroup), stack.getLogicalId(stack.fleet.capacityProvider.node.findChild('CapacityProvider') as never)]),
    );
  });

  it('is deleted only after everything that can start a task: every RunTask policy, the router, the janitor and its rules depend on it', () => {
    // Prepare
    const runTaskPolicies = Object.entries(resources)
      .filter(([, r]) => r.Type === 'AWS::IAM::Policy' && asList((r.Properties!.PolicyDocument as { Statement: { Action: unknown }[] }).Statement.flatMap((s) => asList(s.Action))).includes('ecs:RunTask'))
      .map(([id]) => id);
    const launchers = Object.entries(resources)
      .filter(([id, r]) => /^(Router|Janitor)/.test(id) && ['AWS::Lambda::Function', 'AWS::Lambda::EventSourceMapping', 'AWS::Events::Rule'].includes(r.Type))
      .map(([id]) => id);

    // Act
    const notAfter = [...runTaskPolicies, ...launchers].filter((id) => !(resources[id]!.DependsOn ?? []).includes(teardownId()));

    // Assess
    expect(runTaskPolicies).toHaveLength(2);
    expect(launchers.length).toBeGreaterThanOrEqual(5);
    expect(notAfter).toEqual([]);
  });

  it('runs the teardown function through the Provider framework, with time to wait for a drain and only the calls it makes', () => {
    // Prepare
    const fn = resources[idOf(stack, stack.fleet.teardown.function)]!.Properties!;
    const serviceToken = (resources[teardownId()]!.Properties!.ServiceToken as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const role = (fn.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const policy = Object.values(resources).find((r) => r.Type === 'AWS::IAM::Policy' && asList(r.Properties!.Roles).some((x) => (x as { Ref?: string }).Ref === role))!;
    const statements = (policy.Properties!.PolicyDocument as { Statement: { Action: unknown; Resource: unknown; Condition?: unknown }[] }).Statement;

    // Act
    const actions = statements.flatMap((s) => asList(s.Action)).sort();
    const clusterScoped = statements.filter((s) => asList(s.Action).some((a) => String(a).startsWith('ecs:')));

    // Assess
    expect(fn).toMatchObject({ Runtime: 'nodejs24.x', Timeout: FLEET_TEARDOWN_TIMEOUT.toSeconds() });
    expect(FLEET_TEARDOWN_TIMEOUT.toSeconds()).toBeGreaterThan(120);
    expect(resources[serviceToken]!.Properties!.Environment).toEqual({ Variables: { USER_ON_EVENT_FUNCTION_ARN: { 'Fn::GetAtt': [idOf(stack, stack.fleet.teardown.function), 'Arn'] } } });
    expect(actions).toEqual([
      'autoscaling:DescribeAutoScalingGroups',
      'autoscaling:SetInstanceProtection',
      'autoscaling:UpdateAutoScalingGroup',
      'ecs:DescribeTasks',
      'ecs:ListTasks',
      'ecs:StopTask',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
    ]);
    for (const s of clusterScoped) expect(s.Condition).toEqual({ ArnEquals: { 'ecs:cluster': { 'Fn::GetAtt': [idOf(stack, stack.fleet.cluster), 'Arn'] } } });
    const groupStatement = statements.find((s) => asList(s.Action).includes('autoscaling:SetInstanceProtection'))!;
    expect(JSON.stringify(groupStatement.Resource)).toContain(idOf(stack, stack.fleet.autoScalingGroup));
  });
});

describe('redeploy after a destroy that kept the data', () => {
  it('lets CloudFormation name both tables, retains them by default, and wires the generated names to every reader', () => {
    // Prepare
    const tables = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::DynamoDB::Table');
    const leasesId = idOf(stack, stack.tables.leases);
    const resultsId = idOf(stack, stack.tables.results);
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;

    // Act
    const env = workerEnvironment(stack, resources);
    const router = resources[idOf(stack, stack.router.function)]!.Properties!.Environment as { Variables: Record<string, unknown> };

    // Assess: no fixed name a retained table could collide with on the next deploy (leases, results, events).
    expect(tables).toHaveLength(3);
    for (const [, t] of tables) {
      expect(t.Properties).not.toHaveProperty('TableName');
      expect(t.DeletionPolicy).toBe('RetainExceptOnCreate');
    }
    expect(env[WIRING_ENV.leasesTable]).toEqual({ Ref: leasesId });
    expect(env[WIRING_ENV.resultsTable]).toEqual({ Ref: resultsId });
    expect(router.Variables[WIRING_ENV.leasesTable]).toEqual({ Ref: leasesId });
    expect(outputs[STACK_OUTPUT_KEYS.leasesTableName]!.Value).toEqual({ Ref: leasesId });
    expect(outputs[STACK_OUTPUT_KEYS.resultsTableName]!.Value).toEqual({ Ref: resultsId });
  });

  it('gives no retained resource a fixed physical name (the next deploy would collide with it)', () => {
    // Prepare
    const nameProperties = ['TableName', 'BucketName', 'LogGroupName', 'QueueName', 'AliasName', 'KeyName', 'TopicName', 'FunctionName', 'RoleName'];

    // Act
    const retained = Object.entries(resources).filter(([, r]) => r.DeletionPolicy === 'Retain' || r.DeletionPolicy === 'RetainExceptOnCreate');
    const named = retained.filter(([, r]) => nameProperties.some((p) => r.Properties && p in r.Properties)).map(([id]) => id);

    // Assess
    expect(retained.length).toBeGreaterThanOrEqual(4);
    expect(named).toEqual([]);
  });

  it('deletes the tables with the stack when retainData=false', () => {
    // Act
    const { template: throwaway } = synth({ retainData: 'false' });

    // Assess
    throwaway.allResources('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete', Properties: Match.objectLike({ DeletionProtectionEnabled: false }) });
  });
});

describe('worker log driver', () => {
  it('stays non-blocking (a blocked stdout would stall the heartbeat) with a 25 MiB buffer for bursts of EMF lines', () => {
    // Prepare
    const container = (resources[idOf(stack, stack.fleet.taskDefinition)]!.Properties!.ContainerDefinitions as Record<string, unknown>[])[0]!;

    // Act & Assess
    expect(WORKER_LOG_BUFFER.toMebibytes()).toBe(25);
    expect(container.LogConfiguration).toMatchObject({
      LogDriver: 'awslogs',
      Options: { mode: 'non-blocking', 'max-buffer-size': `${WORKER_LOG_BUFFER.toBytes()}b` },
    });
  });
});

describe('a replacement task on a warm instance (issue 42)', () => {
  it('tells the ECS agent to use the cached image (prefer-cached), not to pull it again on every start', () => {
    // Prepare
    const lt = Object.values(template.findResources('AWS::EC2::LaunchTemplate'))[0]!.Properties! as { LaunchTemplateData: { UserData: unknown } };

    // Act: the user data is Fn::Base64 of a string or an Fn::Join of parts.
    const userData = JSON.stringify(lt.LaunchTemplateData.UserData);

    // Assess
    expect(ECS_IMAGE_PULL_BEHAVIOR).toBe('prefer-cached');
    expect(userData).toContain('echo ECS_IMAGE_PULL_BEHAVIOR=prefer-cached >> /etc/ecs/ecs.config');
    // Still the agent's other settings: the pull behaviour was added, nothing replaced.
    expect(userData).toContain('ECS_ENABLE_GPU_SUPPORT=true');
  });
});
