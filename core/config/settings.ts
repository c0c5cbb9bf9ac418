/**
 * Settings declared once, as a table: each entry holds a setting's default, its range,
 * its unit and one line of meaning, and everything else derives from the table: the
 * settings' type ({@link SettingsOf}), the defaults ({@link defaultsOf}), the range
 * checks ({@link rangeProblems}) and the documentation table ({@link settingsMarkdownTable}).
 * The runtime tunables (core/config/tunables.ts) and the deployment settings
 * (infra/config.ts) are two such tables. Rules that relate several settings are not
 * ranges: they stay named checks beside their table.
 */

/**
 * An integer in `min..max`; with `off`, the value `off.value` is a switch with its own
 * meaning. `off.value` either equals `min` (the range proper starts one above it) or lies
 * below `min` (e.g. 0 = sized automatically, else 16..28).
 */
export interface IntegerSpec {
  readonly kind: 'integer';
  readonly default: number;
  readonly min: number;
  readonly max: number;
  /** A value below the range proper that means something else (e.g. 0 = never); it equals `min` or lies below it. */
  readonly off?: { readonly value: number; readonly meaning: string };
  readonly unit: string;
  readonly meaning: string;
}

/** A number strictly between 0 and 1 (a score or a share). */
export interface FractionSpec {
  readonly kind: 'fraction';
  readonly default: number;
  readonly unit: string;
  readonly meaning: string;
}

/** A string matching `pattern`; with `emptyMeans`, the empty string is allowed and means that. */
export interface TextSpec {
  readonly kind: 'text';
  readonly default: string;
  readonly pattern: RegExp;
  /** What a valid value does, after "must" in the error message ("be a local .onnx path or …"); says "or empty" itself where empty is allowed. */
  readonly rule: string;
  readonly emptyMeans?: string;
  readonly meaning: string;
}

/** `true` or `false`. */
export interface FlagSpec {
  readonly kind: 'flag';
  readonly default: boolean;
  readonly meaning: string;
}

/** One number out of a fixed list (e.g. the retention periods CloudWatch Logs accepts). */
export interface ChoiceSpec {
  readonly kind: 'choice';
  readonly default: number;
  readonly values: readonly number[];
  readonly unit: string;
  readonly meaning: string;
}

export type SettingSpec = IntegerSpec | FractionSpec | TextSpec | FlagSpec | ChoiceSpec;

/** A table of settings, by name. Declare one `as const satisfies SettingsTable` so each entry keeps its kind. */
export type SettingsTable = Readonly<Record<string, SettingSpec>>;

/** The value type of one setting. */
export type ValueOf<S extends SettingSpec> = S extends { readonly kind: 'text' } ? string : S extends { readonly kind: 'flag' } ? boolean : number;

/** The settings a table declares, each with its value type (the table's TSDoc carries over to the fields). */
export type SettingsOf<T extends SettingsTable> = { readonly [K in keyof T]: ValueOf<T[K]> };

/** Thrown when a configuration value is out of range; the message names the setting. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** The defaults of a table, frozen. */
export function defaultsOf<T extends SettingsTable>(table: T): SettingsOf<T> {
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(table)) out[key] = spec.default;
  return Object.freeze(out) as SettingsOf<T>;
}

/** The lowest value of an integer setting's range proper: one above `off.value` where that equals `min`, else `min`. */
function properMin(spec: IntegerSpec): number {
  return spec.off !== undefined && spec.off.value === spec.min ? spec.min + 1 : spec.min;
}

/** The problem with one value, or undefined when it is in range. */
export function rangeProblem(key: string, spec: SettingSpec, value: unknown): string | undefined {
  switch (spec.kind) {
    case 'integer': {
      const v = value as number;
      if (Number.isSafeInteger(v) && v >= spec.min && v <= spec.max) return undefined;
      if (spec.off === undefined) return `${key} must be an integer between ${spec.min} and ${spec.max} (got ${v})`;
      if (v === spec.off.value) return undefined;
      const low = properMin(spec);
      const rest = spec.max >= Number.MAX_SAFE_INTEGER && low === 0 ? 'a non-negative integer' : `an integer between ${low} and ${spec.max}`;
      return `${key} must be ${spec.off.value} (${spec.off.meaning}) or ${rest} (got ${v})`;
    }
    case 'fraction': {
      const v = value as number;
      return v > 0 && v < 1 ? undefined : `${key} must be in (0, 1) (got ${v})`;
    }
    case 'text': {
      const v = value as string;
      if (v === '' && spec.emptyMeans !== undefined) return undefined;
      return spec.pattern.test(v) ? undefined : `${key} must ${spec.rule} (got "${v}")`;
    }
    case 'flag':
      return typeof value === 'boolean' ? undefined : `${key} must be true or false (got ${String(value)})`;
    case 'choice': {
      const v = value as number;
      return spec.values.includes(v) ? undefined : `${key} must be one of ${spec.values.join(', ')} (got ${v})`;
    }
  }
}

/** Every value of `values` outside its range, as messages, in table order. */
export function rangeProblems<T extends SettingsTable>(table: T, values: SettingsOf<T>): string[] {
  const problems: string[] = [];
  for (const [key, spec] of Object.entries(table)) {
    const p = rangeProblem(key, spec, (values as Record<string, unknown>)[key]);
    if (p !== undefined) problems.push(p);
  }
  return problems;
}

/** A default as the docs write it: `empty`, a string in backticks, or the number / boolean itself. */
export function documentedDefault(value: unknown): string {
  if (value === '') return 'empty';
  if (typeof value === 'string') return `\`${value}\``;
  return String(value);
}

/** The range of a setting as the docs write it. */
export function documentedRange(spec: SettingSpec): string {
  switch (spec.kind) {
    case 'integer': {
      const top = spec.max >= Number.MAX_SAFE_INTEGER ? '' : String(spec.max);
      if (spec.off === undefined) return `${spec.min}..${top}`;
      return `${spec.off.value} (${spec.off.meaning}) or ${properMin(spec)}..${top}`;
    }
    case 'fraction':
      return '(0, 1)';
    case 'text': {
      const rule = spec.rule.replace(/^be /, '').replace(/ or empty$/, '');
      return spec.emptyMeans !== undefined ? `empty (${spec.emptyMeans}) or ${rule}` : rule;
    }
    case 'flag':
      return 'true / false';
    case 'choice':
      return `one of ${spec.values.join(', ')}`;
  }
}

/**
 * The documentation table of a settings table, in markdown: key, default, range, unit,
 * (with `envName`) the environment variable, and meaning. The docs carry it between
 * markers and a test compares it with this (scripts/config-tables.ts rewrites it).
 */
export function settingsMarkdownTable(table: SettingsTable, envName?: (key: string) => string): string {
  const header = ['Key', 'Default', 'Range', 'Unit', ...(envName ? ['Environment'] : []), 'Meaning'];
  const rows = Object.entries(table).map(([key, spec]) => [
    `\`${key}\``,
    documentedDefault(spec.default),
    documentedRange(spec),
    'unit' in spec && spec.unit !== '' ? spec.unit : '-',
    ...(envName ? [`\`${envName(key)}\``] : []),
    spec.meaning,
  ]);
  const line = (cells: readonly string[]) => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
