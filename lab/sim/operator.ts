/**
 * The operator in the simulated world (lab/sim/): `replay`, `reconcile` and
 * `release --force` run as the core operations the CLI calls, against the twins. Their re-sends reach the
 * simulated ingest queue (the notifications' queue), as they reach SQS in AWS.
 */
import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { memoryIo } from '../../cli/io.ts';
import type { Target } from '../../cli/target.ts';
import { operatorPorts } from '../../core/commit/operations/compose.ts';
import { replay } from '../../core/commit/operations/replay.ts';
import { reconcile } from '../../core/commit/operations/reconcile.ts';
import { forceRelease } from '../../core/commit/operations/release.ts';
import { redriveCommand } from '../../cli/commands/redrive.ts';
import type { SimWorld } from './world.ts';
import { gatedDeletes } from '../../harness/operator-harness.ts';

export type OperatorCommand =
  | { readonly kind: 'replay'; readonly videoId: string; readonly fromFrame: number; readonly beforeFirstDelete?: () => Promise<void> }
  | { readonly kind: 'reconcile'; readonly videoId: string }
  | { readonly kind: 'release'; readonly videoId: string }
  | { readonly kind: 'redrive' };

/** A CLI target whose clients are the twins', and whose ingest queue is the world's. */
export function simTarget(world: SimWorld): Target {
  const slotSqs = world.sqs.asClient();
  const sqs = {
    send: async (command: unknown) => {
      const input = (command as { input: Record<string, unknown> }).input;
      if (input.QueueUrl === world.wiring.ingestQueueUrl) {
        type Entry = { Id?: string; MessageBody?: string; MessageAttributes?: Record<string, { StringValue?: string }> };
        const entries: Entry[] = command instanceof SendMessageBatchCommand ? ((input.Entries as Entry[]) ?? []) : command instanceof SendMessageCommand ? [input as Entry] : [];
        for (const e of entries) world.enqueueIngest(e.MessageBody ?? '', e.MessageAttributes?.replayTag?.StringValue);
        return { Successful: entries.map((e) => ({ Id: e.Id })), Failed: [], $metadata: {} };
      }
      return slotSqs.send(command as never);
    },
    destroy() {},
  } as unknown as SQSClient;
  const slots = world.tunables.slotCount;
  return {
    description: 'the simulated world',
    kind: 'local',
    region: 'us-east-1',
    bucket: world.bucket,
    leasesTable: world.wiring.leasesTable,
    resultsTable: world.wiring.resultsTable,
    eventsTable: world.wiring.eventsTable,
    pinnedSlotIndex: world.wiring.pinnedSlotIndex,
    ingestQueueUrl: world.wiring.ingestQueueUrl,
    ingestDlqUrl: world.wiring.ingestDlqUrl,
    slotCount: slots,
    slotQueueUrls: Array.from({ length: slots }, (_, i) => `${world.wiring.slotQueueUrlPrefix}${i}.fifo`),
    slotDlqUrls: Array.from({ length: slots }, (_, i) => `${world.wiring.slotQueueUrlPrefix}${i}-dlq.fifo`),
    releasedVideoRetentionDays: world.tunables.releasedVideoRetentionDays,
    firstFrameNumber: world.tunables.firstFrameNumber,
    slotLeaseTtlSeconds: world.tunables.slotLeaseTtlSeconds,
    // The operator's CLI reaches AWS over the internet: its calls take tens of ms, so live work comes between them.
    clients: { s3: world.latent(world.s3.asClient(), 'operator'), sqs: world.latent(sqs, 'operator'), ddb: world.latent(world.leasesTwin.ddb, 'operator') },
    close() {},
  };
}

/** What an operator command did: what it said (or why it refused), and where a replay really started. */
export interface OperatorOutcome {
  readonly said: string;
  readonly replayedFrom?: number;
}

/**
 * Runs one operator command as a core operation (core/commit/operations/), with the ports
 * built from the twins' clients, as the CLI builds them from the SDK's. Redrive is the
 * CLI's command (its SQS work is in core/ingest/sqs/dlq-redrive.ts).
 */
export async function runOperator(world: SimWorld, c: OperatorCommand): Promise<OperatorOutcome> {
  const target = simTarget(world);
  const base = operatorPorts(target.clients, world.wiring, world.tunables, { where: 'the simulated world' });
  const ports = c.kind === 'replay' && c.beforeFirstDelete ? { ...base, results: gatedDeletes(base.results, c.beforeFirstDelete) } : base;
  try {
    switch (c.kind) {
      case 'replay': {
        const r = await replay(ports, { videoId: c.videoId, fromFrame: c.fromFrame });
        return { said: `replayed from ${r.fromFrame}${r.fromFrame !== r.askedFrom ? ` (asked ${r.askedFrom})` : ''}: token ${r.previousToken} -> ${r.token}, deleted ${r.deleted}, re-sent ${r.resent}, rebuilt ${r.rebuilt} from ${r.rebuiltFrom}`, replayedFrom: r.fromFrame };
      }
      case 'reconcile': {
        const r = await reconcile(ports, { videoId: c.videoId });
        return { said: `${r.findings.length} finding(s), re-sent ${r.resent}` };
      }
      case 'release': {
        const r = await forceRelease(ports, { videoId: c.videoId, retentionDays: world.tunables.releasedVideoRetentionDays });
        return { said: `released from slot ${r.slot}: token ${r.previousToken} -> ${r.token}, re-sent frames [${r.resentFrames.join(',')}]${r.resentEndMarker ? ' and the end marker' : ''}` };
      }
      case 'redrive': {
        // The slot DLQs through the command (by hand: the model has no move task); the ingest DLQ is the world's own queue.
        const io = memoryIo({ interactive: false });
        const r = await redriveCommand(target, { queue: 'slot', byHand: true }, io);
        return { said: `slot DLQs: ${r.moved} moved; ingest DLQ: ${world.redriveIngestDlq()} moved` };
      }
    }
  } catch (e) {
    return { said: `refused: ${e instanceof Error ? e.message : String(e)}` };
  }
}
