/**
 * A seed's plan (lab/sim/): the videos, what is uploaded when, and every fault, each an
 * event at a simulated time that the scheduler places. Drawn from the seed alone, so a
 * seed names one plan; {@link shrinkCandidates} gives smaller plans for shrinking a
 * failing one.
 *
 * Fault kinds (each counted for the bench's coverage):
 * - uploads: JPEG frames never uploaded or corrupt; segments truncated, damaged, without
 *   a declared count, re-uploaded with other bytes; uploads late and out of order;
 * - notifications duplicated and late (S3's are at least once: never lost);
 * - end markers moved earlier then corrected, or never put;
 * - kill -9 and SIGSTOP of a worker, shorter and longer than its lease;
 * - AWS errors: DynamoDB throttles and commits whose answer is lost, S3 read errors;
 * - operator commands at any point: replay --from, reconcile, release --force;
 * - the fleet's failover options (decision 75), drawn last so earlier draws stay: a hot spare
 *   in every worker task (a kill or a pause then hits the worker process, under its
 *   supervisor), 1-2 standby tasks on instances of their own (a kill may take one).
 *
 * And two *reactive* faults, which the world fires when the product reaches a moment a
 * drawn time would almost never hit (decision 61):
 * - `doubt-window`: a frame (or segment) withheld until the commit that records it as a gap
 *   is struck (not sent, or applied with its answer lost) and its video's lease reads fail
 *   for a while; the upload is put at that moment, so its message comes while the commit is
 *   in doubt (at its planned, later time if no such commit comes);
 * - `replay-race`: a replay whose first record delete waits until the video's camera has
 *   uploaded its next object (or S3 has notified the last one again) and a worker has taken
 *   it, so the new owner adopts the video between the replay's reset and its deletes.
 */
import { frameKey, endMarkerKey } from '../../core/ingest/keys.ts';
import { FRAMES_METADATA_KEY, parseSourceKey, segmentKey } from '../../core/ingest/segment-keys.ts';
import { simFrameBytes, simSegmentBytes, type SimSegmentBody } from './media.ts';
import { rng } from '../../core/random.ts';

export type NotifyFault = 'lost' | 'duplicated' | 'late' | undefined;

export type SimEvent =
  | {
      readonly atMs: number;
      readonly kind: 'upload';
      readonly videoId: string;
      readonly key: string;
      readonly body: string;
      readonly metadata?: Record<string, string>;
      readonly notify?: NotifyFault;
      readonly faults: readonly string[];
      /** Put when the plan's doubt window on this frame opens (`atMs` is the fallback). */
      readonly onDoubt?: true;
      /** Put when a racing replay of its video reaches its first delete (`atMs` is the fallback). */
      readonly onRace?: true;
    }
  | { readonly atMs: number; readonly kind: 'end'; readonly videoId: string; readonly lastFrame: number; readonly notify?: NotifyFault; readonly faults: readonly string[] }
  | { readonly atMs: number; readonly kind: 'kill' | 'pause'; readonly forMs?: number; readonly pick: number; readonly faults: readonly string[] }
  | { readonly atMs: number; readonly kind: 'replay'; readonly videoId: string; readonly fromFrame: number; readonly faults: readonly string[]; readonly race?: true }
  | { readonly atMs: number; readonly kind: 'reconcile' | 'release'; readonly videoId: string; readonly faults: readonly string[] }
  | { readonly atMs: number; readonly kind: 'redrive'; readonly faults: readonly string[] };

/** What the oracle needs to know of a video. */
export interface SimVideo {
  readonly videoId: string;
  readonly kind: 'jpeg' | 'segments';
  /** Frames 0..lastFrame are due (the final end marker says lastFrame). */
  readonly lastFrame: number;
  readonly endMarked: boolean;
  /** The highest frame planned (above `lastFrame` when the end marker moved earlier). */
  readonly plannedLastFrame?: number;
  /** The first end marker said this frame; a later one moved it to `lastFrame`. */
  readonly endMovedFrom?: number;
  /** Frames (a segment's first frame for segments) uploaded or notified late. */
  readonly arrivedLate?: readonly number[];
  /** JPEG frames never uploaded. */
  readonly neverUploaded: readonly number[];
  readonly segments: readonly { readonly firstFrame: number; readonly frames: number; readonly yields: number; readonly decoded?: readonly number[] }[];
}

