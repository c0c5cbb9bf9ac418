/**
 * Real H.264 made by the test, not committed: `ffmpeg` (the Debian binary, libx264)
 * encodes `testsrc2` with a keyframe every `gop` frames, no B-frames unless asked.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface MakeVideoOptions {
  readonly seconds: number;
  readonly fps: number;
  /** Frames between keyframes. */
  readonly gop: number;
  readonly size?: string;
  readonly bframes?: number;
}

/** Writes an H.264 video to `file` (container from its extension); resolves when done. */
export async function makeH264(file: string, o: MakeVideoOptions): Promise<void> {
  await run('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', `testsrc2=size=${o.size ?? '320x240'}:rate=${o.fps}:duration=${o.seconds}`,
    '-c:v', 'libx264', '-preset', 'ultrafast', '-threads', '1', '-pix_fmt', 'yuv420p',
    '-g', String(o.gop), '-keyint_min', String(o.gop), '-sc_threshold', '0', '-bf', String(o.bframes ?? 0),
    file,
  ]);
}

/** The ffmpeg arguments that send a live H.264 (or H.265) MPEG-TS test pattern to a UDP port at real pace. */
export function liveUdpArgs(udpPort: number, o: { fps: number; gop: number; codec?: 'h264' | 'h265' }): string[] {
  const encoder =
    o.codec === 'h265'
      ? ['-c:v', 'libx265', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-x265-params', `log-level=error:pools=1:frame-threads=1:keyint=${o.gop}:min-keyint=${o.gop}:scenecut=0:bframes=0:repeat-headers=1`]
      : ['-c:v', 'libx264', '-preset', 'ultrafast', '-threads', '1', '-pix_fmt', 'yuv420p', '-g', String(o.gop), '-keyint_min', String(o.gop), '-sc_threshold', '0', '-bf', '0'];
  return [
    '-hide_banner', '-loglevel', 'error', '-re',
    '-f', 'lavfi', '-i', `testsrc2=size=320x240:rate=${o.fps}`,
    ...encoder,
    '-f', 'mpegts', `udp://127.0.0.1:${udpPort}?pkt_size=1316`,
  ];
}
