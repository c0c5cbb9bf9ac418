/**
 * The local stand-in for the deployed event pipe (infra/event-delivery.ts; issue 22,
 * docs/decisions.md 36): reads the events outbox table's stream on DynamoDB Local and
 * puts the same envelopes the pipe puts on the bus ({@link busEventOf}) on a local SQS
 * queue named like the bus. In AWS no code of ours does this: Pipes does.
 *
 * Every shard is read, a child only after its parent is drained (DynamoDB Streams'
 * lineage), in stream order, one shard at a time, so a video's events (one partition key,
 * one shard) reach the queue in commit order. Delivery is at-least-once: the position per
 * shard is checkpointed after the queue accepted the batch, so a relay stopped between
 * the send and the checkpoint sends that batch again on restart. Consumers drop
 * duplicates by eventId, as they must on the bus. A failed call is logged with its reason,
 * counted ({@link EventRelay.counts}) and retried with backoff, never skipped.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBStreamsClient,
  type DynamoDBStreamsClientConfig,
  DescribeStreamCommand,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  TrimmedDataAccessException,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { CreateQueueCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { busEventOf, passesDeliveryFilter, type BusEvent, type StreamRecordLike } from '../core/analytics/event-delivery.ts';

/** Where a shard's reading stands: the last sequence number handled, and whether the shard is closed and drained. */
export interface ShardPosition {
  readonly sequenceNumber?: string;
  readonly done?: boolean;
}

/** Persists the relay's positions of one stream (a new stream, e.g. a recreated table, starts over). */
export interface RelayCheckpointStore {
  load(streamArn: string): Promise<Record<string, ShardPosition>>;
  save(streamArn: string, shards: Readonly<Record<string, ShardPosition>>): Promise<void>;
}

/** Positions in memory: a new relay starts at the stream's oldest record (duplicates, no loss). */
export function memoryCheckpoint(): RelayCheckpointStore & { readonly saved: Map<string, Record<string, ShardPosition>> } {
  const saved = new Map<string, Record<string, ShardPosition>>();
  return {
    saved,
    load: async (arn) => ({ ...(saved.get(arn) ?? {}) }),
    save: async (arn, shards) => void saved.set(arn, { ...shards }),
  };
}

/** Positions in a JSON file (`<stateDir>/event-relay.json` for `npm start`), written atomically. */
export function fileCheckpoint(path: string): RelayCheckpointStore {
  return {
    load: async (streamArn) => {
      if (!existsSync(path)) return {};
      const stored = JSON.parse(readFileSync(path, 'utf8')) as { streamArn?: string; shards?: Record<string, ShardPosition> };
      return stored.streamArn === streamArn ? { ...(stored.shards ?? {}) } : {};
    },
    save: async (streamArn, shards) => {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(`${path}.tmp`, JSON.stringify({ streamArn, shards }, null, 2));
      renameSync(`${path}.tmp`, path);
    },
  };
}

/** What the relay did; every failure is also logged with its reason. */
export interface RelayCounts {
  recordsRead: number;
  delivered: number;
  /** Records the pipe's filter drops (REMOVE by TTL, a worker's rewrite). */
  filtered: number;
  /** SendMessageBatch calls or entries that failed (then retried). */
  sendFailures: number;
  /** DescribeTable / DescribeStream / GetShardIterator / GetRecords calls that failed (then retried). */
  readFailures: number;
}

export interface EventRelayOptions {
  readonly dynamodb: DynamoDBClient;
  readonly streams: DynamoDBStreamsClient;
  readonly sqs: SQSClient;
  /** The events outbox table (its stream is read). */
  readonly tableName: string;
  /** The queue standing in for the bus. */
  readonly queueUrl: string;
  /** @default memoryCheckpoint() */
  readonly checkpoint?: RelayCheckpointStore;
  /** Pause when no shard returned records (the local stack runs beside the workers on one machine: a slow idle poll). @default 500 */
  readonly idlePollMs?: number;
  /** How often new shards are looked for. @default 5000 */
  readonly shardRefreshMs?: number;
  /** First retry delay after a failed call; doubles up to 5 s. @default 200 */
  readonly retryBaseMs?: number;
  readonly log?: (line: string) => void;
}

interface ShardState {
  readonly shardId: string;
  readonly parentShardId?: string;
  iterator?: string;
}

/** Largest SendMessageBatch. */
const SQS_BATCH_ENTRIES = 10;
const MAX_RETRY_MS = 5_000;

/** Creates (or finds) the standard queue standing in for the bus, named like it; returns its URL. */
export async function ensureBusQueue(sqs: SQSClient, name: string): Promise<string> {
  const r = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { MessageRetentionPeriod: String(4 * 24 * 3600) } }));
  return r.QueueUrl!;
}