export interface AwsFaultRates {
  /** Share of DynamoDB calls throttled before they apply. */
  readonly ddbThrottle: number;
  /** Share of DynamoDB transactions applied whose answer is lost. */
  readonly ddbLostAnswer: number;
  /** Share of S3 GETs and HEADs that fail with a 5xx. */
  readonly s3Error: number;
  /** Share of SQS calls (sends, receives, deletes, visibility changes) throttled or failing with a 5xx. */
  readonly sqsError?: number;
}

/**
 * A planned in-doubt window (the `doubt-window` fault): the first worker commit that puts a
 * gap record at `frame` of `videoId` is struck (`unsent`: fails before it is sent; `lost`:
 * applied, its answer lost), then every read of the video's lease item by a worker fails for
 * `forMs`, and the frame's withheld upload is put at once.
 */
export interface DoubtWindow {
  readonly videoId: string;
  readonly frame: number;
  readonly mode: 'unsent' | 'lost';
  readonly forMs: number;
}

export const NO_AWS_FAULTS: AwsFaultRates = { ddbThrottle: 0, ddbLostAnswer: 0, s3Error: 0, sqsError: 0 };

export interface SimPlan {
  readonly seed: number;
  readonly slots: number;
  readonly videos: readonly SimVideo[];
  readonly events: readonly SimEvent[];
  readonly aws: AwsFaultRates;
  /** Planned in-doubt windows (reactive: see the module comment). */
  readonly doubtWindows?: readonly DoubtWindow[];
  /** When the last planned event fires. */
  readonly lastEventMs: number;
  /**
   * The fleet's failover options (decision 75): a hot spare in every worker task, standby
   * tasks on instances of their own. Absent: neither (plans kept from before).
   */
  readonly world?: SimWorldOptions;
}

/** The fleet's failover options a plan draws (decision 75). */
export interface SimWorldOptions {
  readonly hotSpare?: boolean;
  readonly standbys?: number;
}

export interface PlanOptions {
  /** Scale of the world (videos and frames); 1 is the CI lane's. @default 1 */
  readonly scale?: number;
  /** Fault kinds switched off (by label), e.g. to measure one kind alone. */
  readonly without?: readonly string[];
}

const pick = <T>(draw: () => number, xs: readonly T[]): T => xs[Math.floor(draw() * xs.length)]!;
const int = (draw: () => number, lo: number, hi: number): number => lo + Math.floor(draw() * (hi - lo + 1));

