/**
 * Router Lambda: consumes batches of S3 notifications from the ingest queue, pins each
 * video to a worker slot and forwards its frames to that slot's FIFO queue. Reports
 * partial batch failures so only the records that failed are retried.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { FrameRouter, type RejectedEvent } from '../../core/router.ts';
import { sendInBatches } from '../../core/aws/slot-queues.ts';
import { functionContext, perEnvironment } from '../shared/context.ts';
import { createPowertools } from '../shared/powertools.ts';
import { resolveTaskLauncher } from '../shared/launcher.ts';

const { logger, metrics, sink } = createPowertools('router');

const getRouter = perEnvironment(() => {
  const { wiring, tunables, clients, leases, queues } = functionContext('router');
  // Rejected events are parked in the ingest DLQ with their reason, not retried.
  const deadLetter = async (events: readonly RejectedEvent[]): Promise<boolean[]> => {
    const sent = await sendInBatches(
      clients.sqs,
      wiring.ingestDlqUrl,
      events.map((e) => ({
        MessageBody: e.body,
        MessageAttributes: {
          reason: { DataType: 'String', StringValue: e.reason },
          detail: { DataType: 'String', StringValue: e.detail.slice(0, 1000) || '-' },
        },
      })),
    );
    for (const s of sent) if (!s.ok) logger.error('dead-lettering failed', { error: s.error });
    return sent.map((s) => s.ok);
  };
  return new FrameRouter({ bucket: wiring.bucket, tunables, leases, queues, deadLetter, launcher: resolveTaskLauncher, metrics: sink, log: logger });
});

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
