/**
 * The configuration tables of the docs, generated from the settings tables: the
 * README's tunables (core/config/tunables.ts) and docs/deploy.md's deployment settings
 * (infra/config.ts). Each sits between a BEGIN and an END marker; a test
 * (test/core/config-docs.test.ts) fails when a block differs from what this renders.
 *
 *   node scripts/config-tables.ts --write   rewrite the blocks in place
 *   node scripts/config-tables.ts           check only (exit 1 and name the stale blocks)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tunablesMarkdownTable } from '../core/config.ts';
import { deploymentSettingsMarkdownTable } from '../infra/config.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** A generated block: which file, its marker name, and what it holds. */
export interface GeneratedBlock {
  readonly file: string;
  readonly name: string;
  readonly source: string;
  readonly render: () => string;
}

export const GENERATED_BLOCKS: readonly GeneratedBlock[] = [
  { file: 'README.md', name: 'tunables', source: 'core/config/tunables.ts', render: tunablesMarkdownTable },
  { file: 'docs/deploy.md', name: 'deployment-settings', source: 'infra/config.ts', render: deploymentSettingsMarkdownTable },
];

const begin = (b: GeneratedBlock) => `<!-- BEGIN GENERATED ${b.name}: from ${b.source} by node scripts/config-tables.ts --write; do not edit here -->`;
const end = (b: GeneratedBlock) => `<!-- END GENERATED ${b.name} -->`;

/** The text between a block's markers in `doc` (without the markers), or undefined when they are missing. */
export function blockText(doc: string, b: GeneratedBlock): string | undefined {
  const from = doc.indexOf(begin(b));
  const to = doc.indexOf(end(b));
  if (from < 0 || to < from) return undefined;
  return doc.slice(from + begin(b).length, to).trim();
}

/** `doc` with the block's text replaced by a fresh rendering. */
export function withBlock(doc: string, b: GeneratedBlock): string {
  const from = doc.indexOf(begin(b));
  const to = doc.indexOf(end(b));
  if (from < 0 || to < from) throw new Error(`${b.file}: markers of the generated block "${b.name}" are missing`);
  return `${doc.slice(0, from)}${begin(b)}\n${b.render()}\n${doc.slice(to)}`;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const write = process.argv.includes('--write');
  let stale = 0;
  for (const b of GENERATED_BLOCKS) {
    const file = path.join(ROOT, b.file);
    const doc = readFileSync(file, 'utf8');
    if (blockText(doc, b) === b.render()) continue;
    if (write) {
      writeFileSync(file, withBlock(doc, b));
      console.log(`${b.file}: ${b.name} rewritten`);
    } else {
      stale++;
      console.error(`${b.file}: ${b.name} differs from ${b.source} (run node scripts/config-tables.ts --write)`);
    }
  }
  process.exit(stale > 0 ? 1 : 0);
}
