/**
 * Fault injection for the SQS FIFO model (core/ingest/memory/sqs-fifo-model.ts): whole calls
 * that throw (throttling, network errors) and chosen entries of a batch that fail.
 */
import { sqsError } from './limits.ts';
import type { EntryContext, EntryFaultOptions, EntryProblem } from './types.ts';

interface CallFault {
  readonly command: string;
  readonly error: () => Error;
  remaining: number;
  readonly when?: (input: Readonly<Record<string, unknown>>) => boolean;
}

interface EntryFault {
  readonly command: string;
  readonly predicate: (ctx: EntryContext) => boolean;
  remaining: number;
  readonly code: string;
  readonly message: string;
  readonly senderFault: boolean;
}

/** An SDK command's name without the `Command` suffix (`SendMessageCommand` → `SendMessage`). */
export function commandName(command: unknown): string {
  const name = (command as { constructor?: { name?: string } })?.constructor?.name ?? '';
  return name.endsWith('Command') ? name.slice(0, -'Command'.length) : name;
}

/** A command name as a test may write it, without the `Command` suffix. */
export function normaliseCommand(name: string): string {
  return name.endsWith('Command') ? name.slice(0, -'Command'.length) : name;
}

/** The faults a test injected, each spent as it fires. */
export class FaultInjector {
  private callFaults: CallFault[] = [];
  private entryFaults: EntryFault[] = [];

  /** See `SqsFifoModel.throwOn`. */
  throwOn(command: string, error: Error | (() => Error), times: number, when?: (input: Readonly<Record<string, unknown>>) => boolean): void {
    this.callFaults.push({ command: normaliseCommand(command), error: typeof error === 'function' ? error : () => error, remaining: times, ...(when ? { when } : {}) });
  }

  /** See `SqsFifoModel.failEntries`. */
  failEntries(command: string, predicate: (ctx: EntryContext) => boolean, options: EntryFaultOptions): void {
    const code = options.code ?? 'InternalError';
    this.entryFaults.push({
      command: normaliseCommand(command).replace(/Batch$/, ''),
      predicate,
      remaining: options.times ?? Infinity,
      code,
      message: options.message ?? `injected failure (${code})`,
      senderFault: options.senderFault ?? false,
    });
  }

  /** Removes every injected fault. */
  clear(): void {
    this.callFaults = [];
    this.entryFaults = [];
  }

  /** The error a call of `name` with `input` must throw before doing anything (spending the fault), if any. */
  takeCallFault(name: string, input: Readonly<Record<string, unknown>>): Error | undefined {
    const fault = this.callFaults.find((f) => f.command === name && f.remaining > 0 && (!f.when || f.when(input)));
    if (!fault) return undefined;
    fault.remaining--;
    return fault.error();
  }

  /** The failure an entry of kind `kind` (e.g. `'DeleteMessage'`) must report (spending the fault), if any. */
  matchEntryFault(kind: string, ctx: EntryContext): EntryProblem | undefined {
    const f = this.entryFaults.find((x) => x.command === kind && x.remaining > 0 && x.predicate(ctx));
    if (!f) return undefined;
    f.remaining--;
    return { code: f.code, message: f.message, senderFault: f.senderFault };
  }

  /** {@link matchEntryFault} for a single-message call: throws the failure instead. */
  takeEntryFault(kind: string, ctx: EntryContext): void {
    const f = this.matchEntryFault(kind, ctx);
    if (f) throw sqsError(f.code, f.message, f.senderFault ? 'client' : 'server');
  }
}
