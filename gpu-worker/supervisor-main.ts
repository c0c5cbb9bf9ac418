/**
 * The GPU task's entry point with a hot spare (decision 75; `hotSpare`, on by default): a
 * supervisor that forks the worker (gpu-worker/main.ts, or WORKER_ENTRY) twice, as the
 * primary, which claims the slot, and as a spare, which loads its model and waits. It
 * reaps them, so it alone knows for certain that one died; then it ends the dead worker's
 * lease fenced by its claim, hands its messages back and promotes the spare
 * (supervisor/supervisor.ts). A standby's seat (SLOT_ID past the slots) and `hotSpare`
 * off run the worker in this process, as before.
 *
 * Environment: the worker's (gpu-worker/main.ts), plus
 *   WORKER_ENTRY   the worker module to fork (default gpu-worker/main.ts; the local stack
 *                  and tests pass lab/worker-main.ts)
 * The worker processes are named `<WORKER_ID>/<n>`, so the janitor's task-stopped report
 * for this task (naming WORKER_ID) ends the lease of whichever of them held the slot.
 *
 * Exit: the primary's own exit code when it ended by itself (drained, idle, no slot, lease
 * lost); 1 when the supervisor gave up (too many deaths in a row); 4 when they were broken
 * processors.
 */
import { fork } from 'node:child_process';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Logger } from '@aws-lambda-powertools/logger';
import { WORKER_ENV, tunablesFromEnv, wiringFromEnv } from '../core/config.ts';
import { createAwsClients } from '../core/aws/clients.ts';
import { LeaseStore } from '../core/leases/dynamodb/lease-store.ts';
import { SlotQueues } from '../core/ingest/sqs/slot-queues.ts';
import { EmfMetrics } from './runtime/emf-metrics.ts';
import { Supervisor } from './supervisor/supervisor.ts';
import type { ChildReport } from './supervisor/child-ipc.ts';
import { isStandbySeat } from './supervisor/standby.ts';

const env = process.env;
const tunables = tunablesFromEnv(env);
const slotText = env[WORKER_ENV.slotId];
const slot = slotText !== undefined && slotText !== '' ? Number(slotText) : undefined;
const entry = env.WORKER_ENTRY || fileURLToPath(new URL('./main.ts', import.meta.url));

if (!tunables.hotSpare || isStandbySeat(slot, tunables)) {
  await import(entry);
} else {
  const wiring = wiringFromEnv(env);
  const baseId = env[WORKER_ENV.workerId] || `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const log = new Logger({ serviceName: 'supervisor', persistentKeys: { workerId: baseId, slot } });
  const clients = createAwsClients(env);
  const metrics = new EmfMetrics(wiring.metricsNamespace, { service: 'worker' }, Number(env[WORKER_ENV.metricsFlushIntervalMs] ?? 10_000));
  let seq = 0;
  const supervisor: Supervisor = new Supervisor({
    leases: LeaseStore.forWiring(clients.ddb, wiring, tunables),
    queues: new SlotQueues(clients.sqs, wiring.slotQueueUrlPrefix),
    newWorkerId: () => `${baseId}/${++seq}`,
    metrics,
    log,
    now: Date.now,
    onTaskExit: (code) => {
      log.info('supervisor: task ends', { code });
      void metrics.close().finally(() => process.exit(code));
    },
    spawn: (role, id) => {
      const child = fork(entry, [], { env: { ...env, [WORKER_ENV.workerId]: id, [WORKER_ENV.supervisedRole]: role }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      child.on('message', (m: ChildReport) => {
        if (m.t === 'claimed') supervisor.claimed(id, m.fence, m.expiresAtMs);
        else if (m.t === 'heartbeat') supervisor.heartbeat(id, m.expiresAtMs);
        else if (m.t === 'held') supervisor.sinkFor(id).held(m.slot, m.handles);
        else if (m.t === 'released') supervisor.sinkFor(id).released(m.slot, m.handles);
      });
      // Reports already in the channel are read before the exit is acted on.
      child.on('exit', (code, signal) => setTimeout(() => void supervisor.exited(id, code, signal), 20));
      log.info('supervisor: worker process started', { workerId: id, role, pid: child.pid });
      return {
        id,
        kill: () => child.kill('SIGKILL'),
        stop: () => child.kill('SIGTERM'),
        promote: () => {
          if (child.connected) child.send({ t: 'promote' });
        },
      };
    },
  });
  supervisor.start();
  setInterval(() => supervisor.checkFrozen(), 1_000).unref();
  // ECS stops a task with SIGTERM: the primary drains and hands its videos off; the spare leaves.
  process.once('SIGTERM', () => supervisor.stop());
  process.once('SIGINT', () => supervisor.stop());
  // Kept alive by the children's IPC channels until onTaskExit.
}
