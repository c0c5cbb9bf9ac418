/**
 * Command-line options from one table per scenario: each flag's default and range, so
 * the parsing, the range checks, the `--help` line and the option names (camelCase of
 * the flag) come from one declaration.
 */
import { parseArgs } from 'node:util';
import { numberOption } from '../support.ts';

/** A number in [min, max] (rounded when `int`); no default: undefined when not given. */
export interface NumberFlag {
  readonly num: readonly [fallback: number | undefined, min: number, max: number];
  readonly int?: boolean;
}
/** One of a few words. */
export interface ChoiceFlag {
  readonly choice: readonly string[];
  readonly fallback?: string;
}
/** A switch. */
export interface SwitchFlag {
  readonly switch: true;
}
/** A free string (a path). */
export interface TextFlag {
  readonly text: string | undefined;
}
export type Flag = NumberFlag | ChoiceFlag | SwitchFlag | TextFlag;

type Camel<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
type ValueOf<F> = F extends NumberFlag
  ? F['num'][0] extends number
    ? number
    : number | undefined
  : F extends ChoiceFlag
    ? F extends { fallback: string }
      ? F['choice'][number]
      : F['choice'][number] | undefined
    : F extends SwitchFlag
      ? boolean
      : F extends { text: string }
        ? string
        : string | undefined;
/** The parsed options of a flag table. */
export type Parsed<T extends Record<string, Flag>> = { -readonly [K in keyof T & string as Camel<K>]: ValueOf<T[K]> };

const camel = (s: string) => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
const usage = (script: string, flags: Record<string, Flag>) =>
  `npx node bench/${script} ` +
  Object.entries(flags)
    .map(([k, f]) => ('num' in f ? `[--${k} ${f.num[0] ?? 'N'}]` : 'choice' in f ? `[--${k} ${f.choice.join('|')}]` : 'switch' in f ? `[--${k}]` : `[--${k} path]`))
    .join(' ');

/** Parses `args` by the table; prints the usage and returns undefined on `--help`; throws naming a flag out of range. */
export function parseFlags<T extends Record<string, Flag>>(script: string, flags: T, args: readonly string[]): Parsed<T> | undefined {
  const options = Object.fromEntries(Object.entries(flags).map(([k, f]) => [k, { type: 'switch' in f ? ('boolean' as const) : ('string' as const) }]));
  const values: Record<string, string | boolean | undefined> = parseArgs({ args: [...args], options: { ...options, help: { type: 'boolean', short: 'h' } } }).values;
  if (values.help) {
    console.log(usage(script, flags));
    return undefined;
  }
  const out: Record<string, unknown> = {};
  for (const [k, f] of Object.entries(flags)) {
    const v = values[k];
    if ('num' in f) {
      const n = v === undefined ? f.num[0] : numberOption(values, k, f.num[1], f.num[2]);
      out[camel(k)] = n !== undefined && f.int ? Math.round(n) : n;
    } else if ('choice' in f) {
      const c = v ?? f.fallback;
      if (c !== undefined && !f.choice.includes(String(c))) throw new Error(`--${k} must be ${f.choice.join(' or ')} (got ${String(c)})`);
      out[camel(k)] = c;
    } else if ('switch' in f) out[camel(k)] = v === true;
    else out[camel(k)] = v ?? f.text;
  }
  return out as Parsed<T>;
}
