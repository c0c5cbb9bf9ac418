/**
 * Slot messages: deduplication ids within SQS's limits (1-128 characters of ASCII
 * alphanumerics and punctuation) for every valid video id and any replay tag, and the
 * replay tag carried in the body so forwards keep it.
 */
import { randomBytes } from 'node:crypto';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { VIDEO_ID_PATTERN } from '../../../core/ingest/keys.ts';
import { DEFAULT_TUNABLES } from '../../../core/config.ts';
import type { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import { dedupId, parseSlotMessage, type EndMessage, type FrameMessage } from '../../../core/ingest/messages.ts';
import { nullMetrics } from '../../../core/ports.ts';
import { FrameRouter } from '../../../core/fleet/router.ts';
import { SlotQueues } from '../../../core/ingest/sqs/slot-queues.ts';

/** SQS's rule, written out independently of the code under test. */
const SQS_ID = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;

const frame = (videoId: string, f: number, extra: Partial<FrameMessage> = {}): FrameMessage => ({
  kind: 'frame',
  videoId,
  frame: f,
  bucket: 'b',
  key: `frames/${videoId}/${f}.jpg`,
  sizeBytes: 10,
  eventTime: '2026-01-01T00:00:00.000Z',
  ...extra,
});
const end = (videoId: string): EndMessage => ({ kind: 'end', videoId, bucket: 'b', key: `frames/${videoId}/_end`, eventTime: '2026-01-01T00:00:00.000Z' });

const LONGEST_ID = 'v'.repeat(127) + '9';
const LONG_TAG = `replay-${'x'.repeat(200)}`;

describe('dedupId', () => {
  it('keeps the readable form when it fits', () => {
    expect(dedupId(frame('cam-1', 7))).toBe('cam-1:7');
    expect(dedupId(end('cam-1'))).toBe('cam-1:end');
    expect(dedupId(frame('cam-1', 7), 'replay-abc')).toBe('cam-1:7:replay-abc');
    expect(dedupId(frame('cam-1', 7, { replayTag: 'replay-abc' }))).toBe('cam-1:7:replay-abc');
    // Exactly 128 characters still fits.
    expect(dedupId(frame('a'.repeat(126), 5))).toBe(`${'a'.repeat(126)}:5`);
  });

  it("tells end markers apart by their ETag: a corrected marker is a new message, a duplicated notification is not", () => {
    const first = { ...end('cam-1'), eTag: '"d41d8cd98f00b204e9800998ecf8427e"' };
    const corrected = { ...end('cam-1'), eTag: '"6512bd43d9caa6e02c990b0a82652dca"' };
    expect(dedupId(first)).toBe('cam-1:end~d41d8cd98f00b204e9800998ecf8427e');
    expect(dedupId(corrected)).not.toBe(dedupId(first));
    expect(dedupId({ ...first })).toBe(dedupId(first));
    // Multipart ETags keep their part count; the id stays valid and within 128 characters for the longest video id.
    const long = dedupId({ ...end(LONGEST_ID), eTag: '"6512bd43d9caa6e02c990b0a82652dca-12"' });
    expect(long.length).toBeLessThanOrEqual(128);
    expect(long).toMatch(SQS_ID);
    expect(long).not.toBe(dedupId({ ...end(LONGEST_ID), eTag: '"6512bd43d9caa6e02c990b0a82652dca-13"' }));
    // A frame's ETag is not part of its id: an overwrite of a frame is a duplicate (decision 12's one record per frame).
    expect(dedupId(frame('cam-1', 7, { eTag: '"a"' }))).toBe(dedupId(frame('cam-1', 7, { eTag: '"b"' })));
  });

  it('tells segment uploads apart by their ETag (issue 40): a re-upload is a new message, a duplicated notification is not', () => {
    const segment = (videoId: string, eTag: string, extra: Partial<FrameMessage> = {}) => frame(videoId, 45, { key: `frames/${videoId}/000045.mp4`, eTag, ...extra });
    const first = segment('cam-1', '"d41d8cd98f00b204e9800998ecf8427e"');
    const again = segment('cam-1', '"6512bd43d9caa6e02c990b0a82652dca"');
    expect(dedupId(first)).toBe('cam-1:45~d41d8cd98f00b204e9800998ecf8427e');
    expect(dedupId(again)).not.toBe(dedupId(first));
    // The same upload notified twice (or routed twice, or forwarded) keeps one id.
    expect(dedupId({ ...first, eventTime: '2026-01-01T00:00:09.000Z' })).toBe(dedupId(first));
    // Every container; a segment without an ETag keeps the plain id.
    for (const ext of ['ts', 'mkv', 'm4v']) expect(dedupId(segment('cam-1', '"ab"', { key: `frames/cam-1/000045.${ext}` }))).toBe('cam-1:45~ab');
    expect(dedupId(frame('cam-1', 45, { key: 'frames/cam-1/000045.mp4' }))).toBe('cam-1:45');
    // A replay tag still follows; a version never collides with a tag or another frame.
    expect(dedupId(first, 'replay-1')).toBe('cam-1:45~d41d8cd98f00b204e9800998ecf8427e:replay-1');
    // The longest video id: hashed, valid, within 128 characters, and still one id per version.
    const long = (e: string) => dedupId(segment(LONGEST_ID, e));
    expect(long('"6512bd43d9caa6e02c990b0a82652dca-12"').length).toBeLessThanOrEqual(128);
    expect(long('"6512bd43d9caa6e02c990b0a82652dca-12"')).toMatch(SQS_ID);
    expect(long('"6512bd43d9caa6e02c990b0a82652dca-12"')).toBe(long('"6512bd43d9caa6e02c990b0a82652dca-12"'));
    expect(long('"6512bd43d9caa6e02c990b0a82652dca-12"')).not.toBe(long('"6512bd43d9caa6e02c990b0a82652dca-13"'));
    expect(long('"6512bd43d9caa6e02c990b0a82652dca-12"')).not.toBe(dedupId(frame(LONGEST_ID, 45, { key: `frames/${LONGEST_ID}/000045.mp4` })));
  });

  it('stays within 128 valid characters for a 128-character video id and a long replay tag', () => {
    // Prepare
    expect(VIDEO_ID_PATTERN.test(LONGEST_ID)).toBe(true);
    const messages = [
      frame(LONGEST_ID, 0),
      frame(LONGEST_ID, Number.MAX_SAFE_INTEGER),
      end(LONGEST_ID),
      frame(LONGEST_ID, 3, { replayTag: LONG_TAG }),
      frame('short', 3, { replayTag: LONG_TAG }),
      frame('a'.repeat(127), 5),
    ];
    // Act
    const ids = messages.map((m) => dedupId(m));
    // Assess
    for (const id of ids) {
      expect(id.length).toBeLessThanOrEqual(128);
      expect(id).toMatch(SQS_ID);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('is stable for the same message and distinct for different frames, tags and videos', () => {
    // Prepare: ids that share a long prefix, where a truncating scheme would collide
    const a = LONGEST_ID;
    const b = `${'v'.repeat(127)}8`;
    // Act
    const id = dedupId(frame(a, 41, { replayTag: LONG_TAG }));
    const again = dedupId({ ...frame(a, 41), replayTag: LONG_TAG });
    const variants = [
      id,
      dedupId(frame(a, 42, { replayTag: LONG_TAG })),
      dedupId(frame(a, 41, { replayTag: `${LONG_TAG}2` })),
      dedupId(frame(a, 41)),
      dedupId(frame(b, 41, { replayTag: LONG_TAG })),
      dedupId(end(a)),
      dedupId({ ...end(a), replayTag: LONG_TAG }),
    ];
    // Assess
    expect(again).toBe(id);
    expect(new Set(variants).size).toBe(variants.length);
  });

  it('gives valid, distinct ids for replay tags with characters SQS refuses', () => {
    // Act
    const spaced = dedupId(frame('v1', 1), 'replay with spaces');
    const unicode = dedupId(frame('v1', 1), 'replay-é');
    const plain = dedupId(frame('v1', 1), 'replay-e');
    // Assess
    for (const id of [spaced, unicode, plain]) expect(id).toMatch(SQS_ID);
    expect(new Set([spaced, unicode, plain]).size).toBe(3);
    expect(plain).toBe('v1:1:replay-e');
  });

  it('never collides or leaves the SQS rules across many random video ids, frames and tags', () => {
    // Prepare
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-';
    const randomId = (n: number) => Array.from(randomBytes(n), (x) => alphabet[x % alphabet.length]).join('');
    const seen = new Map<string, string>();
    // Act / Assess
    for (let i = 0; i < 2_000; i++) {
      const videoId = randomId(1 + (i % 128));
      const f = i % 3 === 0 ? i : Number.MAX_SAFE_INTEGER - i;
      const tag = i % 4 === 0 ? undefined : `replay-${randomId(i % 150)}`;
      const m = i % 17 === 0 ? end(videoId) : frame(videoId, f);
      const id = dedupId(m, tag);
      expect(id).toMatch(SQS_ID);
      const input = JSON.stringify([m.videoId, m.kind === 'frame' ? m.frame : 'end', tag ?? null]);
      const previous = seen.get(id);
      if (previous !== undefined) expect(previous).toBe(input);
      seen.set(id, input);
    }
  });
});

describe('parseSlotMessage', () => {
  it('accepts an optional string replay tag and refuses any other type', () => {
    // Prepare
    const tagged = JSON.stringify(frame('v1', 3, { replayTag: 'replay-1' }));
    const badTag = JSON.stringify({ ...frame('v1', 3), replayTag: 7 });
    // Act / Assess
    expect(parseSlotMessage(tagged)).toEqual(frame('v1', 3, { replayTag: 'replay-1' }));
    expect(parseSlotMessage(JSON.stringify(frame('v1', 3)))?.replayTag).toBeUndefined();
    expect(parseSlotMessage(JSON.stringify({ ...end('v1'), replayTag: 'r' }))).toMatchObject({ kind: 'end', replayTag: 'r' });
    expect(parseSlotMessage(badTag)).toBeUndefined();
  });
});

/** An SQS client that records what it is asked to send and accepts everything. */
function recordingSqs() {
  const inputs: Record<string, unknown>[] = [];
  const client = {
    send: async (command: { input: Record<string, unknown> }) => {
      inputs.push(command.input);
      return { Successful: [], Failed: [] };
    },
  };
  return { inputs, client: client as unknown as SQSClient };
}

describe('SlotQueues', () => {
  it('writes the replay tag into the body and the dedup id, and a forward of that body keeps both', async () => {
    // Prepare
    const { inputs, client } = recordingSqs();
    const queues = new SlotQueues(client, 'http://q/slot-');
    // Act: the router sends a replayed frame; the worker on slot 0 forwards what it received
    await queues.send(0, [{ message: frame('cam-1', 4), replayTag: 'replay-xyz' }, { message: frame('cam-1', 5) }]);
    const routed = (inputs[0]!.Entries as { MessageBody: string; MessageDeduplicationId: string; MessageGroupId: string }[]);
    const received = parseSlotMessage(routed[0]!.MessageBody)!;
    await queues.send(1, [{ message: received }]);
    const forwarded = (inputs[1]!.Entries as { MessageBody: string; MessageDeduplicationId: string }[])[0]!;
    // Assess
    expect(JSON.parse(routed[0]!.MessageBody)).toMatchObject({ videoId: 'cam-1', frame: 4, replayTag: 'replay-xyz' });
    expect(routed[0]!.MessageDeduplicationId).toBe('cam-1:4:replay-xyz');
    expect(routed[0]!.MessageGroupId).toBe('cam-1');
    expect(JSON.parse(routed[1]!.MessageBody)).not.toHaveProperty('replayTag');
    expect(routed[1]!.MessageDeduplicationId).toBe('cam-1:5');
    expect(inputs[1]!.QueueUrl).toBe('http://q/slot-1.fifo');
    expect(JSON.parse(forwarded.MessageBody)).toMatchObject({ replayTag: 'replay-xyz' });
    expect(forwarded.MessageDeduplicationId).toBe('cam-1:4:replay-xyz');
  });

  it('sends long video ids with valid ids', async () => {
    // Prepare
    const { inputs, client } = recordingSqs();
    const queues = new SlotQueues(client, 'http://q/slot-');
    // Act
    await queues.send(0, [{ message: frame(LONGEST_ID, 123_456), replayTag: LONG_TAG }]);
    const entry = (inputs[0]!.Entries as { MessageDeduplicationId: string; MessageGroupId: string }[])[0]!;
    // Assess
    expect(entry.MessageDeduplicationId).toMatch(SQS_ID);
    expect(entry.MessageGroupId).toBe(LONGEST_ID);
  });

  it('parks a message in the DLQ with valid group and dedup ids, whatever group it came from', async () => {
    // Prepare
    const { inputs, client } = recordingSqs();
    const queues = new SlotQueues(client, 'http://q/slot-');
    // Act
    await queues.deadLetter(2, 'not json', 'malformed', `bad group ${'x'.repeat(300)}`);
    await queues.deadLetter(2, 'not json', 'malformed', '');
    await queues.deadLetter(2, 'not json', 'malformed', '');
    // Assess
    const [first, second, third] = inputs as { QueueUrl: string; MessageGroupId: string; MessageDeduplicationId: string }[];
    expect(first!.QueueUrl).toBe('http://q/slot-2-dlq.fifo');
    for (const input of [first!, second!, third!]) {
      expect(input.MessageGroupId).toMatch(SQS_ID);
      expect(input.MessageDeduplicationId).toMatch(SQS_ID);
    }
    expect(second!.MessageGroupId).toBe('malformed');
    expect(second!.MessageDeduplicationId).not.toBe(third!.MessageDeduplicationId);
  });
});

describe('FrameRouter with a replayed event', () => {
  it('puts the ingest message\'s replay tag into the slot message body and its dedup id', async () => {
    // Prepare: video v is pinned to slot 1; one replayed and one ordinary event
    const { inputs, client } = recordingSqs();
    const leases = { getPins: async (ids: readonly string[]) => new Map(ids.map((id) => [id, { pinnedSlot: 1, token: 4 }])) } as unknown as LeaseStore;
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    const router = new FrameRouter({
      bucket: 'bkt',
      tunables: DEFAULT_TUNABLES,
      leases,
      queues: new SlotQueues(client, 'http://q/slot-'),
      deadLetter: async (events) => events.map(() => true),
      launcher: () => undefined,
      metrics: nullMetrics,
      log: quiet,
    });
    const event = (key: string) => JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'bkt' }, object: { key, size: 10 } } }] });
    // Act
    await router.route([
      { id: 'r0', body: event('frames/v/000003.jpg'), replayTag: 'replay-7' },
      { id: 'r1', body: event('frames/v/000004.jpg') },
    ]);
    // Assess
    const entries = inputs[0]!.Entries as { MessageBody: string; MessageDeduplicationId: string }[];
    expect(inputs[0]!.QueueUrl).toBe('http://q/slot-1.fifo');
    expect(parseSlotMessage(entries[0]!.MessageBody)).toMatchObject({ frame: 3, replayTag: 'replay-7' });
    expect(entries[0]!.MessageDeduplicationId).toBe('v:3:replay-7');
    expect(parseSlotMessage(entries[1]!.MessageBody)?.replayTag).toBeUndefined();
    expect(entries[1]!.MessageDeduplicationId).toBe('v:4');
  });
});

