/** The fleet's metric dimensions and alarm ids: the names monitoring.ts, its tests and the docs share. */

/** Dimension every metric carries, and its value per emitter. */
export const SERVICE_DIMENSION = 'service';
export const METRIC_SERVICE = { router: 'router', worker: 'worker', janitor: 'janitor' } as const;
export type Emitter = keyof typeof METRIC_SERVICE;

/** Extra dimensions: metric name -> dimension name. */
export const METRIC_DIMENSIONS = {
  EventsRejected: 'Reason',
  FramesFailed: 'Reason',
  ExecutionProvider: 'Provider',
  SegmentFramesDecoded: 'Decoder',
  SegmentDecoderInUse: 'Decoder',
  VideoRollbacks: 'Reason',
  WorkerErrors: 'Where',
  FrameListings: 'Why',
} as const;

/**
 * The alarms, by id; each is named `<alarmNamePrefix>-<id>`. Their number is fixed: no
 * alarm per slot (per-slot signals reach them as fleet-wide metrics, docs/decisions.md 16).
 */
export const ALARM_IDS = [
  'IngestDlqNotEmpty',
  'SlotDlqNotEmpty',
  'IngestAgeHigh',
  'SlotQueueAgeHigh',
  'SlotWithWorkNoOwner',
  'TaskStartTimedOut',
  'TaskLaunchFailures',
  'InstanceLaunchFailures',
  'FramesCrashedWorker',
  'CommitsInvalid',
  'SourceStalled',
  'WorkerOnCpu',
  'WorkerDecodingOnCpu',
  'EventDlqNotEmpty',
  'RouterErrors',
  'JanitorErrors',
] as const;
export type AlarmId = (typeof ALARM_IDS)[number];

/**
 * The alarms of each NAT instance (`natInstanceType`, decisions 79 and 84): a pair per
 * instance, so their number is `natGateways` × 2 (one instance per zone), none without NAT
 * instances. Each is named `<alarmNamePrefix>-<id>-<n>`, n counting the instances from 1
 * as the public subnets they live in do (`publicSubnet1`, ...).
 * - `NatSystemCheckFailed`: AWS/EC2 `StatusCheckFailed_System` (the host); EC2 recovers it.
 * - `NatInstanceCheckFailed`: AWS/EC2 `StatusCheckFailed_Instance` (its OS); EC2 reboots it.
 */
export const NAT_INSTANCE_ALARM_IDS = ['NatSystemCheckFailed', 'NatInstanceCheckFailed'] as const;
export type NatInstanceAlarmId = (typeof NAT_INSTANCE_ALARM_IDS)[number];

/**
 * An alarm's name: `<prefix>-<id>`, or `<prefix>-<id>-<n>` for the n-th NAT instance's
 * (from 1). The alarm topic's policy lets CloudWatch publish only for names `<prefix>-*`.
 */
export function alarmName(prefix: string, id: AlarmId): string;
export function alarmName(prefix: string, id: NatInstanceAlarmId, natInstance: number): string;
export function alarmName(prefix: string, id: AlarmId | NatInstanceAlarmId, natInstance?: number): string {
  return natInstance === undefined ? `${prefix}-${id}` : `${prefix}-${id}-${natInstance}`;
}
