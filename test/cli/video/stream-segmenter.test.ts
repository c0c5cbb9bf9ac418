/**
 * The pure rules of `affinity stream` (cli/video/stream-segmenter.ts), table-driven: where
 * segments open and close, the time line across reconnects, the backoff, and the files of
 * the state (atomic write, spool cleaning).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { backoffMs, decidePacket, isLiveSource, redactSource, secondsToTicks, Timeline, type OpenSegment, type PacketAction } from '../../../cli/video/stream-segmenter.ts';
import { closeSegment, initialState } from '../../../cli/video/stream-journal.ts';
import { cleanSpool, PARTIAL_SEGMENT, readStateFile, spoolDirOf, writeStateFile } from '../../../cli/video/stream-state.ts';

describe('decidePacket', () => {
  const open = (startDts: bigint, frames = 10): OpenSegment => ({ startDts, frames });
  it.each<[string, OpenSegment | null, { keyframe: boolean; dts: bigint; timestamped?: boolean }, PacketAction]>([
    ['nothing open, a delta frame: skipped (cannot start a segment)', null, { keyframe: false, dts: 0n }, 'skip'],
    ['nothing open, a keyframe: opens', null, { keyframe: true, dts: 0n }, 'open'],
    ['nothing open, a keyframe without a timestamp (a connection\'s first packet): skipped', null, { keyframe: true, dts: 0n, timestamped: false }, 'skip'],
    ['open, a delta frame: written', open(0n), { keyframe: false, dts: 500_000n }, 'write'],
    ['open, a keyframe before the segment length: written', open(0n), { keyframe: true, dts: 89_999n }, 'write'],
    ['open, a keyframe at the segment length: rotates', open(0n), { keyframe: true, dts: 90_000n }, 'rotate'],
    ['open, a keyframe long after: rotates', open(0n), { keyframe: true, dts: 900_000n }, 'rotate'],
    ['open and full, an early keyframe: rotates', open(0n, 36_000), { keyframe: true, dts: 1n }, 'rotate'],
    ['open and full, a delta frame: written (a cut must start at a keyframe)', open(0n, 36_000), { keyframe: false, dts: 1n }, 'write'],
  ])('%s', (_what, o, packet, want) => expect(decidePacket(o, packet, 90_000n, 36_000)).toBe(want));

  it.each<[number, [number, number], bigint]>([
    [1, [1, 90_000], 90_000n],
    [2, [1, 90_000], 180_000n],
    [0.5, [1, 1000], 500n],
    [1, [1001, 30_000], 30n],
  ])('secondsToTicks(%s, %j) = %s', (s, tb, want) => expect(secondsToTicks(s, tb)).toBe(want));
});

describe('Timeline', () => {
  const p = (dts: number | null, pts: number | null = dts, duration = 3000) => ({ dts: dts === null ? null : BigInt(dts), pts: pts === null ? null : BigInt(pts), duration: BigInt(duration) });

  it('starts a live source at 0 whatever its clock, and keeps its spacing', () => {
    const t = new Timeline({ lastDts: null, defaultStep: 3000n });
    expect([t.map(p(900_000)), t.map(p(903_000)), t.map(p(906_000, 912_000))]).toEqual([
      { dts: 0n, pts: 0n },
      { dts: 3000n, pts: 3000n },
      { dts: 6000n, pts: 12_000n },
    ]);
  });

  it('after a reconnect, continues after the last frame plus the wall-clock gap, whatever the new clock says', () => {
    const t = new Timeline({ lastDts: null, defaultStep: 3000n });
    t.map(p(500));
    t.map(p(3500));
    t.reconnected(90_000n); // one second of outage
    expect(t.map(p(0))).toEqual({ dts: 3000n + 90_000n, pts: 3000n + 90_000n });
    expect(t.map(p(3000))).toEqual({ dts: 96_000n, pts: 96_000n });
  });

  it('continues a saved time line (a restart)', () => {
    const t = new Timeline({ lastDts: 1_000_000n, defaultStep: 3000n });
    t.reconnected(0n);
    expect(t.map(p(42))).toEqual({ dts: 1_003_000n, pts: 1_003_000n });
  });

  it('gives a packet without timestamps the last one plus a frame', () => {
    const t = new Timeline({ lastDts: null, defaultStep: 3000n });
    expect([t.map(p(null)), t.map(p(3000)), t.map(p(null))]).toEqual([
      { dts: 0n, pts: 0n },
      { dts: 3000n, pts: 3000n },
      { dts: 6000n, pts: 6000n },
    ]);
  });

  it('re-bases when the source clock goes back or stands still, never writing a decode time twice', () => {
    const t = new Timeline({ lastDts: null, defaultStep: 3000n });
    t.map(p(30_000));
    t.map(p(33_000));
    expect(t.map(p(33_000))).toEqual({ dts: 6000n, pts: 6000n });
    expect(t.map(p(1000))).toEqual({ dts: 9000n, pts: 9000n });
    expect(t.map(p(4000))).toEqual({ dts: 12_000n, pts: 12_000n });
  });

  it('keeps a file\'s own timestamps', () => {
    const t = new Timeline({ lastDts: null, defaultStep: 512n }, true);
    expect([t.map(p(1024, 2048, 512)), t.map(p(1536, 1536, 512))]).toEqual([
      { dts: 1024n, pts: 2048n },
      { dts: 1536n, pts: 1536n },
    ]);
  });
});

describe('backoffMs', () => {
  it.each<[number, number, number]>([
    // attempt, random, delay: half of min(cap, base * 2^attempt) fixed, the other half jittered
    [0, 0, 250],
    [0, 0.999999, 500],
    [1, 0, 500],
    [3, 0.5, 3000],
    [6, 0, 15_000],
    [7, 0, 15_000],
    [7, 0.999999, 30_000],
    [50, 0.5, 22_500],
  ])('attempt %s, random %s -> %s ms', (attempt, r, want) => expect(backoffMs(attempt, { baseMs: 500, capMs: 30_000, random: () => r })).toBe(want));

  it('never exceeds the cap and never comes sooner than half of it once capped', () => {
    for (let i = 0; i < 200; i++) {
      const d = backoffMs(20);
      expect(d).toBeGreaterThanOrEqual(15_000);
      expect(d).toBeLessThanOrEqual(30_000);
    }
  });
});

describe('sources', () => {
  it.each<[string, boolean]>([
    ['rtsp://cam.local:554/stream1', true],
    ['RTSPS://cam/x', true],
    ['rtmp://server/live', true],
    ['srt://host:9000', true],
    ['udp://239.0.0.1:1234', true],
    ['https://host/cam.m3u8', true],
    ['clip.mp4', false],
    ['/data/rtsp-recording.mkv', false],
  ])('%s is live: %s', (s, live) => expect(isLiveSource(s)).toBe(live));

  it('redacts a password from a URL for logs', () => {
    expect(redactSource('rtsp://admin:s3cret@10.0.0.5:554/h264')).toBe('rtsp://admin:***@10.0.0.5:554/h264');
    expect(redactSource('rtsp://10.0.0.5/h264')).toBe('rtsp://10.0.0.5/h264');
  });
});

describe('state files', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'stream-state-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes atomically (no temporary left) and reads back; no file is a fresh state', () => {
    const file = path.join(dir, 'a', 'cam.json');
    expect(readStateFile(file, 'cam', 'mpegts', 5)).toEqual({ state: initialState('cam', 'mpegts', 5), existed: false });
    const s = closeSegment(initialState('cam', 'mpegts', 0), { key: 'frames/cam/000000.ts', firstFrame: 0, frames: 15, file: '/x/000000.ts', bytes: 9 });
    writeStateFile(file, s);
    writeStateFile(file, s);
    expect(readdirSync(path.dirname(file))).toEqual(['cam.json']);
    expect(readStateFile(file, 'cam', 'mpegts', 0)).toEqual({ state: s, existed: true });
    expect(JSON.parse(readFileSync(file, 'utf8')).nextFrame).toBe(15);
  });

  it('cleans the spool of everything the journal does not name (the open segment of a crashed run)', () => {
    const spool = spoolDirOf(path.join(dir, 'b.json'));
    mkdirSync(spool, { recursive: true });
    for (const name of [PARTIAL_SEGMENT, '000000.ts', '000015.ts']) writeFileSync(path.join(spool, name), 'x');
    const s = closeSegment(initialState('cam', 'mpegts', 0), { key: 'frames/cam/000000.ts', firstFrame: 0, frames: 15, file: path.join(spool, '000000.ts'), bytes: 1 });
    expect(cleanSpool(spool, s).sort()).toEqual(['000015.ts', PARTIAL_SEGMENT].sort());
    expect(existsSync(path.join(spool, '000000.ts'))).toBe(true);
  });
});
