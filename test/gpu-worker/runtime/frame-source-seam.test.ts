/**
 * The frame-source seam (gpu-worker/sources/port.ts, decision 70): the worker runtime asks
 * one interface what an object holds and for its frames' pixels, and never what kind of
 * object a key names. Read off the source text of gpu-worker/runtime/: no import of a
 * segment- or image-specific module (the segment reader, the decoder, the prefetch, the
 * read-ahead, the hedged GET, the segment key rules), no call of a key-kind predicate; and
 * gpu-worker/sources/ imports nothing of the runtime, so the seam adds no import cycle.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const SPECIFIER = /(?:\bfrom\s*|^\s*import\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)(['"])([^'"\n]+)\1/gm;

/** What the runtime may import of gpu-worker/sources/: the port, the factory that builds the sources, the read-error rules. */
const SEAM = new Set(['gpu-worker/sources/port.ts', 'gpu-worker/sources/frame-sources.ts', 'gpu-worker/sources/read-errors.ts']);
/** Modules that know one kind of object. */
const KIND_SPECIFIC = [/^gpu-worker\/video\//, /^gpu-worker\/sources\/(?:segment|image|ahead)\//, /^core\/ingest\/segment-keys\.ts$/];
/** Calls and names that classify a key by kind. */
const KIND_PREDICATES = [/\bisSegment(?:Key)?\s*\(/, /\bparseSourceKey\s*\(/, /\bSegmentReader\b/, /container\s*[!=]==?\s*'image'/, /\.(?:mp4|ts|mkv|jpe?g|png)'\s*\)/];

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

function codeOf(file: string): string {
  return readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
}

/** Repository-relative targets of a file's relative imports. */
function importsOf(file: string): string[] {
  return [...codeOf(file).matchAll(SPECIFIER)]
    .map((m) => m[2]!)
    .filter((s) => s.startsWith('.'))
    .map((s) => path.relative(ROOT, path.resolve(path.dirname(file), s)).split(path.sep).join('/'));
}

const rel = (f: string) => path.relative(ROOT, f).split(path.sep).join('/');
const runtime = tsFiles(path.join(ROOT, 'gpu-worker/runtime'));
const sources = tsFiles(path.join(ROOT, 'gpu-worker/sources'));

describe('the frame-source seam', () => {
  it('scans the runtime and the sources', () => {
    expect(runtime.map(rel)).toContain('gpu-worker/runtime/frame-runner.ts');
    expect(runtime.map(rel)).toContain('gpu-worker/runtime/message-intake.ts');
    expect(sources.map(rel)).toContain('gpu-worker/sources/port.ts');
  });

  it('the runtime imports of the sources only the seam, and nothing that knows one kind of object', () => {
    const offenders = runtime.flatMap((f) =>
      importsOf(f)
        .filter((t) => (t.startsWith('gpu-worker/sources/') && !SEAM.has(t)) || KIND_SPECIFIC.some((k) => k.test(t)))
        .map((t) => `${rel(f)} imports ${t}`),
    );
    expect(offenders).toEqual([]);
  });

  it('the runtime never asks what kind of object a key names', () => {
    const offenders = runtime.flatMap((f) => {
      const code = codeOf(f);
      return KIND_PREDICATES.filter((p) => p.test(code)).map((p) => `${rel(f)} matches ${p}`);
    });
    expect(offenders).toEqual([]);
  });

  it('only the composition (worker.ts) builds the sources; the other units take the port', () => {
    const builders = runtime.filter((f) => importsOf(f).includes('gpu-worker/sources/frame-sources.ts') && /\bcreateFrameSources\s*\(/.test(codeOf(f))).map(rel);
    expect(builders).toEqual(['gpu-worker/runtime/worker.ts']);
  });

  it('the sources import nothing of the runtime: the seam adds no cycle', () => {
    const offenders = sources.flatMap((f) => importsOf(f).filter((t) => t.startsWith('gpu-worker/runtime/')).map((t) => `${rel(f)} imports ${t}`));
    expect(offenders).toEqual([]);
  });

  it('the checks can fail: a runtime file that classified a key or imported the reader would be caught', () => {
    const sample = `import { SegmentReader } from '../sources/segment/segment-reader.ts';\nif (SegmentReader.isSegment(key)) {}`;
    expect(KIND_PREDICATES.some((p) => p.test(sample))).toBe(true);
    expect(KIND_SPECIFIC.some((k) => k.test('gpu-worker/sources/segment/segment-reader.ts'))).toBe(true);
    expect(KIND_PREDICATES.some((p) => p.test(`const p = parseSourceKey(key); if (p.container !== 'image') {}`))).toBe(true);
  });
});
