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
