/**
 * A live source in a codec the worker does not decode (MJPEG, MPEG-4 Part 2, VP8, ...),
 * or H.264 / H.265 with open GOPs, is transcoded to H.264 by the `ffmpeg` program run as
 * a child process (issue 41; docs/decisions.md 70). The capture (cli/video/stream-source.ts)
 * keeps reading the camera itself, through node-av, with the same timeouts and reasons as
 * a camera it cuts by stream copy, and hands the camera's packets as they come to the
 * child's stdin in NUT (FFmpeg's own container: any codec, each packet's timestamps in
 * the stream's time base). The child writes H.264 in MPEG-TS to its stdout, which the
 * capture cuts into segments exactly as it cuts a camera's H.264, so numbering, journal
 * and time line are the same code. The child never sees the camera's URL (its password
 * stays in this process's memory) and the camera is read over one connection.
 *
 * Why a child and not node-av in process (as files are transcoded: cli/video/transcode.ts):
 * a live transcode in process crashed the whole process (SIGSEGV in a node-av libuv
 * worker after a stop), and `affinity edge` runs every camera of a site in one process. A
 * transcoder that dies now costs its own camera an outage (reconnected with backoff,
 * logged, counted like a stalled source), never the other cameras.
 *
 * The encoding: libx264, `veryfast`, `zerolatency` (no lookahead and no B-frames: at most
 * a frame or so inside the encoder), 4:2:0 (what NVDEC decodes; MJPEG is 4:2:2), even
 * sizes, every decoded frame kept with its own timestamp (`-fps_mode passthrough`: no
 * frame dropped or doubled to fit a rate), closed GOPs with a keyframe every segment
 * length by time (`-force_key_frames`), CRF 20 or an average bit rate. `-flush_packets 1`:
 * each frame reaches the pipe when it is encoded. When the camera's stream ends (a drop,
 * a stall, a stop), the child's stdin is closed and FFmpeg flushes every frame it holds.
 *
 * Pure argument building ({@link transcoderArgs}) is unit-tested; {@link startTranscoder}
 * runs the child.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { IOOutputCallbacks } from 'node-av/api';

/** The `ffmpeg` program: `AFFINITY_FFMPEG` when set, else the one on the PATH. */
export function ffmpegProgram(env: NodeJS.ProcessEnv = process.env): string {
  return env.AFFINITY_FFMPEG || 'ffmpeg';
}

/** The container the camera's packets go to the child in. */
export const TRANSCODER_INPUT_FORMAT = 'nut';

export interface TranscoderOptions {
  /** Seconds between forced keyframes: the segment length, so each segment starts at one. */
  readonly keyframeSeconds: number;
  /** Average bit rate, kbit/s; absent: constant quality (CRF 20). */
  readonly bitrateKbps?: number | undefined;
}

/** The `ffmpeg` arguments of a live transcode: the camera's packets in NUT on stdin, H.264 in MPEG-TS on stdout (module comment). Pure. */
export function transcoderArgs(o: TranscoderOptions): string[] {
  const rate = o.bitrateKbps !== undefined ? ['-b:v', `${o.bitrateKbps}k`, '-maxrate', `${Math.round(o.bitrateKbps * 1.5)}k`, '-bufsize', `${o.bitrateKbps * 2}k`] : ['-crf', '20'];
  return [
    // errors only: what it says is the reason of an outage (its warnings are about pixel formats and RTP jitter)
    '-hide_banner', '-nostdin', '-loglevel', 'error',
    '-f', TRANSCODER_INPUT_FORMAT, '-i', 'pipe:0',
    '-map', '0:v:0', '-an', '-sn', '-dn',
    '-fps_mode', 'passthrough',
    '-vf', 'scale=trunc(iw/2)*2:trunc(ih/2)*2,format=yuv420p',
    '-c:v', 'libx264', '-preset', 'veryfast', '-tune', 'zerolatency', '-bf', '0',
    // closed GOPs (x264's default), a keyframe every segment length by time, none in between
    '-force_key_frames', `expr:gte(t,n_forced*${o.keyframeSeconds})`, '-g', '100000', '-sc_threshold', '0',
    ...rate,
    '-flush_packets', '1',
    '-f', 'mpegts', 'pipe:1',
  ];
}

