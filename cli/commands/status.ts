/**
 * `affinity status [--json]`: slots with owners and heartbeat ages, leased videos,
 * queue depths (slot queues and their DLQs, ingest and its DLQ), and this month's
 * estimated cost per camera (issue 44: core/cost/estimate.ts, from each leased video's
 * checkpoint, its last result item, its last object and its lease item).
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { MAX_OWNER_HISTORY, type VideoCheckpoint } from '../../core/commit/checkpoint.ts';
import { storedItemAt } from '../../core/commit/dynamodb/results-reader.ts';
import { isPacked } from '../../core/commit/record-packing.ts';
import { DEFAULT_TUNABLES } from '../../core/config.ts';
import { fleetEstimate, monthStartMs, type CameraActivity, type RetentionSettings } from '../../core/cost/estimate.ts';
import { videoKey } from '../../core/leases/dynamodb/lease-table.ts';
import { itemBytes } from '../../core/leases/memory/item-values.ts';
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

/** This month's estimated cost (non-GPU, fixed costs apart), USD; see core/cost/estimate.ts. */
export interface CostEstimate {
  /** Mean over the cameras measured, at their current rates, a 730-hour month. */
  readonly perCameraMonth: number;
  /** All cameras measured, from the start of the month (UTC) or their first owner. */
  readonly thisMonth: number;
  readonly cameras: readonly { readonly videoId: string; readonly fps: number; readonly framesPerObject: number; readonly month: number; readonly lines: Readonly<Record<string, number>> }[];
  /** Leased videos not measured, with why (too young, owner history cut, nothing recorded yet). */
  readonly skipped: readonly { readonly videoId: string; readonly why: string }[];
  readonly settings: RetentionSettings;
}

export interface StatusReport {
  readonly target: string;
  readonly atMs: number;
  readonly slots: readonly SlotStatus[];
  readonly queues: readonly QueueDepth[];
  readonly cost: CostEstimate;
}

/** Retention the estimate assumes (the stack's defaults unless the operator says otherwise). */
export interface CostOptions {
  readonly frameRetentionDays?: number;
  readonly resultsRetentionDays?: number;
  /** False when the deployment turned point-in-time recovery off (`-c pointInTimeRecovery=false`). */
  readonly pointInTimeRecovery?: boolean;
}

/** Least observed time before a camera's rate is trusted. */
const MIN_OBSERVED_MS = 10_000;

/**
 * What the tables say about one leased camera (see {@link CameraActivity}), or why it
 * cannot be measured. Reads its lease item, its last stored result item and the object
 * that item came from (a HEAD).
 */
