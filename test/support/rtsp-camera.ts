/**
 * A real RTSP camera for the stream tests: GStreamer's RTSP server
 * (test/support/rtsp-server.py, Debian packages) fed by ffmpeg, which encodes a live
 * H.264 test pattern and sends it as MPEG-TS over UDP (test/support/make-video.ts).
 * `kill()` takes the camera off the network the hard way (SIGKILL of the server; ffmpeg
 * goes on encoding, as a camera does while its link is down) and `start()` brings it
 * back on the same port; `freeze()` makes it go silent with its connections open;
 * `switchCodec('h265')` brings it back encoding H.265 (`codec` picks the first one).
 *
 * Missing packages fail the test with the command that installs them (`.ci/run` does),
 * never a skip.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../local/emulators.ts';
import { liveUdpArgs } from './make-video.ts';

/** The interpreter with Debian's python3-gi (a pyenv or venv python has no GObject bindings). */
export const SYSTEM_PYTHON = process.env.AFFINITY_TEST_PYTHON ?? '/usr/bin/python3';
const SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'rtsp-server.py');
export const RTSP_PACKAGES = 'python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad ffmpeg';

/** Throws a clear error when the RTSP server cannot run here. */
export function requireRtspServer(python = SYSTEM_PYTHON): void {
  const why = (e: unknown): string => String((e as { stderr?: Buffer }).stderr || (e as Error).message).trim().split('\n').pop() ?? '';
  const missing = (what: string, e: unknown): Error =>
    new Error(
      `the RTSP test camera needs ${what}, which is missing (${why(e)}).\n` +
        `Install it with: apt-get install -y --no-install-recommends ${RTSP_PACKAGES}  (.ci/run does this)`,
    );
  try {
    execFileSync(python, ['-c', "import gi; gi.require_version('Gst','1.0'); gi.require_version('GstRtspServer','1.0'); from gi.repository import Gst, GstRtspServer; Gst.init(None); assert Gst.ElementFactory.find('tsdemux') and Gst.ElementFactory.find('rtph264pay') and Gst.ElementFactory.find('h264parse') and Gst.ElementFactory.find('udpsrc') and Gst.ElementFactory.find('h265parse') and Gst.ElementFactory.find('rtph265pay'), 'a GStreamer plugin (tsdemux, h264parse, rtph264pay, h265parse, rtph265pay or udpsrc) is missing'"], { stdio: 'pipe' });
  } catch (e) {
    throw missing(`GStreamer's RTSP server for ${python}`, e);
  }
  try {
    execFileSync('ffmpeg', ['-hide_banner', '-h', 'encoder=libx264'], { stdio: 'pipe' });
  } catch (e) {
    throw missing('ffmpeg with libx264', e);
  }
}

async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address();
  s.close();
  return port;
}

export interface RtspCamera {
  readonly url: string;
  /** (Re)starts the RTSP server on the camera's port; resolves once it listens. `codec`: what it serves (default: what the feed encodes). */
  start(codec?: RtspCodec): Promise<void>;
  /** SIGKILLs the RTSP server (the camera drops off the network). */
  kill(): Promise<void>;
  /** SIGSTOPs / SIGCONTs the RTSP server: connections stay open and go silent (a network that stalls). */
  freeze(frozen: boolean): void;
  /** Takes the camera off the network, re-encodes in `codec` (a firmware update, a changed profile) and brings it back on the same URL. */
  switchCodec(codec: 'h264' | 'h265'): Promise<void>;
  stop(): Promise<void>;
}

/**
 * What the camera serves: H.264, H.265 or MPEG-4 Part 2 from ffmpeg's feed, or GStreamer's
 * own live pattern in VP8 or Motion JPEG (cameras whose codec the worker does not decode).
 */
export type RtspCodec = 'h264' | 'h265' | 'vp8' | 'mjpeg' | 'mpeg4';

/** What ffmpeg's feed encodes (the server serves it, or, for vp8 and mjpeg, its own pattern). */
export type FeedCodec = 'h264' | 'h265' | 'mpeg4';

/** `openGop`: an H.264 feed with open GOPs and B-frames (a camera whose segments would not decode alone). */
export async function startRtspCamera(o: { fps: number; gop: number; codec?: FeedCodec; openGop?: boolean }): Promise<RtspCamera> {
  requireRtspServer();
  const port = await freePort();
  const udpPort = await freeUdpPort();
  let codec = o.codec ?? 'h264';
  let feeder = spawn('ffmpeg', liveUdpArgs(udpPort, { ...o, codec }), { stdio: ['ignore', 'ignore', 'pipe'] });
  let server: ChildProcess | undefined;
  // Without an argument the server serves what the feed encodes (`codec`, switchCodec's).
  const start = async (serve?: RtspCodec): Promise<void> => {
    for (let tries = 0; ; tries++) {
      const child = spawn(SYSTEM_PYTHON, [SERVER, String(port), String(udpPort), serve ?? codec], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      const ready = await new Promise<boolean>((resolve) => {
        child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve(true));
        child.once('exit', () => resolve(false));
      });
      if (ready) {
        server = child;
        return;
      }
      if (tries >= 20) throw new Error(`the RTSP test server did not start on port ${port}: ${err.trim()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const kill = async (): Promise<void> => {
    const s = server;
    server = undefined;
    if (!s || s.exitCode !== null) return;
    s.kill('SIGKILL');
    await once(s, 'exit');
  };
  const stopFeeder = async (): Promise<void> => {
    if (feeder.exitCode === null) {
      feeder.kill('SIGKILL');
      await once(feeder, 'exit');
    }
  };
  await start();
  return {
    url: `rtsp://127.0.0.1:${port}/cam`,
    start,
    kill,
    async switchCodec(next) {
      await kill();
      await stopFeeder();
      codec = next;
      feeder = spawn('ffmpeg', liveUdpArgs(udpPort, { ...o, codec }), { stdio: ['ignore', 'ignore', 'pipe'] });
      await start();
    },
    freeze: (frozen) => void server?.kill(frozen ? 'SIGSTOP' : 'SIGCONT'),
    async stop() {
      server?.kill('SIGCONT');
      await kill();
      await stopFeeder();
    },
  };
}
