/**
 * The out-of-line rules documents of stored checkpoints (issue 44, decision 76): items
 * `rules#{ref}` of the leases table, content-addressed by core/commit/rules-ref.ts. This is
 * the one place that reads and writes them: a read of a checkpoint resolves its `rulesRef`
 * here, and every transaction that stores a checkpoint adds the Put of its document unless
 * this process knows the document is stored already.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { checkpointRules, type VideoCheckpoint } from '../../commit/checkpoint.ts';
import { KnownRules, missingRulesError, refOfJson, rulesItemKey } from '../../commit/rules-ref.ts';
import type { RulesDocument } from '../../analytics/rules.ts';
import type { TransactItem } from './video-commit.ts';

export class RulesItems {
  private readonly ddb: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly known = new KnownRules();

  constructor(ddb: DynamoDBDocumentClient, tableName: string) {
    this.ddb = ddb;
    this.tableName = tableName;
  }

  /**
   * The document `ref` names, for video `videoId`'s checkpoint. A consistent read (the
   * document may have been written by the transaction just before), once per document
   * per process. Throws a named error when the item is missing or does not match its ref.
   */
  async read(videoId: string, ref: string): Promise<RulesDocument> {
    const cached = this.known.get(ref);
    if (cached) return cached;
    const r = await this.ddb.send(new GetCommand({ TableName: this.tableName, Key: { pk: rulesItemKey(ref) }, ConsistentRead: true }));
    const json = r.Item?.rules;
    if (typeof json !== 'string') throw missingRulesError(videoId, ref);
    if (refOfJson(json) !== ref) {
      throw new Error(`rules item ${rulesItemKey(ref)} (read for video ${videoId}) does not hash to its reference: it was changed by hand; restore it from the leases table's point-in-time backup`);
    }
    const rules = JSON.parse(json) as RulesDocument;
    this.known.add(ref, rules);
    return rules;
  }

  /**
   * The Put of the rules document `ck` refers to, unless it is known stored or already in
   * this transaction (`inTransaction`, which it joins: DynamoDB rejects two operations on
   * one item in a transaction, and videos running the same rules share the item).
   * Unconditional: the item's content is a function of its key, so writing it again is a
   * no-op, and the transaction's other conditions decide whether anything lands.
   */
  putFor(ck: VideoCheckpoint, inTransaction: Set<string>): TransactItem | undefined {
    const r = checkpointRules(ck);
    if (!r || this.known.has(r.ref) || inTransaction.has(r.ref)) return undefined;
    inTransaction.add(r.ref);
    return { Put: { TableName: this.tableName, Item: { pk: rulesItemKey(r.ref), ref: r.ref, rules: r.json } } };
  }

  /** A transaction that stored `ck` landed: its rules document is stored. */
  landed(ck: VideoCheckpoint): void {
    const r = checkpointRules(ck);
    if (r) this.known.add(r.ref, r.rules);
  }
}