async function cameraActivity(target: Target, videoId: string, ck: VideoCheckpoint, nowMs: number): Promise<CameraActivity | string> {
  const since = ck.owners[0]?.sinceMs;
  if (since === undefined || ck.lastFrame === undefined) return 'nothing recorded yet';
  // The owner history keeps the last MAX_OWNER_HISTORY owners: beyond that its first entry is not the video's start.
  if (ck.ownerChanges > MAX_OWNER_HISTORY) return `owner history cut (${ck.ownerChanges} owners): rate unknown`;
  if (nowMs - since < MIN_OBSERVED_MS) return 'observed for less than 10 s';
  const frames = ck.framesOk + ck.framesLate + ck.framesFailed + ck.framesGap;
  const seconds = (nowMs - since) / 1000;
  const item = await storedItemAt({ ddb: target.clients.ddb, resultsTable: target.resultsTable }, videoId, ck.lastFrame);
  if (!item) return 'no result item found';
  const lease = (await target.clients.ddb.send(new GetCommand({ TableName: target.leasesTable, Key: { pk: videoKey(videoId) } }))).Item;
  const key = item.key;
  let objectBytes = 0;
  if (key) {
    try {
      objectBytes = (await target.clients.s3.send(new HeadObjectCommand({ Bucket: target.bucket, Key: key }))).ContentLength ?? 0;
    } catch {
      // Expired or deleted: storage is then counted as nothing (said in the report).
    }
  }
  const count = isPacked(item) ? item.packedCount : 1;
  const totals = ck.analytics?.totals;
  const events = totals
    ? Object.values(totals.lines).reduce((n, byLabel) => n + Object.values(byLabel).reduce((m, [a, b]) => m + a + b, 0), 0) +
      Object.values(totals.zones).reduce((n, byLabel) => n + Object.values(byLabel).reduce((m, [a, b, c]) => m + a + b + c, 0), 0)
    : 0;
  return {
    videoId,
    fps: frames / seconds,
    framesPerObject: count,
    objectBytes,
    leaseItemBytes: lease ? itemBytes(lease) : 0,
    resultItemBytes: itemBytes(item as unknown as Parameters<typeof itemBytes>[0]),
    framesPerResultItem: count,
    eventsPerSecond: events / seconds,
    activeSecondsThisMonth: (nowMs - Math.max(since, monthStartMs(nowMs))) / 1000,
  };
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
export async function collectStatus(target: Target, nowMs = Date.now(), costOptions: CostOptions = {}): Promise<StatusReport> {
  const store = leaseStore(target);
  const slots = await store.getSlots(target.slotCount);
  const activities: CameraActivity[] = [];
  const skipped: { videoId: string; why: string }[] = [];
  const slotStatuses = await Promise.all(
    slots.map(async (s): Promise<SlotStatus> => {
      const ids = await store.listPinned(s.slot);
      const videos = await Promise.all(
        ids.sort().map(async (videoId) => {
          const v = await store.getVideo(videoId);
          // The estimate never fails the status: a read it needs that fails names the camera instead.
          const a = await cameraActivity(target, videoId, v.checkpoint, nowMs).catch((e: unknown) => `could not read its tables: ${e instanceof Error ? e.message : String(e)}`);
          if (typeof a === 'string') skipped.push({ videoId, why: a });
          else activities.push(a);
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
  const settings: RetentionSettings = {
    frameRetentionDays: costOptions.frameRetentionDays ?? DEFAULT_FRAME_RETENTION_DAYS,
    resultsRetentionDays: costOptions.resultsRetentionDays ?? DEFAULT_TUNABLES.resultsRetentionDays,
    videosPerSlot: DEFAULT_TUNABLES.videosPerSlot,
    heartbeatIntervalSeconds: DEFAULT_TUNABLES.heartbeatIntervalSeconds,
    pointInTimeRecovery: costOptions.pointInTimeRecovery ?? true,
  };
  const fleet = fleetEstimate(activities.sort((a, b) => a.videoId.localeCompare(b.videoId)), settings);
  const cost: CostEstimate = {
    perCameraMonth: fleet.perCameraMonth,
    thisMonth: fleet.thisMonth,
    cameras: fleet.cameras.map((c, i) => ({ videoId: c.videoId, fps: activities[i]!.fps, framesPerObject: activities[i]!.framesPerObject, month: c.month, lines: c.lines })),
    skipped: skipped.sort((a, b) => a.videoId.localeCompare(b.videoId)),
    settings,
  };
  return { target: target.description, atMs: nowMs, slots: slotStatuses, queues, cost };
}

/** The stack's default `frameRetentionDays` (infra/config.ts), which the CLI does not read from the deployment. */
export const DEFAULT_FRAME_RETENTION_DAYS = 30;

const usd = (x: number) => `$${x < 10 ? x.toFixed(2) : x.toFixed(0)}`;

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
  io.out('');
  const c = r.cost;
  io.out(`COST (estimate: list prices, non-GPU, fixed costs apart; frames kept ${c.settings.frameRetentionDays} d, results ${c.settings.resultsRetentionDays || 'for ever'}${c.settings.resultsRetentionDays ? ' d' : ''})`);
  if (c.cameras.length === 0) io.out('  no camera measured yet');
  else {
    io.out(`  ${usd(c.perCameraMonth)} per camera-month at the current rates (${c.cameras.length} camera${c.cameras.length === 1 ? '' : 's'}); this month so far ${usd(c.thisMonth)}`);
    for (const line of table(
      ['camera', 'fps', 'frames/object', '$/month', 'requests', 'DynamoDB writes', 'rule events', 'frames stored', 'results stored'],
      c.cameras.map((x) => [x.videoId, x.fps.toFixed(1), x.framesPerObject, usd(x.month), usd(x.lines.requests!), usd(x.lines.dynamoDbWrites!), usd(x.lines.ruleEvents!), usd(x.lines.frameStorage!), usd(x.lines.resultStorage!)]),
    ))
      io.out(`  ${line}`);
  }
  for (const sk of c.skipped) io.out(`  ${sk.videoId}: not measured (${sk.why})`);
  io.out('  fixed costs of the deployment (endpoints, alarms, dashboard, ...): docs/deploy.md §8, about $112 a month by default');
}

export async function statusCommand(target: Target, o: { json?: boolean } & CostOptions, io: Io): Promise<StatusReport> {
  const report = await collectStatus(target, Date.now(), o);
  if (o.json) io.out(JSON.stringify(report, null, 2));
  else printStatus(report, io);
  return report;
}
