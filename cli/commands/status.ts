/**
 * `affinity status [--json]`: slots with owners and heartbeat ages, leased videos,
 * and queue depths (slot queues and their DLQs, ingest and its DLQ).
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { SlotRecord } from '../../core/leases/lease-logic.ts';
import { formatDurationMs, table } from '../format.ts';
import type { Io } from '../io.ts';
import { leaseStore } from '../read.ts';
import type { Target } from '../target.ts';

export interface QueueDepth {
  readonly name: string;
  readonly url: string;
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
  /** Set when the attributes could not be read. */
  readonly error?: string;
}

export interface SlotStatus {
  readonly slot: number;
  readonly state: 'live' | 'expired' | 'free';
  readonly owner?: string;
  readonly epoch: number;
  readonly heartbeatAgeMs?: number;
  readonly expiresInMs?: number;
  readonly videoCount: number;
  readonly videos: readonly { videoId: string; token: number; owner?: string }[];
}

export interface StatusReport {
  readonly target: string;
  readonly atMs: number;
  readonly slots: readonly SlotStatus[];
  readonly queues: readonly QueueDepth[];
}

/** Classifies a slot lease at `nowMs`. Pure. */
export function slotState(s: SlotRecord, nowMs: number): SlotStatus['state'] {
  if (!s.owner) return 'free';
  return s.expiresAtMs > nowMs ? 'live' : 'expired';
}

async function queueDepth(target: Target, name: string, url: string): Promise<QueueDepth> {
  try {
    const r = await target.clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
      }),
    );
    const a = r.Attributes ?? {};
    return {
      name,
      url,
      visible: Number(a.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
      delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
    };
  } catch (e) {
    return { name, url, visible: 0, inFlight: 0, delayed: 0, error: (e as Error).message };
  }
}

/** Gathers the status; the printing is separate so tests and --json share it. */
export async function collectStatus(target: Target, nowMs = Date.now()): Promise<StatusReport> {
  const store = leaseStore(target);
  const slots = await store.getSlots(target.slotCount);
  const slotStatuses = await Promise.all(
    slots.map(async (s): Promise<SlotStatus> => {
      const ids = await store.listPinned(s.slot);
      const videos = await Promise.all(
        ids.sort().map(async (videoId) => {
          const v = await store.getVideo(videoId);
          return { videoId, token: v.token, ...(v.owner ? { owner: v.owner } : {}) };
        }),
      );
      return {
        slot: s.slot,
        state: slotState(s, nowMs),
        ...(s.owner ? { owner: s.owner } : {}),
        epoch: s.epoch,
        ...(s.heartbeatAtMs > 0 ? { heartbeatAgeMs: nowMs - s.heartbeatAtMs } : {}),
        ...(s.owner ? { expiresInMs: s.expiresAtMs - nowMs } : {}),
        videoCount: s.videoCount,
        videos,
      };
    }),
  );
  const queueList: [string, string][] = [
    ['ingest', target.ingestQueueUrl],
    ['ingest-dlq', target.ingestDlqUrl],
    ...target.slotQueueUrls.flatMap((u, i): [string, string][] => [
      [`slot-${i}`, u],
      [`slot-${i}-dlq`, target.slotDlqUrls[i]!],
    ]),
  ];
  const queues = await Promise.all(queueList.map(([name, url]) => queueDepth(target, name, url)));
  return { target: target.description, atMs: nowMs, slots: slotStatuses, queues };
}

export function printStatus(r: StatusReport, io: Io): void {
  io.out(`target: ${r.target}`);
  io.out('');
  io.out('SLOTS');
  for (const line of table(
    ['slot', 'state', 'owner', 'epoch', 'heartbeat', 'expires in', 'videos'],
    r.slots.map((s) => [
      s.slot,
      s.state,
      s.owner ?? '-',
      s.epoch,
      s.heartbeatAgeMs !== undefined ? `${formatDurationMs(s.heartbeatAgeMs)} ago` : '-',
      s.expiresInMs !== undefined ? formatDurationMs(s.expiresInMs) : '-',
      s.videoCount,
    ]),
  ))
    io.out(`  ${line}`);
  io.out('');
  const videos = r.slots.flatMap((s) => s.videos.map((v) => ({ ...v, slot: s.slot })));
  io.out(`LEASED VIDEOS (${videos.length})`);
  if (videos.length > 0) {
    for (const line of table(['video', 'slot', 'token', 'owner'], videos.map((v) => [v.videoId, v.slot, v.token, v.owner ?? '(not adopted yet)'])))
      io.out(`  ${line}`);
  }
  io.out('');
  io.out('QUEUES');
  for (const line of table(
    ['queue', 'visible', 'in flight', 'delayed', ''],
    r.queues.map((q) => [q.name, q.visible, q.inFlight, q.delayed, q.error ? `error: ${q.error}` : '']),
  ))
    io.out(`  ${line}`);
}

export async function statusCommand(target: Target, o: { json?: boolean }, io: Io): Promise<StatusReport> {
  const report = await collectStatus(target);
  if (o.json) io.out(JSON.stringify(report, null, 2));
  else printStatus(report, io);
  return report;
}
