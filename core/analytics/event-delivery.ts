/**
 * How an outbox item (core/analytics/event-schema.ts) becomes an event on the bus: the
 * stream filter, the bus event's envelope, and the pipe's input template (issue 22,
 * docs/decisions.md 36). The deployed pipe (infra/event-delivery.ts) is configured from
 * these constants and the local relay (local/event-relay.ts) applies the same functions,
 * so both deliver the same envelope. Pure: no AWS SDK.
 *
 * The detail users receive is `{ videoId, eventId, kind, item }`, `item` being the outbox
 * item as the stream carries it (DynamoDB JSON): a Pipes input template can copy values
 * and whole objects, but it cannot unmarshal DynamoDB JSON (numbers arrive as strings,
 * optional attributes cannot be left out), so the typed item travels as it is stored.
 * {@link eventItemOf} turns a received detail into an {@link EventItem}.
 */
import { EVENT_SOURCE, type EventItem, type EventKind } from './event-schema.ts';
import { eventsOfItem, type StoredEventItem } from './event-packing.ts';

/**
 * Attribute that `affinity events <video> --redeliver` adds to an outbox item (a counter).
 * The update makes a MODIFY stream record, which the pipe delivers again: the way back for
 * events the pipe dead-lettered. A worker that rewrites the item drops the attribute, and
 * that MODIFY is filtered out.
 */
export const REDELIVERY_ATTRIBUTE = 'redelivery';

/**
 * The pipe's filter patterns (EventBridge pattern syntax over the stream record; a record
 * passes when any pattern matches): new outbox items, and items touched for redelivery.
 * Removals (TTL expiry) and a worker's identical rewrite are never delivered.
 */
export const DELIVERY_FILTER_PATTERNS: readonly Readonly<Record<string, unknown>>[] = [
  { eventName: ['INSERT'] },
  { eventName: ['MODIFY'], dynamodb: { NewImage: { [REDELIVERY_ATTRIBUTE]: { N: [{ exists: true }] } } } },
];

/**
 * JSON path of the bus event's `detail-type` in the stream record: DETAIL_TYPE's display
 * name (`Line Crossed`, ...). A pipe's target parameter can only copy a value from the
 * record, not map it, so every writer stores the name on the item (`detailType`).
 */
export const DETAIL_TYPE_PATH = '$.dynamodb.NewImage.detailType.S';

/**
 * The pipe's input template: the bus event's `detail`. String values are quoted, the
 * object is not (Pipes replaces `<path>` and keeps the JSON valid).
 */
export const PIPE_INPUT_TEMPLATE =
  '{"videoId": "<$.dynamodb.NewImage.videoId.S>", "eventId": "<$.dynamodb.NewImage.eventId.S>", "kind": "<$.dynamodb.NewImage.kind.S>", "item": <$.dynamodb.NewImage>}';

/** One attribute value in DynamoDB JSON. */
export type AttributeValueJson =
  | { readonly S: string }
  | { readonly N: string }
  | { readonly BOOL: boolean }
  | { readonly NULL: true }
  | { readonly M: Readonly<Record<string, AttributeValueJson>> }
  | { readonly L: readonly AttributeValueJson[] }
  | { readonly SS: readonly string[] }
  | { readonly NS: readonly string[] };

/** An item image in DynamoDB JSON, as a stream record carries it. */
export type ImageJson = Readonly<Record<string, AttributeValueJson>>;

/** The parts of a stream record the delivery looks at (DynamoDB Streams' `Record`). */
export interface StreamRecordLike {
  readonly eventName?: string;
  readonly dynamodb?: { readonly NewImage?: ImageJson; readonly SequenceNumber?: string };
}

/** The bus event's detail: what a rule's target receives under `detail`. */
export interface BusEventDetail {
  readonly videoId: string;
  readonly eventId: string;
  /** The event's kind, or `rule.events` for a batch of rule events (event-packing.ts). */
  readonly kind: EventKind | 'rule.events';
  /** The outbox item in DynamoDB JSON; {@link eventItemOf} unmarshals it. */
  readonly item: ImageJson;
}

/** The EventBridge-shaped envelope: on the bus (fields of PutEvents) and on the local stand-in queue (the message body). */
export interface BusEvent {
  readonly source: typeof EVENT_SOURCE;
  readonly 'detail-type': string;
  readonly detail: BusEventDetail;
}

/** Whether the pipe's filter ({@link DELIVERY_FILTER_PATTERNS}) lets a stream record through. */
export function passesDeliveryFilter(record: StreamRecordLike): boolean {
  if (record.eventName === 'INSERT') return true;
  const redelivery = record.dynamodb?.NewImage?.[REDELIVERY_ATTRIBUTE];
  return record.eventName === 'MODIFY' && redelivery !== undefined && 'N' in redelivery;
}

const stringOf = (image: ImageJson, name: string): string => {
  const v = image[name];
  if (!v || !('S' in v)) throw new Error(`outbox item without string attribute "${name}"`);
  return v.S;
};

/** The envelope the pipe puts on the bus for a stream record (what PIPE_INPUT_TEMPLATE and DETAIL_TYPE_PATH render). */
export function busEventOf(record: StreamRecordLike): BusEvent {
  const image = record.dynamodb?.NewImage;
  if (!image) throw new Error('stream record without NewImage (the events table streams NEW_IMAGE)');
  const kind = stringOf(image, 'kind') as EventKind;
  const named = image.detailType;
  return {
    source: EVENT_SOURCE,
    'detail-type': named && 'S' in named ? named.S : kind,
    detail: { videoId: stringOf(image, 'videoId'), eventId: stringOf(image, 'eventId'), kind, item: image },
  };
}

/** One DynamoDB JSON value as plain JSON (numbers as numbers). */
export function unmarshalValue(v: AttributeValueJson): unknown {
  if ('S' in v) return v.S;
  if ('N' in v) return Number(v.N);
  if ('BOOL' in v) return v.BOOL;
  if ('NULL' in v) return null;
  if ('M' in v) return unmarshalImage(v.M);
  if ('L' in v) return v.L.map(unmarshalValue);
  if ('SS' in v) return [...v.SS];
  if ('NS' in v) return v.NS.map(Number);
  throw new Error(`unsupported attribute value ${JSON.stringify(v)}`);
}

/** An image in DynamoDB JSON as a plain object. */
export function unmarshalImage(image: ImageJson): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(image)) out[k] = unmarshalValue(v);
  return out;
}

/** The outbox item of a received event's detail, without the redelivery counter (a life event's, or a batch's: see {@link eventItemsOf}). */
export function eventItemOf(detail: BusEventDetail): EventItem {
  const { [REDELIVERY_ATTRIBUTE]: _redelivery, ...item } = unmarshalImage(detail.item);
  return item as unknown as EventItem;
}

/**
 * The events a received bus event carries: one for a life event, each of its rule events
 * for a batch (`detail-type` `Rule Events`, event-packing.ts), as the outbox items they
 * were before packing.
 */
export function eventItemsOf(detail: BusEventDetail): EventItem[] {
  return eventsOfItem(eventItemOf(detail) as unknown as StoredEventItem);
}
