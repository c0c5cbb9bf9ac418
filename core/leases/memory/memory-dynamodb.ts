/**
 * An in-memory twin of DynamoDB at the level of the document client's commands: the real
 * lease adapter (core/leases/dynamodb/lease-store.ts), the results reader and any other code that
 * `send`s `@aws-sdk/lib-dynamodb` commands run on it unchanged. Twinning the API rather
 * than the port means one implementation of the lease protocol (the adapter's conditions)
 * is exercised on both backends, so the twin cannot drift from production logic; what the
 * twin must get right is DynamoDB itself, and the contract suite checks that against
 * DynamoDB Local.
 *
 * Commands: Get, Put, Update, Delete, Query (tables and GSIs), Scan, BatchGet, TransactWrite.
 * Rules it enforces, DynamoDB's documented ones, including some DynamoDB Local gets wrong:
 *  - conditions as expressions (./expressions/: parsed by parse.ts, evaluated by evaluate.ts); a failed one throws
 *    `ConditionalCheckFailedException` (with the old item, marshalled, on request);
 *  - TransactWriteItems: 1-100 actions; **two actions on one item are a ValidationException**
 *    (DynamoDB Local reports a condition failure instead); at most 4 MB in all; every
 *    condition evaluated, a failure cancels all with `TransactionCanceledException` whose
 *    `CancellationReasons` has one entry per action (`None` / `ConditionalCheckFailed`, the
 *    old item in AttributeValue form, as the document client leaves errors untranslated);
 *  - items at most 400 KB (a Put beyond is a ValidationException; an Update that grows an
 *    item beyond fails, in a transaction as the reason `ValidationError`);
 *  - table names of 3-255 characters; keys must match the schema and cannot be updated; expression names and values must be
 *    defined and used; a few reserved words must go through placeholders;
 *  - GSIs are sparse, projected (KEYS_ONLY keeps table and index keys), and refuse
 *    `ConsistentRead`; BatchGetItem takes at most 100 distinct keys;
 *  - Query/Scan pages stop at `Limit` items or 1 MB, with `LastEvaluatedKey`;
 *  - TTL only garbage-collects, lazily: an expired item stays readable (and conditions see
 *    it) until {@link MemoryDynamoDb.sweepExpired} runs, as DynamoDB's TTL deletes within days.
 * Not modelled: eventual consistency of GSIs and non-consistent reads (they read the
 * latest), transaction conflicts between concurrent transactions (each command is atomic
 * here), ClientRequestToken idempotency, capacity and throttling (inject them with
 * {@link MemoryDynamoDb.intercept}), streams.
 */
import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException, DynamoDBServiceException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { TableShape } from '../../resources.ts';
import { ExpressionError, parseCondition, parseProjection, parseUpdate, Placeholders, type Condition, type DocValue, type Item } from './expressions/parse.ts';
import { applyUpdate, evaluate, order, project, typeOf } from './expressions/evaluate.ts';
import { itemBytes, marshallItem, stripUndefined } from './item-values.ts';

/** DynamoDB's limits the twin enforces. */
export const DYNAMODB_LIMITS = {
  itemBytes: 400 * 1024,
  transactionItems: 100,
  transactionBytes: 4 * 1024 * 1024,
  batchGetKeys: 100,
  pageBytes: 1024 * 1024,
} as const;

/** What {@link MemoryDynamoDb.intercept} sees of a call, and runs it with. */
export type Interceptor = (operation: string, input: Record<string, unknown>, run: () => Promise<unknown>) => Promise<unknown>;

/** Sees every item written (put, updated or deleted: `after` undefined), after the write. */
export type WriteObserver = (tableName: string, before: Item | undefined, after: Item | undefined) => void;

interface Table {
  readonly name: string;
  readonly shape: TableShape;
  /** By key string (see keyString), in insertion order. */
  readonly items: Map<string, Item>;
}

