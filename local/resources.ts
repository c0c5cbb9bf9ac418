/**
 * Creates the stack's stateful resources on the emulators from the same definitions
 * the CDK stack uses (`resourceNames`, `core/resources.ts` shapes, tunables).
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  type AttributeDefinition,
  type DynamoDBClient,
  type KeySchemaElement,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { FRAME_PREFIX, resourceNames, slotQueueUrl, type ResourceNames, type Tunables, type Wiring } from '../core/config.ts';
import {
  LEASES_TABLE,
  RESULTS_TABLE,
  EVENTS_TABLE,
  ingestQueueShape,
  slotQueueShape,
  type KeyAttribute,
  type QueueShape,
  type TableShape,
} from '../core/resources.ts';
import type { S3Notifier } from './s3-notifications.ts';

/** The bucket name the local stack uses for a prefix (S3 names are lower case). */
export function localBucketName(prefix: string): string {
  return `${prefix.toLowerCase().replace(/[^a-z0-9.-]/g, '-')}-frames`;
}

export interface QueueRef {
  readonly name: string;
  readonly url: string;
  readonly arn: string;
}

export interface SlotQueueRefs {
  readonly slot: number;
  readonly queue: QueueRef;
  readonly dlq: QueueRef;
}

export interface LocalResources {
  readonly names: ResourceNames;
  readonly wiring: Wiring;
  readonly bucket: string;
  readonly ingest: QueueRef;
  readonly ingestDlq: QueueRef;
  readonly slots: readonly SlotQueueRefs[];
}

export interface CreateResourcesOptions {
  readonly prefix: string;
  readonly region: string;
  readonly tunables: Tunables;
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly s3: S3Client;
  /** Receives the bucket -> ingest queue notification configuration (sends the s3:TestEvent). */
  readonly notifier: S3Notifier;
}

/** Creates tables, queues (with DLQs and redrive), the bucket and its notification configuration. */
export async function createLocalResources(o: CreateResourcesOptions): Promise<LocalResources> {
  const names = resourceNames(o.prefix);
  await Promise.all([
    createTable(o.dynamodb, names.leasesTable, LEASES_TABLE),
    createTable(o.dynamodb, names.resultsTable, RESULTS_TABLE),
    createTable(o.dynamodb, names.eventsTable, EVENTS_TABLE),
  ]);

  const ingestShape = ingestQueueShape(o.tunables);
  const ingestDlq = await createQueue(o.sqs, names.ingestDlq, ingestShape, 'dlq');
  const ingest = await createQueue(o.sqs, names.ingestQueue, ingestShape, ingestDlq);

  const slotShape = slotQueueShape(o.tunables);
  const slots = await Promise.all(
    Array.from({ length: o.tunables.slotCount }, async (_, slot): Promise<SlotQueueRefs> => {
      const dlq = await createQueue(o.sqs, names.slotDlq(slot), slotShape, 'dlq');
      const queue = await createQueue(o.sqs, names.slotQueue(slot), slotShape, dlq);
      return { slot, queue, dlq };
    }),
  );

  const bucket = localBucketName(o.prefix);
  await o.s3.send(new CreateBucketCommand({ Bucket: bucket }));

  // Slot queue URLs share one origin and path, so the prefix is the URL minus the slot suffix.
  const origin = ingest.url.slice(0, ingest.url.length - names.ingestQueue.length);
  const wiring: Wiring = {
    region: o.region,
    bucket,
    leasesTable: names.leasesTable,
    resultsTable: names.resultsTable,
    eventsTable: names.eventsTable,
    ingestQueueUrl: ingest.url,
    ingestDlqUrl: ingestDlq.url,
    slotQueueUrlPrefix: `${origin}${names.slotQueuePrefix}`,
    pinnedSlotIndex: names.pinnedSlotIndex,
    metricsNamespace: names.metricsNamespace,
  };
  for (const s of slots) {
    if (slotQueueUrl(wiring, s.slot) !== s.queue.url) {
      throw new Error(`slot queue URL ${s.queue.url} does not match the wiring prefix ${wiring.slotQueueUrlPrefix}`);
    }
  }

  await o.notifier.addQueueConfiguration({
    bucket,
    configurationId: `${o.prefix}-frames-to-ingest`,
    queueUrl: ingest.url,
    queueArn: ingest.arn,
    prefix: FRAME_PREFIX,
  });

  return { names, wiring, bucket, ingest, ingestDlq, slots };
}

