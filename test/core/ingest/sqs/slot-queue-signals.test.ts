/**
 * What the slot-queue adapter reads for the fleet-wide alarm series: a slot DLQ's depth
 * (janitor `SlotDlqMessages`) and each received message's send time (worker
 * `SlotMessageAgeMs`).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-vitest/extend';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SlotQueues } from '../../../../core/ingest/sqs/slot-queues.ts';

const sqs = new SQSClient({ region: 'us-east-1' });
const sqsMock = mockClient(SQSClient);
const queues = new SlotQueues(sqs, 'https://sqs/P-slot-');

beforeEach(() => sqsMock.reset());

describe('slot queue signals', () => {
  it('reads the visible messages of a slot\'s DLQ', async () => {
    // Prepare
    sqsMock.on(GetQueueAttributesCommand, { QueueUrl: 'https://sqs/P-slot-7-dlq.fifo' }).resolves({ Attributes: { ApproximateNumberOfMessages: '3' } });

    // Act
    const n = await queues.dlqDepth(7);

    // Assess
    expect(n).toBe(3);
    expect(sqsMock).toHaveReceivedCommandWith(GetQueueAttributesCommand, { QueueUrl: 'https://sqs/P-slot-7-dlq.fifo', AttributeNames: ['ApproximateNumberOfMessages'] });
  });

  it('asks for and returns each message\'s send time', async () => {
    // Prepare
    sqsMock.on(ReceiveMessageCommand).resolves({
      Messages: [
        { MessageId: 'a', ReceiptHandle: 'h', Body: '{}', Attributes: { ApproximateReceiveCount: '1', MessageGroupId: 'v', SentTimestamp: '1700000000123' } },
        { MessageId: 'b', ReceiptHandle: 'i', Body: '{}', Attributes: { ApproximateReceiveCount: '1', MessageGroupId: 'v' } },
      ],
    });

    // Act
    const received = await queues.receive(2, 10, 0);

    // Assess
    expect(sqsMock).toHaveReceivedCommandWith(ReceiveMessageCommand, { QueueUrl: 'https://sqs/P-slot-2.fifo', MessageSystemAttributeNames: expect.arrayContaining(['SentTimestamp']) });
    expect(received.map((m) => m.sentAtMs)).toEqual([1_700_000_000_123, undefined]);
  });
});
