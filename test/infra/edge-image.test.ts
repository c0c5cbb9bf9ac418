/**
 * The edge image (cli/edge/Dockerfile) is checked by reading, as the worker's is
 * (test/infra/no-lab-in-product.test.ts): nothing here runs Docker. What `affinity edge`
 * loads (esbuild's metafile of cli/bin.ts) must lie in the folders the Dockerfile copies,
 * and the ignore file named after it must admit exactly those.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../infra/lambda-defaults.ts';

const read = (p: string) => readFileSync(path.join(REPO_ROOT, p), 'utf8');

describe('the edge image', () => {
  const dockerfile = read('cli/edge/Dockerfile');
  const instructions = dockerfile.split('\n').filter((l) => !l.trimStart().startsWith('#'));
  const copied = instructions
    .filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))
    .flatMap((l) => l.replace(/^COPY\s+/, '').split(/\s+/).slice(0, -1).filter((a) => !a.startsWith('--')));
  const ignore = read('cli/edge/Dockerfile.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

  it('copies the manifests, .npmrc, core/, cli/ and gpu-worker/video/, and its ignore file admits exactly those', () => {
    expect(copied.sort()).toEqual(['.npmrc', 'cli', 'core', 'gpu-worker/video', 'package-lock.json', 'package.json', 'package.json'].sort());
    expect(ignore[0]).toBe('*');
    expect(ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1)).sort()).toEqual(['.npmrc', 'cli/**', 'core/**', 'gpu-worker/video/**', 'package-lock.json', 'package.json']);
  });

  it('runs affinity edge in exec form (SIGTERM reaches node) as a non-root user', () => {
    expect(instructions).toContain('ENTRYPOINT ["node", "cli/bin.ts", "edge"]');
    expect(instructions).toContain('USER edge');
  });

  it('has the ffmpeg program with libx264 in its runtime stage: the transcoder of cameras in other codecs (decision 74), checked at build time', () => {
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).toMatch(/apt-get install -y --no-install-recommends ffmpeg/);
    expect(runtime).toMatch(/ffmpeg -hide_banner -h encoder=libx264 \| grep -q 'Encoder libx264'/);
  });

  it('holds every file the CLI loads', async () => {
    const result = await build({ absWorkingDir: REPO_ROOT, entryPoints: ['cli/bin.ts'], bundle: true, platform: 'node', format: 'esm', packages: 'external', write: false, outdir: 'out', metafile: true, logLevel: 'silent' });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs).toContain('cli/edge/edge-command.ts');
    expect(inputs.filter((p) => !/^(cli|core|gpu-worker\/video)\//.test(p))).toEqual([]);
  });
});