/**
 * The local stack's relay: creates the queue standing in for the bus and, when enabled,
 * starts the relay with its positions in `checkpointFile` (so `npm start` after a stop
 * resumes where it was, as long as the table, hence its stream, is the same).
 */
export async function startLocalEventRelay(o: {
  /** DynamoDB client configuration: DynamoDB Local serves the Streams API on the same endpoint. */
  readonly config: DynamoDBStreamsClientConfig;
  readonly clients: { readonly dynamodb: DynamoDBClient; readonly sqs: SQSClient };
  readonly tableName: string;
  readonly queueName: string;
  readonly checkpointFile: string;
  readonly enabled: boolean;
  readonly log: (line: string) => void;
}): Promise<{ queueUrl: string; relay: EventRelay | null; stop: () => Promise<void> }> {
  const queueUrl = await ensureBusQueue(o.clients.sqs, o.queueName);
  if (!o.enabled) return { queueUrl, relay: null, stop: async () => {} };
  const streams = new DynamoDBStreamsClient(o.config);
  const relay = new EventRelay({
    dynamodb: o.clients.dynamodb,
    streams,
    sqs: o.clients.sqs,
    tableName: o.tableName,
    queueUrl,
    checkpoint: fileCheckpoint(o.checkpointFile),
    log: o.log,
  }).start();
  return {
    queueUrl,
    relay,
    stop: async () => {
      await relay.stop();
      streams.destroy();
    },
  };
}

/** The relay; {@link start} runs it in the background until {@link stop}. */
export class EventRelay {
  readonly counts: RelayCounts = { recordsRead: 0, delivered: 0, filtered: 0, sendFailures: 0, readFailures: 0 };
  readonly #o: EventRelayOptions;
  readonly #checkpoint: RelayCheckpointStore;
  readonly #log: (line: string) => void;
  readonly #shards = new Map<string, ShardState>();
  #positions: Record<string, ShardPosition> = {};
  #streamArn: string | undefined;
  #stopped = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;

  constructor(options: EventRelayOptions) {
    this.#o = options;
    this.#checkpoint = options.checkpoint ?? memoryCheckpoint();
    this.#log = options.log ?? (() => {});
  }

  start(): this {
    this.#loop ??= this.#run().catch((err: unknown) => this.#log(`[event-relay] stopped by an unexpected error: ${String(err)}`));
    return this;
  }