type AnyInput = Record<string, unknown> & {
  TableName?: string;
  Key?: Item;
  Item?: Item;
  ConditionExpression?: string;
  UpdateExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, DocValue>;
  ReturnValues?: string;
  ReturnValuesOnConditionCheckFailure?: string;
};

/** The in-memory DynamoDB (see the module's doc). */
export class MemoryDynamoDb {
  private readonly tables = new Map<string, Table>();
  private readonly nowMs: () => number;
  /** Wraps every call (fault injection: throw before `run()`, or after it to lose an answer). */
  intercept: Interceptor | undefined;
  /** Operations called, in order (for tests that count calls). */
  readonly calls: string[] = [];
  /** Observers of every write (invariant checks: see MemoryLeaseTable's token check). */
  readonly writeObservers: WriteObserver[] = [];

  /** @param options.now the clock TTL sweeps compare against (epoch ms); Date.now by default */
  constructor(options: { readonly now?: () => number } = {}) {
    this.nowMs = options.now ?? Date.now;
  }

  /** Creates a table of the given shape (the one infra/ and local/ create). */
  createTable(name: string, shape: TableShape): this {
    if (!/^[A-Za-z0-9_.-]{3,255}$/.test(name)) throw validation('Invalid table/index name.  Table/index names must be between 3 and 255 characters long, and may contain only the characters a-z, A-Z, 0-9, \'_\', \'-\', and \'.\'');
    if (this.tables.has(name)) throw Object.assign(validation(`Table already exists: ${name}`), { name: 'ResourceInUseException' });
    this.tables.set(name, { name, shape, items: new Map() });
    return this;
  }

  /**
   * This twin typed as the document client the adapters take. They only call `send` with
   * lib-dynamodb commands, which is all the twin answers; this is the one cast between them.
   */
  asDocumentClient(): DynamoDBDocumentClient {
    return this as unknown as DynamoDBDocumentClient;
  }

  /** Every item of a table, as stored (copies). */
  scanAll(tableName: string): Item[] {
    return [...this.table(tableName).items.values()].map((it) => structuredClone(it));
  }

  /**
   * TTL's garbage collection, run only when asked (DynamoDB runs it lazily, within days):
   * deletes items whose TTL attribute (epoch seconds) is before now. Returns how many.
   */
  sweepExpired(nowMs = this.nowMs()): number {
    let n = 0;
    for (const t of this.tables.values()) {
      for (const [k, it] of t.items) {
        const ttl = it[t.shape.ttlAttribute];
        if (typeof ttl === 'number' && ttl * 1000 < nowMs) {
          t.items.delete(k);
          n++;
        }
      }
    }
    return n;
  }

  /** Answers one document-client command. */
  async send(command: { readonly input: object }): Promise<unknown> {
    const operation = operationOf(command);
    const input = stripUndefined(command.input) as AnyInput;
    this.calls.push(operation);
    // Answer on a later turn, as a network call would: callers must not rely on a call
    // settling synchronously, and concurrent callers interleave between calls.
    await Promise.resolve();
    const run = async () => this.answer(operation, input);
    return this.intercept ? this.intercept(operation, input, run) : run();
  }

  /** No-op (the document client's `destroy`). */
  destroy(): void {}

  private answer(operation: string, input: AnyInput): unknown {
    try {
      switch (operation) {
        case 'GetItem':
          return this.get(input);
        case 'PutItem':
          return this.put(input);
        case 'UpdateItem':
          return this.update(input);
        case 'DeleteItem':
          return this.delete(input);
        case 'Query':
          return this.query(input, false);
        case 'Scan':
          return this.query(input, true);
        case 'BatchGetItem':
          return this.batchGet(input);
        case 'TransactWriteItems':
          return this.transactWrite(input);
      }
    } catch (e) {
      throw e instanceof ExpressionError ? validation(e.message) : e;
    }
    throw validation(`The in-memory DynamoDB does not answer ${operation}`);
  }