export function makePlan(seed: number, draw: () => number, o: PlanOptions = {}): SimPlan {
  const off = new Set(o.without ?? []);
  const chance = (label: string, p: number) => !off.has(label) && draw() < p;
  const scale = o.scale ?? 1;
  const events: SimEvent[] = [];
  const videos: SimVideo[] = [];
  const nVideos = int(draw, 1, Math.max(1, Math.round(3 * scale)));
  const slots = int(draw, 1, 3);
  let horizon = 0;

  // S3 delivers notifications at least once (never lost, by its documentation): a lost
  // one is a chaos fault only where something else reveals the object, which the plan
  // cannot know. `lost` stays a kind for plans built by hand (an operator's reconcile).
  const notifyFault = (): NotifyFault => (chance('notification-duplicated', 0.1) ? 'duplicated' : chance('notification-late', 0.08) ? 'late' : undefined);

  for (let v = 0; v < nVideos; v++) {
    const videoId = `v${v}`;
    const startMs = int(draw, 0, 20_000);
    const kind = draw() < 0.6 ? 'segments' : 'jpeg';
    const neverUploaded: number[] = [];
    const segments: { firstFrame: number; frames: number; yields: number; decoded?: number[] }[] = [];
    let lastFrame: number;
    if (kind === 'jpeg') {
      const n = int(draw, 6, Math.round(24 * scale));
      lastFrame = n - 1;
      for (let f = 0; f < n; f++) {
        const faults: string[] = [];
        // The first frame always comes (where a video starts is another story, decision 24).
        if (f > 0 && f < n - 1 && chance('frame-never-uploaded', 0.05)) {
          neverUploaded.push(f);
          continue;
        }
        const corrupt = chance('frame-corrupt', 0.04);
        if (corrupt) faults.push('frame-corrupt');
        let atMs = startMs + f * 100;
        if (chance('upload-late', 0.05)) {
          atMs += int(draw, 1_000, 40_000);
          faults.push('upload-late');
        }
        const notify = notifyFault();
        if (notify) faults.push(`notification-${notify}`);
        events.push({ atMs, kind: 'upload', videoId, key: frameKey(videoId, f), body: corrupt ? 'not an image' : Buffer.from(simFrameBytes(videoId, f)).toString('latin1'), notify, faults });
        horizon = Math.max(horizon, atMs);
      }
    } else {
      const nSeg = int(draw, 2, Math.max(2, Math.round(5 * scale)));
      let first = 0;
      for (let s = 0; s < nSeg; s++) {
        const k = int(draw, 3, 15);
        const faults: string[] = [];
        let holds = k;
        const damaged: number[] = [];
        if (chance('segment-truncated', 0.08)) {
          holds = int(draw, 1, k - 1);
          faults.push('segment-truncated');
        } else if (chance('segment-damaged', 0.05)) {
          damaged.push(int(draw, 0, k - 1));
          faults.push('segment-damaged');
        }
        const undeclared = chance('segment-undeclared', 0.12);
        if (undeclared) faults.push('segment-undeclared');
        const container = undeclared ? pick(draw, ['mp4', 'ts'] as const) : pick(draw, ['mp4', 'ts', 'mkv'] as const);
        const key = segmentKey(videoId, first, container === 'ts' ? 'mpegts' : container === 'mkv' ? 'matroska' : 'mp4');
        const body: SimSegmentBody = { holds, ...(damaged.length ? { damaged } : {}), version: 0 };
        // Undeclared, the frame count is the container's (MP4) or the frames decoded: what the bytes hold.
        const frames = undeclared ? holds : k;
        // A damaged packet costs only its frame (decision 67): the others decode.
        const decoded = damaged.length ? Array.from({ length: holds }, (_, i) => i).filter((i) => !damaged.includes(i)) : undefined;
        segments.push({ firstFrame: first, frames, yields: holds, ...(decoded ? { decoded } : {}) });
        let atMs = startMs + (first + k) * 100;
        if (chance('upload-late', 0.05)) {
          atMs += int(draw, 1_000, 40_000);
          faults.push('upload-late');
        }
        const notify = notifyFault();
        if (notify) faults.push(`notification-${notify}`);
        const metadata = undeclared ? undefined : { [FRAMES_METADATA_KEY]: String(k) };
        events.push({ atMs, kind: 'upload', videoId, key, body: Buffer.from(simSegmentBytes(body)).toString('latin1'), ...(metadata ? { metadata } : {}), notify, faults });
        if (chance('segment-reuploaded', 0.06)) {
          const again = atMs + int(draw, 500, 60_000);
          events.push({ atMs: again, kind: 'upload', videoId, key, body: Buffer.from(simSegmentBytes({ ...body, version: 1 })).toString('latin1'), ...(metadata ? { metadata } : {}), notify: undefined, faults: ['segment-reuploaded'] });
          horizon = Math.max(horizon, again);
        }
        horizon = Math.max(horizon, atMs);
        first += frames;
      }
      lastFrame = first - 1;
    }
    const endAt = Math.max(...events.filter((e) => e.kind === 'upload' && e.videoId === videoId).map((e) => e.atMs)) + int(draw, 0, 2_000);
    const endMarked = !chance('end-never-put', 0.05);
    const plannedLastFrame = lastFrame;
    let endMovedFrom: number | undefined;
    if (endMarked) {
      if (lastFrame > 1 && chance('end-moved-earlier', 0.04)) {
        // The uploader says the true end, then moves it earlier (a clip cut short).
        const early = int(draw, 0, lastFrame - 1);
        const correctedAt = endAt + int(draw, 500, 30_000);
        events.push({ atMs: endAt, kind: 'end', videoId, lastFrame, notify: notifyFault(), faults: ['end-moved-earlier'] });
        events.push({ atMs: correctedAt, kind: 'end', videoId, lastFrame: early, notify: undefined, faults: ['end-moved-earlier'] });
        endMovedFrom = early;
        lastFrame = early;
        horizon = Math.max(horizon, correctedAt);
      } else if (lastFrame > 1 && chance('end-moved', 0.1)) {
        // The uploader first says an earlier end, then corrects it.
        const early = int(draw, 0, lastFrame - 1);
        endMovedFrom = early;
        const correctedAt = endAt + int(draw, 500, 30_000);
        events.push({ atMs: endAt, kind: 'end', videoId, lastFrame: early, notify: notifyFault(), faults: ['end-moved'] });
        events.push({ atMs: correctedAt, kind: 'end', videoId, lastFrame, notify: undefined, faults: ['end-moved'] });
        horizon = Math.max(horizon, correctedAt);
      } else {
        events.push({ atMs: endAt, kind: 'end', videoId, lastFrame, notify: notifyFault(), faults: [] });
        horizon = Math.max(horizon, endAt);
      }
    } else {
      horizon = Math.max(horizon, endAt);
    }
    videos.push({ videoId, kind, lastFrame, plannedLastFrame, endMarked, ...(endMovedFrom !== undefined ? { endMovedFrom } : {}), neverUploaded, segments });
  }

  const processWindow = horizon + 30_000;
  const nProcess = int(draw, 0, 3);
  for (let i = 0; i < nProcess; i++) {
    const atMs = int(draw, 0, processWindow);
    const r = draw();
    if (r < 0.4 && !off.has('kill')) events.push({ atMs, kind: 'kill', pick: draw(), faults: ['kill'] });
    else if (r < 0.7 && !off.has('pause-short')) events.push({ atMs, kind: 'pause', forMs: int(draw, 1_000, 10_000), pick: draw(), faults: ['pause-short'] });
    else if (!off.has('pause-long')) events.push({ atMs, kind: 'pause', forMs: int(draw, 20_000, 60_000), pick: draw(), faults: ['pause-long'] });
  }
  for (const v of videos) {
    if (chance('replay', 0.2)) events.push({ atMs: int(draw, 0, processWindow), kind: 'replay', videoId: v.videoId, fromFrame: int(draw, 0, v.lastFrame), faults: ['replay'] });
    if (chance('reconcile', 0.15)) events.push({ atMs: int(draw, 0, processWindow), kind: 'reconcile', videoId: v.videoId, faults: ['reconcile'] });
    if (chance('release-force', 0.08)) events.push({ atMs: int(draw, 0, processWindow), kind: 'release', videoId: v.videoId, faults: ['release-force'] });
  }
  if (chance('redrive', 0.1)) events.push({ atMs: int(draw, 0, processWindow), kind: 'redrive', faults: ['redrive'] });
  const faulty = chance('aws-errors', 0.3);
  const aws: AwsFaultRates = faulty ? { ddbThrottle: draw() * 0.04, ddbLostAnswer: draw() * 0.05, s3Error: draw() * 0.04, sqsError: draw() * 0.03 } : NO_AWS_FAULTS;
  // Drawn last, so every earlier choice of a seed's plan stays what it was.
  const hotSpare = chance('hot-spare', 0.35);
  const standbys = chance('standby', 0.2) ? int(draw, 1, 2) : 0;
  const world = hotSpare || standbys > 0 ? { world: { ...(hotSpare ? { hotSpare } : {}), ...(standbys > 0 ? { standbys } : {}) } } : {};
  // The reactive faults draw from a stream of their own, so that every plan drawn before them stays as it was.
  const doubtWindows = reactiveFaults(seed, videos, events, off);
  events.sort((a, b) => a.atMs - b.atMs);
  return { seed, slots, videos, events, aws, ...(doubtWindows.length ? { doubtWindows } : {}), lastEventMs: Math.max(0, ...events.map((e) => e.atMs)), ...world };
}

