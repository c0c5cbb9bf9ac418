/**
 * What the units of one slot's run (the slot inbox, the video registry, the message intake,
 * the round committer, the isolated rounds) ask of the worker that holds the slot: one object
 * instead of a closure per question. The worker builds it once it claimed the slot;
 * `fence`, `lost` and `takenOver` are read when asked, so a unit always sees the
 * slot as it is now.
 */
import type { SlotFence } from '../../core/leases/port.ts';

export interface SlotContext {
  /** The slot's fence: every write a unit makes is conditional on it. */
  readonly fence: SlotFence;
  /** Whether the slot lease is lost, or could not be confirmed: units stop taking work. */
  readonly lost: boolean;
  /** Whether the slot was taken from an owner that never released it (its videos run isolated, decision 41). */
  readonly takenOver: boolean;
  /** Loses the slot now, with the reason: a fenced write proved another owner. */
  lose(reason: string): void;
  /** The worker's clock, epoch ms. */
  now(): number;
}