  // ------------------------------------------------------------------------ single items

  private get(input: AnyInput): unknown {
    const t = this.table(input.TableName);
    const p = new Placeholders(input.ExpressionAttributeNames, undefined);
    const projection = typeof input.ProjectionExpression === 'string' ? parseProjection(input.ProjectionExpression, p) : undefined;
    p.checkAllUsed();
    const it = t.items.get(keyString(t.shape, input.Key));
    if (!it) return { $metadata: {} };
    return { Item: projection ? project(it, projection) : structuredClone(it), $metadata: {} };
  }

  private put(input: AnyInput): unknown {
    const t = this.table(input.TableName);
    const item = input.Item ?? {};
    const key = keyString(t.shape, keyOf(t.shape, item));
    checkItemSize(item);
    const old = t.items.get(key);
    const condition = this.condition(input);
    if (condition && !evaluate(condition, old ?? {})) throw conditionFailed(input, old);
    this.write(t, key, old, structuredClone(item));
    return { ...(input.ReturnValues === 'ALL_OLD' && old ? { Attributes: structuredClone(old) } : {}), $metadata: {} };
  }

  private update(input: AnyInput): unknown {
    const t = this.table(input.TableName);
    const key = keyString(t.shape, input.Key);
    const old = t.items.get(key);
    const next = this.updated(t, input, old);
    if (next === 'condition-failed') throw conditionFailed(input, old);
    if (next === 'too-large') throw validation('Item size to update has exceeded the maximum allowed size');
    this.write(t, key, old, next);
    const rv = input.ReturnValues ?? 'NONE';
    const attributes = rv === 'ALL_OLD' || rv === 'UPDATED_OLD' ? old : rv === 'ALL_NEW' || rv === 'UPDATED_NEW' ? next : undefined;
    return { ...(attributes ? { Attributes: structuredClone(attributes) } : {}), $metadata: {} };
  }

  private delete(input: AnyInput): unknown {
    const t = this.table(input.TableName);
    const key = keyString(t.shape, input.Key);
    const old = t.items.get(key);
    const condition = this.condition(input);
    if (condition && !evaluate(condition, old ?? {})) throw conditionFailed(input, old);
    this.write(t, key, old, undefined);
    return { ...(input.ReturnValues === 'ALL_OLD' && old ? { Attributes: structuredClone(old) } : {}), $metadata: {} };
  }

  /** The condition of a write, its placeholders checked for use (with the update expression's). */
  private condition(input: AnyInput, update?: (p: Placeholders) => void): Condition | undefined {
    const p = new Placeholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
    const c = input.ConditionExpression !== undefined ? parseCondition(input.ConditionExpression, p) : undefined;
    update?.(p);
    p.checkAllUsed();
    return c;
  }

  /** The item an UpdateItem would leave, or why it would not. */
  private updated(t: Table, input: AnyInput, old: Item | undefined): Item | 'condition-failed' | 'too-large' {
    let actions: ReturnType<typeof parseUpdate> | undefined;
    const condition = this.condition(input, (p) => {
      if (input.UpdateExpression !== undefined) actions = parseUpdate(input.UpdateExpression, p);
    });
    const keyNames = [t.shape.partitionKey.name, ...(t.shape.sortKey ? [t.shape.sortKey.name] : [])];
    const touched = actions ? [...actions.set.map((s) => s.path), ...actions.remove, ...actions.add.map((a) => a.path), ...actions.delete.map((d) => d.path)] : [];
    const keyTouched = touched.find((p) => keyNames.includes(String(p[0])));
    if (keyTouched) throw validation(`One or more parameter values were invalid: Cannot update attribute ${String(keyTouched[0])}. This attribute is part of the key`);
    if (condition && !evaluate(condition, old ?? {})) return 'condition-failed';
    const base = old ?? structuredClone(input.Key ?? {});
    const next = actions ? applyUpdate(actions, base) : structuredClone(base);
    return itemBytes(next) > DYNAMODB_LIMITS.itemBytes ? 'too-large' : next;
  }

