/**
 * Fixtures for the event delivery (issue 22) on the real emulators: DynamoDB Local with
 * the events table (streaming NEW_IMAGE, as local/resources.ts creates it) and fauxqs
 * with the queue standing in for the bus; outbox items written with the production
 * DocumentClient, as the worker writes them.
 */
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamsClientConfig } from '@aws-sdk/client-dynamodb-streams';
import { DETAIL_TYPE, eventId, type EventItem, type EventKind } from '../core/analytics/event-schema.ts';
import type { BusEvent } from '../core/analytics/event-delivery.ts';
import { EVENTS_TABLE } from '../core/resources.ts';
import { resourceNames } from '../core/config.ts';
import { startFauxqsEmulator } from '../local/emulators.ts';
import { dynamoDbForFile } from './shared-dynamodb.ts';
import { ensureBusQueue } from '../local/event-relay.ts';
import { createTableInput } from '../local/resources.ts';

export interface EventEmulators {
  readonly dynamodb: DynamoDBClient;
  readonly ddb: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  /** Configuration for a DynamoDBStreamsClient (DynamoDB Local serves Streams on its endpoint). */
  readonly streamsConfig: DynamoDBStreamsClientConfig;
  readonly tableName: string;
  readonly queueUrl: string;
  /** Creates one more events table (a fresh stream) and returns its name. */
  createTable(name: string): Promise<string>;
  stop(): Promise<void>;
}

const REGION = 'us-east-1';

/** DynamoDB Local + fauxqs, the events table and the bus stand-in queue. */
export async function startEventEmulators(prefix = 'EvTest'): Promise<EventEmulators> {
  // The lane's shared DynamoDB Local (a database of these emulators' own), else one of their own.
  const [dynamo, fauxqs] = await Promise.all([dynamoDbForFile(REGION), startFauxqsEmulator({ region: REGION })]);
  const common = { region: REGION, credentials: { ...dynamo.credentials } };
  const dynamodb = new DynamoDBClient({ ...common, endpoint: dynamo.endpoint });
  const ddb = DynamoDBDocumentClient.from(dynamodb);
  const sqs = new SQSClient({ ...common, endpoint: fauxqs.endpoint });
  const names = resourceNames(prefix);
  const createTable = async (name: string) => {
    await dynamodb.send(new CreateTableCommand(createTableInput(name, EVENTS_TABLE)));
    return name;
  };
  await createTable(names.eventsTable);
  const queueUrl = await ensureBusQueue(sqs, names.eventBus);
  return {
    dynamodb,
    ddb,
    sqs,
    streamsConfig: { ...common, credentials: { ...dynamo.credentials }, endpoint: dynamo.endpoint },
    tableName: names.eventsTable,
    queueUrl,
    createTable,
    stop: async () => {
      dynamodb.destroy();
      sqs.destroy();
      await Promise.all([dynamo.stop(), fauxqs.stop()]);
    },
  };
}

const KINDS: readonly EventKind[] = ['line.crossed', 'zone.entered', 'zone.dwell', 'zone.exited'];

/** `count` outbox items of one video, one per frame from `firstFrame`, as the worker would commit them. */
export function sampleEvents(videoId: string, count: number, firstFrame = 0): EventItem[] {
  return Array.from({ length: count }, (_, i) => {
    const frame = firstFrame + i;
    const kind = KINDS[frame % KINDS.length]!;
    const ruleId = kind === 'line.crossed' ? 'door' : 'desk';
    const trackId = 1 + (frame % 3);
    const detail: Record<string, string | number> = kind === 'line.crossed' ? { direction: frame % 8 === 0 ? 'in' : 'out' } : { seconds: 1.5, enteredFrame: Math.max(0, frame - 2) };
    return {
      videoId,
      eventId: eventId({ frame, kind, ruleId, trackId }),
      kind,
      detailType: DETAIL_TYPE[kind],
      frame,
      ruleId,
      trackId,
      label: frame % 2 === 0 ? 'person' : 'car',
      detail,
      token: 3,
      atMs: 1_700_000_000_000 + frame,
    };
  });
}

/** Writes items 25 at a time (BatchWriteItem), in order. */
export async function writeEvents(ddb: DynamoDBDocumentClient, tableName: string, items: readonly EventItem[]): Promise<void> {
  for (let i = 0; i < items.length; i += 25) {
    const r = await ddb.send(new BatchWriteCommand({ RequestItems: { [tableName]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }));
    if (Object.keys(r.UnprocessedItems ?? {}).length > 0) throw new Error('unprocessed items');
  }
}

/** Receives and deletes what the queue holds now (until an empty receive), in receive order. */
export async function drainBusQueue(sqs: SQSClient, queueUrl: string): Promise<BusEvent[]> {
  const out: BusEvent[] = [];
  for (;;) {
    const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
    const messages = r.Messages ?? [];
    if (messages.length === 0) return out;
    for (const m of messages) out.push(JSON.parse(m.Body!) as BusEvent);
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }));
  }
}
