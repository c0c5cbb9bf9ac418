/**
 * `affinity edge`'s spool bound on real files: a real RTSP camera, fauxqs S3 taken away
 * (every request answered 503) while the camera streams into a spool bounded to about
 * three segments. The oldest waiting segments are deleted first, each drop is said on the
 * console and as a JSON line, and counted in the health output; when S3 is back, what
 * landed plus what was dropped is exactly what was captured, the dropped frames are the
 * holes in the chain (their numbers never reused), and the spool folder is empty.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeHealth } from '../../../cli/edge/edge-command.ts';
import type { SpoolDrop } from '../../../cli/edge/spool-queue.ts';
import { parseSourceKey } from '../../../core/ingest/segment-keys.ts';
import { startRtspCamera, type RtspCamera } from '../../support/rtsp-camera.ts';
import { startS3Stack, type S3Stack } from '../../support/s3-stack.ts';
import { spawnAffinity } from '../../support/stream-child.ts';

let stack: S3Stack;
let camera: RtspCamera;
let work: string;

beforeAll(async () => {
  stack = await startS3Stack();
  camera = await startRtspCamera({ fps: 15, gop: 15 });
  work = mkdtempSync(path.join(tmpdir(), 'edge-spool-test-'));
});

afterAll(async () => {
  stack?.s3Down(false);
  await camera?.stop();
  await stack?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('affinity edge: the spool bound', () => {
  it('drops the oldest waiting segments while S3 is away, says and counts each drop, and loses nothing else', async () => {
    const file = path.join(work, 'cameras.yaml');
    const stateDir = path.join(work, 'state');
    // 1-s segments of this camera are ~75 KiB: the bound holds about three
    writeFileSync(file, ['stateDir: ' + stateDir, 'cameras:', '  - video: lobby', `    url: ${camera.url}`, '    segmentSeconds: 1', '    spoolMaxBytes: 240KiB', ''].join('\n'));
    const edge = spawnAffinity(['edge', '--config', file, '--json', '--verbose', '--status-seconds', '1', '--retry-cap-seconds', '1', '--state-dir', stack.stateDir]);
    const UPLOADED = /^lobby: uploaded frames\/lobby\//;
    try {
      await edge.waitCount(UPLOADED, 2);
      stack.s3Down(true);
      await edge.waitCount(/^lobby: spool full \(.* waiting, bound 240\.0 KiB\): dropped the oldest \d+ segment\(s\), frames \d+-\d+ \(\d+, .*\); they become gaps\. Dropped so far: .*; uploads fail: /, 3, 40_000);
      stack.s3Down(false);
      await edge.waitCount(/^lobby: uploads work again after /, 1, 30_000);
      const after = edge.count(UPLOADED);
      await edge.waitCount(UPLOADED, after + 2);
    } finally {
      stack.s3Down(false);
      expect(await edge.stop(), edge.lines.join('\n')).toBe(0);
    }
    const drops = edge.lines.filter((l) => l.startsWith('{"type":"spool.dropped"')).map((l) => JSON.parse(l) as SpoolDrop & { videoId: string });
    expect(drops.length).toBeGreaterThanOrEqual(3);
    const final = edge.lines.filter((l) => l.startsWith('{"type":"health"')).map((l) => JSON.parse(l) as EdgeHealth).at(-1)!.cameras[0]!;
    expect(final.spool!.droppedSegments).toBe(drops.reduce((n, d) => n + d.keys.length, 0));
    expect(final.spool!.droppedFrames).toBe(drops.reduce((n, d) => n + d.frames, 0));
    expect(final.spool!.pendingSegments).toBe(0);

    // what landed and what was dropped are disjoint and together are every frame captured, numbered once
    const landed = (await stack.objects('lobby')).map((o) => ({ ...o, first: (parseSourceKey(o.key) as { firstFrame: number }).firstFrame }));
    const dropped = new Set(drops.flatMap((d) => d.keys));
    for (const o of landed) expect(dropped.has(o.key), o.key).toBe(false);
    const landedFrames = landed.reduce((n, o) => n + o.frames!, 0);
    expect(landedFrames + final.spool!.droppedFrames).toBe(final.framesCaptured);
    // the holes in the chain are exactly the dropped ranges: no number reused, none skipped otherwise
    let next = 0;
    const holes: [number, number][] = [];
    for (const o of landed.sort((a, b) => a.first - b.first)) {
      if (o.first > next) holes.push([next, o.first - 1]);
      next = o.first + o.frames!;
    }
    expect(holes.reduce((n, [a, b]) => n + b - a + 1, 0)).toBe(final.spool!.droppedFrames);
    for (const key of dropped) {
      const first = (parseSourceKey(key) as { firstFrame: number }).firstFrame;
      expect(holes.some(([a, b]) => first >= a && first <= b), `${key} is a hole`).toBe(true);
    }
    // the spool folder holds nothing (dropped files deleted, the rest uploaded)
    expect(readdirSync(path.join(stateDir, 'lobby.json.spool')).filter((f) => f !== 'open.part')).toEqual([]);
  });
});
