/**
 * Instrumentation of the AWS clients, installed by the composition roots (the Lambda
 * context in functions/shared/context.ts, the worker's main in gpu-worker/main.ts), never
 * by the client factory (core/aws/clients.ts), which builds plain clients.
 *
 * - `AWS_CALL_LOG=<file>` appends one line per API call (`role service operation`) to
 *   that file; the API-calls-per-frame benchmark reads it. Retries are not counted. A
 *   DynamoDB call also asks for `ReturnConsumedCapacity: TOTAL` (unless the caller asked
 *   for more) and its line gets a fourth field: the capacity units the answer reports
 *   (write units for writes, read units for reads; empty when the call failed or the
 *   answer had none), so the benches count DynamoDB write units as the service bills
 *   them (1 per KB per item). `TransactWriteItems` is the exception: DynamoDB Local
 *   reports one item's units per table for a transaction (measured: four 1-KB puts in two
 *   tables, 4 units instead of 8), so its units are computed from the request as the
 *   service bills them ({@link transactWriteUnits}: 2 per KB per item). It only observes,
 *   so it ships: read only when set; absent, no middleware is added.
 * - Anything else is added through {@link addClientInstrumentation} by a composition root
 *   outside the product: the lab (lab/aws/instrumentation.ts) adds the chaos runs' fault
 *   injection (`AWS_FAULT_INJECTION`) and the benches' latency model (`AWS_LATENCY_MODEL`)
 *   for the local stack's in-process functions and the workers it starts through
 *   lab/worker-main.ts. The Lambda bundles and the GPU image add nothing: neither contains
 *   the lab (test/infra/no-lab-in-product.test.ts).
 */
import { appendFileSync } from 'node:fs';
import type { BuildMiddleware, InitializeMiddleware, MetadataBearer } from '@smithy/types';
import type { AwsClients, CallerRole } from './clients.ts';

/** The environment variable of the call log. */
export const INSTRUMENTATION_ENV = {
  callLog: 'AWS_CALL_LOG',
} as const;

/** Installs what `env` asks for on clients a composition root built; may throw on a malformed setting. */
export type ClientInstrumentation = (clients: AwsClients, env: Record<string, string | undefined>, role: CallerRole) => void;

const added: ClientInstrumentation[] = [];

/** Adds an instrumentation that {@link instrumentAwsClients} applies from now on, in this process (once, however often added). */
export function addClientInstrumentation(instrumentation: ClientInstrumentation): void {
  if (!added.includes(instrumentation)) added.push(instrumentation);
}

/** Capacity units in a DynamoDB answer's `ConsumedCapacity` (one entry, or one per table); undefined when absent. */
export function consumedCapacityUnits(output: unknown): number | undefined {
  const cc = (output as { ConsumedCapacity?: unknown } | undefined)?.ConsumedCapacity;
  if (cc === undefined || cc === null) return undefined;
  const entries = (Array.isArray(cc) ? cc : [cc]) as { CapacityUnits?: unknown }[];
  let units = 0;
  for (const e of entries) if (typeof e?.CapacityUnits === 'number') units += e.CapacityUnits;
  return units;
}

/** A DynamoDB AttributeValue as it travels in a request body. */
type WireValue = { S?: string; N?: string; B?: string; BOOL?: boolean; NULL?: boolean; L?: WireValue[]; M?: Record<string, WireValue>; SS?: string[]; NS?: string[]; BS?: string[] };

/**
 * An AttributeValue's size as DynamoDB counts it (developer guide, "Item sizes"): a
 * string's UTF-8 bytes, a number's (significant digits / 2) + 1, a binary's bytes, 1 for a
 * boolean or null, a list or map 3 bytes plus 1 per element plus its elements (and a map
 * element's name).
 */
export function attributeValueBytes(v: WireValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S);
  if (v.N !== undefined) return numberBytes(v.N);
  if (v.B !== undefined) return Buffer.from(v.B, 'base64').length;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.L) return 3 + v.L.reduce((a, x) => a + 1 + attributeValueBytes(x), 0);
  if (v.M) return 3 + itemBytes(v.M) + Object.keys(v.M).length;
  if (v.SS) return v.SS.reduce((a, x) => a + Buffer.byteLength(x), 0);
  if (v.NS) return v.NS.reduce((a, x) => a + numberBytes(x), 0);
  if (v.BS) return v.BS.reduce((a, x) => a + Buffer.from(x, 'base64').length, 0);
  return 0;
}

