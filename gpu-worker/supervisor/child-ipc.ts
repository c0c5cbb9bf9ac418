/**
 * The worker process's side of the supervisor (decision 75): what a forked worker reports
 * over the IPC channel (its claim, each confirmed heartbeat, the receipt handles it holds)
 * and how a spare learns it is needed. The supervisor's side is supervisor-main.ts.
 */
import type { SlotFence } from '../../core/leases/port.ts';
import type { SlotQueue } from '../../core/ingest/port.ts';
import { mirroredQueue } from './held-handles.ts';

/** What a worker process tells its supervisor. */
export type ChildReport =
  | { readonly t: 'claimed'; readonly fence: SlotFence; readonly expiresAtMs: number }
  | { readonly t: 'heartbeat'; readonly expiresAtMs: number }
  | { readonly t: 'held' | 'released'; readonly slot: number; readonly handles: readonly string[] };

/** What the supervisor tells a worker process. */
export type SupervisorOrder = { readonly t: 'promote' };

export interface SupervisedHooks {
  readonly role: 'primary' | 'spare';
  wrapQueues(q: SlotQueue): SlotQueue;
  onClaimed(fence: SlotFence, expiresAtMs: number): void;
  onHeartbeat(expiresAtMs: number): void;
  /** A spare's wait: resolves on the supervisor's promotion, or `'stop'` on SIGTERM. */
  readonly standBy?: () => Promise<{ readonly slot?: number } | 'stop'>;
}

/** The hooks of a process the supervisor forked (`role` from its environment), or undefined for a process on its own. */
export function supervisedHooks(role: string | undefined, proc: NodeJS.Process = process): SupervisedHooks | undefined {
  if ((role !== 'primary' && role !== 'spare') || typeof proc.send !== 'function') return undefined;
  const report = (m: ChildReport) => {
    // A report that cannot be sent (the supervisor gone) changes nothing here.
    if (proc.connected) proc.send!(m);
  };
  let standBy: SupervisedHooks['standBy'];
  if (role === 'spare') {
    const waiting = new Promise<{ readonly slot?: number } | 'stop'>((resolve) => {
      proc.on('message', (m: SupervisorOrder) => {
        if (m?.t === 'promote') resolve({});
      });
      proc.once('SIGTERM', () => resolve('stop'));
      proc.once('disconnect', () => resolve('stop'));
    });
    standBy = () => waiting;
  }
  return {
    role,
    wrapQueues: (q) => mirroredQueue(q, { held: (slot, handles) => report({ t: 'held', slot, handles }), released: (slot, handles) => report({ t: 'released', slot, handles }) }),
    onClaimed: (fence, expiresAtMs) => report({ t: 'claimed', fence, expiresAtMs }),
    onHeartbeat: (expiresAtMs) => report({ t: 'heartbeat', expiresAtMs }),
    ...(standBy ? { standBy } : {}),
  };
}
