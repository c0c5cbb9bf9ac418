/** Helpers shared by the local-stack tests. */
import { readFileSync } from 'node:fs';

/** True while the process exists and is not a zombie (a zombie has exited; it only awaits reaping). */
export function isProcessAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Process state letter from /proc (R, S, T = stopped, Z...), or undefined when gone. */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

export { waitFor } from '../../harness/wait.ts';
