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
/** Fields of a structured log line that say nothing on a terminal (the line itself, or noise). */
const QUIET_FIELDS = new Set(['level', 'message', 'msg', 'timestamp', 'service', 'sampling_rate', 'xray_trace_id']);

/**
 * A line as the terminal shows it, or undefined when it is not shown ({@link shouldEcho}). A
 * warning or error reads as text, `WARN <message>`, its other fields after it as compact JSON,
 * so the words a user must act on (the demo model on real video) are not buried in JSON; the
 * log files keep the line as it was written. Pure.
 */
export function terminalLine(line: string, quiet: boolean): string | undefined {
  if (!shouldEcho(line, quiet)) return undefined;
  const json = jsonObject(line);
  const level = String(json?.level ?? '').toUpperCase();
  if (!json || !LOUD_LEVELS.has(level) || typeof json.message !== 'string') return line;
  const rest = Object.fromEntries(Object.entries(json).filter(([k]) => !QUIET_FIELDS.has(k)));
  return `${level} ${json.message}${Object.keys(rest).length > 0 ? `  ${JSON.stringify(rest)}` : ''}`;
}

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
    const shown = lines.map((l) => terminalLine(l, quiet)).filter((l): l is string => l !== undefined);
    // The callback, if any, still fires once.
    return write(shown.length > 0 ? `${shown.join('\n')}\n` : '', ...rest);
  };
}