/** AttributeDefinitions / KeySchema / GSIs from a shared {@link TableShape}; billing on demand as in the CDK stack. */
export function createTableInput(tableName: string, shape: TableShape) {
  const attributes = new Map<string, KeyAttribute>();
  const keySchema = (pk: KeyAttribute, sk?: KeyAttribute): KeySchemaElement[] => {
    attributes.set(pk.name, pk);
    const out: KeySchemaElement[] = [{ AttributeName: pk.name, KeyType: 'HASH' }];
    if (sk) {
      attributes.set(sk.name, sk);
      out.push({ AttributeName: sk.name, KeyType: 'RANGE' });
    }
    return out;
  };
  const KeySchema = keySchema(shape.partitionKey, shape.sortKey);
  const GlobalSecondaryIndexes = shape.globalSecondaryIndexes.map((g) => ({
    IndexName: g.indexName,
    KeySchema: keySchema(g.partitionKey, g.sortKey),
    Projection: { ProjectionType: g.projection },
  }));
  const AttributeDefinitions: AttributeDefinition[] = [...attributes.values()].map((a) => ({
    AttributeName: a.name,
    AttributeType: a.type,
  }));
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions,
    KeySchema,
    ...(GlobalSecondaryIndexes.length > 0 ? { GlobalSecondaryIndexes } : {}),
    ...(shape.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: shape.stream } } : {}),
  };
}

async function createTable(ddb: DynamoDBClient, tableName: string, shape: TableShape): Promise<void> {
  try {
    await ddb.send(new CreateTableCommand(createTableInput(tableName, shape)));
  } catch (err) {
    // A table left by an earlier run against a persistent DynamoDB Local is fine.
    if (!(err instanceof ResourceInUseException)) throw err;
  }
  for (let i = 0; i < 100; i++) {
    const d = await ddb.send(new DescribeTableCommand({ TableName: tableName }));
    if (d.Table?.TableStatus === 'ACTIVE') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await ddb.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: shape.ttlAttribute, Enabled: true },
    }),
  ).catch((err: unknown) => {
    // Re-enabling TTL on an existing table is a ValidationException ("already enabled").
    if (!(err instanceof Error && /already enabled/i.test(err.message))) throw err;
  });
}

/** Queue attributes for a shape; `dlq` is the dead-letter target, or 'dlq' when this queue IS a DLQ. */
export function queueAttributes(shape: QueueShape, dlq: QueueRef | 'dlq'): Record<string, string> {
  const attrs: Record<string, string> = {
    VisibilityTimeout: String(shape.visibilityTimeoutSeconds),
    MessageRetentionPeriod: String(dlq === 'dlq' ? shape.dlqRetentionSeconds : shape.retentionSeconds),
  };
  if (shape.fifo) {
    attrs.FifoQueue = 'true';
    attrs.ContentBasedDeduplication = 'false';
  }
  if (dlq !== 'dlq') {
    attrs.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: shape.maxReceiveCount });
  }
  return attrs;
}

async function createQueue(sqs: SQSClient, name: string, shape: QueueShape, dlq: QueueRef | 'dlq'): Promise<QueueRef> {
  const created = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: queueAttributes(shape, dlq) }));
  const url = created.QueueUrl!;
  const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  return { name, url, arn: attrs.Attributes!.QueueArn! };
}
