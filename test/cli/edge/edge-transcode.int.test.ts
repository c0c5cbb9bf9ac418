/**
 * `affinity edge` with a real Motion JPEG RTSP camera (GStreamer's RTSP server:
 * test/support/rtsp-camera.ts) and fauxqs S3, run as the real binary (decision 74):
 *
 * - the camera is transcoded to H.264 by an ffmpeg child of its own, said once with the
 *   codec's name; its health shows `mjpeg` and why it is transcoded, its status line
 *   `mjpeg>h264`;
 * - the child SIGKILLed mid-stream is that camera's outage: one source.stalled (its reason
 *   the child's end) and one source.resumed, the edge process and its numbering carry on;
 * - every frame captured is in exactly one segment in S3 (the chain is contiguous from
 *   frame 0, each segment decodes to the frames it declares, their sum is the camera's
 *   `framesCaptured`), and the real worker (in process, on the twins) gives each exactly
 *   one ok record.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeEvent } from '../../../cli/edge/fleet.ts';
import type { EdgeHealth } from '../../../cli/edge/edge-command.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';
import { startRtspCamera, type RtspCamera } from '../../support/rtsp-camera.ts';
import { startS3Stack, type S3Stack } from '../../support/s3-stack.ts';
import { checkedChain, spawnAffinity } from '../../support/stream-child.ts';

let stack: S3Stack;
let camera: RtspCamera;
let work: string;

beforeAll(async () => {
  stack = await startS3Stack();
  camera = await startRtspCamera({ fps: 15, gop: 15 });
  await camera.kill();
  await camera.start('mjpeg');
  work = mkdtempSync(path.join(tmpdir(), 'edge-transcode-'));
});

afterAll(async () => {
  await camera?.stop();
  await stack?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The pids of `pid`'s children named `comm`. */
function childrenNamed(pid: number, comm: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid && stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === comm) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe('affinity edge: a Motion JPEG camera', () => {
  it('is transcoded by a child of its own; the child killed is one stalled/resumed pair; every frame captured once, one ok record each', async () => {
    const file = path.join(work, 'cameras.yaml');
    writeFileSync(file, [`stateDir: ${path.join(work, 'state')}`, 'defaults:', '  segmentSeconds: 1', '  readTimeoutSeconds: 5', 'cameras:', '  - video: dock', `    url: ${camera.url}`, ''].join('\n'));
    const edge = spawnAffinity(['edge', '--config', file, '--json', '--verbose', '--status-seconds', '2', '--retry-cap-seconds', '2', '--state-dir', stack.stateDir]);
    const uploaded = /^dock: uploaded frames\/dock\//;
    const events = (): EdgeEvent[] => edge.lines.filter((l) => l.startsWith('{"type":"event"')).map((l) => JSON.parse(l) as EdgeEvent);
    try {
      await edge.waitCount(/^dock: mjpeg: transcoded to H\.264 by an ffmpeg process, CRF 20, as the worker decodes H\.264 and H\.265, not mjpeg$/, 1, 30_000);
      await edge.waitCount(uploaded, 3, 30_000);
      const [ffmpeg] = childrenNamed(edge.child.pid!, 'ffmpeg');
      expect(ffmpeg, 'the edge runs an ffmpeg child for the camera').toBeDefined();
      process.kill(ffmpeg!, 'SIGKILL');
      await edge.waitCount(/^dock: source\.stalled \(outage 1\): the transcoder \(ffmpeg\) was killed by SIGKILL/, 1, 20_000);
      await edge.waitCount(/^dock: source\.resumed \(outage 1\)/, 1, 30_000);
      const after = edge.count(uploaded);
      await edge.waitCount(uploaded, after + 2, 30_000);
      await edge.waitCount(/^\{"type":"health"/, 1);
    } finally {
      expect(await edge.stop(), edge.lines.join('\n')).toBe(0);
    }
    const log = edge.lines.join('\n');
    expect(events().map((e) => `${e.kind}#${e.detail.outage}`), log).toEqual(['source.stalled#1', 'source.resumed#1']);
    // said once, not at every reconnect
    expect(edge.count(/^dock: mjpeg: transcoded to H\.264/)).toBe(1);
    expect(edge.count(/^dock: capturing /)).toBe(1);

    const health = edge.lines.filter((l) => l.startsWith('{"type":"health"')).map((l) => JSON.parse(l) as EdgeHealth).at(-1)!.cameras.find((c) => c.video === 'dock')!;
    expect(health.codec).toBe('mjpeg');
    expect(health.transcode).toBe('codec');
    // the status line shows the camera's codec and that it goes up as H.264
    expect(edge.lines.some((l) => /^dock\s+\S+\s+mjpeg>h264\s+frames \d+/.test(l)), log).toBe(true);
    const chain = await checkedChain(stack, 'dock');
    const frames = chain.reduce((n, c) => n + c.frames, 0);
    expect(frames, log).toBe(health.framesCaptured);
    expect(health.spool).toMatchObject({ pendingSegments: 0, droppedSegments: 0 });

    const h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 300 } });
    try {
      const worker = h.createWorker(0).start();
      await h.pinVideo('dock', 0);
      for (const c of chain) await h.putSegment('dock', c.firstFrame, await stack.body(c.key), { frames: c.frames, container: 'mpegts' });
      await h.putEnd('dock', frames - 1);
      for (const c of chain) await h.sendSegment(0, 'dock', c.firstFrame, 'mpegts');
      await h.sendEnd(0, 'dock');
      await h.waitForSummary('dock', (s) => s.status === 'complete', 90_000);
      const records = (await h.frameResults('dock')).map((r) => `${r.frame}:${r.status}`);
      console.info(`edge mjpeg: ${chain.length} segments, ${frames} frames captured, ${records.filter((r) => r.endsWith(':ok')).length} ok records`);
      expect(records).toEqual(Array.from({ length: frames }, (_, i) => `${i}:ok`));
      await worker.stop();
    } finally {
      await h.stop();
    }
  }, 180_000);
});
