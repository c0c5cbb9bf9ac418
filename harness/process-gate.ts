/**
 * A worker of the worker harness stopped the way a process is stopped from outside, for
 * hostile-timing tests on the SQS FIFO model: every AWS call of that worker passes a
 * gate, on the way out and again on the way back.
 * - `kill()` (kill -9): the gate never opens again; calls already at the service are
 *   applied there (a commit may land), but the worker never acts on an answer again.
 * - `pause()` then `resume()` (SIGSTOP / SIGCONT): calls and answers wait at the gate
 *   and go on at `resume()`, late: a heartbeat, commit or delete the worker issued before
 *   or during the pause reaches the services after it, as a resumed process's would.
 *
 * What this cannot stop is the worker's JavaScript between calls (its timers still fire
 * during the pause); every effect outside the process is a call, so every effect waits.
 */
import { overriding } from '../core/overriding.ts';

/** The gate one worker's calls pass. */
export class ProcessGate {
  private state: 'running' | 'paused' | 'killed' = 'running';
  private opened: Promise<void> = Promise.resolve();
  private open: () => void = () => {};
  /** Calls that waited at the gate (for assertions: the pause held something). */
  held = 0;

  get killed(): boolean {
    return this.state === 'killed';
  }

  /** Stopped (SIGSTOP) and not yet resumed. */
  get paused(): boolean {
    return this.state === 'paused';
  }

  pause(): void {
    if (this.state !== 'running') return;
    this.state = 'paused';
    this.opened = new Promise((r) => (this.open = r));
  }

  resume(): void {
    if (this.state !== 'paused') return;
    this.state = 'running';
    this.open();
  }

  kill(): void {
    if (this.state === 'running') this.opened = new Promise(() => {});
    this.state = 'killed';
  }

  /** Resolves when the gate is open (never, once killed). */
  async pass(): Promise<void> {
    if (this.state === 'running') return;
    this.held++;
    await this.opened;
  }
}

/** The client with every `send` through the gate, both ways. */
export function gatedClient<C extends { send: (...args: never[]) => Promise<unknown> }>(client: C, gate: ProcessGate): C {
  const send = (client.send as (...a: unknown[]) => Promise<unknown>).bind(client);
  const gated = async (...args: unknown[]) => {
    await gate.pass();
    const answer = await send(...args);
    await gate.pass();
    return answer;
  };
  return overriding(client, { send: gated as unknown as C['send'] } as Partial<C>);
}
