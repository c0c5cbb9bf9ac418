/**
 * The commands that bring video in: `upload` (a folder of frames or a video file), `stream` (one live
 * camera or a file, segmented as it goes) and `edge` (a fleet of cameras from one config file).
 */
import { stat } from 'node:fs/promises';
import { CliError } from '../io.ts';
import { uploadCommand } from './upload.ts';
import { parseBitrate, parseContainer, parseSeconds, uploadFileCommand } from '../video/upload-command.ts';
import { streamCommand } from '../video/stream-command.ts';
import { edgeCommand } from '../edge/edge-command.ts';
import { VIDEO_ID_PATTERN } from '../../core/ingest/keys.ts';
import { checkSiteVideoId, SITE_ENV, uploaderSite } from '../site.ts';
import { intFlag, stringFlag, type Command, type Values } from './flags.ts';

/** Whether `p` is a regular file (a video) rather than a folder (frames) or nothing. */
async function isFile(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isFile() ?? false;
}

function checkVideoId(id: string): void {
  if (!VIDEO_ID_PATTERN.test(id) || id === '.' || id === '..') throw new CliError(`invalid video id "${id}": use 1-128 of A-Z a-z 0-9 . _ -`, 2);
}

/** A video id an uploader may send: valid, and a camera of its site when one is configured (cli/site.ts). */
function checkUploadVideoId(id: string, values: Values): void {
  checkVideoId(id);
  checkSiteVideoId(id, uploaderSite(stringFlag(values, 'site')));
}

const SITE_HELP = `  --site SITE           this box's site: refuse a video id that is not SITE.<camera>, which the stack's
                        uploader policy would refuse too (default: the ${SITE_ENV} environment variable; docs/deploy.md §14)`;

