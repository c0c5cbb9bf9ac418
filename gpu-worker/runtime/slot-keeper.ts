/**
 * Holds the worker's slot lease: claims a slot, renews it by heartbeat, and declares it
 * lost the moment a heartbeat says so or can no longer be confirmed in time. Every
 * durable write the worker makes is fenced by the {@link SlotFence} this returns, so
 * losing the lease here only stops work early; the store already rejects stale writes.
 */
import type { Tunables } from '../../core/config.ts';
import type { LogSink, MetricSink } from '../../core/ports.ts';
import { UnconfirmedError, type SlotClaim, type SlotFence, type SlotLeases } from '../../core/leases/port.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import { sleep } from '../../core/async.ts';

// Re-exported for worker.ts, which imports it from here.

export interface SlotKeeperDeps {
  readonly workerId: string;
  /** The slot to claim; undefined = the first free one. */
  readonly slot?: number;
  readonly tunables: Tunables;
  readonly leases: SlotLeases;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  readonly now: () => number;
  /** Called on every confirmed heartbeat (and the claim) with the lease's confirmed expiry. */
  readonly onHeartbeat?: (expiresAtMs: number) => void;
  /** Called once, the moment the lease is lost or cannot be confirmed. */
  readonly onLost: (reason: string) => void;
}

export class SlotKeeper {
  private readonly d: SlotKeeperDeps;
  private fenceValue: SlotFence | undefined;
  private lastConfirmedExpiryMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight = false;
  private lostReason: string | undefined;
  private takenOverValue = false;

  constructor(deps: SlotKeeperDeps) {
    this.d = deps;
  }

  get fence(): SlotFence | undefined {
    return this.fenceValue;
  }

  /** Whether the slot was claimed from an owner that never released it (crash-loop breaker, decision 29). */
  get takenOver(): boolean {
    return this.takenOverValue;
  }

  /** The expiry of the lease as last confirmed (claim or heartbeat). */
  get confirmedExpiryMs(): number {
    return this.lastConfirmedExpiryMs;
  }

  /** Why the lease was lost, or undefined while it is held. */
  get lost(): string | undefined {
    return this.lostReason;
  }

  /**
   * Claims a slot, waiting out a predecessor's lease if needed (a replacement may start
   * while the dead owner's lease still runs). Undefined when none could be had in time
   * or `shouldStop` said so. `slot` overrides the one the keeper was built with (a standby
   * learns its slot only when it is needed: decision 75).
   */
  async claim(shouldStop: () => boolean, slot?: number): Promise<SlotFence | undefined> {
    const t = this.d.tunables;
    const ttlMs = t.slotLeaseTtlSeconds * 1000;
    // A predecessor's lease may need its TTL plus the clock-skew tolerance to lapse.
    const giveUpAtMs = this.d.now() + 2 * ttlMs + t.clockSkewToleranceMs + 5_000;
    const wanted = slot ?? this.d.slot;
    const candidates = wanted !== undefined ? [wanted] : Array.from({ length: t.slotCount }, (_, i) => i);
    while (!shouldStop() && this.d.now() < giveUpAtMs) {
      for (const candidate of candidates) {
        let claimed: SlotClaim | undefined;
        try {
          claimed = await this.d.leases.claimSlot(candidate, this.d.workerId, this.d.now(), ttlMs, t.clockSkewToleranceMs);
        } catch (e) {
          // A throttle or timeout while claiming: nothing is held yet, try again shortly.
          this.d.log.warn('slot claim failed; retrying', { slot: candidate, error: String(e) });
          continue;
        }
        if (claimed) {
          this.lastConfirmedExpiryMs = claimed.expiresAtMs;
          this.takenOverValue = claimed.takenOver;
          this.d.onHeartbeat?.(claimed.expiresAtMs);
          this.fenceValue = { slot: candidate, workerId: this.d.workerId, epoch: claimed.epoch };
          return this.fenceValue;
        }
      }
      await sleep(250);
    }
    this.d.log.warn('no slot could be claimed; exiting', { candidates });
    return undefined;
  }

  startHeartbeat(): void {
    this.timer = setInterval(() => void this.heartbeat(), this.d.tunables.heartbeatIntervalSeconds * 1000);
  }

  stopHeartbeat(): void {
    clearInterval(this.timer);
  }

  /** Gives the slot up at once so a successor need not wait for the lease to run out. */
  async release(): Promise<void> {
    const fence = this.fenceValue;
    if (!fence || this.lostReason) return;
    try {
      await this.d.leases.releaseSlot(fence, this.d.now());
    } catch (e) {
      this.d.log.warn('slot release failed; the lease runs out by itself', { error: String(e) });
    }
  }

  /** Declares the lease lost (also used when a commit is fenced by the store). */
  lose(reason: string): void {
    if (this.lostReason) return;
    this.lostReason = reason;
    this.stopHeartbeat();
    this.d.log.error('slot lease lost; stopping at once', { reason, slot: this.fenceValue?.slot });
    this.d.metrics.count(METRIC_NAMES.worker.slotLeasesLost);
    this.d.onLost(reason);
  }

  /** One heartbeat; exported for tests through the worker's timer. */
  async heartbeat(): Promise<void> {
    const fence = this.fenceValue;
    if (!fence || this.inFlight || this.lostReason) return;
    this.inFlight = true;
    const ttlMs = this.d.tunables.slotLeaseTtlSeconds * 1000;
    const now = this.d.now();
    try {
      const r = await this.d.leases.renewSlot(fence, now, ttlMs);
      if (r === 'lost') {
        this.lose('slot taken over by another worker');
        return;
      }
      this.lastConfirmedExpiryMs = now + ttlMs;
      this.d.onHeartbeat?.(this.lastConfirmedExpiryMs);
    } catch (e) {
      const detail = e instanceof UnconfirmedError ? e.message : String(e);
      this.d.log.warn('heartbeat not confirmed', { detail });
      this.d.metrics.count(METRIC_NAMES.worker.heartbeatsUnconfirmed);
      // Keep trying while the last confirmed lease still has a heartbeat's margin left.
      if (this.d.now() >= this.lastConfirmedExpiryMs - this.d.tunables.heartbeatIntervalSeconds * 1000) {
        this.lose(`heartbeat could not be confirmed: ${detail}`);
      }
    } finally {
      this.inFlight = false;
    }
  }
}
