/**
 * Where the router and janitor find their {@link TaskLauncher} when one was injected
 * (the local stack injects one that spawns processes). In AWS nothing is set and they
 * build the ECS launcher themselves.
 */
import type { TaskLauncher } from '../ports.ts';

let current: TaskLauncher | undefined;

/** Injects the launcher; `undefined` removes it. */
export function setTaskLauncher(launcher: TaskLauncher | undefined): void {
  current = launcher;
}

/** The injected launcher, if any. */
export function getTaskLauncher(): TaskLauncher | undefined {
  return current;
}
