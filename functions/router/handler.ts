/**
 * Router Lambda: consumes batches of S3 notifications from the ingest queue, pins each
 * video to a worker slot and forwards its frames to that slot's FIFO queue. Reports
 * partial batch failures so only the records that failed are retried.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { tunablesFromEnv, wiringFromEnv } from '../../core/config.ts';
import { createAwsClients } from '../../core/aws/clients.ts';
import { LeaseStore } from '../../core/lease-store.ts';
import { FrameRouter, type RejectedEvent } from '../../core/router.ts';
import { SlotQueues } from '../../core/slot-queues.ts';
import { createPowertools, environmentKey } from '../shared/powertools.ts';
import { resolveTaskLauncher } from '../shared/launcher.ts';

const ROLE = 'router';
const { logger, metrics, sink } = createPowertools(ROLE);
let router: { key: string; instance: FrameRouter } | undefined;

function getRouter(): FrameRouter {
  // Built once per container. The key only matters where one process hosts several
  // stacks in turn (local tests): a changed environment means a new stack.
  const key = environmentKey();
  if (router?.key === key) return router.instance;
  const wiring = wiringFromEnv();
  const tunables = tunablesFromEnv();
  const clients = createAwsClients(process.env, ROLE);
  const deadLetter = async (events: readonly RejectedEvent[]): Promise<boolean[]> => {
    const ok: boolean[] = [];
    for (let i = 0; i < events.length; i += 10) {
      const chunk = events.slice(i, i + 10);
      try {
        const r = await clients.sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: wiring.ingestDlqUrl,
            Entries: chunk.map((e, j) => ({
              Id: String(j),
              MessageBody: e.body,
              MessageAttributes: {
                reason: { DataType: 'String', StringValue: e.reason },
                detail: { DataType: 'String', StringValue: e.detail.slice(0, 1000) || '-' },
              },
            })),
          }),
        );
        const failed = new Set((r.Failed ?? []).map((f) => f.Id));
        chunk.forEach((_, j) => ok.push(!failed.has(String(j))));
      } catch (e) {
        logger.error('dead-lettering failed', { error: String(e) });
        chunk.forEach(() => ok.push(false));
      }
    }
    return ok;
  };
  const instance = new FrameRouter({
    bucket: wiring.bucket,
    tunables,
    leases: new LeaseStore(clients.ddb, { tableName: wiring.leasesTable, resultsTableName: wiring.resultsTable, pinnedSlotIndex: wiring.pinnedSlotIndex, firstFrameNumber: tunables.firstFrameNumber }),
    queues: new SlotQueues(clients.sqs, wiring.slotQueueUrlPrefix),
    deadLetter,
    launcher: resolveTaskLauncher,
    metrics: sink,
    log: logger,
  });
  router = { key, instance };
  return instance;
}

export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  logger.addContext(context);
  try {
    const outcomes = await getRouter().route(
      event.Records.map((r) => {
        const replayTag = r.messageAttributes?.replayTag?.stringValue;
        return { id: r.messageId, body: r.body, ...(replayTag ? { replayTag } : {}) };
      }),
    );
    const recordHandler = async (record: SQSRecord): Promise<void> => {
      const error = outcomes.get(record.messageId);
      if (error) throw error;
    };
    return await processPartialResponse(event, recordHandler, new BatchProcessor(EventType.SQS), {
      context,
      throwOnFullBatchFailure: false,
    });
  } finally {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  }
};