/**
 * Draws the reactive faults into `events` (in place): doubt windows on withheld uploads,
 * and races on replays. Returns the doubt windows.
 */
function reactiveFaults(seed: number, videos: SimVideo[], events: SimEvent[], off: ReadonlySet<string>): DoubtWindow[] {
  const draw = rng(seed * 7919 + 104_729);
  const windows: DoubtWindow[] = [];
  for (let i = 0; i < videos.length; i++) {
    const v = videos[i]!;
    const doubt = draw() < 0.25 && !off.has('doubt-window');
    const mode = draw() < 0.5 ? 'unsent' : 'lost';
    const forMs = int(draw, 300, 6_000);
    const fallbackMs = int(draw, 20_000, 90_000);
    const which = draw();
    if (!doubt) continue;
    // Not the first object (where a video starts is decided at first sight) nor the last (a gap needs a later frame).
    const firsts = v.kind === 'jpeg' ? Array.from({ length: v.lastFrame + 1 }, (_, f) => f).filter((f) => !v.neverUploaded.includes(f)) : v.segments.map((s) => s.firstFrame);
    const inner = firsts.slice(1, -1);
    if (inner.length === 0) continue;
    const frame = inner[Math.floor(which * inner.length)]!;
    const at = events.findIndex((e) => e.kind === 'upload' && e.videoId === v.videoId && parseFirst(e.key) === frame && !e.faults.includes('segment-reuploaded'));
    if (at < 0) continue;
    const e = events[at] as Extract<SimEvent, { kind: 'upload' }>;
    events[at] = { ...e, atMs: e.atMs + fallbackMs, faults: [...e.faults, 'doubt-window'], onDoubt: true };
    windows.push({ videoId: v.videoId, frame, mode, forMs });
  }
  // A racing replay meets a live camera: its video's last object is withheld until the
  // replay's first delete (at its planned time plus a minute or so if that never comes), and
  // the replay comes once the video has records, from a frame whose object is up by then.
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const race = draw() < 0.5 && !off.has('replay-race');
    const when = draw();
    const from = draw();
    const fallbackMs = int(draw, 20_000, 90_000);
    if (e.kind !== 'replay' || !race) continue;
    const uploads = events.filter((x): x is Extract<SimEvent, { kind: 'upload' }> => x.kind === 'upload' && x.videoId === e.videoId && !x.onDoubt && !x.faults.includes('segment-reuploaded'));
    const last = uploads.reduce<(typeof uploads)[number] | undefined>((m, x) => (m === undefined || parseFirst(x.key) > parseFirst(m.key) ? x : m), undefined);
    if (!last || uploads.length < 3) continue;
    const atMs = uploads[0]!.atMs + int(() => when, 5_000, 40_000);
    const up = [...new Set(uploads.filter((x) => x !== last && x.atMs < atMs - 2_000).map((x) => parseFirst(x.key)))];
    if (up.length === 0) continue;
    const withheld = events.indexOf(last);
    events[withheld] = { ...last, atMs: Math.max(last.atMs, atMs) + fallbackMs, faults: [...last.faults, 'replay-race-withheld'], onRace: true };
    events[i] = { ...e, atMs, fromFrame: up[Math.floor(from * up.length)]!, faults: [...e.faults, 'replay-race'], race: true };
  }
  return windows;
}

