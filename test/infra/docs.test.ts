/**
 * The configuration tables of the docs are generated from the settings tables
 * (scripts/config-tables.ts): the README's tunables from core/config/tunables.ts, and
 * docs/deploy.md's deployment settings from infra/config.ts. A block that differs from
 * its rendering, or a key missing with its current default, fails here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TUNABLES, documentedDefault, tunablesMarkdownTable } from '../../core/config.ts';
import { DEFAULT_DEPLOYMENT_SETTINGS } from '../../infra/config.ts';
import { GENERATED_BLOCKS, blockText, withBlock } from '../../scripts/config-tables.ts';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

/** The `| \`key\` | default |` rows of a markdown document (keys may hold digits: modelSha256). */
const rowsOf = (doc: string) => new Map([...doc.matchAll(/^\| `([A-Za-z][A-Za-z0-9]*)` \| ([^|]+) \|/gm)].map((m) => [m[1], m[2]!.trim()] as const));

function wrongDefaults(doc: string, defaults: object): string[] {
  const rows = rowsOf(doc);
  return Object.entries(defaults)
    .filter(([key, value]) => rows.get(key) !== documentedDefault(value))
    .map(([key, value]) => `${key}: documented ${rows.get(key) ?? '(missing)'}, default ${documentedDefault(value)}`);
}

describe('generated configuration tables', () => {
  it.each(GENERATED_BLOCKS.map((b) => [b.file, b.name, b] as const))('%s holds the %s table as its source renders it', (file, _name, block) => {
    expect(blockText(read(file), block)).toBe(block.render());
  });

  it('the README lists every tunable with its current default, range and environment variable', () => {
    expect(wrongDefaults(read('README.md'), DEFAULT_TUNABLES)).toEqual([]);
    expect(read('README.md')).toContain('| `slotLeaseTtlSeconds` | 15 | 1..3600 | s | `SLOT_LEASE_TTL_SECONDS` |');
  });

  it('docs/deploy.md lists every deployment setting with its current default', () => {
    expect(wrongDefaults(read('docs/deploy.md'), DEFAULT_DEPLOYMENT_SETTINGS)).toEqual([]);
  });

  it('a block edited by hand is told apart from its rendering, and rewriting restores it', () => {
    // Prepare: the README with one default changed inside the block
    const block = GENERATED_BLOCKS.find((b) => b.name === 'tunables')!;
    const edited = read('README.md').replace('| `slotCount` | 4 |', '| `slotCount` | 5 |');
    // Act & Assess
    expect(blockText(edited, block)).not.toBe(tunablesMarkdownTable());
    expect(blockText(withBlock(edited, block), block)).toBe(tunablesMarkdownTable());
  });
});

describe('paths the docs name', () => {
  /** `test/...` and `bench/...` paths in backticks (a `*` matches any characters within one name). */
  const namedPaths = (doc: string) => [...new Set([...doc.matchAll(/`((?:test|bench)\/[A-Za-z0-9_./*-]+\.ts)`/g)].map((m) => m[1]!))];
  const exists = (path: string) => {
    if (!path.includes('*')) return existsSync(new URL(`../../${path}`, import.meta.url));
    const dir = path.slice(0, path.lastIndexOf('/'));
    const pattern = new RegExp(`^${path.slice(path.lastIndexOf('/') + 1).replace(/[.]/g, '\\.').replace(/\*/g, '[^/]*')}$`);
    return readdirSync(new URL(`../../${dir}`, import.meta.url)).some((f) => pattern.test(f));
  };

  it.each(['README.md'])('every test and bench file %s names exists (files move; the docs must follow)', (file) => {
    // `test/core/x*.test.ts` illustrates the layout convention, it names no file.
    const missing = namedPaths(read(file)).filter((p) => p !== 'test/core/x*.test.ts' && !exists(p));
    expect(missing).toEqual([]);
  });
});

describe('markdown that renders', () => {
  /** Lines that open or close a fenced code block (``` or ~~~, indented up to 3 spaces). */
  const fences = (doc: string) => doc.split('\n').filter((l) => /^ {0,3}(```|~~~)/.test(l));

  it.each(['README.md', 'docs/cli.md', 'docs/deploy.md', 'docs/decisions.md', 'bench/README.md'])('every code block of %s is closed', (file) => {
    // An unclosed block swallows every heading after it (docs/cli.md's redrive example once did).
    expect(fences(read(file)).length % 2).toBe(0);
  });
});

describe('what git keeps out', () => {
  it('ignores the state folders the tools write: .local/ and the edge segmenter\'s .affinity-stream/', () => {
    const ignored = read('.gitignore').split('\n').map((l) => l.trim());
    expect(ignored).toContain('.local/');
    expect(ignored).toContain('.affinity-stream/');
  });
});
