/**
 * A launch that did not happen never blocks its slot: the janitor on DynamoDB Local (the
 * real lease store and its conditional writes) with the ECS launcher, whose RunTask and
 * DescribeTasks answers come from aws-sdk-client-mock (no ECS emulator exists).
 *  - every failed RunTask outcome (throttled, AccessDenied, bad parameters, failures[],
 *    an empty answer, a network error) is counted in TaskLaunchFailures with its Reason,
 *    its grant is withdrawn, and the next janitor period launches: never a
 *    `taskStartGraceSeconds` (900 s) block;
 *  - a granted task that stopped before its first heartbeat (DescribeTasks) is replaced
 *    at the next run, while one still PROVISIONING is waited for;
 *  - launches run at most `janitorLaunchConcurrency` at a time, within `maxProvisioningTasks`;
 *  - a task-stopped event reads only its slot;
 *  - skewed clocks: a janitor 12 s behind or 8 s ahead launches nothing for a live slot,
 *    and a worker 10 s ahead cannot claim it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { DescribeTasksCommand, ECSClient, RunTaskCommand, type RunTaskCommandOutput } from '@aws-sdk/client-ecs';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { startLocalStack, type LocalStack } from '../../local/stack.ts';
import { sharedStackOptions } from '../../harness/shared-dynamodb.ts';
import { LeaseStore } from '../../core/leases/dynamodb/lease-store.ts';
import { SlotQueues } from '../../core/ingest/sqs/slot-queues.ts';
import { Janitor } from '../../core/fleet/janitor.ts';
import { DEFAULT_TUNABLES, type Tunables } from '../../core/config.ts';
import { EcsTaskLauncher } from '../../core/fleet/ecs/ecs-task-launcher.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import { launchSlot } from '../../core/fleet/task-launch.ts';
import type { LogSink, MetricSink, TaskLauncher } from '../../core/ports.ts';

const SLOTS = 24;
const PERIOD_MS = DEFAULT_TUNABLES.janitorIntervalSeconds * 1000;
const tunables: Tunables = { ...DEFAULT_TUNABLES, slotCount: SLOTS };
const ecsMock = mockClient(ECSClient);
const ecs = new EcsTaskLauncher(new ECSClient({ region: 'us-east-1' }), {
  cluster: 'arn:aws:ecs:us-east-1:111122223333:cluster/fa',
  taskDefinition: 'FrameAffinityWorker',
  containerName: 'worker',
  capacityProvider: 'fa-gpu',
  subnets: ['subnet-a'],
  securityGroups: ['sg-1'],
});
const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
let stack: LocalStack;
let store: LeaseStore;
let queues: SlotQueues;

beforeAll(async () => {
  stack = await startLocalStack({ ...sharedStackOptions(), quiet: true, routerHandler: false, janitorHandler: false, tunables: { slotCount: SLOTS }, stateDir: `.local/test-launch-outcomes-${process.pid}` });
  store = LeaseStore.forWiring(stack.clients.ddb, stack.wiring, stack.tunables);
  queues = new SlotQueues(stack.clients.sqs, stack.wiring.slotQueueUrlPrefix);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

beforeEach(() => {
  ecsMock.reset();
});

/** Metrics emitted, as `Name` or `Name{Reason=...}` -> sum. */
function recorder(): { sink: MetricSink; get: (key: string) => number } {
  const seen = new Map<string, number>();
  const sink: MetricSink = {
    count: (name, value = 1, dims) => {
      const key = dims ? `${name}{${Object.entries(dims).map(([k, v]) => `${k}=${v}`).join(',')}}` : name;
      seen.set(key, (seen.get(key) ?? 0) + value);
    },
    milliseconds() {},
  };
  return { sink, get: (key) => seen.get(key) ?? 0 };
}

function janitorAt(clock: { now: number }, metrics: MetricSink, t: Partial<Tunables> = {}, launcher: TaskLauncher = ecs): Janitor {
  return new Janitor({ tunables: { ...tunables, ...t }, leases: store, queues, launcher: () => launcher, metrics, log: quiet, now: () => clock.now });
}

/** Puts work on a slot (a pinned video) with no owner. */
async function slotWithWork(slot: number, nowMs: number): Promise<void> {
  expect(await store.pinVideo(`video-on-${slot}-${nowMs}`, slot, nowMs)).toBe('pinned');
}

/**
 * Takes a finished test's slot out of later runs (whose clocks run up to a few janitor
 * periods ahead): an owner whose last heartbeat is an hour ahead, so neither lapsed nor suspect.
 */
async function settle(slot: number, nowMs: number): Promise<void> {
  expect(await store.claimSlot(slot, `settled-${slot}`, nowMs + 3_600_000, 3_600_000, 0)).toBeDefined();
}

