/**
 * A model's class names from a file of their own (`modelClassesUri`, `npm start -- --classes`),
 * in the forms a YOLO user already has:
 *
 * - a text file, one name per line (`coco.names`, `classes.txt`); blank lines and lines
 *   starting with `#` are skipped;
 * - a JSON array of strings (`["person", "car"]`), or the sidecar's object with `classNames`;
 * - an Ultralytics dataset file (`data.yaml`): its `names:` as an indexed map
 *   (`  0: person`) or a list (`  - person`, or `names: [person, car]` inline).
 *
 * Pure: the caller reads the bytes. Every error names the file and says what was expected.
 */

/** Thrown for a file that gives no usable list; `message` names the file and the form expected. */
export class ClassNamesError extends Error {
  override name = 'ClassNamesError';
}

const unquote = (s: string) => s.trim().replace(/^(['"])(.*)\1$/, '$2').trim();

function fromJson(value: unknown, source: string): string[] {
  const list = Array.isArray(value) ? value : (value as { classNames?: unknown } | null)?.classNames;
  if (!Array.isArray(list) || !list.every((n) => typeof n === 'string')) {
    throw new ClassNamesError(`class names ${source}: JSON must be an array of strings (["person", "car"]) or an object with "classNames"`);
  }
  return list;
}

/** The `names:` entry of an Ultralytics dataset YAML, or undefined when the text has none. */
function fromDatasetYaml(text: string, source: string): string[] | undefined {
  const lines = text.split(/\r?\n/);
  const at = lines.findIndex((l) => /^names\s*:/.test(l));
  if (at < 0) return undefined;
  const inline = lines[at]!.replace(/^names\s*:/, '').replace(/\s+#.*$/, '').trim();
  if (inline.startsWith('[')) {
    if (!inline.endsWith(']')) throw new ClassNamesError(`class names ${source}: the inline names: [...] list is not closed on its line`);
    return inline.slice(1, -1).split(',').map(unquote).filter((n) => n !== '');
  }
  if (inline !== '') throw new ClassNamesError(`class names ${source}: names: must be followed by a list or an indexed map, not "${inline}"`);
  const indexed: [number, string][] = [];
  const listed: string[] = [];
  for (const line of lines.slice(at + 1)) {
    if (line.trim() === '' || line.trim().startsWith('#')) continue;
    if (!/^\s/.test(line)) break; // the next top-level key
    const item = /^\s+-\s*(.*)$/.exec(line);
    const entry = /^\s+(\d+)\s*:\s*(.*)$/.exec(line);
    if (item) listed.push(unquote(item[1]!.replace(/\s+#.*$/, '')));
    else if (entry) indexed.push([Number(entry[1]), unquote(entry[2]!.replace(/\s+#.*$/, ''))]);
    else throw new ClassNamesError(`class names ${source}: cannot read "${line.trim()}" under names: (expected "  0: person" or "  - person")`);
  }
  if (indexed.length > 0 && listed.length > 0) throw new ClassNamesError(`class names ${source}: names: mixes an indexed map and a list`);
  if (listed.length > 0) return listed;
  indexed.sort((a, b) => a[0] - b[0]);
  indexed.forEach(([i], k) => {
    if (i !== k) throw new ClassNamesError(`class names ${source}: names: has no entry ${k} (indices must run 0, 1, 2, ... without holes)`);
  });
  return indexed.map(([, n]) => n);
}

/** The class names `text` (the file at `source`, for messages) lists, in order. Throws {@link ClassNamesError}. */
export function parseClassNames(text: string, source: string): string[] {
  const trimmed = text.replace(/^\uFEFF/, '').trim();
  let names: string[];
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (e) {
      throw new ClassNamesError(`class names ${source}: looks like JSON but does not parse (${e instanceof Error ? e.message : String(e)})`);
    }
    names = fromJson(value, source);
  } else {
    names =
      fromDatasetYaml(trimmed, source) ??
      trimmed
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter((l) => l !== '' && !l.startsWith('#'));
  }
  if (names.length === 0) throw new ClassNamesError(`class names ${source}: no names found (expected one name per line, a JSON array, or a data.yaml with names:)`);
  const empty = names.findIndex((n) => n === '');
  if (empty >= 0) throw new ClassNamesError(`class names ${source}: class ${empty} has an empty name`);
  return names;
}
