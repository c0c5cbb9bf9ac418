/**
 * The simulation's one clock and one source of randomness (lab/sim/): while installed,
 * every timer, `Date`, `Math.random` and `crypto.randomUUID`/`randomBytes` of this
 * process belong to one seeded, virtual world, so that a seed replays event for event.
 *
 * Time moves only when nothing else can run: {@link SimClock.step} lets every promise
 * chain the last timer started run to its end (one real turn of the event loop drains
 * the microtask queue; nothing in the simulated world does real I/O or uses threads),
 * then fires the next timer, jumping the clock to it. Timers due at the same millisecond
 * fire in the order they were set. So the order of everything is a function of the code
 * and the seed alone, and a minute of leases, heartbeats and reorder waits costs only
 * the JavaScript it runs.
 *
 * In the manner of FoundationDB's simulator: the real code runs unchanged on the twins
 * (core/leases/memory, core/ingest/memory), and only time, randomness and the world
 * around it are simulated.
 */
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { withGlobal, type InstalledClock } from '@sinonjs/fake-timers';
import { rng } from '../../core/random.ts';

/** The real `setImmediate`, captured before any clock is installed. */
const realImmediate = globalThis.setImmediate;
const DEBUG = process.env.SIM_DEBUG === '1';
const realTurn = () => new Promise<void>((resolve) => realImmediate(resolve));

/** Where the simulated calendar starts (a fixed day: item TTLs and dates in keys stay the same from run to run). */
export const SIM_EPOCH_MS = Date.UTC(2026, 10, 2, 8, 0, 0);

export class SimClock {
  private readonly clock: InstalledClock;
  private readonly restore: () => void;
  /** Timers fired so far. */
  steps = 0;

  private constructor(seed: number, startMs: number) {
    this.clock = withGlobal(globalThis).install({
      now: startMs,
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'Date'],
      loopLimit: 1_000_000,
    });
    // One stream for the process's randomness (jitter, ids), drawn in program order.
    const draw = rng(seed ^ 0x5eed);
    const saved = { random: Math.random, randomUUID: crypto.randomUUID, randomBytes: crypto.randomBytes };
    const bytes = (n: number): Buffer => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = Math.floor(draw() * 256);
      return b;
    };
    Math.random = draw;
    crypto.randomUUID = (() => {
      const b = bytes(16);
      b[6] = (b[6]! & 0x0f) | 0x40;
      b[8] = (b[8]! & 0x3f) | 0x80;
      const h = b.toString('hex');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }) as typeof crypto.randomUUID;
    crypto.randomBytes = ((n: number, cb?: (e: Error | null, b: Buffer) => void) => {
      const b = bytes(n);
      if (cb) {
        cb(null, b);
        return undefined;
      }
      return b;
    }) as typeof crypto.randomBytes;
    // Named imports of node:crypto (`import { randomUUID } from 'node:crypto'`) see the change.
    syncBuiltinESMExports();
    this.restore = () => {
      Math.random = saved.random;
      crypto.randomUUID = saved.randomUUID;
      crypto.randomBytes = saved.randomBytes;
      syncBuiltinESMExports();
    };
  }

  /** Installs the simulated clock and randomness for `seed`; {@link SimClock.uninstall} gives the real ones back. */
  static install(seed: number, startMs: number = SIM_EPOCH_MS): SimClock {
    return new SimClock(seed, startMs);
  }

  get nowMs(): number {
    return this.clock.now;
  }

  /** Lets everything that can run without time run (one real turn drains every promise chain). */
  async settle(): Promise<void> {
    await realTurn();
  }

  /**
   * Settles, then fires the next timer (moving the clock to it). False when no timer is
   * left: the world is quiescent.
   */
  async step(): Promise<boolean> {
    await realTurn();
    if (this.clock.countTimers() === 0) return false;
    this.clock.next();
    this.steps++;
    return true;
  }

  /** Steps until `done()` holds (checked after each settle) or the clock reaches `untilMs`; returns why it stopped. */
  async runUntil(done: () => boolean, untilMs: number): Promise<'done' | 'deadline' | 'quiescent'> {
    for (;;) {
      await realTurn();
      if (done()) return 'done';
      if (this.clock.now >= untilMs) return 'deadline';
      if (this.clock.countTimers() === 0) return 'quiescent';
      this.clock.next();
      this.steps++;
      if (DEBUG && this.steps % 200 === 0) process.stderr.write(`sim: ${this.steps} steps, t=${this.clock.now - SIM_EPOCH_MS} ms, ${this.clock.countTimers()} timers\n`);
    }
  }

  /** Awaits `work` while time goes on (what it waits for may be a timer of the simulated world). */
  async drive<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    const done = work.finally(() => {
      settled = true;
    });
    for (;;) {
      await realTurn();
      if (settled) return done;
      if (this.clock.countTimers() === 0) return done;
      this.clock.next();
      this.steps++;
    }
  }

  uninstall(): void {
    this.clock.uninstall();
    this.restore();
  }
}
