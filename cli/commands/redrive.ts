/**
 * `affinity redrive [--queue ingest|slot|all] [--slot N]`: moves every message of the
 * ingest DLQ and the slot DLQs back to their source queues, and waits for the move.
 *
 * The operator's way back from any DLQ (the DLQ alarms name this command). On AWS it is
 * SQS's own DLQ redrive (StartMessageMoveTask, FIFO included); on the local stack, whose
 * fauxqs has none, a receive / send / delete move that keeps each FIFO message's group
 * and gives it a fresh deduplication id (core/ingest/sqs/dlq-redrive.ts). Idempotent for
 * frames: a redriven frame that already has a record is dropped by the worker as a
 * duplicate, so every frame still ends with exactly one record. Bad input (an event the
 * router rejects, a malformed slot message) goes straight back to its DLQ with its reason.
 */
import { redriveDlq, type RedriveResult } from '../../core/ingest/sqs/dlq-redrive.ts';
import { CliError, type Io } from '../io.ts';
import type { Target } from '../target.ts';

export type RedriveQueues = 'ingest' | 'slot' | 'all';

export interface RedriveCommandOptions {
  /** Which DLQs. @default 'all' */
  readonly queue?: RedriveQueues;
  /** Only this slot's DLQ (with queue slot or all). */
  readonly slot?: number;
  /** Forces the receive / send / delete move (tests). */
  readonly byHand?: boolean;
}

export interface RedriveSummary {
  readonly results: readonly (RedriveResult & { readonly name: string })[];
  readonly moved: number;
  readonly failed: number;
}

export async function redriveCommand(target: Target, o: RedriveCommandOptions, io: Io): Promise<RedriveSummary> {
  const queue = o.queue ?? 'all';
  if (!['ingest', 'slot', 'all'].includes(queue)) throw new CliError(`--queue must be ingest, slot or all (got "${queue}")`, 2);
  if (o.slot !== undefined) {
    if (queue === 'ingest') throw new CliError('--slot applies to slot DLQs: use it with --queue slot or all', 2);
    if (!Number.isSafeInteger(o.slot) || o.slot < 0 || o.slot >= target.slotCount) throw new CliError(`--slot must be between 0 and ${target.slotCount - 1} (got ${o.slot})`, 2);
  }
  const pairs: { name: string; dlqUrl: string; sourceUrl: string }[] = [];
  if (queue !== 'slot' && o.slot === undefined) pairs.push({ name: 'ingest DLQ', dlqUrl: target.ingestDlqUrl, sourceUrl: target.ingestQueueUrl });
  if (queue !== 'ingest') {
    for (let s = 0; s < target.slotCount; s++) {
      if (o.slot !== undefined && s !== o.slot) continue;
      pairs.push({ name: `slot ${s} DLQ`, dlqUrl: target.slotDlqUrls[s]!, sourceUrl: target.slotQueueUrls[s]! });
    }
  }
  const results: (RedriveResult & { name: string })[] = [];
  for (const p of pairs) {
    const r = await redriveDlq(target.clients.sqs, p.dlqUrl, p.sourceUrl, { byHand: o.byHand, onProgress: (line) => io.err(`${p.name}: ${line}`) });
    results.push({ ...r, name: p.name });
    if (r.method === 'empty') continue;
    io.out(
      `${p.name}: moved ${r.moved} message(s) back to its queue` +
        (r.method === 'move-task' ? ` (SQS move task ${r.taskStatus ?? '?'}${r.failureReason ? `: ${r.failureReason}` : ''})` : ' (receive, send, delete)') +
        (r.failed > 0 ? `; ${r.failed} could not be moved and stay in the DLQ: run redrive again` : ''),
    );
  }
  const moved = results.reduce((n, r) => n + r.moved, 0);
  const failed = results.reduce((n, r) => n + r.failed, 0);
  const empty = results.filter((r) => r.method === 'empty').length;
  io.out(`redrive: ${moved} message(s) moved from ${results.length - empty} DLQ(s)${empty > 0 ? `, ${empty} empty` : ''}${failed > 0 ? `, ${failed} left` : ''}`);
  if (failed > 0) throw new CliError(`${failed} message(s) could not be moved; run \`affinity redrive\` again`);
  return { results, moved, failed };
}