  // ------------------------------------------------------------------------ reads of many

  private query(input: AnyInput, scan: boolean): unknown {
    const t = this.table(input.TableName);
    const indexName = input.IndexName as string | undefined;
    const index = indexName !== undefined ? t.shape.globalSecondaryIndexes.find((g) => g.indexName === indexName) : undefined;
    if (indexName !== undefined && !index) throw validation(`The table does not have the specified index: ${indexName}`);
    if (index && input.ConsistentRead === true) throw validation('Consistent reads are not supported on global secondary indexes');
    const pk = index ? index.partitionKey.name : t.shape.partitionKey.name;
    const sk = index ? index.sortKey?.name : t.shape.sortKey?.name;
    const p = new Placeholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
    let keyCondition: Condition | undefined;
    if (!scan) {
      if (typeof input.KeyConditionExpression !== 'string') throw validation('Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.');
      keyCondition = parseCondition(input.KeyConditionExpression, p);
      if (!constrainsEquality(keyCondition, pk)) throw validation(`Query condition missed key schema element: ${pk}`);
    }
    const filter = typeof input.FilterExpression === 'string' ? parseCondition(input.FilterExpression, p) : undefined;
    const projection = typeof input.ProjectionExpression === 'string' ? parseProjection(input.ProjectionExpression, p) : undefined;
    p.checkAllUsed();

    const tableKeys = [t.shape.partitionKey.name, ...(t.shape.sortKey ? [t.shape.sortKey.name] : [])];
    const pageKeys = [...new Set([...tableKeys, ...(index ? [pk, ...(sk ? [sk] : [])] : [])])];
    // An index holds only items that have its key attributes (sparse), projected.
    let rows = [...t.items.values()].filter((it) => !index || (it[pk] !== undefined && (!sk || it[sk] !== undefined)));
    if (index?.projection === 'KEYS_ONLY') rows = rows.map((it) => Object.fromEntries(pageKeys.filter((k) => it[k] !== undefined).map((k) => [k, it[k]])));
    if (keyCondition) rows = rows.filter((it) => evaluate(keyCondition, it));
    const forward = input.ScanIndexForward !== false;
    const ordering = (a: Item, b: Item) => {
      for (const k of [...(sk ? [sk] : []), ...pageKeys]) {
        const o = order(a[k], b[k]) ?? 0;
        if (o !== 0) return o;
      }
      return 0;
    };
    rows.sort((a, b) => (forward || scan ? ordering(a, b) : -ordering(a, b)));
    const start = input.ExclusiveStartKey as Item | undefined;
    if (start) rows = rows.filter((it) => (forward || scan ? ordering(it, start) > 0 : ordering(it, start) < 0));
    const limit = typeof input.Limit === 'number' ? input.Limit : Number.POSITIVE_INFINITY;
    const page: Item[] = [];
    let bytes = 0;
    let last: Item | undefined;
    for (const it of rows) {
      if (page.length >= limit || bytes >= DYNAMODB_LIMITS.pageBytes) break;
      page.push(it);
      bytes += itemBytes(it);
      last = it;
    }
    const more = page.length < rows.length;
    const matched = filter ? page.filter((it) => evaluate(filter, it)) : page;
    const items = matched.map((it) => (projection ? project(it, projection) : structuredClone(it)));
    return {
      ...(input.Select === 'COUNT' ? {} : { Items: items }),
      Count: items.length,
      ScannedCount: page.length,
      ...(more && last ? { LastEvaluatedKey: Object.fromEntries(pageKeys.filter((k) => last[k] !== undefined).map((k) => [k, last[k]])) } : {}),
      $metadata: {},
    };
  }