function numberBytes(n: string): number {
  const digits = n.replace(/^[+-]/, '').replace(/e.*$/i, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** An item's size as DynamoDB counts it: each attribute's name (UTF-8) plus its value. */
export function itemBytes(item: Record<string, WireValue>): number {
  return Object.entries(item).reduce((a, [name, v]) => a + Buffer.byteLength(name) + attributeValueBytes(v), 0);
}

/**
 * The write units a `TransactWriteItems` request (its wire body) costs, as the service
 * bills transactions: 2 per KB (rounded up) of each item. A Put's item is in the request,
 * so it is exact; an Update's item is counted as its key plus the values it sets (the
 * item holds at least those: a lower bound, exact when the update writes the item's bulk,
 * as the checkpoint's does); a ConditionCheck or Delete as one KB (the items the pipeline
 * checks and deletes in transactions, slot leases, are well under a KB).
 */
export function transactWriteUnits(body: { TransactItems?: { Put?: { Item?: Record<string, WireValue> }; Update?: { Key?: Record<string, WireValue>; ExpressionAttributeValues?: Record<string, WireValue> }; ConditionCheck?: unknown; Delete?: unknown }[] }): number {
  const units = (bytes: number) => 2 * Math.max(1, Math.ceil(bytes / 1024));
  let total = 0;
  for (const t of body.TransactItems ?? []) {
    if (t.Put) total += units(itemBytes(t.Put.Item ?? {}));
    else if (t.Update) total += units(itemBytes(t.Update.Key ?? {}) + Object.values(t.Update.ExpressionAttributeValues ?? {}).reduce((a, v) => a + attributeValueBytes(v), 0));
    else total += units(0);
  }
  return total;
}

/**
 * Adds the call-log middleware to the three clients: one `role service operation` line
 * per call, before retries; DynamoDB lines add the consumed capacity units (module doc).
 */
export function installCallLog(clients: AwsClients, file: string, role: CallerRole): void {
  const logCalls = (service: string): InitializeMiddleware<object, MetadataBearer> => (next, context) => async (args) => {
    appendFileSync(file, `${role}\t${service}\t${context.commandName}\n`);
    return next(args);
  };
  // The transaction's units, computed from its wire body (after the document client marshalled it), for the line below.
  const txUnits = new WeakMap<object, number>();
  const logDynamoDbCalls: InitializeMiddleware<object, MetadataBearer> = (next, context) => async (args) => {
    const line = `${role}\tdynamodb\t${context.commandName}`;
    const input = args.input as { ReturnConsumedCapacity?: string };
    let units: number | undefined;
    try {
      const asked = input.ReturnConsumedCapacity === undefined || input.ReturnConsumedCapacity === 'NONE' ? { ...args, input: { ...input, ReturnConsumedCapacity: 'TOTAL' } } : args;
      const out = await next(asked);
      units = txUnits.get(context) ?? consumedCapacityUnits(out.output);
      return out;
    } finally {
      appendFileSync(file, `${line}\t${units ?? ''}\n`);
    }
  };
  const measureTransaction: BuildMiddleware<object, MetadataBearer> = (next, context) => async (args) => {
    if (context.commandName === 'TransactWriteItemsCommand' && !txUnits.has(context)) {
      // The JSON body: a string, or bytes (the SDK's JSON codec serializes to a Uint8Array).
      const body = (args.request as { body?: unknown }).body;
      const text = typeof body === 'string' ? body : body instanceof Uint8Array ? Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8') : undefined;
      if (text !== undefined) txUnits.set(context, transactWriteUnits(JSON.parse(text)));
    }
    return next(args);
  };
  clients.dynamodb.middlewareStack.add(logDynamoDbCalls, { step: 'initialize', name: 'callLog' });
  clients.dynamodb.middlewareStack.add(measureTransaction, { step: 'build', name: 'callLogTransactionUnits' });
  clients.s3.middlewareStack.add(logCalls('s3'), { step: 'initialize', name: 'callLog' });
  clients.sqs.middlewareStack.add(logCalls('sqs'), { step: 'initialize', name: 'callLog' });
}

/**
 * Installs what the environment asks for on clients a composition root built: the call
 * log (`AWS_CALL_LOG`), then every instrumentation added with
 * {@link addClientInstrumentation}, which may throw on a malformed setting (so a chaos
 * run never runs without its faults). Returns the clients.
 */
export function instrumentAwsClients(clients: AwsClients, env: Record<string, string | undefined>, role: CallerRole): AwsClients {
  const callLog = env[INSTRUMENTATION_ENV.callLog];
  if (callLog) installCallLog(clients, callLog, role);
  for (const instrumentation of added) instrumentation(clients, env, role);
  return clients;
}
