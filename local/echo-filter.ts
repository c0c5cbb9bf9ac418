/**
 * What `npm start` shows on its terminal, and what goes only to its log files.
 *
 * Workers and the in-process router and janitor write JSON lines, as they would in AWS:
 * structured logs, and EMF metrics (a JSON object with an `_aws` key) that CloudWatch
 * turns into metrics. On a terminal the metrics are noise: a line of JSON per round that
 * buries what a user needs to see. So:
 * - EMF lines never reach the terminal; they are in the log files
 *   (`<state>/logs/slot-N.log`, `<state>/logs/router-janitor.log`);
 * - by default every other line is shown;
 * - with `--quiet`, only warnings and errors (JSON `level` WARN, ERROR, CRITICAL or FATAL),
 *   and plain-text lines other than a worker's routine start and clean exit (a crash's
 *   stack trace is plain text).
 * Pure, apart from {@link divertJsonWrites}, which applies the rule to this process's stdout.
 */

/** Parsed JSON object of a line, or undefined when the line is not one. */
function jsonObject(line: string): Record<string, unknown> | undefined {
  const t = line.trim();
  if (!t.startsWith('{') || !t.endsWith('}')) return undefined;
  try {
    const v: unknown = JSON.parse(t);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const LOUD_LEVELS = new Set(['WARN', 'WARNING', 'ERROR', 'CRITICAL', 'FATAL']);
/** The launcher's own lines about a worker that started or exited cleanly. */
const ROUTINE = /^(started worker |exited \(code 0, signal null\))/;

/** Whether `line` (one line of a process's output, without the launcher's `[slot-N pid]` prefix) goes to the terminal. */
export function shouldEcho(line: string, quiet: boolean): boolean {
  const json = jsonObject(line);
  if (json === undefined) return !quiet || !ROUTINE.test(line);
  if ('_aws' in json) return false;
  if (!quiet) return true;
  return LOUD_LEVELS.has(String(json.level ?? '').toUpperCase());
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- stdout.write's overloads
type Write = (chunk: string | Uint8Array, ...rest: any[]) => boolean;

/**
 * Wraps `write` (this process's stdout) so that the JSON lines the in-process router and
 * janitor print go to `sink` (a log file), and to the terminal only as {@link shouldEcho}
 * says. Text that is not a JSON line (the banner, the launcher's worker lines, which it
 * filtered itself) passes unchanged. Returns the wrapped write.
 */
export function divertJsonWrites(write: Write, sink: (text: string) => void, quiet: boolean): Write {
  return (chunk, ...rest) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (!text.trimStart().startsWith('{')) return write(chunk, ...rest);
    const lines = text.split('\n').filter((l) => l !== '');
    sink(`${lines.join('\n')}\n`);
    const shown = lines.filter((l) => shouldEcho(l, quiet));
    // The callback, if any, still fires once.
    return write(shown.length > 0 ? `${shown.join('\n')}\n` : '', ...rest);
  };
}
