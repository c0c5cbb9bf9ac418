/**
 * Janitor Lambda: runs on a schedule (every slot) and on ECS task-stopped events
 * (EventBridge), where it handles the stopped task's slot only (core/fleet/janitor.ts).
 */
import type { Context } from 'aws-lambda';
import { JANITOR_TIMEOUT_SECONDS, Janitor, stoppedSlotOf, type JanitorReport } from '../../core/fleet/janitor.ts';
import { JanitorRunLock } from '../../core/fleet/dynamodb/janitor-run-lock.ts';
import { functionContext, perEnvironment } from '../shared/context.ts';
import { createPowertools } from '../shared/powertools.ts';
import { resolveTaskLauncher } from '../shared/launcher.ts';

const { logger, metrics, sink } = createPowertools('janitor');

const getJanitor = perEnvironment(() => {
  const { tunables, leases, queues, clients, wiring } = functionContext('janitor');
  // Single flight of scheduled runs without reserved concurrency (issue 35, item 1): a lock
  // item in the leases table. A run lasts at most one Lambda timeout, and a lock left by a
  // run that died must not stop the next period's run: it holds the shorter of the two.
  const holdMs = Math.min(JANITOR_TIMEOUT_SECONDS, tunables.janitorIntervalSeconds) * 1000;
  const runLock = new JanitorRunLock(clients.ddb, { tableName: wiring.leasesTable, holdMs });
  return new Janitor({ tunables, leases, queues, runLock, launcher: resolveTaskLauncher, metrics: sink, log: logger });
});

export const handler = async (event: unknown, context?: Context): Promise<JanitorReport> => {
  if (context) logger.addContext(context);
  try {
    const stopped = stoppedSlotOf(event);
    return await getJanitor().run(stopped ? { kind: 'task-stopped', ...stopped } : { kind: 'schedule' });
  } finally {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  }
};
