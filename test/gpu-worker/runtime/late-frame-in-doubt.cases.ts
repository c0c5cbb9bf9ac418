/**
 * Issue 32, confirmed sequence 1: a late frame that arrives while the commit of its gap is
 * in doubt. The state is arranged step by step, not waited for, so the window is hit on
 * every run: run on the twins with a fake clock by late-frame-in-doubt.test.ts (the
 * guarantee's test, in the unit lane), and on DynamoDB Local by
 * test/system/late-frame-in-doubt.int.test.ts (the same steps against the real store's
 * emulator). Both with the SQS FIFO model for the slot queue.
 *
 *  1. Video V has frames 0-2 committed, and 4-5 and its end marker buffered (their messages
 *     deleted with that commit, so V's FIFO group is open); frame 3 is missing. From that
 *     commit on, the worker's receives are held.
 *  2. Once frame 3 is overdue, video W's 10 frames are sent and the held receive goes on: it
 *     comes back full, so its round is a backlog round, whose commit overlaps the next
 *     receive (decision 19). V's overdue listing, made in that round, finds no frame 3: V's
 *     unit is `gap 3, frame 4` (frame 5, which completes V, waits for the re-check of the
 *     gap), in one transaction with W's frames 0-9.
 *  3. The receives made after that listing (the round's receive ahead) are held, and while
 *     the transaction is on its way, frame 3 is uploaded and notified.
 *  4. The held receives go on: W's group is blocked by the messages of W's unit in that very
 *     transaction, so they bring frame 3; the worker waits for the commit before taking it.
 *  5. The transaction fails with a 5xx before applying, and the store's re-read of V fails
 *     too: V's unit is in doubt (W's re-read says not landed; W is retried and lands).
 *  6. Frame 3 is taken in while V is in doubt; a read then settles V: not landed, rolled back.
 *
 * Before the fix the worker accepted frame 3 as `late` from V's in-doubt state (3 was below
 * its live position and had no record); the rollback replayed `late 3` onto a state where 3
 * is next, and the retry carried `gap 3` and `late 3`: two writes of one item, and frame 3
 * ended with no record. Now a video whose commit is in doubt takes no message until a read
 * settles it (message-intake.ts): frame 3 is held, and offered after the rollback. The
 * rollback restores the checkpoint before the gap and replays the listing, but frame 3 is
 * offered before V's next plan takes anything: it is next in order, and is recorded `ok`.
 *
 * Checked by mutation: with the hold removed, frame 3 is accepted as late while V is in
 * doubt (the defenses behind it, `addLate` buffering a frame at or above `nextFrame` and one
 * step per frame, still save its record); with those removed as well, the retry names frame
 * 3's record twice and the twin refuses it with a ValidationException, as DynamoDB does.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommitUnit } from '../../../core/commit/commit-packing.ts';
import { endMarkerKey } from '../../../core/ingest/keys.ts';
import type { EndMessage } from '../../../core/ingest/messages.ts';
import type { SlotQueue } from '../../../core/ingest/port.ts';
import { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import { overriding } from '../../../core/overriding.ts';
import { injectedError } from '../../../lab/aws/fault-injection.ts';
import { deferred } from '../../../harness/wait.ts';
import { WorkerHarness, type WorkerHarnessOptions } from '../../../harness/worker-harness.ts';

/** Short enough for a run on real time; the steps do not depend on it. */
const REORDER_WAIT_MS = 2_000;
const W_FRAMES = Array.from({ length: 10 }, (_, i) => i);

/**
 * Holds the worker's receives while armed: a receive waits before asking the queue, and an
 * empty answer to one that was already asking (a long poll begun before) waits too and asks
 * again once released. Messages are never held back.
 */
class ReceiveGate {
  private held: ReturnType<typeof deferred<void>> | undefined;
  /** Receives waiting for the release now. */
  waiting = 0;

  hold(): void {
    this.held ??= deferred<void>();
  }

  release(): void {
    this.held?.resolve();
    this.held = undefined;
  }

  wrap(queues: SlotQueue): SlotQueue {
    return overriding(queues, {
      receive: async (slot, maxMessages, waitSeconds, abortSignal) => {
        for (;;) {
          while (this.held) {
            this.waiting++;
            await this.held.promise.finally(() => this.waiting--);
          }
          const got = await queues.receive(slot, maxMessages, waitSeconds, abortSignal);
          if (got.length > 0 || !this.held) return got;
        }
      },
    });
  }
}

/** A TransactWriteItems action, as the document client takes it. */
type TransactAction = { readonly [op in 'Put' | 'Update' | 'ConditionCheck' | 'Delete']?: { readonly TableName?: string; readonly Item?: Record<string, unknown>; readonly Key?: Record<string, unknown> } };

