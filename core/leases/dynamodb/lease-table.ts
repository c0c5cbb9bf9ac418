/**
 * What the two halves of the lease adapter share (slot-lease-store.ts for slots and launch
 * grants, video-lease-store.ts for pins, adoption and the fenced commit): the table's keys
 * and options, and the retrying transaction and batch-read helpers. Held by composition:
 * each half is given one {@link LeaseTableAccess}, and lease-store.ts composes the halves
 * into the adapter of the whole table.
 */
import { BatchGetCommand, type DynamoDBDocumentClient, type TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { mapBounded } from '../../async.ts';

/** The partition key of a slot's lease item. */
export const slotKey = (slot: number) => `slot#${slot}`;
/** The partition key of a video's lease item. */
export const videoKey = (videoId: string) => `video#${videoId}`;

/** The tables and index the lease adapter writes and reads. */
export interface LeaseTableOptions {
  /** The leases table (slot and video items, key `pk`). */
  readonly tableName: string;
  /** The results table (frame results and summaries). */
  readonly resultsTableName: string;
  /** The sparse keys-only GSI of video items by `pinnedSlot`. */
  readonly pinnedSlotIndex: string;
}

/** A document client and the lease table's options, with the retrying helpers both halves use. */
export class LeaseTableAccess<O extends LeaseTableOptions = LeaseTableOptions> {
  readonly ddb: DynamoDBDocumentClient;
  readonly o: O;

  constructor(ddb: DynamoDBDocumentClient, options: O) {
    this.ddb = ddb;
    this.o = options;
  }

  /**
   * Sends a transaction, retrying when it was cancelled only by conflicts with other
   * transactions on the same items (router pins, worker commits and releases touch the
   * slot item concurrently); a failed condition is never retried.
   */
  async transact(command: TransactWriteCommand): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.ddb.send(command);
        return;
      } catch (e) {
        const conflictOnly =
          e instanceof TransactionCanceledException &&
          (e.CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict') &&
          (e.CancellationReasons ?? []).every((r) => !r.Code || r.Code === 'None' || r.Code === 'TransactionConflict');
        if (!conflictOnly || attempt >= 6) throw e;
        await new Promise((r) => setTimeout(r, 10 * 2 ** attempt * (0.5 + Math.random())));
      }
    }
  }

  /** Reads items by key (BatchGetItem, 100 keys a call, unprocessed keys retried); missing items are absent from the map. */
  async batchGet(keys: readonly string[], consistent: boolean, projection?: string): Promise<Map<string, Record<string, unknown>>> {
    const out = new Map<string, Record<string, unknown>>();
    const unique = [...new Set(keys)];
    const chunks: string[][] = [];
    for (let i = 0; i < unique.length; i += 100) chunks.push(unique.slice(i, i + 100));
    // BatchGetItem takes 100 keys; the chunks of a large read (a router batch of 1,000
    // videos, the janitor's 1,000 slots) are read in parallel, a few at a time.
    await mapBounded(chunks, BATCH_GET_CONCURRENCY, async (chunk) => {
      let request: Record<string, { pk: string }[]> | undefined = { [this.o.tableName]: chunk.map((pk) => ({ pk })) };
      for (let attempt = 0; request && attempt < 8; attempt++) {
        const r = await this.ddb.send(
          new BatchGetCommand({
            RequestItems: {
              [this.o.tableName]: {
                Keys: request[this.o.tableName]!,
                ConsistentRead: consistent,
                ...(projection ? { ProjectionExpression: projection, ExpressionAttributeNames: { '#token': 'token' } } : {}),
              },
            },
          }),
        );
        for (const it of r.Responses?.[this.o.tableName] ?? []) out.set(String(it.pk), it);
        const left = r.UnprocessedKeys?.[this.o.tableName]?.Keys as { pk: string }[] | undefined;
        request = left && left.length > 0 ? { [this.o.tableName]: left } : undefined;
        if (request) await new Promise((res) => setTimeout(res, 20 * 2 ** attempt));
      }
      if (request) throw new Error('BatchGetItem left keys unprocessed after retries');
    });
    return out;
  }
}

/**
 * BatchGetItem calls one read has in flight: enough to read 1,000 keys in two rounds,
 * few enough not to burst a table's partitions (3,000 read units/s each).
 */
const BATCH_GET_CONCURRENCY = 5;

/** An error as `name: message`, for log lines and error messages. */
export function errorName(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
