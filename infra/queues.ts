import { Duration, NestedStack, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULT_TUNABLES, resourceNames, type ResourceNames, type Tunables } from '../core/config.ts';
import { ingestQueueShape, slotQueueShape, type QueueShape } from '../core/resources.ts';
import { acknowledge, nagArnPrefix } from './nag.ts';

/**
 * Slots per nested stack. Each slot costs 4 resources (queue, DLQ and their two TLS-only
 * queue policies), so 100 slots make 400, under CloudFormation's 500 resources per stack
 * with room to spare; 1,000 slots make 10 nested stacks. Slot n always lives in group
 * floor(n / 100), so raising `slotCount` adds queues without moving existing ones.
 */
export const SLOTS_PER_QUEUE_STACK = 100;

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

export interface SlotQueueStackProps {
  readonly names: ResourceNames;
  readonly tunables: Tunables;
  /** First slot of this group. */
  readonly firstSlot: number;
  /** Slots in this group (at most {@link SLOTS_PER_QUEUE_STACK}). */
  readonly count: number;
}

/**
 * A nested stack holding the FIFO queues (and FIFO DLQs) of slots
 * `firstSlot .. firstSlot + count - 1`. It takes no parameters and exports nothing:
 * everything outside finds the queues by name (URL prefix, ARN pattern), so the parent
 * template does not grow with the slot count.
 */
export class SlotQueueStack extends NestedStack {
  readonly firstSlot: number;
  readonly slotQueues: readonly sqs.Queue[];
  readonly slotDlqs: readonly sqs.Queue[];

  constructor(scope: Construct, id: string, props: SlotQueueStackProps) {
    const last = props.firstSlot + props.count - 1;
    super(scope, id, { description: `FrameAffinity slot queues ${props.firstSlot}..${last}` });
    this.firstSlot = props.firstSlot;
    const slot = slotQueueShape(props.tunables);
    const slotQueues: sqs.Queue[] = [];
    const slotDlqs: sqs.Queue[] = [];
    for (let n = props.firstSlot; n <= last; n++) {
      const dlq = new sqs.Queue(this, `Slot${n}Dlq`, { queueName: props.names.slotDlq(n), fifo: true, ...dlqProps(slot) });
      slotDlqs.push(dlq);
      slotQueues.push(
        new sqs.Queue(this, `Slot${n}`, {
          queueName: props.names.slotQueue(n),
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
  }
}

/**
 * The ingest queue (S3 notifications) and one FIFO queue per worker slot, each with its
 * DLQ. The slot queues live in nested stacks of {@link SLOTS_PER_QUEUE_STACK} slots;
 * grants name them by ARN pattern (`<prefix>-slot-*`), so IAM policies stay the same size
 * at any slot count.
 */
export class WorkQueues extends Construct {
  readonly ingestQueue: sqs.Queue;
  readonly ingestDlq: sqs.Queue;
  /**
   * The nested stacks that hold the slot queues, in slot order. Nothing in the parent
   * stack refers to their queues as constructs (that would add an output and a parameter
   * per queue): grants, wiring and monitoring find them by name.
   */
  readonly slotQueueStacks: readonly SlotQueueStack[];
  /** `https://sqs.<region>.<suffix>/<account>/<prefix>-slot-`: slot queue URL = prefix + `${slot}.fifo`. */
  readonly slotQueueUrlPrefix: string;
  /**
   * `arn:<partition>:sqs:<region>:<account>:<prefix>-slot-*`: every slot queue and slot DLQ of
   * this deployment (and nothing else, as long as no other deployment's prefix starts
   * with `<prefix>-slot-`).
   */
  readonly slotQueueArnPattern: string;
  readonly #slotQueueNamePattern: string;

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

    const stacks: SlotQueueStack[] = [];
    for (let first = 0; first < tunables.slotCount; first += SLOTS_PER_QUEUE_STACK) {
      const count = Math.min(SLOTS_PER_QUEUE_STACK, tunables.slotCount - first);
      stacks.push(new SlotQueueStack(this, `Slots${first / SLOTS_PER_QUEUE_STACK}`, { names, tunables, firstSlot: first, count }));
    }
    this.slotQueueStacks = stacks;

    const stack = Stack.of(this);
    this.slotQueueUrlPrefix = `https://sqs.${stack.region}.${stack.urlSuffix}/${stack.account}/${names.slotQueuePrefix}`;
    this.#slotQueueNamePattern = `${names.slotQueuePrefix}*`;
    this.slotQueueArnPattern = stack.formatArn({ service: 'sqs', resource: this.#slotQueueNamePattern });
  }

  /**
   * Send to any slot queue (the router forwards; workers forward strays). The pattern
   * covers the slot DLQs as well, where the worker parks malformed messages.
   */
  grantSendToSlots(grantee: iam.IGrantable): iam.Grant {
    return this.#grantSlots(grantee, ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl']);
  }

  /** Consume slot queues: receive, delete, extend visibility, read attributes. */
  grantConsumeSlots(grantee: iam.IGrantable): iam.Grant {
    return this.#grantSlots(grantee, ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl']);
  }

  /** Read slot queue attributes (depth, age) only, as the janitor does. */
  grantReadSlotAttributes(grantee: iam.IGrantable): iam.Grant {
    return this.#grantSlots(grantee, ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl']);
  }

  /** Send rejected events to the ingest DLQ with their reason. */
  grantSendToIngestDlq(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({ grantee, actions: ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'], resourceArns: [this.ingestDlq.queueArn] });
  }

  // One ARN pattern instead of a list of 2 × slotCount ARNs: a list of 1,000 queue ARNs
  // alone is about 65 KB, far past IAM's 10,240-byte limit on a role's inline policies.
  // Explicit actions: Queue.grantSendMessages/grantConsumeMessages are fine too, but
  // listing them keeps the policy reviewable in one place.
  #grantSlots(grantee: iam.IGrantable, actions: string[]): iam.Grant {
    const grant = iam.Grant.addToPrincipal({ grantee, actions, resourceArns: [this.slotQueueArnPattern] });
    const principal = grantee.grantPrincipal;
    if (Construct.isConstruct(principal)) {
      acknowledge(principal, {
        id: `AwsSolutions-IAM5[Resource::${nagArnPrefix(Stack.of(this), 'sqs')}${this.#slotQueueNamePattern}]`,
        reason: 'The slot queues and their DLQs of this deployment, by name prefix: one pattern keeps the policy the same size at any slot count (up to 1,000 slots).',
      });
    }
    return grant;
  }
}
