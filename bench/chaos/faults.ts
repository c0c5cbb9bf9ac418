/**
 * The chaos run's fault catalogue. Each fault kind is one entry in one of four tables,
 * by when it strikes:
 *  - {@link FRAME_FAULTS}: drawn per frame (what is uploaded, or whether it is at all);
 *  - {@link NOTIFICATION_FAULTS}: drawn per uploaded frame, on its S3 notification;
 *  - {@link TIMED_FAULTS}: planned at a time during the uploads, applied to the running
 *    stack (processes, the janitor's schedule);
 *  - AWS errors: `AWS_FAULT_INJECTION` (lab/aws/fault-injection.ts) in every process,
 *    counted from its log by service, error and role.
 * A new kind is a new entry: the plan draws it, the uploader and the fault timeline apply
 * it, and the report counts it and says what its frames ended as, by its `kind` label.
 * Entries are drawn in table order, and a seed replays its plan only while the order of
 * the draws stays: add new kinds at the end of a table.
 */
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { rng } from '../../core/random.ts';
import type { LocalStack, NotificationFault } from '../../local/stack.ts';
import { sleep, type Bench } from '../harness/main.ts';
import { readFileSync } from 'node:fs';
import type { ChaosOptions } from './plan.ts';

/** What a plan is drawn against. */
export interface PlanContext {
  readonly o: ChaosOptions;
  readonly reorderWaitMs: number;
  readonly slotLeaseMs: number;
  /** How long a slot message can be handed back before redrive moves it to the slot DLQ (max receives x visibility). */
  readonly redriveWindowMs: number;
}

/** A frame's upload as planned. */
export interface PlannedUpload {
  readonly videoId: string;
  readonly frame: number;
  /** When the uploader may PUT it (ms after the upload clock starts). */
  readonly dueMs: number;
  /** The {@link FrameFault} drawn for it, by kind. */
  readonly frameFault?: string;
  /** Values the frame fault drew (e.g. `deleteAfterMs`). */
  readonly detail?: Readonly<Record<string, number>>;
  /** An encoded segment covering `[frame, frame + segment.frames)` (bench/chaos/segments.ts), not a JPEG. */
  readonly segment?: { readonly frames: number };
  /** Its due time was swapped with a neighbour's (a shuffled window). */
  readonly shuffled?: boolean;
  /** The {@link NotificationFaultKind} drawn for it, by kind, and what the notifier does. */
  readonly notificationFault?: string;
  readonly notification?: NotificationFault;
}

/** What applying a fault to the running stack needs. */
export interface FaultContext {
  readonly o: ChaosOptions;
  readonly stack: LocalStack;
  readonly bench: Bench;
  /** Draws at run time (which worker), seeded. */
  readonly rand: () => number;
  /** Workers that own an unfinished video, per the latest summaries. */
  readonly owners: () => ReadonlySet<string>;
  readonly stopped: () => boolean;
  /** Work a fault leaves running (a SIGCONT later, a delete): awaited before the collection. */
  readonly pending: Promise<unknown>[];
  /** The janitor's schedule: asks it to skip its next scheduled run. */
  readonly skipJanitorRun: () => void;
  /** Pids this run sent SIGKILL: dead, though the launcher may not have seen the exit yet. */
  readonly killed: Set<number>;
}

/** A fault drawn per frame: `share` of the frames (never frame 1), in table order. */
export interface FrameFault {
  readonly kind: string;
  readonly share: (o: ChaosOptions) => number;
  /** The frame is never uploaded (it must end as `gap`). */
  readonly neverUploaded?: boolean;
  /** Values drawn right after the frame's own draw. */
  readonly draw?: (rand: () => number, ctx: PlanContext) => Record<string, number>;
  /** Drawn after the notification's draws: how much later than planned the frame is put. */
  readonly holdBackMs?: (rand: () => number, ctx: PlanContext) => number;
  /** What is put instead of a valid JPEG. */
  readonly body?: (u: PlannedUpload, seed: number) => Uint8Array;
  /** Runs after the PUT (and is awaited before the collection). */
  readonly afterPut?: (stack: LocalStack, u: PlannedUpload, key: string) => Promise<unknown>;
}

/**
 * The frame fault of issue 32's sequence: the frame is put only once its worker holds the
 * commit of its gap in doubt (planned by `AWS_FAULT_INJECTION.doubtWindows`, so the window
 * is this frame's own), or after {@link DOUBT_WAIT_MS} if no window opened.
 */
