/**
 * {@link TaskLauncher} on Amazon ECS: one RunTask per launch request, placed through
 * the GPU capacity provider, with the slot number handed to the worker as `SLOT_ID`.
 *
 * The CDK stack (infra/gpu-fleet.ts) sets the variables in {@link ECS_LAUNCHER_ENV}
 * on the router and janitor Lambdas; {@link ecsTaskLauncherFromEnv} reads them.
 */
import { createHash } from 'node:crypto';
import { DescribeTasksCommand, ECSClient, RunTaskCommand, type Failure, type RunTaskCommandInput } from '@aws-sdk/client-ecs';
import { ConfigError, WORKER_ENV, tunablesFromEnv } from '../../config.ts';
import type { LaunchedTaskState, LaunchFailureReason, LaunchRequest, LaunchResult, TaskLauncher } from '../../ports.ts';

/** Environment variables the ECS launcher reads. */
export const ECS_LAUNCHER_ENV = {
  /** Cluster ARN (or name). */
  cluster: 'ECS_CLUSTER_ARN',
  /** Task definition family (RunTask then takes the latest ACTIVE revision) or full ARN. */
  taskDefinition: 'ECS_TASK_DEFINITION',
  /** Name of the worker container inside the task definition (target of the SLOT_ID override). */
  containerName: 'ECS_CONTAINER_NAME',
  /** Capacity provider that places the task on a GPU instance. */
  capacityProvider: 'ECS_CAPACITY_PROVIDER',
  /** Comma-separated subnet ids for the task ENI (awsvpc). */
  subnets: 'ECS_SUBNETS',
  /** Comma-separated security group ids for the task ENI. */
  securityGroups: 'ECS_SECURITY_GROUPS',
} as const;

/** Environment variable, set per task through containerOverrides, that tells the worker its slot. */
export const SLOT_ID_ENV = WORKER_ENV.slotId;

export interface EcsTaskLauncherOptions {
  readonly cluster: string;
  readonly taskDefinition: string;
  readonly containerName: string;
  readonly capacityProvider: string;
  readonly subnets: readonly string[];
  readonly securityGroups: readonly string[];
  /**
   * With standbys (decision 75): the first standby seat (`slotCount`). A launch for a seat
   * is a standby task; workers and standbys then run in two task groups, each placed on no
   * instance that runs a task of the other ({@link placementOf}). Absent: no standbys, no
   * constraint.
   */
  readonly standbySeatsFrom?: number;
}

/** The ECS task groups of worker and standby tasks (decision 75). */
export const WORKER_TASK_GROUP = 'frameaffinity-worker';
export const STANDBY_TASK_GROUP = 'frameaffinity-standby';

/**
 * Where a task may run when the fleet has standbys: a standby on an instance that runs no
 * worker (it protects every slot, so it must share no host with any of them), and a worker
 * on an instance that runs no standby. ECS's cluster query language selects instances by
 * the task groups they run (`task:group`; ECS developer guide, "Create expressions to
 * define container instances for Amazon ECS tasks").
 */
export function placementOf(slot: number, standbySeatsFrom: number | undefined): Pick<RunTaskCommandInput, 'group' | 'placementConstraints'> {
  if (standbySeatsFrom === undefined) return {};
  const standby = slot >= standbySeatsFrom;
  const mine = standby ? STANDBY_TASK_GROUP : WORKER_TASK_GROUP;
  const other = standby ? WORKER_TASK_GROUP : STANDBY_TASK_GROUP;
  return { group: mine, placementConstraints: [{ type: 'memberOf', expression: `not(task:group == ${other})` }] };
}

/** RunTask accepts client tokens of at most 64 characters. */
const MAX_CLIENT_TOKEN_LENGTH = 64;

/**
 * Idempotency token for one launch of one slot. The same (slot, launchSeq) always
 * yields the same token, so a retried request cannot start a second task; the hash
 * of cluster and task definition keeps two stacks in one account from colliding.
 */
export function launchClientToken(
  options: Pick<EcsTaskLauncherOptions, 'cluster' | 'taskDefinition'>,
  request: Pick<LaunchRequest, 'slot' | 'launchSeq'>,
): string {
  const scope = createHash('sha256').update(`${options.cluster}\n${options.taskDefinition}`).digest('hex').slice(0, 16);
  return `${scope}-slot-${request.slot}-launch-${request.launchSeq}`.slice(0, MAX_CLIENT_TOKEN_LENGTH);
}

/** `startedBy` tag on the task, so operators (and the janitor) can list a slot's tasks. */
export function startedByOf(slot: number): string {
  return `slot-${slot}`;
}