const taskArn = (slot: number, n: number) => `arn:aws:ecs:us-east-1:111122223333:task/fa/slot${slot}-${n}`;
const runTaskOk = (slot: number, n: number): RunTaskCommandOutput => ({ tasks: [{ taskArn: taskArn(slot, n), lastStatus: 'PROVISIONING' }], failures: [], $metadata: {} });
const err = (name: string, message: string) => Object.assign(new Error(message), { name });

describe('a failed RunTask never blocks its slot', () => {
  const rows: { name: string; slot: number; arrange: () => void; reason: string }[] = [
    { name: 'throttled', slot: 0, reason: 'throttled', arrange: () => ecsMock.on(RunTaskCommand).rejects(err('ThrottlingException', 'Rate exceeded')) },
    { name: 'AccessDenied', slot: 1, reason: 'access-denied', arrange: () => ecsMock.on(RunTaskCommand).rejects(err('AccessDeniedException', 'not authorized to perform: ecs:RunTask')) },
    { name: 'bad parameters', slot: 2, reason: 'invalid-request', arrange: () => ecsMock.on(RunTaskCommand).rejects(err('InvalidParameterException', 'No Container Instances were found in your capacity provider')) },
    { name: 'failures[] answer', slot: 3, reason: 'placement', arrange: () => ecsMock.on(RunTaskCommand).resolves({ tasks: [], failures: [{ reason: 'RESOURCE:GPU', arn: 'arn:aws:ecs:us-east-1:111122223333:container-instance/fa/i1' }] }) },
    { name: 'an empty answer', slot: 4, reason: 'no-task', arrange: () => ecsMock.on(RunTaskCommand).resolves({}) },
    { name: 'a network error', slot: 5, reason: 'error', arrange: () => ecsMock.on(RunTaskCommand).rejects(err('TimeoutError', 'socket hang up')) },
  ];
  it.each(rows)('$name: counted with Reason=$reason, grant withdrawn, relaunched at the next janitor period', async ({ slot, arrange, reason }) => {
    // Prepare
    const clock = { now: Date.now() };
    await slotWithWork(slot, clock.now);
    const m = recorder();
    const janitor = janitorAt(clock, m.sink);
    arrange();

    // Act: the failed launch, an immediate second run (inside the backoff), and the next period
    const failed = await janitor.run();
    const afterFailure = await store.getSlot(slot);
    clock.now += 1;
    const soonAfter = await janitor.run();
    ecsMock.reset();
    ecsMock.on(RunTaskCommand).resolves(runTaskOk(slot, 2));
    ecsMock.on(DescribeTasksCommand).resolves({ tasks: [{ taskArn: taskArn(slot, 2), lastStatus: 'PROVISIONING' }] });
    clock.now += PERIOD_MS;
    const nextPeriod = await janitor.run();
    const afterRetry = await store.getSlot(slot);
    clock.now += PERIOD_MS;
    const periodAfter = await janitor.run();

    // Assess: counted with its reason; the grant withdrawn (not launching), a backoff shorter than a period
    expect(failed.launchFailed).toContain(slot);
    expect(m.get(`${METRIC_NAMES.janitor.taskLaunchFailures}{Reason=${reason}}`)).toBe(1);
    expect(afterFailure).toMatchObject({ launchSeq: 1, launchRequestedAtMs: 0, launchFailures: 1 });
    expect(afterFailure.launchRetryAtMs).toBeGreaterThan(clock.now - 2 * PERIOD_MS - 1);
    expect(afterFailure.launchRetryAtMs).toBeLessThanOrEqual(clock.now - 2 * PERIOD_MS - 1 + PERIOD_MS / 2);
    // The slot counts as with work and no owner (it alarms), and is not hammered inside the backoff
    expect(failed.slotsWithWorkNoOwner).toContain(slot);
    expect(soonAfter.launched).not.toContain(slot);
    expect(soonAfter.launchFailed).not.toContain(slot);
    // One period later: launched, with its task recorded; then waited for while PROVISIONING
    expect(nextPeriod.launched).toContain(slot);
    expect(afterRetry).toMatchObject({ launchSeq: 2, launchTaskId: taskArn(slot, 2), launchFailures: 0 });
    expect(periodAfter.launched).not.toContain(slot);
    expect(periodAfter.grantsVoided).not.toContain(slot);
    expect(ecsMock.commandCalls(RunTaskCommand)).toHaveLength(1);
    await settle(slot, clock.now);
  });

  it('the router path counts a failed outcome with its Reason and withdraws its grant too (a launcher that throws)', async () => {
    // Prepare
    const slot = 6;
    const clock = { now: Date.now() };
    await slotWithWork(slot, clock.now);
    const m = recorder();
    const throwing: TaskLauncher = { launch: async () => { throw new Error('launcher bug'); } };
    // Act
    const outcome = await launchSlot(
      { leases: store, launcher: throwing, tunables, metrics: m.sink, log: quiet, now: () => clock.now, names: METRIC_NAMES.router },
      await store.getSlot(slot),
      'if-dead',
      'frames routed to a slot without a live owner',
    );
    // Assess
    expect(outcome).toMatchObject({ kind: 'failed', reason: 'exception', withdrawn: true });
    expect(m.get(`${METRIC_NAMES.router.taskLaunchFailures}{Reason=exception}`)).toBe(1);
    // Also without dimensions: the series the TaskLaunchFailures alarm reads
    expect(m.get(METRIC_NAMES.router.taskLaunchFailures)).toBe(1);
    expect(await store.getSlot(slot)).toMatchObject({ launchRequestedAtMs: 0, launchSeq: 1 });
    await settle(slot, clock.now);
  });
});

