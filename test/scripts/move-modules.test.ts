/** The import rewriting of scripts/move-modules.ts, on sample sources (nothing is moved on disk). */
import { describe, expect, it } from 'vitest';
import { rewriteSpecifiers } from '../../scripts/move-modules.ts';

const everythingExists = () => true;

describe('rewriteSpecifiers', () => {
  it.each([
    ['a static import of a moved module', `import { A } from './a.ts';`, 'core/x.ts', 'core/x.ts', `import { A } from './aws/a.ts';`],
    ['a re-export', `export { A } from "./a.ts";`, 'core/x.ts', 'core/x.ts', `export { A } from "./aws/a.ts";`],
    ['the moved file\'s own imports', `import { B } from './b.ts';`, 'core/a.ts', 'core/aws/a.ts', `import { B } from '../b.ts';`],
    ['a side-effect import', `import '../core/a.ts';`, 'cli/x.ts', 'cli/x.ts', `import '../core/aws/a.ts';`],
    ['a dynamic import', `const m = await import('../core/a.ts');`, 'cli/x.ts', 'cli/x.ts', `const m = await import('../core/aws/a.ts');`],
    ['vi.mock', `vi.mock("../../core/a.ts");`, 'test/unit/t.test.ts', 'test/core/t.test.ts', `vi.mock("../../core/aws/a.ts");`],
    ['new URL relative to the module', `new URL('../../docs/d.md', import.meta.url)`, 'test/unit/t.test.ts', 'test/core/aws/t.test.ts', `new URL('../../../docs/d.md', import.meta.url)`],
    ['an untouched import', `import { K } from './keys.ts';`, 'core/x.ts', 'core/x.ts', `import { K } from './keys.ts';`],
    ['a package import', `import { S3Client } from '@aws-sdk/client-s3';`, 'core/a.ts', 'core/aws/a.ts', `import { S3Client } from '@aws-sdk/client-s3';`],
    ['a URL not relative to the module', `new URL('../../docs/d.md')`, 'test/unit/t.test.ts', 'test/core/aws/t.test.ts', `new URL('../../docs/d.md')`],
  ])('rewrites %s', (_name, source, oldPath, newPath, expected) => {
    const moves = new Map([['core/a.ts', 'core/aws/a.ts']]);
    expect(rewriteSpecifiers(source, oldPath, newPath, moves, everythingExists)).toBe(expected);
  });

  it('leaves a specifier alone when the file moves but its target does not exist', () => {
    expect(rewriteSpecifiers(`import x from './gone.ts';`, 'core/a.ts', 'core/aws/a.ts', new Map(), () => false)).toBe(`import x from './gone.ts';`);
  });
});

describe('applyMoves after a merge', () => {
  it('rewrites an import of an old path whose module moved before (the mapping re-run)', () => {
    // rewriteSpecifiers gets every mapped module, moved now or earlier: the importer is fixed
    const targets = new Map([['core/a.ts', 'core/aws/a.ts']]);
    expect(rewriteSpecifiers(`import { A } from '../../core/a.ts';`, 'test/unit/new.test.ts', 'test/unit/new.test.ts', targets, () => false)).toBe(
      `import { A } from '../../core/aws/a.ts';`,
    );
  });
});
