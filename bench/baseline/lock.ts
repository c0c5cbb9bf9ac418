/**
 * The per-video lock of the baseline (seed 000's design), on DynamoDB, after the pattern of
 * amazon-dynamodb-lock-client: one item per lock key holding the owner, a record version
 * number (a fresh UUID on every acquire and heartbeat) and a lease duration. There is no
 * fencing token: nothing downstream can tell an old holder's writes from a new one's.
 *
 * Differences from the lock client, each the stronger choice for the baseline:
 *  - `tryAcquire` never blocks. The seed's `SET NX EX` either takes the lock or fails at
 *    once, and a worker that fails must skip the message, so there is nothing to wait for.
 *  - An expired lock is taken over at once, by a condition on the item's `expiresAtMs`
 *    (the holder's clock plus the lease duration), as Redis's `EX` expires a key. The lock
 *    client instead watches the record version for one lease duration before stealing
 *    (it trusts no clock); on one machine the clocks agree, and the faster takeover only
 *    shortens the baseline's failover.
 *  - The heartbeat (`renew`) is conditional on the holder's record version, as the lock
 *    client's `sendHeartbeat`; the seed's Redis `EXPIRE` would also extend a lock someone
 *    else had taken after it expired.
 *  - `release` deletes only the holder's own record version (the seed's Lua compare-and-delete).
 */
import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** One lock this client holds. */
export interface HeldLock {
  readonly key: string;
  /** Record version number of the item as this client last wrote it. */
  recordVersion: string;
  /** When the lease runs out unless renewed (this client's clock). */
  expiresAtMs: number;
}

export interface BaselineLockOptions {
  readonly ddb: Pick<DynamoDBDocumentClient, 'send'>;
  /** Table with a string partition key `pk`. */
  readonly table: string;
  /** Who holds the lock (logged in the item; not a fencing token). */
  readonly owner: string;
  /** Lease duration: the seed's `LOCK_TTL_SECONDS` (60 s). */
  readonly leaseDurationMs: number;
  /** Clock; tests move it. @default Date.now */
  readonly now?: () => number;
}

/** A lock client after amazon-dynamodb-lock-client's item layout, with the seed's non-blocking acquire. */
export class BaselineLockClient {
  readonly #o: BaselineLockOptions;
  readonly #now: () => number;
  readonly #held = new Map<string, HeldLock>();

  constructor(options: BaselineLockOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Locks this client believes it holds. */
  get held(): ReadonlyMap<string, HeldLock> {
    return this.#held;
  }

  /**
   * Takes the lock if nobody holds it or its holder's lease has run out; true when taken.
   * A lock this client already holds is reported as held (true) without a call.
   */
  async tryAcquire(key: string): Promise<boolean> {
    if (this.#held.has(key)) return true;
    const now = this.#now();
    const recordVersion = randomUUID();
    const expiresAtMs = now + this.#o.leaseDurationMs;
    try {
      await this.#o.ddb.send(
        new PutCommand({
          TableName: this.#o.table,
          Item: { pk: key, owner: this.#o.owner, recordVersionNumber: recordVersion, leaseDurationMs: this.#o.leaseDurationMs, expiresAtMs },
          ConditionExpression: 'attribute_not_exists(pk) OR expiresAtMs < :now',
          ExpressionAttributeValues: { ':now': now },
        }),
      );
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return false;
      throw e;
    }
    this.#held.set(key, { key, recordVersion, expiresAtMs });
    return true;
  }

  /**
   * Heartbeat: extends the lease with a new record version, if the item is still the one
   * this client wrote. False (and forgotten) when someone else has it now.
   */
  async renew(key: string): Promise<boolean> {
    const h = this.#held.get(key);
    if (!h) return false;
    const next = randomUUID();
    const expiresAtMs = this.#now() + this.#o.leaseDurationMs;
    try {
      await this.#o.ddb.send(
        new UpdateCommand({
          TableName: this.#o.table,
          Key: { pk: key },
          UpdateExpression: 'SET recordVersionNumber = :next, expiresAtMs = :exp',
          ConditionExpression: 'recordVersionNumber = :mine',
          ExpressionAttributeValues: { ':next': next, ':exp': expiresAtMs, ':mine': h.recordVersion },
        }),
      );
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) {
        this.#held.delete(key);
        return false;
      }
      throw e;
    }
    h.recordVersion = next;
    h.expiresAtMs = expiresAtMs;
    return true;
  }

  /** Deletes the lock if it is still this client's record version; forgets it either way. */
  async release(key: string): Promise<boolean> {
    const h = this.#held.get(key);
    if (!h) return false;
    this.#held.delete(key);
    try {
      await this.#o.ddb.send(
        new DeleteCommand({
          TableName: this.#o.table,
          Key: { pk: key },
          ConditionExpression: 'recordVersionNumber = :mine',
          ExpressionAttributeValues: { ':mine': h.recordVersion },
        }),
      );
      return true;
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return false;
      throw e;
    }
  }
}
