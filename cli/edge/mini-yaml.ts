/**
 * The small part of YAML a camera list needs, so `affinity edge --config cameras.yaml`
 * works without a YAML dependency (the project has none; JSON files work too):
 *
 * - block mappings (`key: value`, `key:` followed by an indented block);
 * - block sequences (`- value`, `- key: value` starting a mapping item, more keys of that
 *   item indented under it);
 * - scalars: plain (numbers, `true` / `false`, `null` / `~`, anything else a string),
 *   double-quoted (with `\"`, `\\`, `\n`, `\t`) and single-quoted (`''` for a quote);
 * - `# comments` (at a line's start or after a space, outside quotes), blank lines, and an
 *   optional `---` first line;
 * - the empty flow forms `[]` and `{}`.
 *
 * Anything else (anchors, tags, multi-line strings, flow collections with content, tabs
 * for indentation) is refused with its line number, never guessed at.
 */

export class MiniYamlError extends Error {
  override name = 'MiniYamlError';
}

interface Line {
  readonly no: number;
  readonly indent: number;
  readonly text: string;
}

/** Parses the subset described above; throws {@link MiniYamlError} naming the line. */
export function parseMiniYaml(source: string): unknown {
  const lines: Line[] = [];
  source.split(/\r?\n/).forEach((raw, i) => {
    const no = i + 1;
    if (/^\t| \t/.test(raw.match(/^[ \t]*/)![0])) throw new MiniYamlError(`line ${no}: tabs cannot indent YAML; use spaces`);
    const text = stripComment(raw, no).trimEnd();
    if (text.trim() === '' || (lines.length === 0 && text.trim() === '---')) return;
    lines.push({ no, indent: text.length - text.trimStart().length, text: text.trimStart() });
  });
  if (lines.length === 0) return null;
  const at = { i: 0 };
  const value = parseBlock(lines, at, lines[0]!.indent);
  if (at.i < lines.length) throw new MiniYamlError(`line ${lines[at.i]!.no}: unexpected indentation`);
  return value;
}

function stripComment(raw: string, no: number): string {
  let quote: string | null = null;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      // a quote opens only at the start of a scalar
      const before = raw.slice(0, i).trimEnd();
      if (before === '' || /[:\-]$/.test(before) || before.endsWith('- ')) quote = c;
    } else if (c === '#' && (i === 0 || raw[i - 1] === ' ')) return raw.slice(0, i);
  }
  if (quote) throw new MiniYamlError(`line ${no}: unterminated ${quote === '"' ? 'double' : 'single'}-quoted string`);
  return raw;
}

function parseBlock(lines: Line[], at: { i: number }, indent: number): unknown {
  const first = lines[at.i]!;
  if (first.indent !== indent) throw new MiniYamlError(`line ${first.no}: unexpected indentation`);
  return first.text === '-' || first.text.startsWith('- ') ? parseSequence(lines, at, indent) : parseMapping(lines, at, indent);
}

function parseSequence(lines: Line[], at: { i: number }, indent: number): unknown[] {
  const out: unknown[] = [];
  while (at.i < lines.length) {
    const line = lines[at.i]!;
    if (line.indent < indent) break;
    if (line.indent > indent) throw new MiniYamlError(`line ${line.no}: unexpected indentation`);
    if (!(line.text === '-' || line.text.startsWith('- '))) throw new MiniYamlError(`line ${line.no}: expected a list item ("- ...") at this indentation`);
    const rest = line.text.slice(1).trimStart();
    if (rest === '') {
      at.i++;
      out.push(at.i < lines.length && lines[at.i]!.indent > indent ? parseBlock(lines, at, lines[at.i]!.indent) : null);
    } else if (isMappingEntry(rest)) {
      // "- key: value": a mapping whose first key sits after the dash; its other keys align with it
      const inner = indent + (line.text.length - rest.length);
      lines[at.i] = { no: line.no, indent: inner, text: rest };
      out.push(parseMapping(lines, at, inner));
    } else {
      out.push(scalar(rest, line.no));
      at.i++;
    }
  }
  return out;
}

function parseMapping(lines: Line[], at: { i: number }, indent: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  while (at.i < lines.length) {
    const line = lines[at.i]!;
    if (line.indent < indent) break;
    if (line.indent > indent) throw new MiniYamlError(`line ${line.no}: unexpected indentation`);
    const m = mappingEntry(line.text);
    if (!m) throw new MiniYamlError(`line ${line.no}: expected "key: value" (got "${line.text}")`);
    if (Object.hasOwn(out, m.key)) throw new MiniYamlError(`line ${line.no}: key "${m.key}" appears twice`);
    at.i++;
    if (m.value !== '') {
      out[m.key] = scalar(m.value, line.no);
      continue;
    }
    const next = lines[at.i];
    // a nested block is indented deeper; a list may also sit at the key's own indentation
    if (next && (next.indent > indent || (next.indent === indent && (next.text === '-' || next.text.startsWith('- '))))) out[m.key] = parseBlock(lines, at, next.indent);
    else out[m.key] = null;
  }
  return out;
}

const KEY = /^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s"'#\-\[\]{}][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s+(.*))?$/;

function isMappingEntry(text: string): boolean {
  return mappingEntry(text) !== null;
}

function mappingEntry(text: string): { key: string; value: string } | null {
  const m = KEY.exec(text);
  if (!m) return null;
  const rawKey = m[1]!;
  const key = rawKey.startsWith('"') || rawKey.startsWith("'") ? (scalar(rawKey, 0) as string) : rawKey.trim();
  return { key, value: (m[2] ?? '').trim() };
}

function scalar(text: string, no: number): unknown {
  if (text.startsWith('"')) {
    if (!/^"(?:[^"\\]|\\.)*"$/.test(text)) throw new MiniYamlError(`line ${no}: a double-quoted string must end the value`);
    return text.slice(1, -1).replace(/\\(.)/g, (_, c: string) => ({ n: '\n', t: '\t', '"': '"', '\\': '\\', '/': '/' })[c] ?? `\\${c}`);
  }
  if (text.startsWith("'")) {
    if (!/^'(?:[^']|'')*'$/.test(text)) throw new MiniYamlError(`line ${no}: a single-quoted string must end the value`);
    return text.slice(1, -1).replace(/''/g, "'");
  }
  if (text === '[]') return [];
  if (text === '{}') return {};
  if (/^[[{&*!|>%@`]/.test(text)) throw new MiniYamlError(`line ${no}: "${text}" uses YAML that affinity edge does not read (flow collections, anchors, tags, block strings); write it as a block, or use a JSON config`);
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (text === 'null' || text === '~') return null;
  if (/^-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?$/.test(text)) return Number(text);
  return text;
}
