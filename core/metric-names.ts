/**
 * Metric names, one source for the code that emits them (router, worker, janitor) and
 * the dashboard and alarms that read them (infra/monitoring.ts). Namespace:
 * `resourceNames().metricsNamespace`; every metric carries the dimension `service`
 * (router | worker | janitor), plus the dimension named in its description.
 */
export const METRIC_NAMES = {
  router: {
    /** Frames sent to a slot queue. */
    framesRouted: 'FramesRouted',
    /** Events dead-lettered with a reason (dimension Reason). */
    eventsRejected: 'EventsRejected',
    /** New videos pinned to a slot. */
    leasesCreated: 'LeasesCreated',
    /** Videos admitted while every slot was full. */
    admissionOverCapacity: 'AdmissionOverCapacity',
    /** Launch grants acted on. */
    taskLaunchRequested: 'TaskLaunchRequested',
    /**
     * Launches the router left to the janitor: `maxProvisioningTasks` launches were already
     * starting (its view of the fleet), or ECS refused for its PROVISIONING quota. Queued,
     * never failed: the janitor starts them within the budget.
     */
    launchesDeferred: 'LaunchesDeferred',
    /**
     * Launches that did not happen, each counted twice: without dimensions (what the alarm
     * reads) and with dimension Reason (throttled | access-denied | invalid-request |
     * placement | no-task | error | exception | refused; see LaunchFailureReason in
     * core/ports.ts). Every one withdraws its grant for a retry.
     */
    taskLaunchFailures: 'TaskLaunchFailures',
    /**
     * Launches granted for a slot whose previous launch never produced a heartbeat within
     * `taskStartGraceSeconds`: a task that did not come up (capacity, image pull, a crash
     * at start). The janitor counts the same.
     */
    taskStartTimeouts: 'TaskStartTimeouts',
    /** `s3:TestEvent`s (sent when the bucket notification is configured) acknowledged, not dead-lettered. */
    s3TestEvents: 'S3TestEvents',
    /**
     * Ingest records that failed on an outage-like error (throttling, 5xx, timeout) and were
     * backed off (visibility set by receive count) instead of retried: non-zero while
     * DynamoDB or SQS is down. Nothing is lost; records are routed once it is back.
     */
    outageBackoffs: 'RouterOutageBackoffs',
  },
  worker: {
    /** Frames committed with status ok. */
    framesProcessed: 'FramesProcessed',
    /** Frames committed with status failed (dimension Reason). */
    framesFailed: 'FramesFailed',
    /** Frames committed with status late (processed after the tracker had moved past them). */
    framesLate: 'FramesLate',
    /** Frames recorded as gaps. */
    framesGap: 'FramesGap',
    /** Frames given up on after repeated errors, recorded as failed (the reason is in the record); retry with `affinity replay`. */
    framesParked: 'FramesParked',
    /**
     * Frames recorded `failed` with reason `crashed-worker`: processes died twice running
     * the frame alone, its video isolated after a takeover from a dead owner (the crash-loop
     * breaker, decisions 28 and 29). Alarm on any: a frame kills the worker (out of memory on a
     * huge image, a native crash in the decoder or model). Retry with `affinity replay`.
     */
    framesCrashedWorker: 'FramesCrashedWorker',
    /**
     * Deaths of the crash probe's child process on an isolated frame (decision 41): the
     * frame is tried again in a fresh child, and parked as `crashed-worker` after
     * `crashProbeDeaths` of them without ever reaching the worker's own model.
     */
    crashProbeDeaths: 'CrashProbeDeaths',
    /**
     * Isolated frames that ran in the worker unprobed because the crash probe's child could
     * not start (model load failed, GPU memory): a poison frame then costs one more crash
     * (decision 29's markers) before it is parked.
     */
    crashProbeUnavailable: 'CrashProbeUnavailable',
    /** A video's batch rolled back on an error (dimension Reason); it retries with backoff. */
    videoRollbacks: 'VideoRollbacks',
    /** Errors the run loop survived (dimension Where). */
    workerErrors: 'WorkerErrors',
    /** S3 listings of a video's frames (dimension Why: start | overdue). */
    framesListed: 'FrameListings',
    /** Size of each committed checkpoint as JSON, bytes (what MAX_CHECKPOINT_BYTES caps; stored compressed, about 40 % of it: decision 65). */
    checkpointBytes: 'CheckpointBytes',
    /** Redelivered or duplicate frames recognised and dropped. */
    framesDuplicate: 'FramesDuplicate',
    /** Encoded segments taken in, by where their frame count came from (dimension Source: declared, container, decoded, unknown). */
    segmentsDescribed: 'SegmentsDescribed',
    /**
     * Frames decoded from segments (dimension Decoder: `nvdec`, `cpu` or `cpu-fallback`,
     * read off each segment's first decoded frame; gpu-worker/video/segment-decoder.ts
     * DecoderPlacement: a fixed set, never error text).
     */
    segmentFramesDecoded: 'SegmentFramesDecoded',
    /**
     * Where the worker's segments decode (dimension Decoder: `nvdec` | `cpu` |
     * `cpu-fallback`), counted at start (the expected choice), whenever the set of its
     * videos' placements changes, and once a minute by the GPU sampler, so its Sum per
     * minute is the number of workers decoding each way; the `WorkerDecodingOnCpu` alarm
     * reads Decoder=cpu-fallback (issue 43).
     */
    segmentDecoderInUse: 'SegmentDecoderInUse',
    /** A segment's object changed bytes (a re-upload) after its frames were counted: the count stands; logged with the replay command. */
    segmentsReuploaded: 'SegmentsReuploaded',
    /** Live videos whose segments stopped coming for several of their intervals (`source.stalled` raised; core/ingest/source-watch.ts). Alarmed. */
    sourcesStalled: 'SourcesStalled',
    /** Frames forwarded to the slot their video is pinned to. */
    framesForwarded: 'FramesForwarded',
    /** Per-frame processing time inside the worker. */
    inferenceLatencyMs: 'InferenceLatencyMs',
    /** Videos taken by this worker (token + 1). */
    videoLeasesAdopted: 'VideoLeasesAdopted',
    /** Adoptions from a previous owner. */
    videoTakeovers: 'VideoTakeovers',
    /** Videos released (dimension Why: idle | end-of-stream). */
    videosReleased: 'VideosReleased',
    /** Commits the store rejected under an old lease. */
    commitsFenced: 'CommitsFenced',
    /**
     * Commit units refused as malformed (the reason is in the worker's log line):
     * two operations on one item, or a DynamoDB ValidationException. A bug, never an
     * outage: the unit is not retried as it is; its video is rolled back as a counted
     * failure, so its frames are parked as `failed` records after MAX_VIDEO_FAILURES
     * rounds, while the other videos of the transaction commit. Alarmed on any.
     */
    commitsInvalid: 'CommitsInvalid',
    /**
     * Messages held, not decided, because their video's last commit was in doubt (its
     * answer lost): they are offered once a read settles the commit (issue 32).
     */
    messagesHeldInDoubt: 'MessagesHeldInDoubt',
    /**
     * The inference thread died (dimension Reason: out-of-memory | thread-error |
     * thread-exit). The processor is then broken for good and the worker drains and exits
     * with EXIT_PROCESSOR_FAILED, so another task takes the slot over.
     */
    inferenceThreadDied: 'InferenceThreadDied',
    /**
     * The decode thread ended by itself (decision 37). Nothing is lost: frames decode on the
     * main thread from then on, at a higher CPU cost per frame; the worker goes on.
     */
    decodeThreadDied: 'DecodeThreadDied',
    /**
     * Emitted at start and then once a minute by the GPU sampler (dimension Provider: cuda |
     * cpu), so its Sum per minute is the number of workers on each provider; the
     * `WorkerOnCpu` alarm reads Provider=cpu (issue 35, item 4).
     */
    executionProvider: 'ExecutionProvider',
    /** GPU utilisation of the task's GPU, %, from nvidia-smi once a minute (gpu-worker/runtime/gpu-sampler.ts). */
    gpuUtilizationPercent: 'GpuUtilizationPercent',
    /** NVDEC (video decoder) utilisation of the task's GPU, %, from nvidia-smi once a minute: 0 while segments decode means NVDEC is not used. */
    gpuDecoderUtilizationPercent: 'GpuDecoderUtilizationPercent',
    /** GPU memory in use on the task's GPU, MiB (nvidia-smi). */
    gpuMemoryUsedMiB: 'GpuMemoryUsedMiB',
    /** GPU memory in use on the task's GPU, % of its total (nvidia-smi). */
    gpuMemoryUsedPercent: 'GpuMemoryUsedPercent',
    /** Slot leases claimed. */
    slotsClaimed: 'SlotsClaimed',
    /** Slot leases lost or unconfirmable (the worker exits). */
    slotLeasesLost: 'SlotLeasesLost',
    /** Heartbeats whose outcome could not be confirmed. */
    heartbeatsUnconfirmed: 'HeartbeatsUnconfirmed',
    /**
     * What a hot spare's supervisor did (decision 75; dimension Why: failover | frozen-killed
     * | handed-back, the last counting messages of a dead worker made visible again).
     */
    supervisorEvents: 'SupervisorEvents',
    /** Malformed slot messages parked in the slot DLQ. */
    messagesDeadLettered: 'MessagesDeadLettered',
    /** Events dead-lettered with a reason (dimension Reason). */
    eventsRejected: 'EventsRejected',
    /**
     * Age of the oldest message in each receive (now - SentTimestamp), ms: how long frames
     * waited in the slot queue. One series for the whole fleet (Maximum), so the slot-queue
     * age alarm does not grow with the slot count.
     */
    slotMessageAgeMs: 'SlotMessageAgeMs',
    /**
     * Upload -> record, ms: from S3's `eventTime` of a frame to the moment the commit that
     * carried its `ok` or `late` record answered (gpu-worker/runtime/upload-times.ts). The
     * whole wait a user sees, S3's notification delay included; one fleet series, read as
     * p50 / p99. Frames whose message the committing worker never saw (buffered in a
     * predecessor's checkpoint) and operator replays give no sample.
     */
    uploadToRecordMs: 'UploadToRecordMs',
    /** Rules documents that failed validation (each also raises a `rules.invalid` event; the last good rules stay in effect). */
    rulesInvalid: 'RulesInvalid',
    /** Rules documents that could not be read (S3 errors other than 404/304): the rules in effect stay. */
    rulesReadErrors: 'RulesReadErrors',
    /** Outbox events committed (landed with their commit). */
    eventsCommitted: 'EventsCommitted',
    /**
     * End markers re-uploaded with another last frame once the video had an end (a corrected
     * marker). Frames already recorded `after-end-of-stream` keep that record; the warning
     * logged with it names the `affinity replay` that processes them.
     */
    endMarkersChanged: 'EndMarkersChanged',
  },
  janitor: {
    /** Slots with a valid lease. */
    liveSlots: 'LiveSlots',
    /**
     * Slots with queued frames or pinned videos, no live owner, and no launch still inside
     * its `taskStartGraceSeconds` (a task starting from cold is not counted).
     */
    slotsWithWorkNoOwner: 'SlotsWithWorkNoOwner',
    /** Videos pinned to any slot. */
    pinnedVideos: 'PinnedVideos',
    /** Tasks the janitor launched. */
    tasksRelaunched: 'TasksRelaunched',
    /**
     * As the router's (dimension Reason), plus `stopped-before-start` (a granted task that
     * stopped, or vanished, before its first heartbeat) and `no-task` for a grant that
     * recorded no task within one janitor period.
     */
    taskLaunchFailures: 'TaskLaunchFailures',
    /**
     * Slots that needed a launch but were left for a later run because `maxProvisioningTasks`
     * launches were already starting, or ECS refused for its PROVISIONING quota.
     */
    launchesDeferred: 'LaunchesDeferred',
    /** As the router's: a launch granted because the previous one never produced a heartbeat within the grace. */
    taskStartTimeouts: 'TaskStartTimeouts',
    /**
     * Messages visible in the DLQs of slots that had an owner in the last two janitor
     * periods plus a lease TTL (the only time a slot DLQ can gain messages): one fleet-wide
     * gauge instead of an alarm per slot DLQ.
     */
    slotDlqMessages: 'SlotDlqMessages',
  },
} as const;
