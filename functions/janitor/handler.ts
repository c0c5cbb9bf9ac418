/**
 * Janitor Lambda: runs on a schedule and on ECS task-stopped events (EventBridge).
 */
import type { Context } from 'aws-lambda';
import { tunablesFromEnv, wiringFromEnv } from '../../core/config.ts';
import { createAwsClients } from '../../core/aws/clients.ts';
import { Janitor, stoppedSlotOf, type JanitorReport } from '../../core/janitor.ts';
import { LeaseStore } from '../../core/lease-store.ts';
import { SlotQueues } from '../../core/slot-queues.ts';
import { createPowertools, environmentKey } from '../shared/powertools.ts';
import { resolveTaskLauncher } from '../shared/launcher.ts';

const ROLE = 'janitor';
const { logger, metrics, sink } = createPowertools(ROLE);
let janitor: { key: string; instance: Janitor } | undefined;

function getJanitor(): Janitor {
  // Built once per container. The key only matters where one process hosts several
  // stacks in turn (local tests): a changed environment means a new stack.
  const key = environmentKey();
  if (janitor?.key === key) return janitor.instance;
  const wiring = wiringFromEnv();
  const clients = createAwsClients(process.env, ROLE);
  const tunables = tunablesFromEnv();
  const instance = new Janitor({
    tunables,
    leases: new LeaseStore(clients.ddb, { tableName: wiring.leasesTable, resultsTableName: wiring.resultsTable, pinnedSlotIndex: wiring.pinnedSlotIndex, firstFrameNumber: tunables.firstFrameNumber }),
    queues: new SlotQueues(clients.sqs, wiring.slotQueueUrlPrefix),
    launcher: resolveTaskLauncher,
    metrics: sink,
    log: logger,
  });
  janitor = { key, instance };
  return instance;
}

export const handler = async (event: unknown, context?: Context): Promise<JanitorReport> => {
  if (context) logger.addContext(context);
  try {
    const stopped = stoppedSlotOf(event);
    return await getJanitor().run(stopped ? { kind: 'task-stopped', ...stopped } : { kind: 'schedule' });
  } finally {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  }
};