describe('FrameRouter with a re-uploaded segment (issue 40)', () => {
  it("sends each upload of a segment under its own dedup id, from the S3 event's ETag, and a repeated event under the same one", async () => {
    // Prepare: video v pinned to slot 0; segment 45 uploaded, notified twice, then uploaded again with other bytes
    const { inputs, client } = recordingSqs();
    const leases = { getPins: async (ids: readonly string[]) => new Map(ids.map((id) => [id, { pinnedSlot: 0, token: 1 }])) } as unknown as LeaseStore;
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    const router = new FrameRouter({ bucket: 'bkt', tunables: DEFAULT_TUNABLES, leases, queues: new SlotQueues(client, 'http://q/slot-'), deadLetter: async (events) => events.map(() => true), launcher: () => undefined, metrics: nullMetrics, log: quiet });
    const event = (eTag: string) => JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'bkt' }, object: { key: 'frames/v/000045.mp4', size: 10, eTag } } }] });
    // Act
    await router.route([{ id: 'r0', body: event('aaa111') }]);
    await router.route([{ id: 'r1', body: event('aaa111') }]);
    await router.route([{ id: 'r2', body: event('bbb222') }]);
    // Assess
    const ids = inputs.map((i) => (i.Entries as { MessageDeduplicationId: string }[])[0]!.MessageDeduplicationId);
    expect(ids).toEqual(['v:45~aaa111', 'v:45~aaa111', 'v:45~bbb222']);
  });
});
