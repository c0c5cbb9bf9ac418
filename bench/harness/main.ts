/**
 * The bench main every scenario shares: the run clock and its `say`, quiet Powertools
 * logs, a fresh state folder per run, SIGINT / SIGTERM as a flag the watch loop reads
 * (so an interrupted run still stops its stack and writes what it measured), and the
 * JSON result with paths relative to the repository (a committed result must not carry
 * the absolute paths of the machine it ran on).
 *
 * A scenario exports `run<Name>(options, bench)` and ends with
 * `if (import.meta.main) await benchMain(...)`, so it runs from the command line and from
 * a test or another script alike.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatDurationMs } from '../../cli/format.ts';

/** The repository root (bench/harness/../..). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Where committed results live. */
export const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');

export { sleep } from '../../core/async.ts';

/** One run's clock, output and interrupt flag. */
export interface Bench {
  /** When the run started (ms since the epoch). */
  readonly t0: number;
  /** Prints one line. */
  readonly say: (line?: string) => void;
  /** Seconds since {@link t0}, right-aligned, for the start of a progress line. */
  readonly clock: () => string;
  /** True once SIGINT or SIGTERM came (only while {@link benchMain} runs the scenario). */
  readonly interrupted: () => boolean;
}

/** A bench clock printing through `say` (console by default), with no signal handling. */
export function createBench(say: (line?: string) => void = (l = '') => console.log(l), interrupted: () => boolean = () => false): Bench {
  const t0 = Date.now();
  return { t0, say, clock: () => `${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s`, interrupted };
}

/** Keeps the in-process router's and janitor's Powertools logs and metrics off the bench's output. */
export function quietLogs(): void {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
}

/** `.local/bench-<name>`, emptied: every run starts from fresh emulator state. Absolute. */
export function freshStateDir(name: string): string {
  const dir = resolve(REPO_ROOT, '.local', `bench-${name}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The machine a result was measured on. */
export function machine(): { cpus: number; model: string } {
  return { cpus: cpus().length, model: cpus()[0]?.model ?? '?' };
}

/** The command line that reproduces a run, for its JSON. */
export function commandLine(script: string, args: readonly string[] = process.argv.slice(2)): string {
  return `npx node bench/${script} ${args.join(' ')}`.trim();
}

/** A path as committed: relative to the repository when it lies inside it, else as given. */
export function repoPath(p: string): string {
  if (!isAbsolute(p)) return p;
  const rel = relative(REPO_ROOT, p);
  return rel.startsWith('..') || isAbsolute(rel) ? p : rel;
}

/**
 * Writes a result as JSON: non-finite numbers become null, and every string that is an
 * absolute path inside the repository (a model, an output file, a state folder) becomes
 * relative to it. Says where it wrote.
 */
export function writeResult(path: string, result: unknown, say: (line?: string) => void = (l = '') => console.log(l)): void {
  const root = REPO_ROOT + sep;
  const json = JSON.stringify(
    result,
    (_k, v: unknown) => {
      if (typeof v === 'number' && !Number.isFinite(v)) return null;
      if (typeof v === 'string' && v.startsWith(root)) return repoPath(v);
      return v;
    },
    2,
  );
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${json}\n`);
  say(`wrote ${repoPath(resolve(path))}`);
}

/**
 * Runs a scenario as the process's main: quiet logs, SIGINT / SIGTERM turned into the
 * bench's interrupt flag while it runs, the total time printed, and the exit code it
 * returns (1 when it throws).
 */
export async function benchMain(name: string, scenario: (bench: Bench) => Promise<number>): Promise<void> {
  quietLogs();
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const bench = createBench(undefined, () => interrupted);
  let code = 1;
  try {
    code = await scenario(bench);
  } catch (e) {
    bench.say(`${name} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  bench.say(`done in ${formatDurationMs(Date.now() - bench.t0)}`);
  process.exitCode = code;
}

/**
 * `.local/bench-<name>.log`, removed, and set as `AWS_CALL_LOG` in this process (the
 * in-process router and janitor log their SDK calls there; pass it to the workers too).
 */
export function freshCallLog(name: string): string {
  const file = resolve(REPO_ROOT, '.local', `bench-${name}.log`);
  mkdirSync(dirname(file), { recursive: true });
  rmSync(file, { force: true });
  process.env.AWS_CALL_LOG = file;
  return file;
}
