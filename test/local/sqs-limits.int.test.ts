/**
 * The local SQS (fauxqs behind `startFauxqsEmulator`) refuses what SQS refuses: group
 * and deduplication ids over 128 characters or outside SQS's character set, and messages
 * over 256 KiB. Driven through the real `@aws-sdk/client-sqs`.
 */
import { CreateQueueCommand, ReceiveMessageCommand, SendMessageBatchCommand, SendMessageCommand, SQSClient, SQSServiceException } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, startFauxqsEmulator, type FauxqsHandle } from '../../local/emulators.ts';

let fauxqs: FauxqsHandle;
let sqs: SQSClient;
let queueUrl: string;

beforeAll(async () => {
  fauxqs = await startFauxqsEmulator({ region: 'us-east-1' });
  sqs = new SQSClient({ region: 'us-east-1', endpoint: fauxqs.endpoint, credentials: { ...LOCAL_CREDENTIALS }, maxAttempts: 1 });
  const created = await sqs.send(new CreateQueueCommand({ QueueName: 'limits.fifo', Attributes: { FifoQueue: 'true' } }));
  queueUrl = created.QueueUrl!;
});

afterAll(async () => {
  sqs?.destroy();
  await fauxqs?.stop();
});

async function sendError(input: { MessageGroupId: string; MessageDeduplicationId: string; MessageBody?: string }): Promise<unknown> {
  return sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', ...input })).then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('local SQS limits', () => {
  it('refuses a deduplication id over 128 characters, as SQS does, and accepts one of 128', async () => {
    // Act
    const tooLong = await sendError({ MessageGroupId: 'g', MessageDeduplicationId: 'd'.repeat(129) });
    const ok = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'fits', MessageGroupId: 'g', MessageDeduplicationId: 'd'.repeat(128) }));
    // Assess
    expect(tooLong).toBeInstanceOf(SQSServiceException);
    expect((tooLong as SQSServiceException).name).toBe('InvalidParameterValue');
    expect((tooLong as SQSServiceException).$metadata.httpStatusCode).toBe(400);
    expect((tooLong as Error).message).toContain('MessageDeduplicationId');
    expect(ok.MessageId).toBeTruthy();
  });

  it('refuses group ids over 128 characters and ids with characters outside the SQS set', async () => {
    // Act
    const longGroup = await sendError({ MessageGroupId: 'g'.repeat(129), MessageDeduplicationId: 'a1' });
    const spaced = await sendError({ MessageGroupId: 'g', MessageDeduplicationId: 'has space' });
    const unicode = await sendError({ MessageGroupId: 'grüppe', MessageDeduplicationId: 'a2' });
    const punctuation = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x', MessageGroupId: 'g!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~', MessageDeduplicationId: "v:1#'x" }));
    // Assess
    expect((longGroup as Error).name).toBe('InvalidParameterValue');
    expect((longGroup as Error).message).toContain('MessageGroupId');
    expect((spaced as Error).name).toBe('InvalidParameterValue');
    expect((unicode as Error).name).toBe('InvalidParameterValue');
    expect(punctuation.MessageId).toBeTruthy();
  });

  it('refuses a message over 256 KiB', async () => {
    // Act
    const big = await sendError({ MessageGroupId: 'g', MessageDeduplicationId: 'big', MessageBody: 'x'.repeat(256 * 1024 + 1) });
    const fits = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x'.repeat(256 * 1024), MessageGroupId: 'g', MessageDeduplicationId: 'fits' }));
    // Assess
    expect((big as Error).name).toBe('InvalidParameterValue');
    expect(fits.MessageId).toBeTruthy();
  });

  it('fails only the offending entries of a batch and sends the others', async () => {
    // Prepare
    const groupUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'limits-batch.fifo', Attributes: { FifoQueue: 'true' } }))).QueueUrl!;
    // Act
    const r = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: groupUrl,
        Entries: [
          { Id: 'ok', MessageBody: 'one', MessageGroupId: 'g', MessageDeduplicationId: 'one' },
          { Id: 'long', MessageBody: 'two', MessageGroupId: 'g', MessageDeduplicationId: 'x'.repeat(129) },
          { Id: 'group', MessageBody: 'three', MessageGroupId: 'g'.repeat(200), MessageDeduplicationId: 'three' },
        ],
      }),
    );
    const allBad = await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: groupUrl, Entries: [{ Id: 'bad', MessageBody: 'four', MessageGroupId: 'g', MessageDeduplicationId: 'y'.repeat(300) }] }),
    );
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: groupUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
    // Assess
    expect((r.Successful ?? []).map((s) => s.Id)).toEqual(['ok']);
    expect((r.Failed ?? []).map((f) => [f.Id, f.Code, f.SenderFault]).sort()).toEqual([
      ['group', 'InvalidParameterValue', true],
      ['long', 'InvalidParameterValue', true],
    ]);
    expect(allBad.Successful ?? []).toEqual([]);
    expect(allBad.Failed?.[0]).toMatchObject({ Id: 'bad', Code: 'InvalidParameterValue', SenderFault: true });
    expect((received.Messages ?? []).map((m) => m.Body)).toEqual(['one']);
  });

  it('refuses a batch whose messages add up to more than 256 KiB', async () => {
    // Act
    const e = await sqs
      .send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: [0, 1].map((i) => ({ Id: `e${i}`, MessageBody: 'x'.repeat(150 * 1024), MessageGroupId: 'g', MessageDeduplicationId: `batch-${i}` })),
        }),
      )
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    // Assess
    expect((e as Error).name).toBe('BatchRequestTooLong');
  });
});
