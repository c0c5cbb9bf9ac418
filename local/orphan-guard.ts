/**
 * Kills the local stack's child processes even when the stack's own process dies
 * without running any cleanup (SIGKILL, a crashed test runner, `kill <pid>` with no
 * handler installed).
 *
 * Node has no PR_SET_PDEATHSIG, and an `exit` handler does not run when a signal
 * kills the process. So a tiny `bash` watchdog reads process ids from a pipe whose
 * other end only this process holds: when the pipe reaches EOF (this process is
 * gone, however it went), the watchdog SIGKILLs every id it was told about.
 * A graceful stop disposes the watchdog first, so it never signals a recycled pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const WATCHDOG_SCRIPT = [
  // Survive the terminal's Ctrl-C (it reaches the whole foreground process group):
  // the watchdog must outlive its parent to do its job.
  "trap '' INT TERM HUP",
  'pids=""',
  'while IFS= read -r p; do pids="$pids $p"; done',
  // bash, not dash: dash's kill builtin cannot signal a process group (negative id).
  'for p in $pids; do kill -9 -- "$p" 2>/dev/null; done',
].join('\n');

/** A watchdog that SIGKILLs registered processes (or process groups) when this process dies. */
export class OrphanGuard {
  #watchdog: ChildProcess | undefined;

  constructor() {
    this.#watchdog = spawn('bash', ['-c', WATCHDOG_SCRIPT], {
      stdio: ['pipe', 'ignore', 'ignore'],
      // Its own process group: signals aimed at ours (Ctrl-C) do not reach it.
      detached: true,
    });
    // Do not keep the event loop alive for the watchdog.
    this.#watchdog.unref();
    (this.#watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    this.#watchdog.on('error', () => {
      this.#watchdog = undefined;
    });
  }

  /** Pid of the watchdog itself (for tests and `stack.json`). */
  get pid(): number | undefined {
    return this.#watchdog?.pid;
  }

  /**
   * Registers a process to kill if this process dies. With `group: true` the whole
   * process group led by `pid` is killed (for children spawned with `detached: true`).
   */
  watch(pid: number, options: { group?: boolean } = {}): void {
    const stdin = this.#watchdog?.stdin;
    if (!stdin || stdin.destroyed) return;
    stdin.write(`${options.group ? -pid : pid}\n`);
  }

  /** Stops the watchdog without it killing anything (call after a graceful shutdown). */
  dispose(): void {
    const w = this.#watchdog;
    this.#watchdog = undefined;
    if (!w || w.exitCode !== null || w.signalCode !== null) return;
    try {
      w.kill('SIGKILL');
    } catch {
      // already gone
    }
    w.stdin?.destroy();
  }
}
