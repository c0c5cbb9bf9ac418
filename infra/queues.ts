import { Duration, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULT_TUNABLES, resourceNames, type ResourceNames, type Tunables } from '../core/config.ts';
import { ingestQueueShape, slotQueueShape, type QueueShape } from '../core/resources.ts';

export interface WorkQueuesProps {
  /**
   * Physical names (the slot queue names must be predictable: the router builds their URLs).
   * @default resourceNames()
   */
  readonly names?: ResourceNames;
  /**
   * Tunables that shape the queues (slot count, visibility, max receives).
   * @default DEFAULT_TUNABLES
   */
  readonly tunables?: Tunables;
}

/**
 * SQS-managed SSE everywhere: the AWS-managed KMS key cannot be an S3 notification
 * destination (aws-cdk#14370), and a customer key would cost a KMS call per message.
 */
function queueProps(shape: QueueShape): Pick<sqs.QueueProps, 'encryption' | 'enforceSSL' | 'retentionPeriod' | 'visibilityTimeout'> {
  return {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.seconds(shape.retentionSeconds),
    visibilityTimeout: Duration.seconds(shape.visibilityTimeoutSeconds),
  };
}

function dlqProps(shape: QueueShape): Pick<sqs.QueueProps, 'encryption' | 'enforceSSL' | 'retentionPeriod'> {
  return { encryption: sqs.QueueEncryption.SQS_MANAGED, enforceSSL: true, retentionPeriod: Duration.seconds(shape.dlqRetentionSeconds) };
}

/** The ingest queue (S3 notifications) and one FIFO queue per worker slot, each with its DLQ. */
export class WorkQueues extends Construct {
  readonly ingestQueue: sqs.Queue;
  readonly ingestDlq: sqs.Queue;
  /** Index = slot number. */
  readonly slotQueues: readonly sqs.Queue[];
  readonly slotDlqs: readonly sqs.Queue[];
  /** `https://sqs.<region>.<suffix>/<account>/<prefix>-slot-`: slot queue URL = prefix + `${slot}.fifo`. */
  readonly slotQueueUrlPrefix: string;

  constructor(scope: Construct, id: string, props: WorkQueuesProps = {}) {
    super(scope, id);
    const names = props.names ?? resourceNames();
    const tunables = props.tunables ?? DEFAULT_TUNABLES;

    const ingest = ingestQueueShape(tunables);
    this.ingestDlq = new sqs.Queue(this, 'IngestDlq', { queueName: names.ingestDlq, ...dlqProps(ingest) });
    this.ingestQueue = new sqs.Queue(this, 'Ingest', {
      queueName: names.ingestQueue,
      ...queueProps(ingest),
      deadLetterQueue: { queue: this.ingestDlq, maxReceiveCount: ingest.maxReceiveCount },
    });

    const slot = slotQueueShape(tunables);
    const slotQueues: sqs.Queue[] = [];
    const slotDlqs: sqs.Queue[] = [];
    for (let n = 0; n < tunables.slotCount; n++) {
      const dlq = new sqs.Queue(this, `Slot${n}Dlq`, { queueName: names.slotDlq(n), fifo: true, ...dlqProps(slot) });
      slotDlqs.push(dlq);
      slotQueues.push(
        new sqs.Queue(this, `Slot${n}`, {
          queueName: names.slotQueue(n),
          fifo: true,
          // Deduplication by explicit id (videoId:frame) so a deliberate re-send can pick a new one.
          contentBasedDeduplication: false,
          // Per-group throughput and dedup: groups are videos, so many videos flow in parallel.
          deduplicationScope: sqs.DeduplicationScope.MESSAGE_GROUP,
          fifoThroughputLimit: sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
          ...queueProps(slot),
          deadLetterQueue: { queue: dlq, maxReceiveCount: slot.maxReceiveCount },
        }),
      );
    }
    this.slotQueues = slotQueues;
    this.slotDlqs = slotDlqs;

    const stack = Stack.of(this);
    this.slotQueueUrlPrefix = `https://sqs.${stack.region}.${stack.urlSuffix}/${stack.account}/${names.slotQueuePrefix}`;
  }

  /** Every DLQ (ingest first, then slot 0..n-1). */
  get deadLetterQueues(): readonly sqs.Queue[] {
    return [this.ingestDlq, ...this.slotDlqs];
  }

  /** Send to any slot queue (the router forwards; workers forward strays). */
  grantSendToSlots(grantee: iam.IGrantable): iam.Grant {
    return this.#grant(grantee, ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'], this.slotQueues);
  }

  /** Consume slot queues: receive, delete, extend visibility, read attributes. */
  grantConsumeSlots(grantee: iam.IGrantable): iam.Grant {
    return this.#grant(
      grantee,
      ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'],
      this.slotQueues,
    );
  }

  /** Read slot queue attributes (depth, age) only, as the janitor does. */
  grantReadSlotAttributes(grantee: iam.IGrantable): iam.Grant {
    return this.#grant(grantee, ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl'], this.slotQueues);
  }

  /** Send rejected events to the ingest DLQ with their reason. */
  grantSendToIngestDlq(grantee: iam.IGrantable): iam.Grant {
    return this.#grant(grantee, ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'], [this.ingestDlq]);
  }

  // Explicit actions: Queue.grantSendMessages/grantConsumeMessages are fine too, but listing them keeps the policy reviewable in one place.
  #grant(grantee: iam.IGrantable, actions: string[], queues: readonly sqs.IQueue[]): iam.Grant {
    return iam.Grant.addToPrincipal({ grantee, actions, resourceArns: queues.map((q) => q.queueArn) });
  }
}