/** The first frame a source key covers (-1 for any other key). */
function parseFirst(key: string): number {
  const p = parseSourceKey(key);
  return p.kind === 'source' ? p.firstFrame : -1;
}

/** The keys of a plan's end marker. */
export const endKey = endMarkerKey;

/**
 * Smaller plans than `plan`, for shrinking: without each event in turn (its video kept),
 * and without all AWS errors. The oracle of each is the plan's own (a dropped upload
 * makes its frames never uploaded).
 */
export function shrinkCandidates(plan: SimPlan): SimPlan[] {
  const out: SimPlan[] = [];
  if (plan.aws.ddbThrottle + plan.aws.ddbLostAnswer + plan.aws.s3Error + (plan.aws.sqsError ?? 0) > 0) out.push({ ...plan, aws: NO_AWS_FAULTS });
  // Without each doubt window (its upload keeps its fallback time), and each replay without its race.
  for (const w of plan.doubtWindows ?? []) {
    const rest = plan.doubtWindows!.filter((x) => x !== w);
    out.push({ ...plan, ...(rest.length ? { doubtWindows: rest } : { doubtWindows: undefined }), events: plan.events.map((e) => (e.kind === 'upload' && e.onDoubt && e.videoId === w.videoId && parseFirst(e.key) === w.frame ? { ...e, onDoubt: undefined } : e)) });
  }
  plan.events.forEach((e, i) => {
    if (e.kind === 'replay' && e.race) out.push({ ...plan, events: plan.events.map((x, j) => (j === i ? { ...e, race: undefined } : x)) });
  });
  for (let i = 0; i < plan.events.length; i++) {
    const e = plan.events[i]!;
    // Uploads and end markers define the videos; faults and commands can go, and fault marks on uploads can be cleared.
    if (e.kind === 'upload' || e.kind === 'end') {
      if (e.notify) out.push({ ...plan, events: plan.events.map((x, j) => (j === i ? { ...e, notify: undefined } : x)) });
      continue;
    }
    out.push({ ...plan, events: plan.events.filter((_, j) => j !== i) });
  }
  // Whole videos, last first.
  for (const v of [...plan.videos].reverse()) {
    if (plan.videos.length <= 1) break;
    out.push({ ...plan, videos: plan.videos.filter((x) => x !== v), events: plan.events.filter((e) => !('videoId' in e) || e.videoId !== v.videoId) });
  }
  return out;
}
