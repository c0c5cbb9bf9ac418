/**
 * Janitor Lambda: runs on a schedule (every slot) and on ECS task-stopped events
 * (EventBridge), where it handles the stopped task's slot only (core/janitor.ts).
 */
import type { Context } from 'aws-lambda';
import { Janitor, stoppedSlotOf, type JanitorReport } from '../../core/janitor.ts';
import { functionContext, perEnvironment } from '../shared/context.ts';
import { createPowertools } from '../shared/powertools.ts';
import { resolveTaskLauncher } from '../shared/launcher.ts';

const { logger, metrics, sink } = createPowertools('janitor');

const getJanitor = perEnvironment(() => {
  const { tunables, leases, queues } = functionContext('janitor');
  return new Janitor({ tunables, leases, queues, launcher: resolveTaskLauncher, metrics: sink, log: logger });
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
