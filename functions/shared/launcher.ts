/**
 * Which TaskLauncher the functions use: the one registered in-process (the local stack
 * registers one that spawns worker processes), else ECS RunTask when the stack's
 * environment names a cluster.
 */
import { getTaskLauncher } from '../../core/fleet/launcher-registry.ts';
import type { TaskLauncher } from '../../core/ports.ts';
import { ecsTaskLauncherFromEnv } from '../../core/fleet/ecs/ecs-task-launcher.ts';

let ecs: TaskLauncher | undefined | null = null;

export function resolveTaskLauncher(): TaskLauncher | undefined {
  const registered = getTaskLauncher();
  if (registered) return registered;
  if (ecs === null) ecs = ecsTaskLauncherFromEnv(process.env);
  return ecs;
}
