/**
 * The operator CLI's argument handling and dispatch (bin.ts only calls {@link main}).
 * Arguments are parsed with `node:util` parseArgs: strict, typed, no dependency. The command table
 * lives with the commands, one module per group (cli/commands/ingest, fleet, records, operator).
 */
import { parseArgs } from 'node:util';
import { CliError, processIo, type Io } from './io.ts';
import { resolveTarget, type Target } from './target.ts';
import type { Command, Options, Values } from './commands/flags.ts';
import { INGEST_COMMANDS } from './commands/ingest.ts';
import { FLEET_COMMANDS } from './commands/fleet.ts';
import { RECORD_COMMANDS } from './commands/records.ts';
import { OPERATOR_COMMANDS } from './commands/operator.ts';

const GLOBAL_OPTIONS = {
  'state-dir': { type: 'string' },
  stack: { type: 'string' },
  region: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

const GLOBAL_HELP = `Global options:
  --state-dir DIR   local stack state directory holding stack.json (default .local)
  --stack NAME      target a deployed CloudFormation stack instead (AWS credential chain)
  --region REGION   region of --stack (default: AWS_REGION / profile)
  -h, --help        show help`;

// The table's order is the help's order: render is listed last, after the operator commands, as it always was.
const { render, ...records } = RECORD_COMMANDS;
const COMMANDS: Record<string, Command> = { ...INGEST_COMMANDS, ...FLEET_COMMANDS, ...records, ...OPERATOR_COMMANDS, render };

export function usage(): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length));
  return [
    'affinity: operate a frame-affinity pipeline (local stack by default)',
    '',
    'Usage: affinity <command> [options]',
    '',
    'Commands:',
    ...Object.values(COMMANDS).map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    '',
    GLOBAL_HELP,
    '',
    "Run 'affinity <command> --help' for a command's options. `npm run demo` runs the whole pipeline end to end.",
  ].join('\n');
}

function commandHelp(c: Command): string {
  return [`Usage: affinity ${c.usage}`, '', c.summary, '', c.details, '', GLOBAL_HELP].join('\n');
}

/** Index of the command word: the first token that is neither a flag nor a global flag's value. */
function commandIndex(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return i + 1 < argv.length ? i + 1 : -1;
    if (a.startsWith('-')) {
      const name = a.replace(/^--?/, '');
      if (!a.includes('=') && (GLOBAL_OPTIONS as Options)[name]?.type === 'string') i++;
      continue;
    }
    return i;
  }
  return -1;
}

/**
 * Runs the CLI with `argv` (without node and script); returns the exit code. Errors
 * are printed as one clear line on `io.err`; unexpected ones with their stack.
 */
export async function main(argv: readonly string[], io: Io = processIo(), targetFor: typeof resolveTarget = resolveTarget): Promise<number> {
  const at = commandIndex(argv);
  const name = at >= 0 ? argv[at]! : undefined;
  const rest = at >= 0 ? [...argv.slice(0, at), ...argv.slice(at + 1)] : [...argv];
  if (name === undefined || name === 'help') {
    const helpAsked = rest.includes('--help') || rest.includes('-h') || name === 'help';
    (helpAsked ? io.out : io.err)(usage());
    return helpAsked ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.err(`error: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  let target: Target | undefined;
  try {
    let parsed: { values: Values; positionals: string[] };
    try {
      parsed = parseArgs({ args: rest, options: { ...GLOBAL_OPTIONS, ...command.options }, allowPositionals: true, strict: true }) as typeof parsed;
    } catch (e) {
      throw new CliError(`${(e as Error).message}\n\n${commandHelp(command)}`, 2);
    }
    const { values, positionals } = parsed;
    if (values.help) {
      io.out(commandHelp(command));
      return 0;
    }
    if (positionals.length !== command.positionals.length) {
      throw new CliError(
        positionals.length < command.positionals.length
          ? `missing <${command.positionals[positionals.length]}>\nUsage: affinity ${command.usage}`
          : `unexpected argument "${positionals[command.positionals.length]}"\nUsage: affinity ${command.usage}`,
        2,
      );
    }
    target = await targetFor({
      ...(typeof values['state-dir'] === 'string' ? { stateDir: values['state-dir'] } : {}),
      ...(typeof values.stack === 'string' ? { stack: values.stack } : {}),
      ...(typeof values.region === 'string' ? { region: values.region } : {}),
    });
    await command.run(target, positionals, values, io);
    return 0;
  } catch (e) {
    if (e instanceof CliError) {
      io.err(`error: ${e.message}`);
      return e.exitCode;
    }
    const err = e as Error & { code?: string; $metadata?: unknown };
    if (err?.name === 'TimeoutError' || err?.code === 'ECONNREFUSED' || /ECONNREFUSED|connect/i.test(String(err?.message))) {
      io.err(`error: cannot reach ${target?.description ?? 'the target'}: ${err.message || err.code}. Is the stack running?`);
      return 1;
    }
    io.err(`error: ${err?.name ?? 'Error'}: ${err?.message ?? String(e)}`);
    if (process.env.AFFINITY_DEBUG) io.err(String(err?.stack));
    return 1;
  } finally {
    target?.close();
  }
}
