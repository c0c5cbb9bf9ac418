/**
 * Single flight for the janitor's scheduled runs without Lambda reserved concurrency
 * (issue 35, item 1): a short lock item in the leases table, taken with a conditional
 * put and given back with a conditional delete.
 *
 * The condition compares the item's own expiry (`expiresAtMs`) with the taker's clock:
 * DynamoDB TTL deletes expired items lazily (typically within two days) and they still
 * show up to reads and conditions, so TTL (`ttlEpochSeconds`) only collects the item.
 * A holder that dies (Lambda timeout, crash) blocks scheduled runs at most until its
 * expiry: the shorter of the Lambda timeout and the janitor period, so the next period's
 * run is never lost to it. (Lambda clocks are synchronised; a skew only shortens or
 * lengthens an overlap, which is safe.)
 *
 * The token is only for giving back one's own lock: nothing is fenced by it. The janitor
 * does not need single flight for correctness (every write it makes is conditional, and
 * the router already launches concurrently with it); the lock keeps two overlapping
 * scheduled runs (a Lambda retry of a failed run, a slow run, a duplicate schedule event)
 * from each spending the whole PROVISIONING budget and reading every slot twice.
 */
import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LEASE_ATTR } from '../../resources.ts';
import type { RunLock } from '../janitor.ts';

/** Key of the lock item in the leases table (slot items are `slot#<n>`, videos `video#<id>`). */
export const JANITOR_RUN_LOCK_KEY = 'janitor#scheduled-run';

export interface JanitorRunLockOptions {
  readonly tableName: string;
  /** How long a taken lock holds if it is not given back: the shorter of the janitor's Lambda timeout and its period. */
  readonly holdMs: number;
  /** Makes the token; randomUUID by default. */
  readonly token?: () => string;
}

export class JanitorRunLock implements RunLock {
  readonly #ddb: DynamoDBDocumentClient;
  readonly #o: JanitorRunLockOptions;

  constructor(ddb: DynamoDBDocumentClient, options: JanitorRunLockOptions) {
    this.#ddb = ddb;
    this.#o = options;
  }

  /** Takes the lock at `nowMs` unless another run holds an unexpired one; returns the token, or undefined. */
  async acquire(nowMs: number): Promise<string | undefined> {
    const token = (this.#o.token ?? randomUUID)();
    const expiresAtMs = nowMs + this.#o.holdMs;
    try {
      await this.#ddb.send(
        new PutCommand({
          TableName: this.#o.tableName,
          Item: { [LEASE_ATTR.pk]: JANITOR_RUN_LOCK_KEY, token, takenAtMs: nowMs, expiresAtMs, [LEASE_ATTR.ttl]: Math.ceil(expiresAtMs / 1000) + 86_400 },
          // The expiry is compared here, not left to TTL (lazy: expired items still read).
          ConditionExpression: 'attribute_not_exists(#pk) OR expiresAtMs <= :now',
          ExpressionAttributeNames: { '#pk': LEASE_ATTR.pk },
          ExpressionAttributeValues: { ':now': nowMs },
        }),
      );
      return token;
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return undefined;
      throw e;
    }
  }

  /** Gives the lock back if it is still this token's (an expired one taken over since is left alone). */
  async release(token: string): Promise<void> {
    try {
      await this.#ddb.send(
        new DeleteCommand({
          TableName: this.#o.tableName,
          Key: { [LEASE_ATTR.pk]: JANITOR_RUN_LOCK_KEY },
          ConditionExpression: '#token = :token',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':token': token },
        }),
      );
    } catch (e) {
      if (!(e instanceof ConditionalCheckFailedException)) throw e;
    }
  }
}
