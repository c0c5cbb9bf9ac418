/**
 * The fleet's handling of its config file, in process: cameras whose RTSP port refuses
 * (no server, nothing started) and an S3 client double that lists an empty prefix. A
 * camera missing its environment variable is refused alone; a file that stops parsing
 * changes nothing; a camera added is started and the others are not restarted; a stop
 * ends every camera. (Real cameras and S3: test/cli/edge/edge.int.test.ts.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeCommand } from '../../../cli/edge/edge-command.ts';
import { memoryIo } from '../../../cli/io.ts';
import type { Target } from '../../../cli/target.ts';
import { waitFor } from '../../../harness/wait.ts';

let work: string;
let refusedPort: number;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'edge-command-'));
  // a port that was free a moment ago: connections to it are refused
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  refusedPort = (s.address() as { port: number }).port;
  s.close();
});

afterAll(() => rmSync(work, { recursive: true, force: true }));

const target = {
  description: 'a test double',
  bucket: 'b',
  region: 'us-east-1',
  clients: { s3: { send: async () => ({ Contents: [] }) } as unknown as S3Client },
} as unknown as Target;

describe('edgeCommand and its config file', () => {
  it('refuses one camera alone, keeps running through a broken file, starts an added camera without restarting the others', async () => {
    const file = path.join(work, 'cameras.yaml');
    const cam = (v: string, url = `rtsp://127.0.0.1:${refusedPort}/${v}`) => [`  - video: ${v}`, `    url: ${url}`];
    const write = (...cams: string[][]) => writeFileSync(file, ['stateDir: state', 'defaults:', '  readTimeoutSeconds: 1', 'cameras:', ...cams.flat(), ''].join('\n'));
    write(cam('a'), cam('b', `rtsp://u:\${EDGE_TEST_PW}@127.0.0.1:${refusedPort}/b`));
    const io = memoryIo();
    const stop = new AbortController();
    const running = edgeCommand(target, { configFile: file, json: true, statusSeconds: 0.2, watchSeconds: 0.1, drainSeconds: 1, backoff: { baseMs: 50, capMs: 200 }, env: {}, signal: stop.signal }, io);
    try {
      await waitFor('a stalls', () => io.errors.some((l) => /^a: source\.stalled \(outage 1, never connected\)/.test(l)), 10_000);
      expect(io.errors).toContain('b: not started: the environment variable EDGE_TEST_PW is not set (the URL names ${EDGE_TEST_PW}); set it in the edge process\'s environment, e.g. an EnvironmentFile of its systemd unit');

      writeFileSync(file, 'cameras: [oops');
      await waitFor('the broken file is said', () => io.errors.some((l) => /changed but cannot be used \(.*line 1: .*\); the cameras keep running as they are$/.test(l)), 10_000);

      write(cam('a'), cam('c'));
      await waitFor('c stalls', () => io.errors.some((l) => /^c: source\.stalled/.test(l)), 10_000);
      await waitFor('a health line with a and c', () => io.lines.some((l) => l.includes('"type":"health"') && l.includes('"video":"c"')), 10_000);
    } finally {
      stop.abort();
    }
    const summary = await running;
    expect(summary.cameras.map((c) => c.video).sort()).toEqual(['a', 'c']);
    expect(io.errors.filter((l) => l.startsWith('a: capturing '))).toHaveLength(1); // never restarted
    expect(io.errors.some((l) => /changed: 1 camera\(s\) to start, 0 to restart, 0 to stop, 1 left running$/.test(l))).toBe(true);
    // one stall each, however many refused attempts
    const events = io.lines.filter((l) => l.startsWith('{"type":"event"')).map((l) => JSON.parse(l) as { videoId: string; kind: string });
    expect(events.map((e) => `${e.videoId}:${e.kind}`).sort()).toEqual(['a:source.stalled', 'c:source.stalled']);
    expect(summary.cameras.find((c) => c.video === 'a')!.reconnectAttempts).toBeGreaterThan(1);
  });
});
