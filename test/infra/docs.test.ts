import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_STACK_CONFIG } from '../../infra/config.ts';

const deployGuide = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');

function documentedDefault(value: unknown): string {
  if (value === '') return 'empty';
  if (typeof value === 'string') return `\`${value}\``;
  return String(value);
}

describe('docs/deploy.md configuration reference', () => {
  it('lists every configuration key with its current default', () => {
    // Prepare
    const rows = new Map(
      [...deployGuide.matchAll(/^\| `([A-Za-z][A-Za-z0-9]*)` \| ([^|]+) \|/gm)].map((m) => [m[1], m[2].trim()] as const),
    );

    // Act
    const wrong = Object.entries(DEFAULT_STACK_CONFIG)
      .filter(([key, value]) => rows.get(key) !== documentedDefault(value))
      .map(([key, value]) => `${key}: documented ${rows.get(key) ?? '(missing)'}, default ${documentedDefault(value)}`);

    // Assess
    expect(wrong).toEqual([]);
  });
});
