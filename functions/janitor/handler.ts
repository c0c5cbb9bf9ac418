/**
 * Janitor Lambda: runs on a schedule and on ECS task-stopped events (EventBridge).
 */
import type { Context } from 'aws-lambda';
import { tunablesFromEnv, wiringFromEnv } from '../../core/config.ts';
import { createAwsClients } from '../../core/aws/clients.ts';
import { Janitor, stoppedSlotOf, type JanitorReport } from '../../core/janitor.ts';
import { LeaseStore } from '../../core/lease-store.ts';
import { SlotQueues } from '../../core/slot-queues.ts';
import { createPowertools } from '../shared/powertools.ts';
import { resolveTaskLauncher } from '../shared/launcher.ts';

const { logger, metrics, sink } = createPowertools('janitor');
let janitor: Janitor | undefined;

function getJanitor(): Janitor {
  if (janitor) return janitor;
  const wiring = wiringFromEnv();
  const clients = createAwsClients();
  janitor = new Janitor({
    tunables: tunablesFromEnv(),
    leases: new LeaseStore(clients.ddb, { tableName: wiring.leasesTable, resultsTableName: wiring.resultsTable, pinnedSlotIndex: wiring.pinnedSlotIndex }),
    queues: new SlotQueues(clients.sqs, wiring.slotQueueUrlPrefix),
    launcher: resolveTaskLauncher,
    metrics: sink,
    log: logger,
  });
  return janitor;
}

export const handler = async (event: unknown, context?: Context): Promise<JanitorReport> => {
  if (context) logger.addContext(context);
  try {
    const stopped = stoppedSlotOf(event);
    return await getJanitor().run(stopped ? { kind: 'task-stopped', ...stopped } : { kind: 'schedule' });
  } finally {
    metrics.publishStoredMetrics();
  }
};