/** Registers the case on a harness started with `backend` (the twins on a fake clock, or the emulators). */
export function lateFrameInDoubtCases(name: string, backend: Pick<WorkerHarnessOptions, 'backend' | 'clock'>): void {
  describe(`a late frame that arrives while the commit of its gap is in doubt (${name})`, () => {
    let h: WorkerHarness;

    beforeAll(async () => {
      h = await WorkerHarness.start({ ...backend, slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: REORDER_WAIT_MS } });
    });

    afterAll(async () => {
      await h?.stop();
    });

    it('is held until a read settles the commit, then gets exactly one record (ok); no commit carries one frame twice', async () => {
      // Prepare
      const v = h.videoId('doubt');
      const w = h.videoId('backlog');
      await h.pinVideo(v, 0);
      await h.pinVideo(w, 0);
      await h.putFrames(v, [0, 1, 2, 4, 5]);
      await h.putEnd(v, 5);
      await h.putFrames(w, W_FRAMES);
      await h.putEnd(w, W_FRAMES.length - 1);
      const slotUrl = h.slotUrl(0);
      const frame3Deliveries = () => h.model!.deliveries(slotUrl).filter((d) => d.groupId === v && (JSON.parse(d.body) as { frame?: number }).frame === 3);
      const gate = new ReceiveGate();
      // buffering -> armed (4-5 and the end buffered: receives held) -> backlog (W sent, released) -> listed (V's overdue listing made)
      let phase: 'buffering' | 'armed' | 'backlog' | 'listed' = 'buffering';
      let frame4SeenAtMs = 0;
      // The store's document client: the transaction carrying `gap 3` waits, then fails with a
      // 5xx unapplied; V's lease reads fail from then until frame 3 has been taken in.
      const failTransaction = deferred<void>();
      let gapTransactionsStarted = 0;
      let gapTransactionsFailed = 0;
      let gapTransactionCarriedW = false;
      let videoReadsFailed = 0;
      const transactions: (readonly TransactAction[])[] = [];
      const validationErrors: string[] = [];
      const inner = h.clients.ddb;
      const frame3TakenIn = () => worker.metricTotal('MessagesHeldInDoubt') > 0 || worker.logsMatching(/late frame accepted/).some((l) => l.fields.videoId === v);
      const ddb = {
        send: async (command: { readonly input: object }) => {
          const input = command.input as { TransactItems?: TransactAction[]; Key?: { pk?: unknown } };
          if (command.constructor.name === 'TransactWriteCommand') {
            const items = input.TransactItems ?? [];
            transactions.push(items);
            const carriesGap3 = items.some((it) => it.Put?.Item?.videoId === v && it.Put.Item.frame === 3 && it.Put.Item.status === 'gap');
            if (carriesGap3 && gapTransactionsStarted === 0) {
              gapTransactionsStarted++;
              gapTransactionCarriedW = items.some((it) => it.Put?.Item?.videoId === w && typeof it.Put.Item.frame === 'number');
              await failTransaction.promise;
              gapTransactionsFailed++;
              throw injectedError('dynamodb', '5xx');
            }
          }
          if (command.constructor.name === 'GetCommand' && input.Key?.pk === `video#${v}` && gapTransactionsFailed > 0 && !frame3TakenIn() && videoReadsFailed < 20) {
            videoReadsFailed++;
            throw injectedError('dynamodb', '5xx');
          }
          try {
            return await inner.send(command as never);
          } catch (e) {
            if ((e as { name?: string }).name === 'ValidationException') validationErrors.push(String(e));
            throw e;
          }
        },
        destroy: () => inner.destroy(),
      } as unknown as DynamoDBDocumentClient;
      const store = LeaseStore.forWiring(ddb, h.wiring, h.tunables);
      const units: CommitUnit[] = [];
      const leases = overriding(store, {
        commit: (fence, us, nowMs) => {
          units.push(...us);
          const buffered = us.find((u) => u.videoId === v)?.checkpoint.sequencer;
          if (phase === 'buffering' && buffered?.endFrame === 5 && buffered.buffered.map((b) => b.frame).join() === '4,5') {
            // 4-5 and the end buffered: no receive (so no round, so no listing) until W's frames are sent.
            phase = 'armed';
            frame4SeenAtMs = buffered.buffered[0]!.seenAtMs;
            gate.hold();
          }
          return store.commit(fence, us, nowMs);
        },
      });
      const worker = h.createWorker(0, {
        extraDeps: { leases, queues: gate.wrap(h.queues) },
        frames: (frames) =>
          overriding(frames, {
            listFrames: (bucket, videoId, ...rest) => {
              // V's overdue listing, in W's round: the receives after it (its receive ahead) are held.
              if (videoId === v && phase === 'backlog') {
                phase = 'listed';
                gate.hold();
              }
              return frames.listFrames(bucket, videoId, ...rest);
            },
          }),
      }).start();
      let summary;
      let wSummary;
      try {
        // Act 1: V's frames 0-2 committed; then 4-5 and its end marker (one batch) buffered, their messages deleted
        await h.sendFrames(0, v, [0, 1, 2]);
        await h.waitForResults(v, 3);
        const end: EndMessage = { kind: 'end', videoId: v, bucket: h.bucket, key: endMarkerKey(v), eventTime: new Date().toISOString() };
        const sent = await h.queues.send(0, [{ message: h.frameMessage(v, 4) }, { message: h.frameMessage(v, 5) }, { message: end }]);
        expect(sent.every((o) => o.ok)).toBe(true);
        await h.waitFor('frames 4-5 and the end buffered, their messages deleted', async () => {
          const ck = (await h.leases.getVideo(v)).checkpoint;
          return phase === 'armed' && ck.sequencer.buffered.length === 2 && ck.sequencer.endFrame === 5 && h.model!.pending(slotUrl).length === 0;
        }, 30_000, 20);
        // Act 2: once frame 3 is overdue and the worker waits for its receive, W's 10 frames: one full receive
        await h.waitFor('frame 3 overdue, the worker waiting for its receive', () => Date.now() > frame4SeenAtMs + REORDER_WAIT_MS + 100 && gate.waiting > 0, 30_000, 20);
        phase = 'backlog';
        await h.sendFrames(0, w, W_FRAMES);
        gate.release();
        // Act 3: while the transaction carrying gap 3 is on its way, frame 3 is uploaded and notified
        await h.waitFor('the transaction carrying gap 3', () => gapTransactionsStarted > 0, 30_000, 10);
        expect(phase).toBe('listed');
        await h.putFrames(v, [3]);
        await h.sendFrames(0, v, [3]);
        // Act 4: the held receives bring frame 3; then the transaction fails unapplied
        gate.release();
        await h.waitFor('frame 3 delivered', () => frame3Deliveries().length > 0, 30_000, 10);
        failTransaction.resolve();
        summary = await h.waitForSummary(v, (s) => s.status === 'complete', 60_000);
        await h.sendEnd(0, w);
        wSummary = await h.waitForSummary(w, (s) => s.status === 'complete', 60_000);
      } finally {
        gate.release();
        failTransaction.resolve();
        await worker.stop();
      }

      // Assess: the window was hit. V's gap rode with W's frames (a backlog round), its
      // commit failed unapplied and went in doubt, and frame 3 was delivered before a read
      // settled V.
      const atV = (pattern: RegExp) => worker.logsMatching(pattern).filter((l) => l.fields.videoId === v);
      expect(gapTransactionCarriedW).toBe(true);
      expect(gapTransactionsFailed).toBe(1);
      expect(videoReadsFailed).toBe(1); // the store's own re-read: the outcome stays unknown
      expect(atV(/commit outcome unknown: holding its messages/)).toHaveLength(1);
      const settled = atV(/commit in doubt settled/);
      expect(settled.map((l) => l.fields.outcome)).toEqual(['not-landed']);
      expect(frame3Deliveries()).toHaveLength(1);
      expect(frame3Deliveries()[0]!.atMs).toBeLessThanOrEqual(settled[0]!.atMs);
      // The guarantee: frame 3 was held undecided while V was in doubt, never taken as late.
      expect(worker.metricTotal('MessagesHeldInDoubt')).toBe(1);
      expect(atV(/video commit in doubt: holding its messages/)).toHaveLength(1);
      expect(atV(/late frame accepted/)).toEqual([]);
      // Every frame of V has exactly one record, frame 3 in order (ok), and the counts agree.
      const records = await h.frameResults(v);
      expect(records.map((r) => `${r.frame}:${r.status}`)).toEqual(['0:ok', '1:ok', '2:ok', '3:ok', '4:ok', '5:ok']);
      expect(summary).toMatchObject({ framesOk: 6, framesLate: 0, framesGap: 0, framesFailed: 0 });
      expect((await h.frameResults(w)).map((r) => r.status)).toEqual(W_FRAMES.map(() => 'ok'));
      expect(wSummary).toMatchObject({ framesOk: W_FRAMES.length, framesFailed: 0 });
      // No commit unit carried two results for one frame (V's frame 3: the gap that did not
      // land, then the frame), and no transaction named one item twice: DynamoDB refuses that
      // with a ValidationException, and so do the twin and the emulator harness's rules.
      for (const u of units) expect(new Set(u.results.map((r) => r.frame)).size, `a unit of ${u.videoId}`).toBe(u.results.length);
      expect(units.filter((u) => u.videoId === v).flatMap((u) => u.results.filter((r) => r.frame === 3).map((r) => r.status))).toEqual(['gap', 'ok']);
      for (const items of transactions) {
        const keys = items.map((it) => {
          const action = it.Put ?? it.Update ?? it.ConditionCheck ?? it.Delete;
          const item = it.Put?.Item;
          return `${action?.TableName}:${JSON.stringify(item ? [item.pk, item.videoId, item.frame, item.eventId] : action?.Key)}`;
        });
        expect(new Set(keys).size).toBe(keys.length);
      }
      expect(validationErrors).toEqual([]);
      expect(worker.metricTotal('CommitsInvalid')).toBe(0);
    });
  });
}