  private batchGet(input: AnyInput): unknown {
    const request = (input.RequestItems ?? {}) as Record<string, { Keys: Item[]; ProjectionExpression?: string; ExpressionAttributeNames?: Record<string, string> }>;
    const total = Object.values(request).reduce((n, r) => n + r.Keys.length, 0);
    if (total > DYNAMODB_LIMITS.batchGetKeys) throw validation('Too many items requested for the BatchGetItem call');
    const responses: Record<string, Item[]> = {};
    for (const [name, r] of Object.entries(request)) {
      const t = this.table(name);
      const keys = r.Keys.map((k) => keyString(t.shape, k));
      if (new Set(keys).size !== keys.length) throw validation('Provided list of item keys contains duplicates');
      const p = new Placeholders(r.ExpressionAttributeNames, undefined);
      const projection = r.ProjectionExpression ? parseProjection(r.ProjectionExpression, p) : undefined;
      p.checkAllUsed();
      responses[name] = keys.flatMap((k) => {
        const it = t.items.get(k);
        return it ? [projection ? project(it, projection) : structuredClone(it)] : [];
      });
    }
    return { Responses: responses, UnprocessedKeys: {}, $metadata: {} };
  }

  // ------------------------------------------------------------------------ transactions

  private transactWrite(input: AnyInput): unknown {
    const actions = (input.TransactItems ?? []) as Record<string, AnyInput>[];
    if (actions.length < 1 || actions.length > DYNAMODB_LIMITS.transactionItems) {
      throw validation(`1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to ${DYNAMODB_LIMITS.transactionItems}`);
    }
    // Validate the whole request before evaluating anything: shape, one action per item, size.
    const planned = actions.map((a) => {
      const kinds = (['ConditionCheck', 'Put', 'Update', 'Delete'] as const).filter((k) => a[k] !== undefined);
      if (kinds.length !== 1) throw validation('TransactItems can only contain one of Check, Put, Update or Delete');
      const kind = kinds[0]!;
      const body = a[kind] as AnyInput;
      const t = this.table(body.TableName);
      const key = keyString(t.shape, kind === 'Put' ? keyOf(t.shape, body.Item ?? {}) : body.Key);
      if (kind === 'ConditionCheck' && body.ConditionExpression === undefined) throw validation('ConditionCheck requires a ConditionExpression');
      if (kind === 'Put') checkItemSize(body.Item ?? {});
      return { kind, body, t, key, id: `${body.TableName}\u0000${key}` };
    });
    const ids = planned.map((x) => x.id);
    if (new Set(ids).size !== ids.length) throw validation('Transaction request cannot include multiple operations on one item');
    const requestBytes = planned.reduce((n, x) => n + itemBytes(x.body.Item ?? {}) + itemBytes(x.body.Key ?? {}) + itemBytes((x.body.ExpressionAttributeValues ?? {}) as Item), 0);
    if (requestBytes > DYNAMODB_LIMITS.transactionBytes) throw validation('Transaction request size has exceeded the maximum allowed size of 4 MB');

    // Evaluate every action against the state before the transaction; apply all or nothing.
    const outcomes = planned.map((x) => {
      const old = x.t.items.get(x.key);
      if (x.kind === 'Update') {
        const next = this.updated(x.t, x.body, old);
        return { x, old, next };
      }
      const condition = this.condition(x.body);
      const ok = !condition || evaluate(condition, old ?? {});
      const next: Item | undefined | 'condition-failed' = !ok ? 'condition-failed' : x.kind === 'Put' ? structuredClone(x.body.Item ?? {}) : x.kind === 'Delete' ? undefined : old;
      return { x, old, next };
    });
    if (outcomes.some((o) => o.next === 'condition-failed' || o.next === 'too-large')) {
      const reasons = outcomes.map((o) =>
        o.next === 'condition-failed'
          ? {
              Code: 'ConditionalCheckFailed',
              Message: 'The conditional request failed',
              ...(o.x.body.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && o.old ? { Item: marshallItem(o.old) } : {}),
            }
          : o.next === 'too-large'
            ? { Code: 'ValidationError', Message: 'Item size to update has exceeded the maximum allowed size' }
            : { Code: 'None' },
      );
      throw new TransactionCanceledException({
        message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
        $metadata: {},
        CancellationReasons: reasons,
      });
    }
    for (const o of outcomes) {
      if (o.x.kind === 'ConditionCheck') continue;
      this.write(o.x.t, o.x.key, o.old, o.next as Item | undefined);
    }
    return { $metadata: {} };
  }

