/**
 * Moves TypeScript modules with `git mv` and rewrites every relative import that names
 * them, across the repository, so a move is one re-runnable command instead of a
 * hand edit of dozens of import lines. Only module specifiers change: the moved files'
 * bodies are left alone (apart from their own relative imports), so git's rename
 * detection still carries edits made to the old paths on other branches.
 *
 * Usage:
 *   node scripts/move-modules.ts <mapping.json|builtin-name> [--dry-run]
 *   node scripts/move-modules.ts old/path.ts=new/path.ts ... [--dry-run]
 *
 * A mapping file is a JSON object `{ "old/path.ts": "new/path.ts" }` (paths relative to
 * the repository root). An entry whose source no longer exists is not moved again, but
 * imports of its old path are still rewritten, so the same mapping can be run again after
 * a merge brings files into the old places or new imports of the old paths. After a merge:
 * `node scripts/move-modules.ts core-aws`.
 * Builtin mappings: `core-aws` (the adapter modules once at core/'s root, to their wings),
 * `frame-sources` (issue 43: the frame-source seam and the smaller moves beside it).
 *
 * Rewritten: `import … from '…'`, `export … from '…'`, `import '…'`, `import('…')`,
 * `vi.mock('…')`, `vi.importActual('…')`, and `new URL('…', import.meta.url)`, whenever the
 * specifier is relative and resolves (before the move) to a file that moves, or the file
 * containing it moves and the specifier resolves to an existing file.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The adapter modules once at core/'s root (issue 21 moved them under core/aws/, decision 54
 * into their wings' adapter folders): a re-run rewrites imports of those old root paths to
 * where the modules live now.
 */
export const CORE_AWS_MAPPING: Readonly<Record<string, string>> = {
  'core/lease-store.ts': 'core/leases/dynamodb/lease-store.ts',
  'core/slot-lease-store.ts': 'core/leases/dynamodb/slot-lease-store.ts',
  'core/slot-queues.ts': 'core/ingest/sqs/slot-queues.ts',
  'core/frame-store.ts': 'core/ingest/s3/frame-store.ts',
  'core/results-reader.ts': 'core/commit/dynamodb/results-reader.ts',
};

/**
 * Issue 43's moves (decision 70): the segment reader, the prefetch, the hedged GET and the
 * read-ahead behind the frame-source seam (gpu-worker/sources/), the lease adapters beside
 * their interfaces, the model pin to the vision wing. A re-run after a merge rewrites
 * imports of the old paths a branch added.
 */
export const FRAME_SOURCES_MAPPING: Readonly<Record<string, string>> = {
  'gpu-worker/video/segment-reader.ts': 'gpu-worker/sources/segment/segment-reader.ts',
  'gpu-worker/runtime/ahead/frame-prefetch.ts': 'gpu-worker/sources/ahead/frame-prefetch.ts',
  'gpu-worker/runtime/ahead/hedged-fetch.ts': 'gpu-worker/sources/ahead/hedged-fetch.ts',
  'gpu-worker/runtime/ahead/read-ahead.ts': 'gpu-worker/sources/ahead/read-ahead.ts',
  'test/gpu-worker/runtime/ahead/frame-prefetch.test.ts': 'test/gpu-worker/sources/ahead/frame-prefetch.test.ts',
  'test/gpu-worker/runtime/ahead/frame-read-ahead.test.ts': 'test/gpu-worker/sources/ahead/frame-read-ahead.test.ts',
  'test/gpu-worker/runtime/ahead/hedged-fetch.test.ts': 'test/gpu-worker/sources/ahead/hedged-fetch.test.ts',
  'test/gpu-worker/runtime/ahead/read-ahead.test.ts': 'test/gpu-worker/sources/ahead/read-ahead.test.ts',
  'test/gpu-worker/runtime/ahead/segment-prefetch.test.ts': 'test/gpu-worker/sources/ahead/segment-prefetch.test.ts',
  'test/gpu-worker/video/segment-reader-ahead.test.ts': 'test/gpu-worker/sources/segment/segment-reader-ahead.test.ts',
  'test/gpu-worker/video/segment-reader-span.test.ts': 'test/gpu-worker/sources/segment/segment-reader-span.test.ts',
  'core/commit/dynamodb/video-commit.ts': 'core/leases/dynamodb/video-commit.ts',
  'core/fleet/dynamodb/launch-grants.ts': 'core/leases/dynamodb/launch-grants.ts',
  'core/fleet/model-pin.ts': 'gpu-worker/vision/model-pin.ts',
  'test/core/fleet/model-pin.test.ts': 'test/gpu-worker/vision/model-pin.test.ts',
};

const SKIP_DIRS = new Set(['node_modules', '.git', 'cdk.out', '.local']);

/** Every .ts / .mts file under the repository, as repository-relative POSIX paths. */
export function listSourceFiles(dir = ROOT): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP_DIRS.has(entry.name)) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listSourceFiles(full));
    else if (/\.(m?ts)$/.test(entry.name)) out.push(path.relative(ROOT, full).split(path.sep).join('/'));
  }
  return out;
}