export const DOUBT_WINDOW_KIND = 'upload late into an in-doubt window';
/** Reads of the video that fail after its gap commit failed: the window's length (about 0.5 + 1 + 2 + 4 s of the worker's backoff). */
export const DOUBT_WINDOW_READS = 5;
/** How long a frame waits for its window after its due time, at least, before it is put anyway (counted as a miss in the report). */
export const DOUBT_WAIT_MS = 90_000;
/** ... and at least this share of the run's timeout from its start: a video may lag far behind its uploads. */
export const DOUBT_WAIT_SHARE = 0.7;

export const FRAME_FAULTS: readonly FrameFault[] = [
  {
    kind: 'frame corrupt',
    share: (o) => o.corruptShare,
    // Random bytes behind a JPEG marker: sniffed as a JPEG, fails to decode.
    body: (u, seed) => {
      const r = rng(seed + u.frame * 131 + u.videoId.length);
      return Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, ...Array.from({ length: 600 }, () => Math.floor(r() * 256))]);
    },
  },
  { kind: 'frame zero-byte', share: (o) => o.zeroShare, body: () => new Uint8Array(0) },
  {
    kind: 'object unreadable (deleted)',
    share: (o) => o.unreadableShare,
    // Deleted shortly after its PUT: the notification points at an object that is gone.
    draw: (rand) => ({ deleteAfterMs: Math.round(rand() * 400) }),
    afterPut: (stack, u, key) => sleep(u.detail!.deleteAfterMs!).then(() => stack.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.wiring.bucket, Key: key }))),
  },
  {
    kind: 'upload late',
    share: (o) => o.lateShare,
    // Held back 3-6 x reorderWaitMs: first gapped, then committed `late`.
    holdBackMs: (rand, ctx) => (3 + rand() * 3) * ctx.reorderWaitMs,
  },
  { kind: 'frame never uploaded', share: (o) => o.lostShare, neverUploaded: true },
  // Last in the table, so that the documented seeds draw every other fault as before.
  { kind: DOUBT_WINDOW_KIND, share: (o) => o.doubtShare },
];

/** A fault on a frame's S3 notification, drawn per uploaded frame (never frame 1), in table order. */
export interface NotificationFaultKind {
  readonly kind: string;
  readonly share: (o: ChaosOptions) => number;
  readonly make: (rand: () => number, ctx: PlanContext) => NotificationFault;
}

export const NOTIFICATION_FAULTS: readonly NotificationFaultKind[] = [
  { kind: 'notification dropped', share: (o) => o.dropShare, make: () => ({ kind: 'drop' }) },
  { kind: 'notification duplicated', share: (o) => o.duplicateShare, make: (rand, c) => ({ kind: 'duplicate', afterMs: Math.round(rand() * 2 * c.reorderWaitMs) }) },
  { kind: 'notification delayed', share: (o) => o.delayShare, make: (rand, c) => ({ kind: 'delay', ms: Math.round((1 + rand() * 2) * c.reorderWaitMs) }) },
];

/** A fault planned at a time, applied to the running stack. */
export interface TimedFault {
  readonly kind: string;
  readonly count: (o: ChaosOptions) => number;
  /** Values drawn right after its time (a pause's length). */
  readonly draw?: (rand: () => number, ctx: PlanContext) => Record<string, number>;
  /** Applies it; returns what it hit, or why it was not applied (`skipped`). */
  readonly apply: (ctx: FaultContext, detail: Readonly<Record<string, number>>) => Promise<AppliedDetail>;
}

/** What a timed fault hit. */
export interface AppliedDetail {
  readonly worker?: string;
  readonly slot?: number;
  readonly pid?: number;
  readonly pauseMs?: number;
  /** A DynamoDB outage's length. */
  readonly outageMs?: number;
  readonly skipped?: string;
}

/**
 * A live, running worker, preferring one that owns an unfinished video. Every worker may
 * be dead or frozen by earlier faults: waits up to 10 s for a successor.
 */
async function pickWorker(ctx: FaultContext): Promise<ReturnType<LocalStack['launcher']['workers']>[number] | undefined> {
  for (let tries = 0; tries < 20 && !ctx.stopped(); tries++) {
    // A worker killed a moment ago is still `alive` until its exit is seen: never hit it twice.
    const running = ctx.stack.launcher.workers().filter((w) => w.alive && !w.paused && !ctx.killed.has(w.pid));
    const owners = ctx.owners();
    const preferred = running.filter((w) => owners.has(w.workerId));
    const pool = preferred.length ? preferred : running;
    if (pool.length > 0) return pool[Math.floor(ctx.rand() * pool.length)]!;
    await sleep(500);
  }
  return undefined;
}

/**
 * The process a fault hits in a worker task: with a hot spare (decision 75) the task's
 * primary worker process (the supervisor's child started as `primary`, or the spare it
 * promoted), so that the spare's takeover is what the run exercises; else the task.
 */