/** Replaces the password of every URL in `text` (FFmpeg's messages repeat the URL it was given). */
export function redactUrls(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^/:@\s]*):[^/@\s]*@/gi, '$1:***@');
}

/** How the child ended. `signal`: killed (a crash, or our SIGKILL), so its last bytes may be cut short. */
export interface TranscoderExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Transcoder {
  /** Where the camera's packets go (a node-av Muxer's output, in {@link TRANSCODER_INPUT_FORMAT}): a write after the child is gone fails (EPIPE) instead of waiting for ever. */
  readonly input: IOOutputCallbacks;
  /** H.264 in MPEG-TS. */
  readonly stdout: Readable;
  readonly pid: number | undefined;
  /** Resolves when the child has exited (or could not start: `code` null, `spawnError` set). */
  readonly exited: Promise<TranscoderExit & { readonly spawnError?: Error }>;
  /** Whether the child has exited or its stdin broke. */
  gone(): boolean;
  /** What the child said last (its errors), redacted; null if nothing. */
  said(): string | null;
  /** Closes the child's stdin: FFmpeg flushes every frame it holds and exits; SIGKILL if it has not after `graceMs`. */
  finish(graceMs?: number): void;
  /** SIGKILL (a child that hangs). */
  kill(): void;
}

const EPIPE = -32;

/** Starts `ffmpeg` with {@link transcoderArgs}. */
export function startTranscoder(o: TranscoderOptions, program = ffmpegProgram()): Transcoder {
  // Its own process group: a Ctrl-C in the terminal reaches only this process, whose stop
  // ends the camera's stream and so lets the child flush every frame it holds. (It cannot
  // outlive this process: its stdin ends and its stdout breaks.)
  const child: ChildProcessByStdio<Writable, Readable, Readable> = spawn(program, transcoderArgs(o), { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  let broken = false;
  child.stdin.on('error', () => void (broken = true)); // EPIPE once the child is gone: the next write says so
  const lines: string[] = [];
  let partial = '';
  child.stderr.on('data', (d: Buffer) => {
    const text = partial + d.toString();
    const parts = text.split('\n');
    partial = parts.pop() ?? '';
    for (const l of parts) if (l.trim()) lines.push(l.trim());
    if (lines.length > 20) lines.splice(0, lines.length - 20);
  });
  const exited = new Promise<TranscoderExit & { spawnError?: Error }>((resolve) => {
    child.once('error', (e) => resolve({ code: null, signal: null, spawnError: e }));
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  let done = false;
  void exited.then(() => (done = true));
  const gone = (): boolean => done || broken || child.stdin.destroyed;
  const input: IOOutputCallbacks = {
    write: async (buffer: Buffer): Promise<number> => {
      if (gone()) return EPIPE;
      const copy = Buffer.from(buffer); // FFmpeg reuses its buffer once this returns
      if (!child.stdin.write(copy)) {
        // back pressure; a child that dies meanwhile closes the pipe, which ends the wait too
        await new Promise<void>((resolve) => {
          const over = (): void => {
            child.stdin.off('drain', over);
            child.stdin.off('close', over);
            child.stdin.off('error', over);
            resolve();
          };
          child.stdin.on('drain', over);
          child.stdin.on('close', over);
          child.stdin.on('error', over);
        });
      }
      return gone() ? EPIPE : copy.length;
    },
  };
  return {
    input,
    stdout: child.stdout,
    pid: child.pid,
    exited,
    said: () => {
      // the most telling line: the last error-like one, else the last
      const all = partial.trim() ? [...lines, partial.trim()] : lines;
      const pick = [...all].reverse().find((l) => /error|fail|refused|timed out|invalid|not found|unable|cannot|no such/i.test(l)) ?? all.at(-1);
      return pick ? redactUrls(pick) : null;
    },
    gone,
    finish(graceMs = 10_000) {
      if (done) return;
      child.stdin.end();
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      void exited.then(() => clearTimeout(t));
    },
    kill: () => void (done || child.kill('SIGKILL')),
  };
}

/** Why a transcoder ended, in words (the reconnect's reason). */
export function transcoderEnded(exit: TranscoderExit & { readonly spawnError?: Error }, said: string | null, program = ffmpegProgram()): string {
  if (exit.spawnError) return `the transcoder (${program}) could not start: ${exit.spawnError.message}`;
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return `the transcoder (${program}) ${how}${said ? `: ${said}` : ''}`;
}
