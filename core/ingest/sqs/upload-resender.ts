/**
 * Re-sends stored objects through the ingest queue as S3 ObjectCreated events
 * ({@link UploadResender}), in batches of 10, each with the replay tag as a message
 * attribute: the router routes each as it would a fresh upload, with a fresh FIFO
 * deduplication id. Used by the operator operations `replay` and `reconcile`.
 */
import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { buildObjectCreatedEvent } from '../s3-event-shapes.ts';
import type { StoredObject, UploadResender } from '../port.ts';

export interface UploadResenderOptions {
  readonly ingestQueueUrl: string;
  readonly region: string;
  readonly bucket: string;
  /** The event time and sequencer's clock. @default Date.now */
  readonly now?: () => number;
}

export class SqsUploadResender implements UploadResender {
  private readonly sqs: Pick<SQSClient, 'send'>;
  private readonly o: UploadResenderOptions;

  constructor(sqs: Pick<SQSClient, 'send'>, options: UploadResenderOptions) {
    this.sqs = sqs;
    this.o = options;
  }

  async resend(objects: readonly StoredObject[], replayTag: string, configurationId: string): Promise<{ sent: number; failure?: string }> {
    const now = this.o.now ?? Date.now;
    let sent = 0;
    for (let i = 0; i < objects.length; i += 10) {
      const batch = objects.slice(i, i + 10);
      const nowMs = now();
      const r = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.o.ingestQueueUrl,
          Entries: batch.map((ob, j) => ({
            Id: String(j),
            MessageBody: JSON.stringify(
              buildObjectCreatedEvent({
                region: this.o.region,
                bucket: this.o.bucket,
                key: ob.key,
                sizeBytes: ob.sizeBytes,
                eTag: ob.eTag,
                eventName: 'ObjectCreated:Put',
                eventTime: new Date(nowMs),
                sequencer: (nowMs * 1000 + i + j).toString(16).toUpperCase().padStart(18, '0'),
                configurationId,
              }),
            ),
            MessageAttributes: { replayTag: { DataType: 'String', StringValue: replayTag } },
          })),
        }),
      );
      const failed = r.Failed ?? [];
      if (failed.length > 0) {
        // Entries before the first refused one went; later ones of the batch may have too (a re-run is safe: the worker decides each frame by its record).
        const firstFailed = Math.min(...failed.map((f) => Number(f.Id)));
        return { sent: sent + (Number.isFinite(firstFailed) ? firstFailed : 0), failure: failed.map((f) => f.Message ?? f.Code).join('; ') };
      }
      sent += batch.length;
    }
    return { sent };
  }
}