function victimPid(ctx: FaultContext, taskPid: number): number {
  if (!ctx.o.hotSpare) return taskPid;
  try {
    const children = readFileSync(`/proc/${taskPid}/task/${taskPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    // The one holding the slot: the older child (the spare is forked after it, and again after each promotion).
    const alive = children.filter((c) => !ctx.killed.has(c));
    return alive.length > 0 ? Math.min(...alive) : taskPid;
  } catch {
    return taskPid;
  }
}

/** Sends `sig` to the task (through the launcher) or to a worker process inside it. */
function signal(ctx: FaultContext, pid: number, taskPid: number, sig: NodeJS.Signals): void {
  if (pid === taskPid) ctx.stack.launcher.kill({ pid }, sig);
  else {
    try {
      process.kill(pid, sig);
    } catch {
      // gone already
    }
  }
}

/** SIGSTOP a worker, SIGCONT after `pauseMs`. */
async function pause(ctx: FaultContext, pauseMs: number): Promise<AppliedDetail> {
  const w = await pickWorker(ctx);
  if (!w) return { skipped: 'no running worker' };
  const { bench, stack } = ctx;
  const pid = victimPid(ctx, w.pid);
  signal(ctx, pid, w.pid, 'SIGSTOP');
  bench.say(`${bench.clock()}  >>> SIGSTOP ${w.workerId}${pid !== w.pid ? `'s worker process` : ''} (slot ${w.slot}, pid ${pid}) for ${(pauseMs / 1000).toFixed(1)} s (lease ${stack.tunables.slotLeaseTtlSeconds} s)`);
  ctx.pending.push(
    sleep(pauseMs).then(() => {
      signal(ctx, pid, w.pid, 'SIGCONT');
      bench.say(`${bench.clock()}  >>> SIGCONT ${w.workerId} (pid ${pid})`);
    }),
  );
  return { worker: w.workerId, slot: w.slot, pid, pauseMs };
}

export const TIMED_FAULTS: readonly TimedFault[] = [
  {
    kind: 'kill -9',
    count: (o) => o.kills,
    apply: async (ctx) => {
      const w = await pickWorker(ctx);
      if (!w) return { skipped: 'no running worker' };
      const pid = victimPid(ctx, w.pid);
      ctx.killed.add(pid);
      signal(ctx, pid, w.pid, 'SIGKILL');
      ctx.bench.say(`${ctx.bench.clock()}  >>> kill -9 ${w.workerId}${pid !== w.pid ? `'s worker process` : ''} (slot ${w.slot}, pid ${pid})`);
      return { worker: w.workerId, slot: w.slot, pid };
    },
  },
  {
    kind: 'SIGSTOP/SIGCONT < lease',
    count: (o) => o.shortPauses,
    draw: (rand, c) => ({ pauseMs: Math.round(500 + rand() * 0.4 * c.slotLeaseMs) }),
    apply: (ctx, d) => pause(ctx, d.pauseMs!),
  },
  {
    // Past the lease: the slot is taken over, and the worker comes back a zombie.
    kind: 'SIGSTOP/SIGCONT > lease',
    count: (o) => o.longPauses,
    draw: (rand, c) => ({ pauseMs: Math.round(c.slotLeaseMs + 2_000 + rand() * 5_000) }),
    apply: (ctx, d) => pause(ctx, d.pauseMs!),
  },
  {
    kind: 'janitor run skipped',
    count: (o) => o.janitorSkips,
    apply: async (ctx) => {
      ctx.skipJanitorRun();
      ctx.bench.say(`${ctx.bench.clock()}  >>> skip the janitor's next scheduled run`);
      return {};
    },
  },
  {
    // DynamoDB Local frozen (its whole process group): every process's calls hang and time
    // out, for 5-15 s longer than the slot queues' redrive window, so a worker that keeps
    // handing messages back would see them dead-lettered.
    kind: 'DynamoDB outage > redrive window',
    count: (o) => o.outages,
    draw: (rand, c) => ({ outageMs: Math.round(c.redriveWindowMs + 5_000 + rand() * 10_000) }),
    apply: async (ctx, d) => {
      const { bench, stack } = ctx;
      const outageMs = d.outageMs!;
      process.kill(-stack.dynamodbPid, 'SIGSTOP');
      bench.say(`${bench.clock()}  >>> DynamoDB outage: SIGSTOP DynamoDB Local (pid ${stack.dynamodbPid}) for ${(outageMs / 1000).toFixed(1)} s`);
      ctx.pending.push(
        sleep(outageMs).then(() => {
          process.kill(-stack.dynamodbPid, 'SIGCONT');
          bench.say(`${bench.clock()}  >>> DynamoDB back: SIGCONT DynamoDB Local`);
        }),
      );
      return { pid: stack.dynamodbPid, outageMs };
    },
  },
];
