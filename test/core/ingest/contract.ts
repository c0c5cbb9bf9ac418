/**
 * The ingest port's contract: the slot queue (SlotQueues, core/ingest/sqs/slot-queues.ts) and the
 * frame source (FrameStore, core/ingest/s3/frame-store.ts), each the production adapter, run on
 * the in-memory twins (contract.test.ts: the SQS FIFO model and MemoryS3) and on fauxqs
 * (contract.int.test.ts). Where fauxqs departs from SQS, the case asserts what each backend
 * really does, so the suite shows the divergence (see `kind` in those cases).
 */
import { describe, expect, it } from 'vitest';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { FrameStore } from '../../../core/ingest/s3/frame-store.ts';
import { SlotQueues } from '../../../core/ingest/sqs/slot-queues.ts';
import { ObjectMissingError, type FrameSource, type SlotQueue } from '../../../core/ingest/port.ts';
import { frameKey } from '../../../core/ingest/keys.ts';
import type { FrameMessage } from '../../../core/ingest/messages.ts';
import type { SQSClient } from '@aws-sdk/client-sqs';

/** Where the suite runs. */
export interface IngestContractBackend {
  readonly kind: 'memory' | 'fauxqs';
  readonly sqs: SQSClient;
  readonly s3: S3Client;
  /** Slot queue URL = `${slotQueueUrlPrefix}${slot}.fifo`, its DLQ `${slotQueueUrlPrefix}${slot}-dlq.fifo`. */
  readonly slotQueueUrlPrefix: string;
  /** Slots whose queues exist, each used by one case only. */
  readonly slots: number;
  readonly bucket: string;
}

/** The slot queues' visibility timeout the backends create them with. */
export const CONTRACT_VISIBILITY_SECONDS = 30;