  /** Stops after the call in flight; positions not yet checkpointed are read again by the next relay. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    this.#streamArn = await this.#retrying('DescribeTable', async () => {
      const t = await this.#o.dynamodb.send(new DescribeTableCommand({ TableName: this.#o.tableName }));
      if (!t.Table?.LatestStreamArn) throw new Error(`table ${this.#o.tableName} has no stream`);
      return t.Table.LatestStreamArn;
    });
    if (this.#streamArn === undefined) return;
    this.#positions = await this.#checkpoint.load(this.#streamArn);
    let nextRefreshMs = 0;
    while (!this.#stopped) {
      if (Date.now() >= nextRefreshMs) {
        await this.#refreshShards();
        nextRefreshMs = Date.now() + (this.#o.shardRefreshMs ?? 5_000);
      }
      let read = 0;
      for (const shard of this.#readableShards()) {
        if (this.#stopped) break;
        read += await this.#pollShard(shard);
      }
      if (read === 0) await this.#sleep(this.#o.idlePollMs ?? 500);
    }
  }

  /** Shards not yet drained whose parent is drained or gone from the stream (trimmed after 24 h). */
  #readableShards(): ShardState[] {
    return [...this.#shards.values()].filter(
      (s) => !this.#positions[s.shardId]?.done && (!s.parentShardId || !this.#shards.has(s.parentShardId) || this.#positions[s.parentShardId]?.done),
    );
  }

  async #refreshShards(): Promise<void> {
    let exclusiveStartShardId: string | undefined;
    do {
      const page = await this.#retrying('DescribeStream', () =>
        this.#o.streams.send(new DescribeStreamCommand({ StreamArn: this.#streamArn!, ExclusiveStartShardId: exclusiveStartShardId })),
      );
      if (!page) return;
      for (const s of page.StreamDescription?.Shards ?? []) {
        if (s.ShardId && !this.#shards.has(s.ShardId)) this.#shards.set(s.ShardId, { shardId: s.ShardId, parentShardId: s.ParentShardId });
      }
      exclusiveStartShardId = page.StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStartShardId && !this.#stopped);
  }

  /** One GetRecords on a shard, its records delivered in order; returns how many records it read. */
  async #pollShard(shard: ShardState): Promise<number> {
    if (!shard.iterator) {
      const after = this.#positions[shard.shardId]?.sequenceNumber;
      const it = await this.#retrying('GetShardIterator', () =>
        this.#o.streams.send(
          new GetShardIteratorCommand({
            StreamArn: this.#streamArn!,
            ShardId: shard.shardId,
            ...(after ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after } : { ShardIteratorType: 'TRIM_HORIZON' }),
          }),
        ),
      );
      if (!it?.ShardIterator) return 0;
      shard.iterator = it.ShardIterator;
    }
    let page;
    try {
      page = await this.#o.streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator }));
    } catch (err) {
      this.counts.readFailures++;
      if (err instanceof ExpiredIteratorException) {
        this.#log(`[event-relay] GetRecords ${shard.shardId}: iterator expired; resuming from the checkpoint`);
      } else if (err instanceof TrimmedDataAccessException) {
        // Records older than the stream's retention are gone; the table still holds the events.
        this.#log(`[event-relay] GetRecords ${shard.shardId}: checkpoint trimmed from the stream; restarting at its oldest record (older events: affinity events <video>)`);
        this.#positions[shard.shardId] = {};
      } else {
        this.#log(`[event-relay] GetRecords ${shard.shardId} failed: ${describe(err)}`);
        await this.#sleep(this.#o.retryBaseMs ?? 200);
      }
      shard.iterator = undefined;
      return 0;
    }
    const records = page.Records ?? [];
    this.counts.recordsRead += records.length;
    if (records.length > 0) {
      const delivered = await this.#deliver(records);
      if (!delivered) return 0; // stopped mid-retry: nothing of this page is checkpointed
      this.#positions[shard.shardId] = { sequenceNumber: records[records.length - 1]!.dynamodb!.SequenceNumber };
    }
    shard.iterator = page.NextShardIterator;
    // No next iterator: the shard is closed and drained; its children may be read now.
    if (!shard.iterator) this.#positions[shard.shardId] = { ...this.#positions[shard.shardId], done: true };
    if (records.length > 0 || !shard.iterator) await this.#checkpoint.save(this.#streamArn!, this.#positions);
    return records.length;
  }

  /** Sends the records' envelopes in order, 10 per call, retrying from the first entry not accepted. False if stopped first. */
  async #deliver(records: readonly StreamRecord[]): Promise<boolean> {
    const events: BusEvent[] = [];
    for (const r of records) {
      if (passesDeliveryFilter(r as StreamRecordLike)) events.push(busEventOf(r as StreamRecordLike));
      else this.counts.filtered++;
    }
    let next = 0;
    let delayMs = this.#o.retryBaseMs ?? 200;
    while (next < events.length) {
      if (this.#stopped) return false;
      const batch = events.slice(next, next + SQS_BATCH_ENTRIES);
      let accepted = 0;
      try {
        const r = await this.#o.sqs.send(new SendMessageBatchCommand({ QueueUrl: this.#o.queueUrl, Entries: batch.map(entryOf) }));
        const failed = new Set((r.Failed ?? []).map((f) => Number(f.Id)));
        while (accepted < batch.length && !failed.has(accepted)) accepted++;
        for (const f of r.Failed ?? []) this.#log(`[event-relay] SendMessage ${batch[Number(f.Id)]?.detail.eventId} failed: ${f.Code} ${f.Message ?? ''}`);
        if (failed.size > 0) this.counts.sendFailures += failed.size;
      } catch (err) {
        this.counts.sendFailures++;
        this.#log(`[event-relay] SendMessageBatch of ${batch.length} failed: ${describe(err)}`);
      }
      this.counts.delivered += accepted;
      next += accepted;
      if (accepted < batch.length) {
        // Entries after the first failure that were accepted go again: duplicates, not loss.
        await this.#sleep(delayMs);
        delayMs = Math.min(MAX_RETRY_MS, delayMs * 2);
      } else delayMs = this.#o.retryBaseMs ?? 200;
    }
    return true;
  }

  /** Runs a call until it succeeds or the relay stops (undefined then). */
  async #retrying<T>(what: string, call: () => Promise<T>): Promise<T | undefined> {
    let delayMs = this.#o.retryBaseMs ?? 200;
    while (!this.#stopped) {
      try {
        return await call();
      } catch (err) {
        this.counts.readFailures++;
        this.#log(`[event-relay] ${what} failed: ${describe(err)}`);
        await this.#sleep(delayMs);
        delayMs = Math.min(MAX_RETRY_MS, delayMs * 2);
      }
    }
    return undefined;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.#wake = done;
    });
  }
}

/** The SQS entry of one envelope: the body is the envelope, attributes let consumers filter without parsing it. */
function entryOf(e: BusEvent, index: number) {
  return {
    Id: String(index),
    MessageBody: JSON.stringify(e),
    MessageAttributes: {
      videoId: { DataType: 'String', StringValue: e.detail.videoId },
      eventId: { DataType: 'String', StringValue: e.detail.eventId },
      detailType: { DataType: 'String', StringValue: e['detail-type'] },
    },
  };
}

function describe(err: unknown): string {
  const e = err as { name?: string; message?: string };
  return `${e?.name ?? 'Error'}: ${e?.message ?? String(err)}`;
}