export const INGEST_COMMANDS = {
  upload: {
    usage: 'upload <dir | file> --video <id> [--end] [--concurrency N] [--first-frame N] [--segment-seconds N] [--container ts|mp4|mkv] [--bitrate KBPS]',
    summary: 'upload a folder of frames, or a video file cut into segments (resumable, parallel)',
    details: `A folder: uploads its .jpg/.jpeg/.png files as frames/<id>/<frame>.<ext>. The frame number is the
last number in each file name, or else the file's position in natural order plus --first-frame.

A video file (H.264 or H.265 in MP4, Matroska, MPEG-TS, MOV, anything FFmpeg demuxes): cuts it at
keyframes without re-encoding into segments of about --segment-seconds and uploads each as
frames/<id>/<n>.<ext>, covering frames [n, n + k), with k in x-amz-meta-frames. Any other codec FFmpeg
decodes (MJPEG, MPEG-4 Part 2, VP8/VP9, AV1, ...), or H.264/H.265 with open GOPs, is first transcoded to
H.264 in process at its own resolution and timestamps (said on the console). A file with no video, or
one whose video cannot be decoded, is refused before anything is sent.

Objects already uploaded with the same size are skipped, so re-running resumes an interrupted upload.

  --video ID            video id (required)
  --end                 write the end-of-stream marker frames/<id>/_end (last frame number) after the frames
  --concurrency N       parallel uploads (default 8 frames, 4 segments)
  --first-frame N       first frame number for images without a number, or of a video file's first frame
                        (default: the stack's firstFrameNumber; a video file starts at 0 when it is automatic)
  --segment-seconds N   video file: a segment closes at the first keyframe N s after its start (default 2)
  --container C         video file: segment container, ts (default), mp4 or mkv
  --bitrate KBPS        video file that is transcoded: average bit rate in kbit/s (or 2M, 800k); default constant quality
${SITE_HELP}`,
    positionals: ['path'],
    options: {
      video: { type: 'string' },
      end: { type: 'boolean' },
      concurrency: { type: 'string' },
      'first-frame': { type: 'string' },
      'segment-seconds': { type: 'string' },
      container: { type: 'string' },
      site: { type: 'string' },
      bitrate: { type: 'string' },
    },
    run: async (t, [input], v, io) => {
      if (typeof v.video !== 'string') throw new CliError('upload needs --video <id>', 2);
      checkUploadVideoId(v.video, v);
      const common = {
        videoId: v.video,
        end: Boolean(v.end),
        ...(v.concurrency !== undefined ? { concurrency: intFlag(v, 'concurrency')! } : {}),
        ...(v['first-frame'] !== undefined ? { firstFrame: intFlag(v, 'first-frame')! } : {}),
      };
      if (await isFile(input!)) {
        return uploadFileCommand(
          t,
          {
            ...common,
            file: input!,
            segmentSeconds: parseSeconds('segment-seconds', stringFlag(v, 'segment-seconds'), 2),
            container: parseContainer(stringFlag(v, 'container')),
            ...(v.bitrate !== undefined ? { bitrateKbps: parseBitrate(stringFlag(v, 'bitrate')) } : {}),
          },
          io,
        );
      }
      if (v['segment-seconds'] !== undefined || v.container !== undefined || v.bitrate !== undefined) throw new CliError('--segment-seconds, --container and --bitrate apply to a video file, not a folder', 2);
      return uploadCommand(t, { ...common, dir: input! }, io);
    },
  },
  stream: {
    usage: 'stream <rtsp-url | file> --video <id> [--segment-seconds N] [--realtime] [--state-file PATH] [--end] [--container ts|mp4|mkv] [--first-frame N] [--read-timeout N] [--bitrate KBPS]',
    summary: 'the edge segmenter: cut a live camera (or a file) into segments and upload each as it closes',
    details: `Reads an RTSP camera (or any URL FFmpeg opens: rtmp://, srt://, udp://, http://) or a file, closes a
segment at the first keyframe --segment-seconds after its start (stream copy of H.264/H.265; a file in any
other codec, or with open GOPs, is first transcoded to H.264 in process; a live source in another codec
(MJPEG, MPEG-4 Part 2, VP8, ...), or with open GOPs, is transcoded to H.264 as it goes by an ffmpeg child
process, a keyframe every --segment-seconds; each said on the console with the codec's name) and uploads it
as frames/<id>/<n>.<ext> with its frame count in x-amz-meta-frames, n being the running frame number.

A live source that drops is reopened with capped, jittered exponential backoff (each reconnect is logged
with its reason; a transcoder that dies is such an outage); uploads are retried the same way. Each segment is numbered in the state file, written
atomically, before it is sent, so a restart (even after kill -9) sends it again under the same key and
continues the numbering after it; the bucket's listing is read at start so numbering never goes back.
SIGINT / SIGTERM close the open segment, upload everything journaled and exit.

  --video ID            video id (required)
  --segment-seconds N   segment length in seconds, closed at the next keyframe (default 2)
  --realtime            a file: send it at the pace of its timestamps, as a camera would
  --state-file PATH     the numbering journal (default .affinity-stream/<id>.json; segments wait in PATH.spool/)
  --end                 on a clean stop, write the end-of-stream marker frames/<id>/_end (last frame number)
  --container C         segment container: ts (default), mp4 or mkv
  --first-frame N       number of a new video's first frame (default 0)
  --read-timeout N      a live source silent this many seconds has dropped and is reopened (default 10)
  --bitrate KBPS        a file or camera that is transcoded (not H.264/H.265, or open GOPs): average kbit/s
                        (or 2M, 800k); default constant quality (CRF 20)
${SITE_HELP}`,
    positionals: ['source'],
    options: {
      video: { type: 'string' },
      'segment-seconds': { type: 'string' },
      realtime: { type: 'boolean' },
      'state-file': { type: 'string' },
      end: { type: 'boolean' },
      container: { type: 'string' },
      'first-frame': { type: 'string' },
      'read-timeout': { type: 'string' },
      site: { type: 'string' },
      bitrate: { type: 'string' },
    },
    run: async (t, [source], v, io) => {
      if (typeof v.video !== 'string') throw new CliError('stream needs --video <id>', 2);
      checkUploadVideoId(v.video, v);
      const firstFrame = intFlag(v, 'first-frame');
      if (firstFrame !== undefined && firstFrame < 0) throw new CliError('--first-frame must be 0 or more', 2);
      const stop = new AbortController();
      const onSignal = (): void => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        return await streamCommand(
          t,
          {
            source: source!,
            videoId: v.video,
            segmentSeconds: parseSeconds('segment-seconds', stringFlag(v, 'segment-seconds'), 2),
            realtime: Boolean(v.realtime),
            end: Boolean(v.end),
            container: parseContainer(stringFlag(v, 'container')),
            ...(typeof v['state-file'] === 'string' ? { stateFile: v['state-file'] } : {}),
            ...(firstFrame !== undefined ? { firstFrame } : {}),
            readTimeoutSeconds: parseSeconds('read-timeout', stringFlag(v, 'read-timeout'), 10),
            ...(v.bitrate !== undefined ? { bitrateKbps: parseBitrate(stringFlag(v, 'bitrate')) } : {}),
            signal: stop.signal,
          },
          io,
        );
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    },
  },
  edge: {
    usage: 'edge --config <cameras.yaml | cameras.json> [--json] [--status-seconds N] [--verbose] [--retry-cap-seconds N]',
    summary: 'a fleet of cameras from one edge process: one segmenter per camera of a config file, watched',
    details: `Runs the edge segmenter of \`stream\` for every camera the config file lists (video id, RTSP URL, segment
length, spool bound; \${NAME} in a URL is read from the environment, never stored). Each camera reconnects on its
own with capped backoff; a camera in another codec than H.264/H.265 (MJPEG, MPEG-4 Part 2, ...) or with open GOPs
is transcoded to H.264 by an ffmpeg child process of its own (bitrateKbps sets its rate), whose death is that
camera's outage; its segments wait in a spool bounded in bytes (the oldest are dropped first, counted and
reported). Each outage is one source.stalled and one source.resumed. The file is re-read when it changes: cameras
added, changed or removed are started, restarted or stopped, the others keep running. SIGINT / SIGTERM close every
open segment, upload what is journaled and exit. See docs/cli.md for the file's format.

  --config FILE            the camera list: JSON (.json) or YAML (block mappings and lists, scalars, comments)
  --json                   events and health as JSON lines on stdout
  --status-seconds N       one status line per camera (stderr) and health output every N s (default 10)
  --verbose                a line per uploaded segment
  --retry-cap-seconds N    longest wait between reconnects and upload retries (default 30)`,
    positionals: [],
    options: {
      config: { type: 'string' },
      json: { type: 'boolean' },
      'status-seconds': { type: 'string' },
      verbose: { type: 'boolean' },
      'retry-cap-seconds': { type: 'string' },
    },
    run: async (t, _p, v, io) => {
      if (typeof v.config !== 'string') throw new CliError('edge needs --config <cameras.yaml | cameras.json>', 2);
      const stop = new AbortController();
      const onSignal = (): void => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        const cap = v['retry-cap-seconds'] !== undefined ? parseSeconds('retry-cap-seconds', stringFlag(v, 'retry-cap-seconds'), 30) : undefined;
        return await edgeCommand(
          t,
          {
            configFile: v.config,
            json: Boolean(v.json),
            verbose: Boolean(v.verbose),
            statusSeconds: parseSeconds('status-seconds', stringFlag(v, 'status-seconds'), 10),
            ...(cap !== undefined ? { backoff: { capMs: cap * 1000, baseMs: Math.min(500, cap * 1000) } } : {}),
            signal: stop.signal,
          },
          io,
        );
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    },
  },
} satisfies Record<string, Command>;