function describeFailures(failures: readonly Failure[]): string {
  return failures.map((f) => [f.reason, f.detail, f.arn].filter(Boolean).join(' ')).join('; ');
}

export class EcsTaskLauncher implements TaskLauncher {
  readonly #ecs: ECSClient;
  readonly #options: EcsTaskLauncherOptions;

  constructor(ecs: ECSClient, options: EcsTaskLauncherOptions) {
    this.#ecs = ecs;
    this.#options = options;
  }

  /** The RunTask request for a launch; exposed so tests and logs can show it. */
  runTaskInput(request: LaunchRequest): RunTaskCommandInput {
    const o = this.#options;
    return {
      cluster: o.cluster,
      taskDefinition: o.taskDefinition,
      count: 1,
      capacityProviderStrategy: [{ capacityProvider: o.capacityProvider, weight: 1, base: 0 }],
      networkConfiguration: {
        awsvpcConfiguration: {
          subnets: [...o.subnets],
          securityGroups: [...o.securityGroups],
          // Private subnets: the task reaches AWS through VPC endpoints (or NAT), never a public IP.
          assignPublicIp: 'DISABLED',
        },
      },
      overrides: {
        // WORKER_ID names the task's lease owner, so the janitor can tell from an ECS
        // task-stopped event whether the stopped task still held its slot.
        containerOverrides: [
          {
            name: o.containerName,
            environment: [
              { name: SLOT_ID_ENV, value: String(request.slot) },
              { name: WORKER_ENV.workerId, value: workerIdOf(request) },
            ],
          },
        ],
      },
      startedBy: startedByOf(request.slot),
      clientToken: launchClientToken(o, request),
      ...placementOf(request.slot, o.standbySeatsFrom),
    };
  }

  /**
   * Starts one task for the slot. Never throws: every outcome other than a task is
   * `launched: false` with a {@link LaunchFailureReason} and a detail (throttling,
   * AccessDenied, bad parameters, a `failures[]` answer, an answer with neither), so the
   * caller counts it, withdraws its launch grant and retries later.
   */
  async launch(request: LaunchRequest): Promise<LaunchResult> {
    let response;
    try {
      response = await this.#ecs.send(new RunTaskCommand(this.runTaskInput(request)));
    } catch (err) {
      const e = err as Error;
      return { launched: false, reason: classifyRunTaskError(e), detail: `RunTask error ${e.name}: ${e.message}` };
    }
    const task = response.tasks?.[0];
    if (task?.taskArn) return { launched: true, taskId: task.taskArn };
    const failures = response.failures ?? [];
    if (failures.length > 0) return { launched: false, reason: 'placement', detail: `RunTask failure: ${describeFailures(failures)}` };
    return { launched: false, reason: 'no-task', detail: 'RunTask returned neither a task nor a failure' };
  }

  /**
   * DescribeTasks for the given task ARNs, 100 per call. A task on its way (PROVISIONING,
   * PENDING, ACTIVATING) or RUNNING is `coming`; one that is stopping or STOPPED, or that
   * ECS reports MISSING (stopped tasks are forgotten after about an hour), is `gone`. An
   * error leaves that call's tasks `unknown`: the caller then keeps the launch grace rule.
   */
  async describe(taskIds: readonly string[]): Promise<ReadonlyMap<string, LaunchedTaskState>> {
    const out = new Map<string, LaunchedTaskState>();
    for (let i = 0; i < taskIds.length; i += DESCRIBE_TASKS_MAX) {
      const chunk = taskIds.slice(i, i + DESCRIBE_TASKS_MAX);
      let response;
      try {
        response = await this.#ecs.send(new DescribeTasksCommand({ cluster: this.#options.cluster, tasks: [...chunk] }));
      } catch (err) {
        const e = err as Error;
        for (const id of chunk) out.set(id, { state: 'unknown', detail: `DescribeTasks error ${e.name}: ${e.message}` });
        continue;
      }
      for (const task of response.tasks ?? []) {
        if (!task.taskArn) continue;
        const status = task.lastStatus ?? 'UNKNOWN';
        const detail = [status, task.stopCode, task.stoppedReason].filter(Boolean).join(' ');
        const state = COMING_STATUSES.has(status) ? 'coming' : GONE_STATUSES.has(status) ? 'gone' : 'unknown';
        out.set(task.taskArn, { state, detail });
      }
      for (const f of response.failures ?? []) {
        if (!f.arn || out.has(f.arn)) continue;
        out.set(f.arn, { state: f.reason === 'MISSING' ? 'gone' : 'unknown', detail: `DescribeTasks failure: ${describeFailures([f])}` });
      }
    }
    return out;
  }
}

