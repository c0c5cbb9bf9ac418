/**
 * A twin of the ECS task launcher with the cluster's PROVISIONING quota modelled (issue 43,
 * item 5), for behaviour tests and benches on the in-memory twins with a fake clock.
 *
 * What it models of ECS with a managed-scaling capacity provider: a launched task waits in
 * PROVISIONING while capacity comes up (instances boot, the image is pulled), for
 * `provisioningMs`, then runs; at most `quota` tasks may be in PROVISIONING per cluster
 * ("Tasks in the PROVISIONING state per cluster", 500 by default), and RunTask over it
 * is refused with an error, which the real launcher classifies as `provisioning-quota`
 * (core/fleet/ecs/ecs-task-launcher.ts classifyRunTaskError). {@link advance} moves the
 * tasks whose time has come to RUNNING and hands each to `onRunning` (a test claims the
 * slot for a worker there).
 */
import type { LaunchedTaskState, LaunchRequest, LaunchResult, TaskLauncher } from '../../ports.ts';

export interface ProvisioningQuotaLauncherOptions {
  /** Tasks in PROVISIONING at once. @default 500 (the ECS default quota) */
  readonly quota?: number;
  /** How long a task stays in PROVISIONING. */
  readonly provisioningMs: number;
  readonly now: () => number;
  /** Called when a task leaves PROVISIONING (it runs from now on). */
  readonly onRunning?: (task: { readonly slot: number; readonly taskId: string }) => Promise<void> | void;
}

interface Task {
  readonly slot: number;
  readonly taskId: string;
  readonly launchedAtMs: number;
  state: 'PROVISIONING' | 'RUNNING';
}

export class ProvisioningQuotaLauncher implements TaskLauncher {
  readonly #o: ProvisioningQuotaLauncherOptions;
  readonly #tasks = new Map<string, Task>();
  #seq = 0;
  /** Launches refused for the quota. */
  refused = 0;
  /** The most tasks in PROVISIONING at once. */
  maxProvisioning = 0;

  constructor(options: ProvisioningQuotaLauncherOptions) {
    this.#o = options;
  }

  get provisioning(): number {
    let n = 0;
    for (const t of this.#tasks.values()) if (t.state === 'PROVISIONING') n++;
    return n;
  }

  /** Every task launched, by slot (a slot launched twice appears twice). */
  get launchedSlots(): number[] {
    return [...this.#tasks.values()].map((t) => t.slot);
  }

  async launch(r: LaunchRequest): Promise<LaunchResult> {
    const quota = this.#o.quota ?? 500;
    if (this.provisioning >= quota) {
      this.refused++;
      return { launched: false, reason: 'provisioning-quota', detail: `RunTask error LimitExceededException: ${quota} tasks already in the PROVISIONING state in this cluster (modelled quota)` };
    }
    const taskId = `task-${r.slot}-${r.launchSeq}-${++this.#seq}`;
    this.#tasks.set(taskId, { slot: r.slot, taskId, launchedAtMs: this.#o.now(), state: 'PROVISIONING' });
    this.maxProvisioning = Math.max(this.maxProvisioning, this.provisioning);
    return { launched: true, taskId };
  }

  async describe(taskIds: readonly string[]): Promise<ReadonlyMap<string, LaunchedTaskState>> {
    return new Map(taskIds.map((id) => [id, this.#tasks.has(id) ? { state: 'coming' as const, detail: this.#tasks.get(id)!.state } : { state: 'gone' as const, detail: 'MISSING' }]));
  }

  /** Moves the tasks whose provisioning time has passed to RUNNING, oldest first; returns them. */
  async advance(): Promise<{ readonly slot: number; readonly taskId: string }[]> {
    const now = this.#o.now();
    const ready = [...this.#tasks.values()].filter((t) => t.state === 'PROVISIONING' && now - t.launchedAtMs >= this.#o.provisioningMs);
    for (const t of ready) {
      t.state = 'RUNNING';
      await this.#o.onRunning?.({ slot: t.slot, taskId: t.taskId });
    }
    return ready.map((t) => ({ slot: t.slot, taskId: t.taskId }));
  }
}
