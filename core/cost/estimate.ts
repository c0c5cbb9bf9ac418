/**
 * This month's AWS cost per camera, estimated from what the stack's own tables say about
 * each camera (issue 44, for `affinity status`): its frame rate, frames per uploaded
 * object, the size of its objects, of its lease item and of its result items, and the rule
 * events it raised, priced with the list prices (prices.ts) and the calls per object that
 * the cost bench measured (docs/deploy.md §8). Non-GPU, fixed costs apart. Pure.
 *
 * An estimate, not a bill: calls per object are the bench's (live, 8 cameras per slot),
 * and a camera's rate is its frames over the time since its oldest recorded owner took it.
 */
import { PRICES, SECONDS_PER_MONTH, HOURS_PER_MONTH } from './prices.ts';

/**
 * Requests per uploaded object besides the commit, as `bench/api-calls-live.ts` measured
 * them for segments (30 fps, 2-s segments: `bench/results/api-calls-live-segments.json`):
 * S3 GET and HEAD, FIFO and standard SQS requests (the S3 notification, the event
 * source's receive and delete), router invocations and DynamoDB read units.
 */
export const CALLS_PER_OBJECT = { s3GetHead: 2.1, sqsFifo: 1.6, sqsStandard: 3.0, routerInvocations: 1.0, readUnits: 1.1 } as const;

/** What the tables say about one camera. */
export interface CameraActivity {
  readonly videoId: string;
  /** Frames a second, over the time observed. */
  readonly fps: number;
  /** Frames per uploaded object: a segment's frame count, or 1 for images. */
  readonly framesPerObject: number;
  /** Bytes of one uploaded object (its S3 size). */
  readonly objectBytes: number;
  /** The video's lease item as stored (rewritten by every commit). */
  readonly leaseItemBytes: number;
  /** A result item as stored, and the frames it covers (a packed run's count, or 1). */
  readonly resultItemBytes: number;
  readonly framesPerResultItem: number;
  /** Rule events a second (lines crossed, zones entered and left, dwell). */
  readonly eventsPerSecond: number;
  /** Seconds of this month the camera was active. */
  readonly activeSecondsThisMonth: number;
}

export interface RetentionSettings {
  readonly frameRetentionDays: number;
  /** 0 = never: a month's results are stored (and grow) for ever; counted as one month here. */
  readonly resultsRetentionDays: number;
  /** Cameras sharing a slot's heartbeats. */
  readonly videosPerSlot: number;
  readonly heartbeatIntervalSeconds: number;
  /** Whether the results table has point-in-time recovery (`pointInTimeRecovery`, on unless the deployment turned it off). */
  readonly pointInTimeRecovery?: boolean;
}

/**
 * A batch of rule events as stored (core/analytics/event-packing.ts, decision 72): bytes
 * of the item and of each event in it, as `bench/checkpoint-scene.ts` measured them with
 * 10 rules on the street scene (628 bytes for 3.6 events, 2,051 for 15).
 */
export const RULE_EVENTS_BATCH_BYTES = 190;
export const RULE_EVENT_BYTES = 125;

/**
 * Days a frame object outlives `frameRetentionDays` on average: lifecycle expiry rounds to
 * the next midnight UTC. The frame bucket is not versioned (decision 78), so no
 * non-current day follows (before it, about 2 days in all).
 */
export const FRAME_EXPIRY_EXTRA_DAYS = 0.5;
const GB = 1024 ** 3;
const txUnits = (bytes: number) => 2 * Math.max(1, Math.ceil(bytes / 1024));

