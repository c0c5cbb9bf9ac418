/**
 * The operator operations (core/commit/operations/: replay, reconcile, release) on a
 * {@link WorkerHarness}: their ports over the harness's clients (the twins' with the memory
 * backend), with the ingest queue and router stood in for by a small double that routes
 * each re-sent object as the router would (pins an unpinned video to the harness's slot,
 * sends the slot message with the replay tag). Hooks let a test run something in the
 * middle of an operation (before a replay's first delete lands).
 */
import type { EndMessage, FrameMessage, SlotMessage } from '../core/ingest/messages.ts';
import { operatorPorts } from '../core/commit/operations/compose.ts';
import type { OperatorPorts } from '../core/commit/operations/ports.ts';
import type { ResultsAdmin } from '../core/commit/port.ts';
import type { StoredObject, UploadResender } from '../core/ingest/port.ts';
import { parseSourceKey } from '../core/ingest/segment-keys.ts';
import type { WorkerHarness } from './worker-harness.ts';

export interface HarnessOperatorOptions {
  /** The slot an unpinned video is pinned to by the router double. @default 0 */
  readonly slot?: number;
  /** Runs once, before the first record delete of a replay is sent (the deletes wait for it). */
  readonly beforeFirstDelete?: () => Promise<void>;
}

/** Ports for the operator operations on the harness; replay tags are `replay-1`, `reconcile-2`, ... */
export function harnessOperatorPorts(h: WorkerHarness, options: HarnessOperatorOptions = {}): OperatorPorts {
  let tags = 0;
  const base = operatorPorts(h.clients, h.wiring, h.tunables, { where: 'the harness', newTag: (prefix) => `${prefix}-${++tags}` });
  return { ...base, ingest: routerDouble(h, options.slot ?? 0), results: options.beforeFirstDelete ? gatedDeletes(base.results, options.beforeFirstDelete) : base.results };
}

/** The ingest queue and the router in one: each object's slot message, sent to the video's slot (pinned there first when unpinned). */
function routerDouble(h: WorkerHarness, slot: number): UploadResender {
  return {
    async resend(objects: readonly StoredObject[], replayTag: string) {
      let sent = 0;
      for (const ob of objects) {
        const p = parseSourceKey(ob.key);
        if (p.kind === 'rejected') continue;
        const lease = await h.leases.getVideo(p.videoId);
        const target = lease.pinnedSlot ?? ((await h.leases.pinVideo(p.videoId, slot, Date.now())) === 'pinned' ? slot : (await h.leases.getVideo(p.videoId)).pinnedSlot ?? slot);
        const eventTime = new Date().toISOString();
        const message: SlotMessage =
          p.kind === 'end'
            ? ({ kind: 'end', videoId: p.videoId, bucket: h.bucket, key: ob.key, eventTime } satisfies EndMessage)
            : ({ kind: 'frame', videoId: p.videoId, frame: p.firstFrame, bucket: h.bucket, key: ob.key, sizeBytes: ob.sizeBytes, eventTime, eTag: ob.eTag } satisfies FrameMessage);
        const [outcome] = await h.queues.send(target, [{ message, replayTag }]);
        if (!outcome?.ok) return { sent, failure: outcome && !outcome.ok ? outcome.error : 'no outcome' };
        sent++;
      }
      return { sent };
    },
  };
}

/** `inner` whose first record delete waits for `before` (run once); later deletes wait for it too. */
export function gatedDeletes(inner: ResultsAdmin, before: () => Promise<void>): ResultsAdmin {
  let gate: Promise<void> | undefined;
  return {
    pages: (...args) => inner.pages(...args),
    deleteEventsFrom: (...args) => inner.deleteEventsFrom(...args),
    reopenSummary: (...args) => inner.reopenSummary(...args),
    async deleteRecord(...args) {
      gate ??= before();
      await gate;
      return inner.deleteRecord(...args);
    },
  };
}