  /** Stores (or with `after` undefined, deletes) an item, and tells the observers. */
  private write(t: Table, key: string, before: Item | undefined, after: Item | undefined): void {
    if (after === undefined) t.items.delete(key);
    else t.items.set(key, after);
    for (const observe of this.writeObservers) observe(t.name, before, after);
  }

  private table(name: unknown): Table {
    const t = typeof name === 'string' ? this.tables.get(name) : undefined;
    if (!t) throw Object.assign(validation(`Requested resource not found: Table: ${String(name)} not found`), { name: 'ResourceNotFoundException' });
    return t;
  }
}

// ---------------------------------------------------------------------------- helpers

const OPERATIONS: readonly [abstract new (...args: never[]) => object, string][] = [
  [GetCommand, 'GetItem'],
  [PutCommand, 'PutItem'],
  [UpdateCommand, 'UpdateItem'],
  [DeleteCommand, 'DeleteItem'],
  [QueryCommand, 'Query'],
  [ScanCommand, 'Scan'],
  [BatchGetCommand, 'BatchGetItem'],
  [TransactWriteCommand, 'TransactWriteItems'],
];

function operationOf(command: object): string {
  const hit = OPERATIONS.find(([cls]) => command instanceof cls);
  if (hit) return hit[1];
  // Low-level client commands carry AttributeValue maps, which the twin does not speak.
  throw validation(`The in-memory DynamoDB answers document-client commands only, not ${command.constructor.name}`);
}

/** A ValidationException as DynamoDB sends it (the SDK has no class of its own for it). */
export function validation(message: string): DynamoDBServiceException {
  return new DynamoDBServiceException({ name: 'ValidationException', $fault: 'client', message, $metadata: {} });
}

function conditionFailed(input: AnyInput, old: Item | undefined): ConditionalCheckFailedException {
  return new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: {},
    ...(input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && old ? { Item: marshallItem(old) } : {}),
  });
}

function keyOf(shape: TableShape, item: Item): Item {
  return Object.fromEntries([shape.partitionKey, ...(shape.sortKey ? [shape.sortKey] : [])].map((k) => [k.name, item[k.name]]));
}

/** The key of an item as a string, after checking it against the table's key schema. */
function keyString(shape: TableShape, key: Item | undefined): string {
  const schema = [shape.partitionKey, ...(shape.sortKey ? [shape.sortKey] : [])];
  const given = Object.keys(key ?? {}).filter((k) => key?.[k] !== undefined);
  const matches = given.length === schema.length && schema.every((k) => typeOf(key?.[k.name]) === k.type && (k.type !== 'S' || key?.[k.name] !== ''));
  if (!matches) throw validation('The provided key element does not match the schema');
  return JSON.stringify(schema.map((k) => key![k.name]));
}

/** True when the condition includes `name = value` (a Query's partition key). */
function constrainsEquality(c: Condition, name: string): boolean {
  if (c.kind === 'and') return constrainsEquality(c.a, name) || constrainsEquality(c.b, name);
  return c.kind === 'compare' && c.op === '=' && c.a.kind === 'path' && c.a.path.length === 1 && c.a.path[0] === name;
}

function checkItemSize(item: Item): void {
  if (itemBytes(item) > DYNAMODB_LIMITS.itemBytes) throw validation('Item size has exceeded the maximum allowed size');
}
