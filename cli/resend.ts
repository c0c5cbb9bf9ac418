/**
 * Re-sends stored frames through the ingest queue as S3 ObjectCreated events, tagged with a
 * replay tag so FIFO deduplication (queue-wide, 5 minutes) does not drop them: the router
 * routes each one as it would a fresh upload. Used by `replay` and `reconcile`.
 */
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { buildObjectCreatedEvent } from '../core/ingest/s3-event-shapes.ts';
import { CliError } from './io.ts';
import type { StoredObject } from './read.ts';
import type { Target } from './target.ts';

/**
 * Sends `objects` in batches of 10 and returns how many were sent. A refused entry stops it
 * with a {@link CliError} that says how many went and what to run again (`retryHint`).
 */
export async function resendAsUploads(target: Target, objects: readonly StoredObject[], replayTag: string, configurationId: string, retryHint: string): Promise<number> {
  let sent = 0;
  for (let i = 0; i < objects.length; i += 10) {
    const batch = objects.slice(i, i + 10);
    const r = await target.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: target.ingestQueueUrl,
        Entries: batch.map((ob, j) => ({
          Id: String(j),
          MessageBody: JSON.stringify(
            buildObjectCreatedEvent({
              region: target.region,
              bucket: target.bucket,
              key: ob.key,
              sizeBytes: ob.sizeBytes,
              eTag: ob.eTag,
              eventName: 'ObjectCreated:Put',
              eventTime: new Date(),
              sequencer: (Date.now() * 1000 + i + j).toString(16).toUpperCase().padStart(18, '0'),
              configurationId,
            }),
          ),
          MessageAttributes: { replayTag: { DataType: 'String', StringValue: replayTag } },
        })),
      }),
    );
    if ((r.Failed ?? []).length > 0) {
      throw new CliError(`re-sending frames failed after ${sent}: ${r.Failed!.map((f) => f.Message ?? f.Code).join('; ')}; ${retryHint}`);
    }
    sent += batch.length;
  }
  return sent;
}