describe('the janitor checks a granted launch within one period', () => {
  it('replaces a task that stopped before its first heartbeat at the next run, instead of waiting out the 900 s grace', async () => {
    // Prepare: launched, then ECS stops it (no GPU instance could be had, the image pull failed)
    const slot = 7;
    const clock = { now: Date.now() };
    await slotWithWork(slot, clock.now);
    const m = recorder();
    const janitor = janitorAt(clock, m.sink);
    ecsMock.on(RunTaskCommand).resolvesOnce(runTaskOk(slot, 1)).resolvesOnce(runTaskOk(slot, 2));
    const first = await janitor.run();
    ecsMock.on(DescribeTasksCommand).resolves({ tasks: [{ taskArn: taskArn(slot, 1), lastStatus: 'STOPPED', stopCode: 'TaskFailedToStart', stoppedReason: 'CannotPullContainerError' }] });
    // Act
    clock.now += PERIOD_MS;
    const next = await janitor.run();
    // Assess
    expect(first.launched).toContain(slot);
    expect(next.grantsVoided).toContain(slot);
    expect(next.launched).toContain(slot);
    expect(m.get(`${METRIC_NAMES.janitor.taskLaunchFailures}{Reason=stopped-before-start}`)).toBe(1);
    expect(await store.getSlot(slot)).toMatchObject({ launchSeq: 2, launchTaskId: taskArn(slot, 2) });
    await settle(slot, clock.now);
  });

  it('voids a grant ECS no longer knows (MISSING), and one that recorded no task within a period', async () => {
    // Prepare
    const [missing, unrecorded] = [8, 9];
    const clock = { now: Date.now() };
    await slotWithWork(missing, clock.now);
    await slotWithWork(unrecorded, clock.now);
    ecsMock.on(RunTaskCommand).callsFake((input: { startedBy?: string }) => runTaskOk(Number(input.startedBy!.slice(5)), 1));
    const m = recorder();
    await janitorAt(clock, m.sink).run();
    // The grant of `unrecorded` lost its task id (as when its caller died between grant and RunTask)
    await stack.clients.ddb.send(new UpdateCommand({ TableName: stack.wiring.leasesTable, Key: { pk: `slot#${unrecorded}` }, UpdateExpression: 'REMOVE launchTaskId' }));
    ecsMock.on(DescribeTasksCommand).resolves({ tasks: [], failures: [{ arn: taskArn(missing, 1), reason: 'MISSING' }] });
    // Act
    clock.now += PERIOD_MS + 1;
    const report = await janitorAt(clock, m.sink).run();
    // Assess
    expect(report.grantsVoided).toEqual(expect.arrayContaining([missing, unrecorded]));
    expect(m.get(`${METRIC_NAMES.janitor.taskLaunchFailures}{Reason=stopped-before-start}`)).toBe(1);
    expect(m.get(`${METRIC_NAMES.janitor.taskLaunchFailures}{Reason=no-task}`)).toBe(1);
    expect(report.launched).toEqual(expect.arrayContaining([missing, unrecorded]));
    await settle(missing, clock.now);
    await settle(unrecorded, clock.now);
  });
});