/** DescribeTasks takes at most 100 tasks per call. */
const DESCRIBE_TASKS_MAX = 100;

/** ECS task lifecycle states of a task that will run (or runs): https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-lifecycle-explanation.html */
const COMING_STATUSES: ReadonlySet<string> = new Set(['PROVISIONING', 'PENDING', 'ACTIVATING', 'RUNNING']);
/** States of a task on its way out, or out: it will never heartbeat. */
const GONE_STATUSES: ReadonlySet<string> = new Set(['DEACTIVATING', 'STOPPING', 'DEPROVISIONING', 'STOPPED', 'DELETED']);

/**
 * The reason code of a RunTask exception, from the SDK error's name (ECS answers
 * `ThrottlingException` for rate, `AccessDeniedException`, `InvalidParameterException`,
 * `ClientException`, `ClusterNotFoundException`, ...) and, for the throttles some
 * gateways raise under other names, from "Rate exceeded" in the message.
 */
export function classifyRunTaskError(e: { readonly name?: string; readonly message?: string }): LaunchFailureReason {
  const name = e.name ?? '';
  const message = e.message ?? '';
  // With a managed-scaling capacity provider, RunTask over the quota of tasks in PROVISIONING
  // per cluster raises an error (aws/aws-sdk-ruby#3047) rather than answering failures[]; its
  // exact wording is not documented, so any error that names the PROVISIONING state is taken
  // for it: the launch is then queued, not failed.
  if (/provisioning/i.test(message) && !/Throttl/i.test(name)) return 'provisioning-quota';
  if (/Throttl|TooManyRequests|RequestLimitExceeded/i.test(name) || /rate exceeded/i.test(message)) return 'throttled';
  if (/AccessDenied|UnauthorizedOperation|Unrecognized|InvalidClientTokenId|ExpiredToken|KMS/i.test(name)) return 'access-denied';
  if (/InvalidParameter|ClientException|ClusterNotFound|PlatformUnknown|PlatformTaskDefinitionIncompatibility|Unsupported|Validation/i.test(name)) return 'invalid-request';
  return 'error';
}

function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Reads {@link ECS_LAUNCHER_ENV}; throws {@link ConfigError} naming every missing variable. */
export function ecsLauncherOptionsFromEnv(env: Record<string, string | undefined> = process.env): EcsTaskLauncherOptions {
  const missing: string[] = [];
  const read = (name: string): string => {
    const v = env[name]?.trim() ?? '';
    if (v === '') missing.push(name);
    return v;
  };
  const options: EcsTaskLauncherOptions = {
    cluster: read(ECS_LAUNCHER_ENV.cluster),
    taskDefinition: read(ECS_LAUNCHER_ENV.taskDefinition),
    containerName: read(ECS_LAUNCHER_ENV.containerName),
    capacityProvider: read(ECS_LAUNCHER_ENV.capacityProvider),
    subnets: splitList(read(ECS_LAUNCHER_ENV.subnets)),
    securityGroups: splitList(read(ECS_LAUNCHER_ENV.securityGroups)),
    ...standbySeats(env),
  };
  if (missing.length > 0) throw new ConfigError(`Missing environment for the ECS task launcher: ${missing.join(', ')}`);
  if (options.subnets.length === 0) throw new ConfigError(`${ECS_LAUNCHER_ENV.subnets} lists no subnet`);
  if (options.securityGroups.length === 0) throw new ConfigError(`${ECS_LAUNCHER_ENV.securityGroups} lists no security group`);
  return options;
}

/** The first standby seat, when the fleet has standbys (its tunables in the environment). */
function standbySeats(env: Record<string, string | undefined>): Pick<EcsTaskLauncherOptions, 'standbySeatsFrom'> {
  const t = tunablesFromEnv(env);
  return t.standbyWorkers > 0 ? { standbySeatsFrom: t.slotCount } : {};
}

/** Builds the launcher from the environment the CDK stack sets on the router and janitor. */
export function ecsTaskLauncherFromEnv(
  env: Record<string, string | undefined> = process.env,
  ecs: ECSClient = new ECSClient({ region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION }),
): EcsTaskLauncher {
  return new EcsTaskLauncher(ecs, ecsLauncherOptionsFromEnv(env));
}

/** The worker id a launched task runs under: unique per launch grant of its slot. */
export function workerIdOf(request: Pick<LaunchRequest, 'slot' | 'launchSeq'>): string {
  return `slot${request.slot}-launch${request.launchSeq}`;
}
