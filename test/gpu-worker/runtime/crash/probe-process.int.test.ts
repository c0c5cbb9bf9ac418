/**
 * The crash probe's child process (decision 41) for real: gpu-worker/probe-main.ts forked
 * with the stats processor, dying on the WORKER_CRASH_ON_KEY seam as a poison frame would
 * kill it; a child that cannot load its model; a child that hangs on a frame.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { ProcessProbe, type ProcessProbeOptions } from '../../../../gpu-worker/runtime/crash/probe-process.ts';
import type { FrameInput } from '../../../../core/ports.ts';
import sharp from 'sharp';

const ENTRY = fileURLToPath(new URL('../../../../lab/probe-main.ts', import.meta.url));
const HUNG = fileURLToPath(new URL('../../../support/probe/hung-child.ts', import.meta.url));
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

let probe: ProcessProbe | undefined;
afterEach(async () => {
  await probe?.stop();
  probe = undefined;
});

function start(env: Record<string, string>, options: Partial<ProcessProbeOptions> = {}): ProcessProbe {
  probe = new ProcessProbe({ entry: ENTRY, env: { ...process.env, FRAME_PROCESSOR: 'stats', WORKER_CRASH_ON_KEY: 'poison', ...env }, log: quiet, ...options });
  return probe;
}

const frame = (n: number, key = `frames/v/${n}.jpg`): FrameInput => ({ videoId: 'v', frame: n, image: new Uint8Array(64).fill(n), key });

describe('ProcessProbe', () => {
  it('a frame the child survives is `survived`; a frame that kills it is `died`, and the next try gets a fresh child', async () => {
    const p = start({});
    expect(await p.tryFrame(frame(1))).toEqual({ kind: 'survived' });
    expect(await p.tryFrame(frame(2))).toEqual({ kind: 'survived' });
    expect(p.started).toBe(1);
    const died = await p.tryFrame(frame(3, 'frames/v/poison.jpg'));
    expect(died).toEqual({ kind: 'died', detail: 'the child killed by SIGKILL' });
    expect(p.deaths).toBe(1);
    // A fresh child for the next frame; the poison kills that one too
    expect(await p.tryFrame(frame(4))).toEqual({ kind: 'survived' });
    expect(p.started).toBe(2);
    expect((await p.tryFrame(frame(3, 'frames/v/poison.jpg'))).kind).toBe('died');
    expect(p.deaths).toBe(2);
  }, 60_000);

  it('frames asked for at once are tried one at a time, so a death names its frame', async () => {
    const p = start({});
    const [a, b, c] = await Promise.all([p.tryFrame(frame(1)), p.tryFrame(frame(2, 'frames/v/poison.jpg')), p.tryFrame(frame(3))]);
    expect([a.kind, b.kind, c.kind]).toEqual(['survived', 'died', 'survived']);
    expect(p.deaths).toBe(1);
    expect(p.started).toBe(2);
  }, 60_000);

  it('warm starts the child ahead of the first frame', async () => {
    const p = start({});
    p.warm();
    p.warm();
    expect(p.started).toBe(1);
    expect(await p.tryFrame(frame(1))).toEqual({ kind: 'survived' });
    expect(p.started).toBe(1);
  }, 60_000);

  it('a child that cannot load its model makes the probe unavailable, and after two such starts it stops trying', async () => {
    const p = start({ FRAME_PROCESSOR: 'vision', MODEL_URI: '/nonexistent/model.onnx' });
    const first = await p.tryFrame(frame(1));
    expect(first.kind).toBe('unavailable');
    expect((first as { reason: string }).reason).toMatch(/nonexistent|ENOENT|no such file/i);
    expect((await p.tryFrame(frame(1))).kind).toBe('unavailable');
    expect(p.started).toBe(2);
    const third = await p.tryFrame(frame(1));
    expect(third.kind).toBe('unavailable');
    expect((third as { reason: string }).reason).toContain('2 children failed to start');
    expect(p.started).toBe(2);
  }, 120_000);

  it('a child that holds a frame past the timeout is killed, and the frame counts as a death', async () => {
    probe = new ProcessProbe({ entry: HUNG, env: process.env, log: quiet, tryTimeoutMs: 300 });
    const r = await probe.tryFrame(frame(1));
    expect(r.kind).toBe('died');
    expect((r as { detail: string }).detail).toContain('no answer within 300 ms');
  }, 60_000);

  it('an answer that came while this process was held up (a pause) is not taken for a hang when the timeout fires late', async () => {
    const p = start({}, { tryTimeoutMs: 200 });
    expect(await p.tryFrame(frame(1))).toEqual({ kind: 'survived' });
    const r = p.tryFrame(frame(2));
    // Hold the event loop for 1.5 s right after the frame is sent: the child answers meanwhile,
    // and the 200-ms timer is overdue when the loop runs again, as after a SIGSTOP.
    setImmediate(() => {
      const end = Date.now() + 1_500;
      while (Date.now() < end);
    });
    expect(await r).toEqual({ kind: 'survived' });
    expect(p.deaths).toBe(0);
  }, 60_000);

  it('an idle child is stopped, and a later frame starts a fresh one', async () => {
    const p = start({}, { idleStopMs: 200 });
    expect(await p.tryFrame(frame(1))).toEqual({ kind: 'survived' });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(p.running).toBe(false);
    expect(await p.tryFrame(frame(2))).toEqual({ kind: 'survived' });
    expect(p.started).toBe(2);
  }, 60_000);

  it('after stop, nothing is tried', async () => {
    const p = start({});
    expect(await p.tryFrame(frame(1))).toEqual({ kind: 'survived' });
    await p.stop();
    expect(p.running).toBe(false);
    expect((await p.tryFrame(frame(2))).kind).toBe('unavailable');
  }, 60_000);

  it('with the vision processor (the demo model): a real JPEG and an undecodable one both leave the child alive', async () => {
    const p = start({ FRAME_PROCESSOR: 'vision', MODEL_URI: '' });
    const image = await sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 90, g: 140, b: 200 } } }).jpeg().toBuffer();
    expect(await p.tryFrame({ videoId: 'v', frame: 1, image, key: 'frames/v/1.jpg' })).toEqual({ kind: 'survived' });
    // Undecodable bytes are the frame's own failed outcome, not a death
    expect(await p.tryFrame({ videoId: 'v', frame: 2, image: new Uint8Array([0xff, 0xd8, 0xff, 1, 2, 3]), key: 'frames/v/2.jpg' })).toEqual({ kind: 'survived' });
    expect(p.started).toBe(1);
    expect(p.deaths).toBe(0);
  }, 120_000);
});
