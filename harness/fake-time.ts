/**
 * A fake clock that runs as fast as the program can go: vitest's fake timers and Date,
 * advanced by a driver on the real event loop by `stepMs` of fake time per real turn.
 * Whatever waits on a timer (the worker's sleeps and heartbeats, the SQS model's long polls,
 * the test's own `waitFor`) is woken as soon as nothing else is running, so a minute of
 * idle release passes in a fraction of a second; fake time never jumps past a timer, so
 * events keep the order real time would give them.
 *
 * Real asynchronous work (sharp decoding a JPEG on libuv's pool) takes many turns of the
 * event loop; at a step per turn, fake time would run hundreds of times faster than real
 * time meanwhile, and a 20 ms decode would look like seconds to the worker (visibility
 * extended, read-ahead expired, gaps declared). Wrap such work in {@link FakeTime.track}:
 * while any is in flight, fake time advances at the real rate.
 *
 * Only for code that does no real network I/O (the memory backend of the worker harness):
 * a socket timeout would fire in fake milliseconds. `setImmediate`, `process.nextTick`,
 * microtasks and `performance.now()` stay real; the driver itself yields on `setImmediate`.
 *
 *   const time = FakeTime.start();   // in beforeAll, or through WorkerHarness { clock: 'fake' }
 *   ...
 *   time.stop();                     // real timers again
 */
import { vi } from 'vitest';

export class FakeTime {
  private running = true;
  private readonly driver: Promise<void>;
  /** Real work in flight (see {@link FakeTime.track}). */
  private busy = 0;
  /** Fake milliseconds advanced so far. */
  advancedMs = 0;

  private constructor(stepMs: number) {
    // setImmediate and performance.now stay real: the driver yields on a real turn of the
    // event loop, and measures real time while real work is in flight.
    const realTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'], now: Date.now() });
    this.driver = (async () => {
      let lastRealMs = performance.now();
      let owedMs = 0;
      while (this.running) {
        const realMs = performance.now();
        owedMs += this.busy > 0 ? realMs - lastRealMs : stepMs;
        lastRealMs = realMs;
        const advanceMs = Math.floor(owedMs);
        if (advanceMs > 0) {
          owedMs -= advanceMs;
          await vi.advanceTimersByTimeAsync(advanceMs);
          this.advancedMs += advanceMs;
        }
        await realTurn();
      }
    })();
  }

  /** Marks `work` as real work in flight until it settles: fake time runs at the real rate meanwhile. */
  track<T>(work: Promise<T>): Promise<T> {
    this.busy++;
    return work.finally(() => {
      this.busy--;
    });
  }

  /**
   * Fakes timers and Date from now on and starts advancing them.
   * @param stepMs fake milliseconds per real turn of the event loop @default 5
   */
  static start(stepMs = 5): FakeTime {
    return new FakeTime(stepMs);
  }

  /** Stops the driver and restores real timers (pending fake timers are dropped). */
  async stop(): Promise<void> {
    this.running = false;
    await this.driver;
    vi.useRealTimers();
  }
}
