/**
 * What every group of the CLI's command table shares: a command's shape and the flag readers.
 * cli/main.ts parses the arguments (node:util parseArgs) and hands each command's run its values.
 */
import type { ParseArgsConfig } from 'node:util';
import { CliError, type Io } from '../io.ts';
import type { Target } from '../target.ts';

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | undefined>;

/** One entry of the command table: its help, its flags, and a call into a core operation. */
export interface Command {
  readonly usage: string;
  readonly summary: string;
  readonly details: string;
  readonly positionals: readonly string[];
  readonly options: Options;
  run(target: Target, positionals: string[], values: Values, io: Io): Promise<unknown>;
}

/** An integer flag, or undefined when absent; anything else is a usage error (exit 2). */
export function intFlag(values: Values, name: string): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (typeof raw !== 'string' || !/^-?\d+$/.test(raw) || !Number.isSafeInteger(n)) throw new CliError(`--${name} must be an integer (got "${String(raw)}")`, 2);
  return n;
}

/** A string flag, or undefined when absent. */
export function stringFlag(values: Values, name: string): string | undefined {
  const raw = values[name];
  return typeof raw === 'string' ? raw : undefined;
}
