/**
 * DynamoDB's own rules that DynamoDB Local gets wrong, as middleware on an SDK client that
 * talks to DynamoDB Local, so emulator-backed tests meet what AWS does (the sibling of the
 * SQS FIFO model's limits, core/ingest/memory/sqs-fifo-model.ts; the lease table's in-memory
 * twin, core/leases/memory/memory-dynamodb.ts, has these rules itself):
 *
 * - a TransactWriteItems that names one item twice (two operations on one item, across
 *   ConditionCheck, Put, Update and Delete) is refused as a `ValidationException` before
 *   anything applies ("Transaction request cannot include multiple operations on one
 *   item"). DynamoDB Local runs it and reports a condition failure instead, which once hid
 *   a lost frame behind "the record exists" (issue 32).
 *
 *   installDynamoDbRules(clients.dynamodb, { [wiring.resultsTable]: ['videoId', 'frame'], ... });
 *
 * The limits DynamoDB Local does enforce (100 items per transaction, 400 KB per item) are
 * left to it.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';
import { EVENTS_TABLE, LEASES_TABLE, RESULTS_TABLE, type TableShape } from '../core/resources.ts';

/** Key attribute names per table name. */
export type KeySchemas = Readonly<Record<string, readonly string[]>>;

type Operation = { readonly TableName?: string; readonly Key?: Record<string, unknown>; readonly Item?: Record<string, unknown> };
type TransactItem = { readonly ConditionCheck?: Operation; readonly Put?: Operation; readonly Update?: Operation; readonly Delete?: Operation };

/** The key schemas of the project's tables, by the names a wiring gives them. */
export function projectKeySchemas(wiring: { readonly leasesTable: string; readonly resultsTable: string; readonly eventsTable: string }): KeySchemas {
  const names = (t: TableShape) => [t.partitionKey.name, ...(t.sortKey ? [t.sortKey.name] : [])];
  return { [wiring.leasesTable]: names(LEASES_TABLE), [wiring.resultsTable]: names(RESULTS_TABLE), [wiring.eventsTable]: names(EVENTS_TABLE) };
}

/** The items a transaction names more than once, as `table key-json`; empty when it is well formed. */
export function itemsNamedTwice(items: readonly TransactItem[], keys: KeySchemas): string[] {
  const seen = new Set<string>();
  const twice: string[] = [];
  for (const it of items) {
    const op = it.ConditionCheck ?? it.Put ?? it.Update ?? it.Delete;
    if (!op?.TableName) continue;
    const attrs = keys[op.TableName];
    const source = op.Key ?? op.Item;
    if (!attrs || !source) continue;
    const id = `${op.TableName} ${JSON.stringify(attrs.map((a) => source[a]))}`;
    if (seen.has(id)) twice.push(id);
    seen.add(id);
  }
  return twice;
}

/** DynamoDB's answer to a transaction with two operations on one item. */
export function multipleOperationsError(): Error {
  return Object.assign(new Error('Transaction request cannot include multiple operations on one item'), {
    name: 'ValidationException',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
  });
}

/** Adds the rules to `client` (a document client made from it shares its middleware stack). */
export function installDynamoDbRules(client: DynamoDBClient, keys: KeySchemas): void {
  const middleware: InitializeMiddleware<object, MetadataBearer> = (next, context) => async (args) => {
    if (/TransactWrite/.test(String(context.commandName ?? ''))) {
      const items = ((args.input as { TransactItems?: TransactItem[] }).TransactItems ?? []) as TransactItem[];
      if (itemsNamedTwice(items, keys).length > 0) throw multipleOperationsError();
    }
    return next(args);
  };
  // Low priority in the initialize step: it sees the document client's plain input, before marshalling.
  client.middlewareStack.add(middleware, { step: 'initialize', name: 'dynamoDbRules', priority: 'low' });
}