/** One camera's cost at its current rate, a month of 730 hours, USD by line; `thisMonth` prorated by its active time. */
export function cameraMonthEstimate(a: CameraActivity, s: RetentionSettings) {
  const frames = a.fps * SECONDS_PER_MONTH;
  const objects = frames / Math.max(1, a.framesPerObject);
  const perMillion = (count: number, price: number) => (count * price) / 1e6;
  // A commit per object when the worker keeps up: slot check (1 KB), the lease item, the summary (about 1 KB).
  const commitUnits = 2 + txUnits(a.leaseItemBytes) + 2;
  const resultUnitsPerFrame = txUnits(a.resultItemBytes) / Math.max(1, a.framesPerResultItem);
  const heartbeatUnits = (HOURS_PER_MONTH * 3600) / s.heartbeatIntervalSeconds / Math.max(1, s.videosPerSlot);
  // Rule events: one batch per commit that raised any (a commit per object when the worker
  // keeps up), each one transactional write of its size, one Pipes request, one bus event.
  const commitsPerSecond = a.fps / Math.max(1, a.framesPerObject);
  const eventsPerCommit = commitsPerSecond > 0 ? a.eventsPerSecond / commitsPerSecond : 0;
  const batches = commitsPerSecond * Math.min(1, eventsPerCommit) * SECONDS_PER_MONTH;
  const batchUnits = txUnits(RULE_EVENTS_BATCH_BYTES + RULE_EVENT_BYTES * Math.max(1, eventsPerCommit));
  const daysPerMonth = HOURS_PER_MONTH / 24;
  const resultsDays = s.resultsRetentionDays > 0 ? s.resultsRetentionDays : daysPerMonth;
  const resultsGb = ((a.resultItemBytes + 100) / Math.max(1, a.framesPerResultItem)) * frames / GB;
  const lines = {
    requests:
      perMillion(objects, PRICES.s3PutPerMillion) +
      perMillion(objects * CALLS_PER_OBJECT.s3GetHead, PRICES.s3GetPerMillion) +
      perMillion(objects * CALLS_PER_OBJECT.sqsFifo, PRICES.sqsFifoPerMillion) +
      perMillion(objects * CALLS_PER_OBJECT.sqsStandard, PRICES.sqsStandardPerMillion) +
      perMillion(objects * CALLS_PER_OBJECT.routerInvocations, PRICES.lambdaRequestPerMillion) +
      objects * CALLS_PER_OBJECT.routerInvocations * 0.1 * 0.5 * PRICES.lambdaGbSecond +
      perMillion(objects * CALLS_PER_OBJECT.readUnits, PRICES.ddbReadUnitPerMillion),
    dynamoDbWrites: perMillion(objects * commitUnits + frames * resultUnitsPerFrame + heartbeatUnits, PRICES.ddbWriteUnitPerMillion),
    ruleEvents: perMillion(batches, batchUnits * PRICES.ddbWriteUnitPerMillion + PRICES.eventBridgePerMillionEvents + PRICES.pipesPerMillionRequests),
    frameStorage: ((objects * a.objectBytes) / GB) * PRICES.s3StoragePerGbMonth * ((s.frameRetentionDays + FRAME_EXPIRY_EXTRA_DAYS) / daysPerMonth),
    resultStorage: resultsGb * (PRICES.ddbStoragePerGbMonth + (s.pointInTimeRecovery === false ? 0 : PRICES.ddbPitrPerGbMonth)) * (resultsDays / daysPerMonth),
  };
  const month = Object.values(lines).reduce((x, y) => x + y, 0);
  return { videoId: a.videoId, lines, month, thisMonth: month * Math.min(1, a.activeSecondsThisMonth / SECONDS_PER_MONTH) };
}

/** The fleet's cameras: the estimate per camera-month (mean at current rates) and this month so far (all cameras). */
export function fleetEstimate(cameras: readonly CameraActivity[], s: RetentionSettings) {
  const each = cameras.map((c) => cameraMonthEstimate(c, s));
  const perCameraMonth = each.length > 0 ? each.reduce((x, e) => x + e.month, 0) / each.length : 0;
  return { cameras: each, perCameraMonth, thisMonth: each.reduce((x, e) => x + e.thisMonth, 0) };
}

/** The start of the UTC month holding `nowMs`. */
export function monthStartMs(nowMs: number): number {
  const d = new Date(nowMs);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
