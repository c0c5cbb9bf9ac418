/**
 * A fake clock that runs as fast as the program can go: vitest's fake timers and Date,
 * advanced by a driver on the real event loop by `stepMs` of fake time per real turn.
 * Whatever waits on a timer (the worker's sleeps and heartbeats, the SQS model's long polls,
 * the test's own `waitFor`) is woken as soon as nothing else is running, so a minute of
 * idle release passes in a fraction of a second, while the order of events stays the one
 * real time would give: fake time never jumps past a timer, and it keeps advancing, a step
 * per turn, while a real asynchronous operation (sharp decoding a JPEG on libuv's pool) is
 * under way, as real time would.
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
  /** Fake milliseconds advanced so far. */
  advancedMs = 0;

  private constructor(stepMs: number) {
    // Captured before faking: the driver must yield on a real turn of the event loop.
    const realTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'], now: Date.now() });
    this.driver = (async () => {
      while (this.running) {
        await vi.advanceTimersByTimeAsync(stepMs);
        this.advancedMs += stepMs;
        await realTurn();
      }
    })();
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
