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
export function liveUdpArgs(udpPort: number, o: { fps: number; gop: number; codec?: 'h264' | 'h265' | 'mpeg4'; openGop?: boolean }): string[] {
  const encoder =
    o.openGop && (o.codec ?? 'h264') === 'h264'
      ? ['-c:v', 'libx264', '-preset', 'ultrafast', '-threads', '1', '-pix_fmt', 'yuv420p', '-x264-params', `open-gop=1:keyint=${o.gop}:min-keyint=${o.gop}:bframes=3:b-pyramid=0:scenecut=0`]
      : o.codec === 'mpeg4'
      ? ['-c:v', 'mpeg4', '-q:v', '5', '-g', String(o.gop), '-bf', '0']
      : o.codec === 'h265'
      ? ['-c:v', 'libx265', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-x265-params', `log-level=error:pools=1:frame-threads=1:keyint=${o.gop}:min-keyint=${o.gop}:scenecut=0:bframes=0:repeat-headers=1`]
      : ['-c:v', 'libx264', '-preset', 'ultrafast', '-threads', '1', '-pix_fmt', 'yuv420p', '-g', String(o.gop), '-keyint_min', String(o.gop), '-sc_threshold', '0', '-bf', '0'];
  return [
    '-hide_banner', '-loglevel', 'error', '-re',
    '-f', 'lavfi', '-i', `testsrc2=size=320x240:rate=${o.fps}`,
    ...encoder,
    '-f', 'mpegts', `udp://127.0.0.1:${udpPort}?pkt_size=1316`,
  ];
}

/** A codec a source may arrive in, with the ffmpeg encoder arguments that make it. */
export const SOURCE_CODECS = {
  h264: ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-bf', '0'],
  hevc: ['-c:v', 'libx265', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-x265-params', 'log-level=error:bframes=0'],
  mjpeg: ['-c:v', 'mjpeg', '-q:v', '5'],
  mpeg4: ['-c:v', 'mpeg4', '-q:v', '5'],
  msmpeg4: ['-c:v', 'msmpeg4', '-q:v', '5'],
  cinepak: ['-c:v', 'cinepak'],
  vp8: ['-c:v', 'libvpx', '-deadline', 'realtime', '-b:v', '500k'],
  vp9: ['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '500k'],
  av1: ['-c:v', 'libaom-av1', '-cpu-used', '8', '-b:v', '300k'],
} as const satisfies Record<string, readonly string[]>;
export type SourceCodec = keyof typeof SOURCE_CODECS;

/**
 * Writes a `seconds`-long test pattern in `codec` to `file` (container from its extension:
 * .avi, .mkv, .mp4, .webm, .mov). `vfr`: a variable frame rate, the time between frames
 * alternating 1/fps and 2/fps (and a 0.5-s pause after frame 10).
 */
export async function makeSource(file: string, codec: SourceCodec, o: { seconds: number; fps: number; gop?: number; size?: string; vfr?: boolean }): Promise<void> {
  const gop = o.gop ?? o.fps;
  const vfr = o.vfr ? ['-vf', `setpts='(N+floor(N/2)+if(gte(N,10),${o.fps / 2},0))/${o.fps}/TB'`, '-vsync', 'vfr'] : [];
  await run('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', `testsrc2=size=${o.size ?? '320x240'}:rate=${o.fps}:duration=${o.seconds}`,
    ...vfr, ...SOURCE_CODECS[codec], '-g', String(gop), '-threads', '1',
    file,
  ]);
}

/** The presentation times (ms) of the frames FFmpeg's own decoder outputs from `file` (ffprobe decodes as ffmpeg does). */
export async function ffmpegFrameTimes(file: string): Promise<number[]> {
  const { stdout } = await run('ffprobe', ['-v', 'quiet', '-select_streams', 'v:0', '-show_entries', 'frame=pts_time', '-of', 'csv=p=0', file], { maxBuffer: 64 << 20 });
  return stdout
    .split('\n')
    .map((l) => l.split(',')[0]!.trim())
    .filter((l) => /^-?\d/.test(l))
    .map((l) => Number(l) * 1000);
}
