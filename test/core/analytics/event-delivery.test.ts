/**
 * The envelope contract (issue 22): the deployed pipe's input template and detail-type
 * path, rendered as Pipes renders them, give exactly the envelope the local relay sends
 * (busEventOf), and eventItemOf gives back the outbox item.
 */
import { describe, expect, it } from 'vitest';
import {
  DELIVERY_FILTER_PATTERNS,
  DETAIL_TYPE_PATH,
  PIPE_INPUT_TEMPLATE,
  REDELIVERY_ATTRIBUTE,
  busEventOf,
  eventItemOf,
  passesDeliveryFilter,
  type ImageJson,
  type StreamRecordLike,
} from '../../../core/analytics/event-delivery.ts';
import { EVENT_SOURCE, eventId, type EventItem } from '../../../core/analytics/event-schema.ts';

/** A value at a `$.a.b.c` path of the record. */
function at(record: unknown, path: string): unknown {
  return path
    .replace(/^\$\./, '')
    .split('.')
    .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], record);
}

/**
 * Pipes' documented substitution: `"<path>"` inside quotes takes the string value, an
 * unquoted `<path>` the JSON of an object.
 */
function renderTemplate(template: string, record: unknown): unknown {
  const rendered = template.replace(/"<(\$[^>]+)>"|<(\$[^>]+)>/g, (_m, quoted: string | undefined, bare: string | undefined) =>
    quoted ? JSON.stringify(String(at(record, quoted))) : JSON.stringify(at(record, bare!)),
  );
  return JSON.parse(rendered);
}

const item: EventItem = {
  videoId: 'v1',
  eventId: eventId({ frame: 42, kind: 'line.crossed', ruleId: 'door', trackId: 7 }),
  kind: 'line.crossed',
  detailType: 'Line Crossed',
  frame: 42,
  ruleId: 'door',
  trackId: 7,
  label: 'person',
  detail: { direction: 'in' },
  token: 5,
  atMs: 1_700_000_000_000,
  ttlEpochSeconds: 1_800_000_000,
};

/** The item as the stream carries it (DynamoDB JSON), what DynamoDB Local's GetRecords returned for such an item. */
const image: ImageJson = {
  videoId: { S: 'v1' },
  eventId: { S: item.eventId },
  kind: { S: 'line.crossed' },
  detailType: { S: 'Line Crossed' },
  frame: { N: '42' },
  ruleId: { S: 'door' },
  trackId: { N: '7' },
  label: { S: 'person' },
  detail: { M: { direction: { S: 'in' } } },
  token: { N: '5' },
  atMs: { N: '1700000000000' },
  ttlEpochSeconds: { N: '1800000000' },
};
const insert: StreamRecordLike = { eventName: 'INSERT', dynamodb: { NewImage: image, SequenceNumber: '1' } };

describe('the bus envelope', () => {
  it('is what the pipe renders from the stream record, and gives back the outbox item', () => {
    // Act
    const local = busEventOf(insert);
    const pipe = { source: EVENT_SOURCE, 'detail-type': at(insert, DETAIL_TYPE_PATH), detail: renderTemplate(PIPE_INPUT_TEMPLATE, insert) };

    // Assess
    expect(pipe).toEqual(local);
    expect(local['detail-type']).toBe('Line Crossed');
    expect(eventItemOf(local.detail)).toEqual(item);
  });

  it('falls back to the kind as detail-type for an item written without its display name', () => {
    const { detailType: _named, ...bare } = image;
    expect(busEventOf({ eventName: 'INSERT', dynamodb: { NewImage: bare } })['detail-type']).toBe('line.crossed');
  });

  it('drops the redelivery counter from the item it gives back', () => {
    // Act
    const redelivered = busEventOf({ eventName: 'MODIFY', dynamodb: { NewImage: { ...image, [REDELIVERY_ATTRIBUTE]: { N: '2' } } } });

    // Assess
    expect(eventItemOf(redelivered.detail)).toEqual(item);
  });

  it('filters as the pipe patterns say: INSERT, and MODIFY only with the redelivery counter', () => {
    // Act & Assess
    expect(passesDeliveryFilter(insert)).toBe(true);
    expect(passesDeliveryFilter({ eventName: 'MODIFY', dynamodb: { NewImage: image } })).toBe(false);
    expect(passesDeliveryFilter({ eventName: 'MODIFY', dynamodb: { NewImage: { ...image, [REDELIVERY_ATTRIBUTE]: { N: '1' } } } })).toBe(true);
    expect(passesDeliveryFilter({ eventName: 'REMOVE', dynamodb: {} })).toBe(false);
    expect(DELIVERY_FILTER_PATTERNS).toHaveLength(2);
  });

  it('refuses a record without the strings every envelope needs', () => {
    // Act & Assess
    expect(() => busEventOf({ eventName: 'INSERT', dynamodb: {} })).toThrow(/NewImage/);
    expect(() => busEventOf({ eventName: 'INSERT', dynamodb: { NewImage: { videoId: { S: 'v' }, eventId: { S: 'e' } } } })).toThrow(/kind/);
  });
});
