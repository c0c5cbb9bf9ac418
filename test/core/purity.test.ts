/**
 * The purity line of core/, per wing (core/ordering, leases, commit, ingest, fleet,
 * analytics; docs/decisions.md 54): a wing's port and pure rules sit in its folder, its
 * adapters in a technology sub-folder (`dynamodb/`, `sqs/`, `s3/`, `ecs/`), its in-memory
 * twin of the AWS API under it (which speaks the SDK's command shapes and throws its error
 * classes) in `memory/`; core/aws/ holds only client plumbing. A file outside those
 * folders that imports the AWS SDK (`@aws-sdk/*`) or its Smithy runtime (`@smithy/*`),
 * even for types only, fails here.
 *
 * The port line: the router, the janitor and the worker runtime take ports
 * (core/leases/port.ts, core/ingest/port.ts), never an adapter or a twin; only composition
 * roots build those.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CORE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../core');

// Static imports and re-exports (`… from '…'`, `import '…'`), dynamic `import('…')` and `require('…')`.
const SPECIFIER = /(?:\bfrom\s*|^\s*import\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)(['"])([^'"\n]+)\1/gm;
const AWS_PACKAGE = /^@(?:aws-sdk|smithy)\//;
/** Where a file under core/ may speak AWS: client plumbing, a wing's adapter folder, a wing's twin. */
const ADAPTER_FOLDER = /^(?:aws\/|[^/]+\/(?:dynamodb|sqs|s3|ecs)\/)/;
const TWIN_FOLDER = /^[^/]+\/memory\//;
/** The wings, each a concept with its port, rules, adapters and twin. */
const WINGS = ['ordering', 'leases', 'commit', 'ingest', 'fleet', 'analytics'];

/** Every module specifier a source text imports (types included), comments stripped first. */
function importsOf(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
  return [...code.matchAll(SPECIFIER)].map((m) => m[2]!);
}

/** The AWS SDK / Smithy module specifiers a source text imports. */
function awsImports(source: string): string[] {
  return importsOf(source).filter((s) => AWS_PACKAGE.test(s));
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

describe('awsImports (the scanner the purity check uses)', () => {
  it.each([
    [`import { S3Client } from '@aws-sdk/client-s3';`, ['@aws-sdk/client-s3']],
    [`import type { HttpRequest } from "@smithy/types";`, ['@smithy/types']],
    [`import {\n  GetCommand,\n  PutCommand,\n} from '@aws-sdk/lib-dynamodb';`, ['@aws-sdk/lib-dynamodb']],
    [`export { NoSuchKey } from '@aws-sdk/client-s3';`, ['@aws-sdk/client-s3']],
    [`const m = await import('@smithy/core');`, ['@smithy/core']],
    [`import '@aws-sdk/client-sqs';`, ['@aws-sdk/client-sqs']],
    [`const x = require('@aws-sdk/client-ecs');`, ['@aws-sdk/client-ecs']],
    [`import { parseFrameKey } from './keys.ts';`, []],
    [`// import { S3Client } from '@aws-sdk/client-s3';`, []],
    [`/** Mirrors @aws-sdk's retry: import x from '@aws-sdk/client-s3' */`, []],
    [`const url = 'https://example.com/@aws-sdk/x';`, []],
  ])('finds the AWS imports of %j', (source, expected) => {
    expect(awsImports(source)).toEqual(expected);
  });
});

describe('core/ purity line', () => {
  const files = tsFiles(CORE).map((f) => path.relative(CORE, f).split(path.sep).join('/'));

  it('scans the whole of core/, adapters included', () => {
    expect(files).toContain('config.ts');
    expect(files).toContain('aws/clients.ts');
  });

  it('has its wings, and core/aws/ holds only client plumbing', () => {
    for (const wing of WINGS) expect(files.some((f) => f.startsWith(`${wing}/`)), wing).toBe(true);
    expect(files.filter((f) => f.startsWith('aws/')).sort()).toEqual(['aws/clients.ts', 'aws/instrumentation.ts']);
  });

  it('no file under core/ outside an adapter folder or a twin imports @aws-sdk or @smithy', () => {
    const offenders = files
      .filter((f) => !ADAPTER_FOLDER.test(f) && !TWIN_FOLDER.test(f))
      .flatMap((f) => awsImports(readFileSync(path.join(CORE, f), 'utf8')).map((spec) => `core/${f} imports ${spec}`));
    expect(offenders).toEqual([]);
  });
});

describe('the port line', () => {
  const ROOT = path.resolve(CORE, '..');
  const consumers = ['core/fleet/router.ts', 'core/fleet/janitor.ts', 'core/fleet/task-launch.ts', 'core/fleet/queue-sweep.ts', 'core/fleet/slot-dlq-gauge.ts', 'core/fleet/standby-seats.ts', 'core/fleet/stopped-task.ts', ...tsFiles(path.join(ROOT, 'gpu-worker/runtime')).map((f) => path.relative(ROOT, f).split(path.sep).join('/'))];

  it('the router, the janitor and the worker runtime import no adapter and no twin', () => {
    const offenders = consumers.flatMap((f) =>
      importsOf(readFileSync(path.join(ROOT, f), 'utf8'))
        .filter((spec) => spec.startsWith('.'))
        .map((spec) => path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, f)), spec)).split(path.sep).join('/'))
        .filter((target) => target.startsWith('core/') && (ADAPTER_FOLDER.test(target.slice(5)) || TWIN_FOLDER.test(target.slice(5))))
        .map((target) => `${f} imports ${target}`),
    );
    expect(consumers).toContain('gpu-worker/runtime/worker.ts');
    expect(offenders).toEqual([]);
  });
});

describe('the client factory', () => {
  it('imports neither the instrumentation nor the fault injection (the composition roots install them)', () => {
    const imports = importsOf(readFileSync(path.join(CORE, 'aws/clients.ts'), 'utf8'));
    expect(imports.filter((s) => /instrumentation|fault-injection/.test(s))).toEqual([]);
  });
});