export function ingestContract(backend: () => IngestContractBackend): void {
  let nextSlot = 0;
  const slot = () => {
    if (nextSlot >= backend().slots) throw new Error('the contract needs more slot queues');
    return nextSlot++;
  };
  const queues = (): SlotQueue => new SlotQueues(backend().sqs, backend().slotQueueUrlPrefix);
  const message = (videoId: string, frame: number): FrameMessage => ({ kind: 'frame', videoId, frame, bucket: 'b', key: frameKey(videoId, frame), sizeBytes: 1, eventTime: '2026-11-27T00:00:00.000Z' });
  const framesOf = (received: readonly { body: string }[]) => received.map((m) => (JSON.parse(m.body) as FrameMessage).frame);

  describe('slot queue', () => {
    it('delivers a video\'s frames in order, with the video as group, and holds the group while one is in flight', async () => {
      const q = queues();
      const s = slot();
      expect((await q.send(s, [0, 1, 2].map((f) => ({ message: message('va', f) })))).every((o) => o.ok)).toBe(true);
      const first = await q.receive(s, 1, 0);
      expect(framesOf(first)).toEqual([0]);
      expect(first[0]).toMatchObject({ groupId: 'va', receiveCount: 1 });
      // Frame 0 is in flight: nothing more of its group comes.
      expect(await q.receive(s, 10, 0)).toEqual([]);
      expect(await q.delete(s, first.map((m) => m.receiptHandle))).toBe(0);
      const rest: number[] = [];
      for (let i = 0; i < 3 && rest.length < 2; i++) {
        const got = await q.receive(s, 10, 0);
        rest.push(...framesOf(got));
        await q.delete(s, got.map((m) => m.receiptHandle));
      }
      expect(rest).toEqual([1, 2]);
    });

    it('fills a receive from one group (SQS: up to 10 of a group; fauxqs: one per group per receive)', async () => {
      const q = queues();
      const s = slot();
      await q.send(s, [0, 1, 2, 3].map((f) => ({ message: message('vb', f) })));
      const got = await q.receive(s, 10, 0);
      if (backend().kind === 'memory') expect(framesOf(got)).toEqual([0, 1, 2, 3]);
      // fauxqs 2.4's divergence (BRIEF §6): at most one message per group per receive.
      else expect(framesOf(got)).toEqual([0]);
    });

    it('deduplicates a re-send of a frame, and lets a replay tag through', async () => {
      const q = queues();
      const s = slot();
      await q.send(s, [{ message: message('vc', 0) }]);
      await q.send(s, [{ message: message('vc', 0) }]);
      await q.send(s, [{ message: message('vc', 0) }, { message: message('vc', 0), replayTag: 'r1' }]);
      const bodies: FrameMessage[] = [];
      for (let i = 0; i < 4; i++) {
        const got = await q.receive(s, 10, 0);
        bodies.push(...got.map((m) => JSON.parse(m.body) as FrameMessage));
        await q.delete(s, got.map((m) => m.receiptHandle));
      }
      expect(bodies.map((b) => [b.frame, b.replayTag ?? ''])).toEqual([
        [0, ''],
        [0, 'r1'],
      ]);
    });

    it('hands a message back by visibility 0 (a new receipt handle, receive count 2), and counts visible and in-flight', async () => {
      const q = queues();
      const s = slot();
      await q.send(s, [{ message: message('vd', 0) }, { message: message('ve', 0) }]);
      const got = await q.receive(s, 1, 0);
      expect(await q.depth(s)).toEqual({ visible: 1, inFlight: 1 });
      expect(await q.extendVisibility(s, got.map((m) => m.receiptHandle), 0)).toEqual([]);
      const again: { receiptHandle: string; receiveCount: number; groupId: string }[] = [];
      for (let i = 0; i < 3 && again.length < 2; i++) again.push(...(await q.receive(s, 10, 0)));
      const same = again.find((m) => m.groupId === got[0]!.groupId)!;
      expect(same.receiveCount).toBe(2);
      expect(same.receiptHandle).not.toBe(got[0]!.receiptHandle);
    });

    it('parks a message in the slot\'s dead-letter queue with its reason', async () => {
      const q = queues();
      const s = slot();
      await q.deadLetter(s, '{"not":"a frame"}', 'malformed-body', 'vf');
      expect(await q.dlqDepth(s)).toBe(1);
    });

    it('refuses a message over 256 KiB, per entry, without failing the others of its batch', async () => {
      const q = queues();
      const s = slot();
      const big: FrameMessage = { ...message('vg', 1), key: `frames/vg/${'x'.repeat(260 * 1024)}.jpg` };
      const outcomes = await q.send(s, [{ message: message('vg', 0) }, { message: big }]);
      expect(outcomes.map((o) => o.ok)).toEqual([true, false]);
    });
  });

  describe('frame source', () => {
    const put = async (key: string, body: string | Uint8Array) => {
      const r = await backend().s3.send(new PutObjectCommand({ Bucket: backend().bucket, Key: key, Body: body }));
      return r.ETag?.replace(/"/g, '');
    };
    const frames = (): FrameSource => new FrameStore(backend().s3);

    it('reads an object and its ETag; a wrong ETag fails; a missing key is ObjectMissingError', async () => {
      const key = 'frames/fa/000001.jpg';
      const eTag = await put(key, new Uint8Array([1, 2, 3]));
      const f = frames();
      expect([...(await f.get(backend().bucket, key))]).toEqual([1, 2, 3]);
      expect(await f.getVersion(backend().bucket, key)).toEqual({ bytes: new Uint8Array([1, 2, 3]), eTag });
      expect([...(await f.get(backend().bucket, key, eTag))]).toEqual([1, 2, 3]);
      await expect(f.get(backend().bucket, key, '0123456789abcdef0123456789abcdef')).rejects.toMatchObject({ name: 'PreconditionFailed' });
      await expect(f.get(backend().bucket, 'frames/fa/000002.jpg')).rejects.toBeInstanceOf(ObjectMissingError);
      await put('frames/fa/end', '7');
      expect(await f.getText(backend().bucket, 'frames/fa/end')).toBe('7');
    });

    it('lists a video\'s padded frames from a frame on, and says what the listing covers', async () => {
      for (const n of [1, 2, 4, 9, 12]) await put(`frames/fb/${String(n).padStart(6, '0')}.jpg`, 'x');
      await put('frames/fbb/000003.jpg', 'other video');
      const listing = await frames().listFrames(backend().bucket, 'fb', 2, 6);
      expect(listing.frames.map((r) => r.frame)).toEqual([2, 4, 9, 12]);
      expect(listing.complete).toBe(true);
      expect(listing.coveredThrough).toBeGreaterThanOrEqual(12);
    });
  });
}