describe('janitor launches at scale', () => {
  it('runs at most janitorLaunchConcurrency RunTasks at once, within the PROVISIONING budget', async () => {
    // Prepare: one slot already starting (PROVISIONING), eight more with work
    const clock = { now: Date.now() };
    const starting = 10;
    const due = [11, 12, 13, 14, 15, 16, 17, 18];
    for (const slot of [starting, ...due]) await slotWithWork(slot, clock.now);
    let inFlight = 0;
    let maxInFlight = 0;
    ecsMock.on(RunTaskCommand).callsFake(async (input: { startedBy?: string }) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 500));
      inFlight--;
      return runTaskOk(Number(input.startedBy!.slice(5)), 1);
    });
    ecsMock.on(DescribeTasksCommand).callsFake((input: { tasks?: string[] }) => ({ tasks: (input.tasks ?? []).map((arn) => ({ taskArn: arn, lastStatus: 'PROVISIONING' })) }));
    const m = recorder();
    const janitor = janitorAt(clock, m.sink, { janitorLaunchConcurrency: 3, maxProvisioningTasks: 6 });
    expect(await launchSlot({ leases: store, launcher: ecs, tunables, metrics: m.sink, log: quiet, now: () => clock.now, names: METRIC_NAMES.janitor }, await store.getSlot(starting), 'if-dead', 'test')).toMatchObject({ kind: 'launched' });
    ecsMock.resetHistory();
    maxInFlight = 0;
    // Act
    const first = await janitor.run();
    clock.now += PERIOD_MS;
    const second = await janitor.run();
    // Assess: 6 - 1 starting = 5 launched, 3 left; none beyond 3 at once; the next run still within the budget
    expect(first.launched).toEqual(due.slice(0, 5));
    expect(first.launchesDeferred).toEqual(due.slice(5));
    expect(maxInFlight).toBeLessThanOrEqual(3);
    expect(maxInFlight).toBeGreaterThan(1);
    expect(m.get(METRIC_NAMES.janitor.launchesDeferred)).toBe(3 + 3);
    expect(second.launched).toEqual([]);
    expect(second.launchesDeferred).toEqual(due.slice(5));
    expect(ecsMock.commandCalls(RunTaskCommand)).toHaveLength(5);
    for (const slot of [starting, ...due]) await settle(slot, clock.now);
  });

  it('on a task-stopped event reads only the stopped slot, not the fleet', async () => {
    // Prepare
    const slot = 19;
    const clock = { now: Date.now() };
    await slotWithWork(slot, clock.now);
    const calls: string[] = [];
    const counted = new Proxy(store, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (...args: unknown[]) => (calls.push(String(prop)), v.apply(target, args)) : v;
      },
    });
    ecsMock.on(RunTaskCommand).resolves(runTaskOk(slot, 1));
    const janitor = new Janitor({ tunables, leases: counted, queues, launcher: () => ecs, metrics: recorder().sink, log: quiet, now: () => clock.now });
    // Act
    const report = await janitor.run({ kind: 'task-stopped', slot, stoppedAtMs: clock.now - 1000, exitCode: 137 });
    // Assess
    expect(report.launched).toEqual([slot]);
    expect(calls).not.toContain('getSlots');
    expect(calls).not.toContain('listPinnedBySlot');
    expect(calls.filter((c) => c === 'getSlot')).toHaveLength(1);
    await settle(slot, clock.now);
  });
});

describe('clock skew', () => {
  it('a janitor 12 s behind or 8 s ahead launches nothing for a live slot; a worker 10 s ahead cannot take it over', async () => {
    // Prepare: a worker holds slot 20 with work; its last heartbeat was 6 s ago (1 s late)
    const slot = 20;
    const real = Date.now();
    const heartbeatAtMs = real - 6_000;
    const ttlMs = tunables.slotLeaseTtlSeconds * 1000;
    const claimed = await store.claimSlot(slot, 'owner', heartbeatAtMs - 5_000, ttlMs, 0);
    expect(await store.renewSlot({ slot, workerId: 'owner', epoch: claimed!.epoch }, heartbeatAtMs, ttlMs)).toBe('renewed');
    await slotWithWork(slot, real);
    ecsMock.on(RunTaskCommand).resolves(runTaskOk(slot, 1));
    // Act
    const behind = await janitorAt({ now: real - 12_000 }, recorder().sink).run();
    const ahead = await janitorAt({ now: real + 8_000 }, recorder().sink).run();
    const skewedClaim = await store.claimSlot(slot, 'skewed', real + 10_000, ttlMs, tunables.clockSkewToleranceMs);
    // Assess
    expect(behind.launched).not.toContain(slot);
    expect(ahead.launched).not.toContain(slot);
    expect(ecsMock.commandCalls(RunTaskCommand)).toHaveLength(0);
    expect(skewedClaim).toBeUndefined();
    expect((await store.getSlot(slot)).owner).toBe('owner');
    // Without the tolerance the same claim takes the live slot over (the test can fail)
    expect(await store.claimSlot(slot, 'skewed', real + 10_000, ttlMs, 0)).toBeDefined();
  });
});
