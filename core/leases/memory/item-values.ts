/**
 * DynamoDB's item model in document form, for the twin and for whoever sizes stored
 * items (the cost bench): an item's size as the service counts it, the AttributeValue
 * form its error payloads carry, and the document client's dropping of undefined values.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DocValue, Item } from './expressions/parse.ts';
import { typeOf } from './expressions/evaluate.ts';

/**
 * An item's size as DynamoDB counts it (developer guide, "Item sizes"), in document form:
 * attribute names and values in UTF-8, numbers 1 byte per 2 significant digits + 1, binary
 * by its bytes, 1 byte per boolean/null, 3 bytes per list or map plus 1 per element (and
 * a map element's name). The benches size stored items with it too.
 */
export function itemBytes(item: Item): number {
  let n = 0;
  for (const [k, v] of Object.entries(item)) n += Buffer.byteLength(k) + valueBytes(v);
  return n;
}

function valueBytes(v: DocValue): number {
  if (typeof v === 'string') return Buffer.byteLength(v);
  // Significant digits: leading and trailing zeros trimmed (DynamoDB's rule).
  if (typeof v === 'number' || typeof v === 'bigint') return Math.ceil(Math.max(1, String(v).replace(/[-.]|e.*$/g, '').replace(/^0+/, '').replace(/0+$/, '').length) / 2) + 1;
  if (typeof v === 'boolean' || v === null || v === undefined) return 1;
  if (v instanceof Uint8Array) return v.byteLength;
  if (Array.isArray(v)) return 3 + v.reduce((n: number, x) => n + 1 + valueBytes(x), 0);
  if (v instanceof Set) return [...v].reduce((n: number, x) => n + valueBytes(x), 0);
  return 3 + Object.entries(v as Item).reduce((n, [k, x]) => n + 1 + Buffer.byteLength(k) + valueBytes(x), 0);
}

/** A document value in AttributeValue form (what DynamoDB's error payloads carry). */
export function marshallValue(v: DocValue): AttributeValue {
  // The union type of AttributeValue cannot be built member by member from a generic map.
  return marshalled(v) as unknown as AttributeValue;
}

function marshalled(v: DocValue): Record<string, unknown> {
  if (typeof v === 'string') return { S: v };
  if (typeof v === 'number' || typeof v === 'bigint') return { N: String(v) };
  if (typeof v === 'boolean') return { BOOL: v };
  if (v === null || v === undefined) return { NULL: true };
  if (v instanceof Uint8Array) return { B: v };
  if (Array.isArray(v)) return { L: v.map(marshallValue) };
  if (v instanceof Set) {
    const t = typeOf(v);
    return { [t]: [...v].map((x) => (t === 'NS' ? String(x) : x)) };
  }
  return { M: marshallItem(v as Item) };
}

export function marshallItem(item: Item): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(item).map(([k, v]) => [k, marshallValue(v)]));
}

/** The document client with `removeUndefinedValues` drops undefined values before sending. */
export function stripUndefined(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripUndefined);
  if (v === null || typeof v !== 'object' || v instanceof Uint8Array || v instanceof Set) return v;
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).map(([k, x]) => [k, stripUndefined(x)]));
}

