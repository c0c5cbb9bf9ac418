/**
 * Router Lambda: consumes batches of S3 notifications from the ingest queue, pins each
 * video to a worker slot and forwards its frames to that slot's FIFO queue. Reports
 * partial batch failures so only the records that failed are retried; records that failed
 * on an outage are backed off first (core/ingest/ingest-failures.ts), so an outage pauses
 * routing instead of walking records into the DLQ.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { settleIngestFailures, type IngestFailurePorts } from '../../core/ingest/ingest-failures.ts';
import { FrameRouter, type RejectedEvent } from '../../core/fleet/router.ts';
import { changeVisibilityInBatches, sendInBatches, type SendOutcome } from '../../core/ingest/sqs/slot-queues.ts';
import { functionContext, perEnvironment, type FunctionContext } from '../shared/context.ts';
import { createPowertools } from '../shared/powertools.ts';
import { resolveTaskLauncher } from '../shared/launcher.ts';

const { logger, metrics, sink } = createPowertools('router');

interface RouterRuntime {
  readonly router: FrameRouter;
  readonly ports: IngestFailurePorts;
}

function buildRuntime({ wiring, tunables, clients, leases, queues }: FunctionContext): RouterRuntime {
  // Rejected events are parked in the ingest DLQ with their reason, not retried.
  const deadLetter = async (events: readonly RejectedEvent[]): Promise<SendOutcome[]> => {
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
    return sent;
  };
  return {
    router: new FrameRouter({ bucket: wiring.bucket, tunables, leases, queues, deadLetter, launcher: resolveTaskLauncher, metrics: sink, log: logger }),
    ports: {
      tunables,
      changeVisibility: (changes) => changeVisibilityInBatches(clients.sqs, wiring.ingestQueueUrl, changes),
      deadLetter,
      metrics: sink,
      log: logger,
    },
  };
}

/**
 * A router handler over the function context `context` gives (built once per
 * environment). The exported {@link handler} uses the context of the environment; tests
 * pass one whose clients they control (fault switches).
 */
export function createRouterHandler(context: () => FunctionContext = () => functionContext('router')) {
  const getRuntime = perEnvironment(() => buildRuntime(context()));
  return async (event: SQSEvent, lambdaContext: Context): Promise<SQSBatchResponse> => {
    logger.addContext(lambdaContext);
    try {
      const { router, ports } = getRuntime();
      const outcomes = await router.route(
        event.Records.map((r) => {
          const replayTag = r.messageAttributes?.replayTag?.stringValue;
          return { id: r.messageId, body: r.body, ...(replayTag ? { replayTag } : {}) };
        }),
      );
      const { failedIds } = await settleIngestFailures(
        event.Records.map((r) => ({ id: r.messageId, body: r.body, receiptHandle: r.receiptHandle, receiveCount: Number(r.attributes?.ApproximateReceiveCount ?? 1) })),
        outcomes,
        ports,
      );
      // The router and settleIngestFailures decided each record's fate already: the failed
      // ones are reported as they are (ReportBatchItemFailures), in the batch's order. No
      // batch processor in between: it would only turn this set back into thrown errors and
      // the same list (decision 53).
      return { batchItemFailures: event.Records.filter((r) => failedIds.has(r.messageId)).map((r) => ({ itemIdentifier: r.messageId })) };
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    }
  };
}

export const handler = createRouterHandler();
