/**
 * Shapes of the stateful resources, shared by the CDK constructs (infra/) and the
 * local stack (local/), so both create the same tables and queues.
 */
import { DEFAULT_TUNABLES, resourceNames, type Tunables } from './config.ts';
import { INGEST_RETENTION_SECONDS } from './ingest/ingest-retry.ts';

export interface KeyAttribute {
  readonly name: string;
  readonly type: 'S' | 'N';
}

export interface TableShape {
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  /** Attribute holding an epoch-seconds expiry; TTL only garbage-collects, conditions never rely on it. */
  readonly ttlAttribute: string;
  /** A DynamoDB stream of the table's items as written (the events outbox feeds EventBridge Pipes from it). */
  readonly stream?: 'NEW_IMAGE';
  readonly globalSecondaryIndexes: readonly {
    readonly indexName: string;
    readonly partitionKey: KeyAttribute;
    readonly sortKey?: KeyAttribute;
    readonly projection: 'KEYS_ONLY' | 'ALL';
  }[];
}

/** Attribute names used in the leases table. */
export const LEASE_ATTR = {
  pk: 'pk',
  ttl: 'ttlEpochSeconds',
  pinnedSlot: 'pinnedSlot',
} as const;

export const LEASES_TABLE: TableShape = {
  partitionKey: { name: LEASE_ATTR.pk, type: 'S' },
  ttlAttribute: LEASE_ATTR.ttl,
  globalSecondaryIndexes: [
    {
      indexName: resourceNames().pinnedSlotIndex,
      partitionKey: { name: LEASE_ATTR.pinnedSlot, type: 'N' },
      sortKey: { name: LEASE_ATTR.pk, type: 'S' },
      projection: 'KEYS_ONLY',
    },
  ],
};

export const RESULTS_TABLE: TableShape = {
  partitionKey: { name: 'videoId', type: 'S' },
  sortKey: { name: 'frame', type: 'N' },
  ttlAttribute: 'ttlEpochSeconds',
  globalSecondaryIndexes: [],
};

/**
 * The analytics outbox (issue 22): one item per event (`core/analytics/event-schema.ts`),
 * written in the same fenced transaction as the frame records that cause it, so an event
 * exists if and only if its record does. Its stream (new images) is the only way events
 * leave: EventBridge Pipes in AWS, the local relay on the laptop.
 */
export const EVENTS_TABLE: TableShape = {
  partitionKey: { name: 'videoId', type: 'S' },
  sortKey: { name: 'eventId', type: 'S' },
  ttlAttribute: 'ttlEpochSeconds',
  stream: 'NEW_IMAGE',
  globalSecondaryIndexes: [],
};

export interface QueueShape {
  readonly fifo: boolean;
  readonly visibilityTimeoutSeconds: number;
  /** Receives before the message moves to the queue's DLQ. */
  readonly maxReceiveCount: number;
  readonly retentionSeconds: number;
  readonly dlqRetentionSeconds: number;
}

const FOURTEEN_DAYS_SECONDS = 14 * 24 * 3600;

/**
 * The ingest queue (S3 notifications; standard, as S3 cannot notify FIFO queues).
 *
 * Its receive budget is sized for outages, not for failures of the message: the router
 * gives a record that failed on an outage (throttling, 5xx, timeout) an exponential
 * visibility backoff by receive count (core/ingest/ingest-retry.ts). At the defaults
 * (`ingestOutageBackoffBaseSeconds` 15, `ingestOutageBackoffMaxSeconds` 900,
 * `ingestMaxReceiveCount` 576) the backoffs are 15, 30, 60, 120, 240, 480 s, then 900 s:
 * 945 + 569 × 900 = 513,045 s, about 5.9 days of DynamoDB or SQS outage ridden out before
 * the router dead-letters a record with reason `outage-outlasted-retries` on its 576th
 * receive, against a retention of 7 days (validateTunables keeps a day between the two).
 * Each record is received about 4 times an hour during an outage, and is routed at most
 * 15 minutes after the outage ends. Other errors are dead-lettered after 5 receives
 * (`route-error`), bad input at once.
 *
 * The DLQ keeps 14 days, counted from the original enqueue for a standard queue: a record
 * dead-lettered after the whole ride-out still has about 8 days for `affinity redrive`.
 */
export function ingestQueueShape(t: Tunables = DEFAULT_TUNABLES): QueueShape {
  return {
    fifo: false,
    visibilityTimeoutSeconds: t.ingestVisibilitySeconds,
    maxReceiveCount: t.ingestMaxReceiveCount,
    retentionSeconds: INGEST_RETENTION_SECONDS,
    dlqRetentionSeconds: FOURTEEN_DAYS_SECONDS,
  };
}

/**
 * Slot queues are FIFO with one message group per video. Deduplication is by explicit
 * id (`videoId:frame`), not content, so a deliberate replay can choose a new id.
 */
export function slotQueueShape(t: Tunables = DEFAULT_TUNABLES): QueueShape {
  return {
    fifo: true,
    visibilityTimeoutSeconds: t.slotQueueVisibilitySeconds,
    maxReceiveCount: t.slotQueueMaxReceiveCount,
    // SQS's maximum: frames routed to a slot wait here while its task cannot start (a GPU
    // capacity shortage, a quota), so they must outlast the longest shortage (docs/deploy.md).
    retentionSeconds: FOURTEEN_DAYS_SECONDS,
    dlqRetentionSeconds: FOURTEEN_DAYS_SECONDS,
  };
}
