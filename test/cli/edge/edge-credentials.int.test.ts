/**
 * `affinity edge` with short-lived credentials from the AWS SDK's standard chain: an AWS
 * config profile whose `credential_process` (what IAM Roles Anywhere's signing helper is
 * run as) prints credentials that expire in seconds, against a real RTSP camera and fauxqs
 * S3, the real binary, no long-term keys in its environment:
 *
 * - the process fails at start: the edge says what to check and retries with backoff;
 * - it works: the camera's segments go up, the process is run again for each renewal;
 * - it fails again while the camera streams: every upload retry says so, the segments
 *   wait in the spool, and all of them land, each once, when it works again.
 *
 * The minute of failure that issue 45 names runs on a fake clock in
 * test/cli/edge/spool-queue.test.ts; here it is a bounded ~12 s with a 2-s retry cap.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeHealth } from '../../../cli/edge/edge-command.ts';
import { startRtspCamera, type RtspCamera } from '../../support/rtsp-camera.ts';
import { startS3Stack, type S3Stack } from '../../support/s3-stack.ts';
import { checkedChain, spawnAffinity } from '../../support/stream-child.ts';

let stack: S3Stack;
let camera: RtspCamera;
let work: string;

beforeAll(async () => {
  stack = await startS3Stack();
  camera = await startRtspCamera({ fps: 15, gop: 15 });
  work = mkdtempSync(path.join(tmpdir(), 'edge-cred-test-'));
});

afterAll(async () => {
  await camera?.stop();
  await stack?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('affinity edge with a credential_process profile', () => {
  it('retries with a clear message while the process fails, spools meanwhile, and lands every segment once when it works', async () => {
    const failFlag = path.join(work, 'fail');
    const calls = path.join(work, 'calls');
    const script = path.join(work, 'credential-process.sh');
    // Credentials valid 5 s. The SDK renews from 5 min before expiry on, and keeps using credentials that are still
    // valid while a renewal fails; once they have expired, a failing process fails the upload.
    writeFileSync(
      script,
      [
        '#!/bin/sh',
        `echo call >> '${calls}'`,
        `if [ -e '${failFlag}' ]; then echo "signing helper: certificate not yet valid (test)" >&2; exit 1; fi`,
        'exp=$(date -u -d "+5 seconds" +%Y-%m-%dT%H:%M:%SZ)',
        'printf \'{"Version":1,"AccessKeyId":"ASIAEDGETEST","SecretAccessKey":"short-lived","SessionToken":"session","Expiration":"%s"}\\n\' "$exp"',
        '',
      ].join('\n'),
    );
    chmodSync(script, 0o755);
    const awsConfig = path.join(work, 'aws-config');
    writeFileSync(awsConfig, `[profile site-a]\ncredential_process = ${script}\nregion = us-east-1\n`);
    const file = path.join(work, 'cameras.json');
    writeFileSync(file, JSON.stringify({ stateDir: path.join(work, 'state'), profile: 'site-a', defaults: { segmentSeconds: 1, readTimeoutSeconds: 5 }, cameras: [{ video: 'door-1', url: camera.url }] }));
    const env: NodeJS.ProcessEnv = { ...process.env, AWS_CONFIG_FILE: awsConfig, AWS_SHARED_CREDENTIALS_FILE: path.join(work, 'none'), AWS_EC2_METADATA_DISABLED: 'true' };
    for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE']) delete env[k];

    writeFileSync(failFlag, '');
    const edge = spawnAffinity(['edge', '--config', file, '--json', '--verbose', '--status-seconds', '1', '--retry-cap-seconds', '2', '--state-dir', stack.stateDir], env);
    const UPLOADED = /^door-1: uploaded frames\/door-1\//;
    let failedUploads: string[] = [];
    try {
      await edge.waitCount(/^affinity edge: .*credentials: the AWS SDK chain, profile site-a/, 1);
      await edge.waitCount(/^door-1: cannot list s3:\/\/.*the AWS credentials could not be obtained or have expired: check the credential_process/, 2);
      rmSync(failFlag);
      await edge.waitCount(UPLOADED, 3);

      // the process fails while the camera streams: uploads fail with the reason, segments wait
      writeFileSync(failFlag, '');
      await edge.waitCount(/^door-1: upload of .* failed \(.*\): the AWS credentials could not be obtained/, 3, 30_000);
      const waiting = await waitForHealth(edge.lines, (h) => (h.cameras[0]?.spool?.pendingSegments ?? 0) >= 3);
      expect(waiting.cameras[0]!.spool!.failing).toMatchObject({ kind: 'credentials' });
      await new Promise((r) => setTimeout(r, 4_000));
      rmSync(failFlag);
      await edge.waitCount(/^door-1: uploads work again after \d+\.\d s and \d+ failed attempt\(s\)/, 1, 30_000);
      const landedBefore = edge.count(UPLOADED);
      await edge.waitCount(UPLOADED, landedBefore + 2);
      failedUploads = edge.lines.filter((l) => /^door-1: upload of /.test(l));
    } finally {
      if (existsSync(failFlag)) rmSync(failFlag);
      expect(await edge.stop(), edge.lines.join('\n')).toBe(0);
    }
    const log = edge.lines.join('\n');
    // what failed, what to check (the SDK's chain hides the process's own words: the hint names the command that shows them)
    expect(failedUploads[0], log).toMatch(/failed \(CredentialsProviderError: .*\): the AWS credentials could not be obtained or have expired: check the credential_process of profile site-a .*`aws configure export-credentials --profile site-a`.* in \d+\.\d s \(attempt 1\); \d+ segment\(s\), .* wait in the spool/);
    // the chain ran the process again and again (renewals and retries), never a long-term key
    expect(readFileSync(calls, 'utf8').trim().split('\n').length).toBeGreaterThanOrEqual(5);
    // every segment once, contiguous, nothing dropped, everything captured is in S3
    const chain = await checkedChain(stack, 'door-1');
    const keys = edge.lines.filter((l) => UPLOADED.test(l)).map((l) => l.split(' ')[2]!.replace(/:$/, ''));
    expect(new Set(keys).size).toBe(keys.length);
    expect(chain.map((c) => c.key)).toEqual(keys);
    const final = edge.lines.filter((l) => l.startsWith('{"type":"health"')).map((l) => JSON.parse(l) as EdgeHealth).at(-1)!;
    expect(final.cameras[0]!.spool).toMatchObject({ pendingSegments: 0, droppedSegments: 0, failing: null });
    expect(chain.reduce((n, c) => n + c.frames, 0)).toBe(final.cameras[0]!.framesCaptured);
  });
});

async function waitForHealth(lines: readonly string[], ok: (h: EdgeHealth) => boolean, timeoutMs = 30_000): Promise<EdgeHealth> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const h = lines.filter((l) => l.startsWith('{"type":"health"')).map((l) => JSON.parse(l) as EdgeHealth).at(-1);
    if (h && ok(h)) return h;
    if (Date.now() > until) throw new Error(`no health line matched:\n${lines.slice(-20).join('\n')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