// Specifier positions that name another file. Group 1: the text before the quote; 2: the quote; 3: the specifier.
// Each alternative's closing quote refers back to its own quote group (\2, \5, \8, ...).
const SPECIFIER = new RegExp(
  [
    String.raw`\bfrom\s*`,
    String.raw`^\s*import\s*`,
    String.raw`\bimport\s*\(\s*`,
    String.raw`\bvi\.(?:mock|doMock|unmock|importActual)\s*\(\s*`,
    String.raw`\bnew\s+URL\s*\(\s*`,
  ]
    .map((prefix, i) => `(${prefix})(['"])` + String.raw`(\.{1,2}/[^'"\n]+)` + `\\${3 * i + 2}` + (i === 4 ? String.raw`(?=\s*,\s*import\.meta\.url)` : ''))
    .join('|'),
  'gm',
);

function posixRelative(fromFile: string, toFile: string): string {
  let rel = path.posix.relative(path.posix.dirname(fromFile), toFile);
  if (!rel.startsWith('.')) rel = `./${rel}`;
  return rel;
}

/**
 * Rewrites the relative specifiers of one file's text. `oldPath` is where the file was,
 * `newPath` where it will be; `moves` maps old repository paths to new ones. A specifier
 * is rewritten only when its target moves or the file itself moves (and the target
 * exists, checked by `exists`): anything else keeps its exact text.
 */
export function rewriteSpecifiers(
  text: string,
  oldPath: string,
  newPath: string,
  moves: ReadonlyMap<string, string>,
  exists: (repoPath: string) => boolean,
): string {
  return text.replace(SPECIFIER, (whole: string, ...groups: (string | undefined)[]) => {
    for (let g = 0; g < 15; g += 3) {
      const prefix = groups[g];
      const quote = groups[g + 1];
      const spec = groups[g + 2];
      if (prefix === undefined || quote === undefined || spec === undefined) continue;
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(oldPath), spec));
      const movedTarget = moves.get(target);
      if (movedTarget === undefined && (oldPath === newPath || !exists(target))) return whole;
      const finalTarget = movedTarget ?? target;
      // A directory-style specifier ending in '/' keeps its trailing slash.
      const rewritten = posixRelative(newPath, finalTarget) + (spec.endsWith('/') && !finalTarget.endsWith('/') ? '/' : '');
      return `${prefix}${quote}${rewritten}${quote}`;
    }
    return whole;
  });
}

/** Applies a mapping to the working tree: `git mv` then import rewriting. Returns the files changed. */
export function applyMoves(mapping: Readonly<Record<string, string>>, dryRun = false): string[] {
  // `moves`: files to move now. `targets`: where every mapped module is, moved now or
  // before, so that imports of an old path that a merge brought in are rewritten too.
  const moves = new Map<string, string>();
  const targets = new Map<string, string>();
  for (const [from, to] of Object.entries(mapping)) {
    const fromExists = existsSync(path.join(ROOT, from));
    const toExists = existsSync(path.join(ROOT, to));
    if (fromExists && toExists) throw new Error(`${to} exists already; not overwriting it with ${from}`);
    if (fromExists) moves.set(from, to);
    if (fromExists || toExists) targets.set(from, to);
  }
  const exists = (p: string): boolean => {
    const full = path.join(ROOT, p);
    return existsSync(full) && (statSync(full).isFile() || statSync(full).isDirectory());
  };
  const changed: string[] = [];
  const rewritten = new Map<string, string>();
  for (const file of listSourceFiles()) {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    const next = rewriteSpecifiers(text, file, moves.get(file) ?? file, targets, exists);
    if (next !== text) rewritten.set(file, next);
  }
  for (const [from, to] of moves) {
    changed.push(`${from} -> ${to}`);
    if (dryRun) continue;
    execFileSync('mkdir', ['-p', path.dirname(path.join(ROOT, to))]);
    execFileSync('git', ['mv', from, to], { cwd: ROOT });
  }
  for (const [file, text] of rewritten) {
    const at = moves.get(file) ?? file;
    changed.push(`rewrote imports in ${at}`);
    if (!dryRun) writeFileSync(path.join(ROOT, at), text);
  }
  return changed;
}

function loadMapping(arg: string): Record<string, string> {
  if (arg === 'core-aws') return { ...CORE_AWS_MAPPING };
  if (arg === 'frame-sources') return { ...FRAME_SOURCES_MAPPING };
  return JSON.parse(readFileSync(arg, 'utf8')) as Record<string, string>;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const dryRun = args.includes('--dry-run');
  const rest = args.filter((a) => a !== '--dry-run');
  if (rest.length === 0) {
    console.error('usage: node scripts/move-modules.ts <mapping.json|core-aws|frame-sources> | old=new ... [--dry-run]');
    process.exit(2);
  }
  const mapping = rest.every((a) => a.includes('='))
    ? Object.fromEntries(rest.map((a) => a.split('=') as [string, string]))
    : loadMapping(rest[0]!);
  for (const line of applyMoves(mapping, dryRun)) console.log(line);
}
