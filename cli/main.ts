/**
 * The operator CLI's argument handling and dispatch (bin.ts only calls {@link main}).
 * Arguments are parsed with `node:util` parseArgs: strict, typed, no dependency.
 */
import { stat } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CliError, processIo, type Io } from './io.ts';
import { countsCommand } from './commands/counts.ts';
import { eventsCommand } from './commands/events.ts';
import { EXPORT_FORMATS, exportCommand, type ExportFormat } from './commands/export.ts';
import { reconcileCommand } from './commands/reconcile.ts';
import { releaseCommand } from './commands/release.ts';
import { renderCommand } from './commands/render.ts';
import { redriveCommand, type RedriveQueues } from './commands/redrive.ts';
import { replayCommand } from './commands/replay.ts';
import { resultsCommand, type ResultsFormat } from './commands/results.ts';
import { statusCommand } from './commands/status.ts';
import { uploadCommand } from './commands/upload.ts';
import { parseBitrate, parseContainer, parseSeconds, uploadFileCommand } from './video/upload-command.ts';
import { streamCommand } from './video/stream-command.ts';
import { edgeCommand } from './edge/edge-command.ts';
import { videoCommand } from './commands/video.ts';
import { resolveTarget, type Target } from './target.ts';
import { VIDEO_ID_PATTERN } from '../core/ingest/keys.ts';
import { checkSiteVideoId, SITE_ENV, uploaderSite } from './site.ts';

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | undefined>;

const GLOBAL_OPTIONS = {
  'state-dir': { type: 'string' },
  stack: { type: 'string' },
  region: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

const GLOBAL_HELP = `Global options:
  --state-dir DIR   local stack state directory holding stack.json (default .local)
  --stack NAME      target a deployed CloudFormation stack instead (AWS credential chain)
  --region REGION   region of --stack (default: AWS_REGION / profile)
  -h, --help        show help`;

interface Command {
  readonly usage: string;
  readonly summary: string;
  readonly details: string;
  readonly positionals: readonly string[];
  readonly options: Options;
  run(target: Target, positionals: string[], values: Values, io: Io): Promise<unknown>;
}

function intFlag(values: Values, name: string): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (typeof raw !== 'string' || !/^-?\d+$/.test(raw) || !Number.isSafeInteger(n)) throw new CliError(`--${name} must be an integer (got "${String(raw)}")`, 2);
  return n;
}

/** A retention in days for the cost estimate: an integer, at least 0. */
function retentionDays(values: Values, name: string): number {
  const n = intFlag(values, name)!;
  if (n < 0) throw new CliError(`--${name} must be 0 or more days (got ${n})`, 2);
  return n;
}

function stringFlag(values: Values, name: string): string | undefined {
  const raw = values[name];
  return typeof raw === 'string' ? raw : undefined;
}

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

const COMMANDS: Record<string, Command> = {
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
  status: {
    usage: 'status [--json] [--frame-days N] [--results-days N] [--no-pitr]',
    summary: "slots, owners, heartbeats, leased videos, queue depths, this month's cost per camera",
    details:
      '  --json             print the report as JSON\n' +
      "  --frame-days N     the deployment's frameRetentionDays, for the cost estimate (default 30)\n" +
      "  --results-days N   its resultsRetentionDays (default 0 = never expire)\n" +
      '  --no-pitr          the deployment has pointInTimeRecovery=false (the lean profile)',
    positionals: [],
    options: { json: { type: 'boolean' }, 'frame-days': { type: 'string' }, 'results-days': { type: 'string' }, 'no-pitr': { type: 'boolean' } },
    run: (t, _p, v, io) =>
      statusCommand(
        t,
        {
          json: Boolean(v.json),
          ...(v['frame-days'] !== undefined ? { frameRetentionDays: retentionDays(v, 'frame-days') } : {}),
          ...(v['results-days'] !== undefined ? { resultsRetentionDays: retentionDays(v, 'results-days') } : {}),
          ...(v['no-pitr'] ? { pointInTimeRecovery: false } : {}),
        },
        io,
      ),
  },
  video: {
    usage: 'video <id> [--json]',
    summary: "a video's lease, owner history, progress, gaps and failures",
    details: '  --json   print the report as JSON',
    positionals: ['id'],
    options: { json: { type: 'boolean' } },
    run: (t, [id], v, io) => videoCommand(t, { videoId: id!, json: Boolean(v.json) }, io),
  },
  results: {
    usage: 'results <id> [--json|--csv]',
    summary: "stream a video's results in frame order",
    details: `Text (default) and CSV print one line per detection (a frame without detections gets one line);
--json prints one JSON object per frame (NDJSON). The summary item is not included.

  --json   NDJSON, one line per frame
  --csv    CSV with a header row`,
    positionals: ['id'],
    options: { json: { type: 'boolean' }, csv: { type: 'boolean' } },
    run: (t, [id], v, io) => {
      if (v.json && v.csv) throw new CliError('choose one of --json and --csv', 2);
      const format: ResultsFormat = v.json ? 'json' : v.csv ? 'csv' : 'text';
      return resultsCommand(t, { videoId: id!, format }, io);
    },
  },
  export: {
    usage: 'export <id> [--format jsonl|mot] [--out FILE] [--first-frame N]',
    summary: "a video's records as a file: JSON lines, or MOTChallenge tracks",
    details: `Streams the video's records in frame order, page by page, to FILE (written under a temporary name
and renamed when complete) or to stdout.

  --format jsonl     (default) one JSON object per frame: frame, status, reason/detail where not ok, ptsMs where
                     the record has one, detections (trackId, label, score, box x1,y1,x2,y2); failed and gap
                     frames included
  --format mot       MOTChallenge: frame,id,bb_left,bb_top,bb_width,bb_height,conf,-1,-1,-1 per tracked detection
                     of ok and late frames; failed and gap frames have no line. MOT frames are 1-based:
                     MOT frame = frame - N + 1. By default N follows the video: 0 when it has a frame 0
                     (000000.jpg is MOT frame 1), else 1 (000001.jpg is MOT frame 1); stderr says which
  --out FILE         write to FILE instead of stdout
  --first-frame N    mot only: our frame number that becomes MOT frame 1, whatever the video's numbering
                     (frames below it are skipped)`,
    positionals: ['id'],
    options: { format: { type: 'string' }, out: { type: 'string' }, 'first-frame': { type: 'string' } },
    run: (t, [id], v, io) => {
      const format = (v.format ?? 'jsonl') as string;
      if (!(EXPORT_FORMATS as readonly string[]).includes(format)) throw new CliError(`--format must be jsonl or mot (got "${format}")`, 2);
      const firstFrame = intFlag(v, 'first-frame');
      if (firstFrame !== undefined && format !== 'mot') throw new CliError('--first-frame applies to --format mot only', 2);
      if (firstFrame !== undefined && firstFrame < 0) throw new CliError('--first-frame must be 0 or more', 2);
      return exportCommand(
        t,
        { videoId: id!, format: format as ExportFormat, ...(typeof v.out === 'string' ? { out: v.out } : {}), ...(firstFrame !== undefined ? { firstFrame } : {}) },
        io,
      );
    },
  },
  events: {
    usage: 'events <id> [--follow] [--json] [--from-frame N] [--redeliver]',
    summary: "a video's analytics events (line, zone, life), in frame order",
    details: `Reads the events outbox table (the record the event bus is fed from), in event id order: by frame,
then kind, rule and track. Text prints one line per event; --json one EventItem per line (NDJSON).

  --follow         keep polling (every 1 s) and print new events until Ctrl-C; it follows ids after the
                   last one printed, so an event committed later for an earlier frame (a late frame's
                   failure) shows in a plain listing, not here
  --json           NDJSON, one event per line
  --from-frame N   only events of frame N and later
  --redeliver      deliver the events (from --from-frame on) to the bus again: the way back from the
                   event DLQ (alarm EventDlqNotEmpty); consumers drop duplicates by eventId`,
    positionals: ['id'],
    options: { follow: { type: 'boolean' }, json: { type: 'boolean' }, 'from-frame': { type: 'string' }, redeliver: { type: 'boolean' } },
    run: (t, [id], v, io) => {
      const fromFrame = intFlag(v, 'from-frame');
      return eventsCommand(t, { videoId: id!, follow: Boolean(v.follow), json: Boolean(v.json), redeliver: Boolean(v.redeliver), ...(fromFrame !== undefined ? { fromFrame } : {}) }, io);
    },
  },
  counts: {
    usage: 'counts <id> [--json]',
    summary: 'totals per rule and class: line crossings in/out, zone entries, exits, dwell',
    details: `Counts the video's rule events in the events table (line.crossed per direction, zone.entered,
zone.exited, zone.dwell), each event id once: the totals a consumer of the bus computes, independent of
the worker's summary format. "inside" is entered minus exited.

  --json   print the totals as one JSON object`,
    positionals: ['id'],
    options: { json: { type: 'boolean' } },
    run: (t, [id], v, io) => countsCommand(t, { videoId: id!, json: Boolean(v.json) }, io),
  },
  release: {
    usage: 'release <id> --force [--yes]',
    summary: 'admin override: unpin a video (fenced: bumps its token)',
    details: `Unpins the video from its slot, conditional on the token just read, and bumps the token so
the current owner can no longer write for it. A video that was waiting (frames buffered behind a
missing one, late frames queued, an end marker not reached) has what its checkpoint holds re-sent
(tagged), so it is admitted again at once and its next owner goes on from the checkpoint; otherwise
its next upload admits it afresh.

  --force   required: this is an override
  --yes     do not ask for confirmation (required when not on a terminal)`,
    positionals: ['id'],
    options: { force: { type: 'boolean' }, yes: { type: 'boolean', short: 'y' } },
    run: (t, [id], v, io) => releaseCommand(t, { videoId: id!, force: Boolean(v.force), yes: Boolean(v.yes) }, io),
  },
  replay: {
    usage: 'replay <id> --from <frame>',
    summary: 'reprocess a video from a frame on, from the frames in S3',
    details: `Rewinds the video's checkpoint to its first frame with a fresh tracker and rules (bumping its token,
which fences the current owner), deletes the results from <frame> on, and re-sends the frames (and the end marker
if still needed) to the ingest queue with a fresh replay tag so FIFO deduplication does not drop them. Frames
below <frame> are re-run only to rebuild the tracker; when some of them have no record yet, the replay starts
at the lowest of them and says so.

  --from N   first frame to reprocess (required)`,
    positionals: ['id'],
    options: { from: { type: 'string' } },
    run: (t, [id], v, io) => {
      const from = intFlag(v, 'from');
      if (from === undefined) throw new CliError('replay needs --from <frame>', 2);
      return replayCommand(t, { videoId: id!, fromFrame: from }, io);
    },
  },
  redrive: {
    usage: 'redrive [--queue ingest|slot|all] [--slot N]',
    summary: 'move every DLQ message back to its queue (SQS DLQ redrive) and wait',
    details: `Moves the messages of the ingest DLQ and the slot DLQs back to their source queues and waits for
the move: SQS's own DLQ redrive (StartMessageMoveTask) on AWS; on the local stack, whose emulator has none,
receive, send to the source queue and delete (FIFO messages keep their video's group and get a fresh
deduplication id). Safe to repeat: a frame that already has a record is dropped as a duplicate. Events the
router rejects as bad input go straight back to the ingest DLQ with their reason.
  --queue Q   ingest, slot or all (default all)
  --slot N    only slot N's DLQ (with --queue slot or all)`,
    positionals: [],
    options: { queue: { type: 'string' }, slot: { type: 'string' } },
    run: (t, _p, v, io) => {
      const queue = (v.queue ?? 'all') as string;
      if (!['ingest', 'slot', 'all'].includes(queue)) throw new CliError(`--queue must be ingest, slot or all (got "${queue}")`, 2);
      const slot = intFlag(v, 'slot');
      return redriveCommand(t, { queue: queue as RedriveQueues, ...(slot !== undefined ? { slot } : {}) }, io);
    },
  },
  reconcile: {
    usage: 'reconcile <id> [--dry-run]',
    summary: 're-check a video against S3: frames whose object exists but whose record is a gap or missing',
    details: `Lists the video's objects and reads its records; a frame whose object exists but whose record is
\`gap\` (its object came after its gap, and its notification was lost), or that has no record at all, is
re-sent to the ingest queue with a fresh replay tag so FIFO deduplication does not drop it. The owning
worker processes it as \`late\` and its record replaces the gap. Safe to repeat; changes no lease.

  --dry-run   print what would be re-sent, send nothing`,
    positionals: ['id'],
    options: { 'dry-run': { type: 'boolean' } },
    run: (t, [id], v, io) => reconcileCommand(t, { videoId: id!, dryRun: Boolean(v['dry-run']) }, io),
  },
  render: {
    usage: 'render <id> [--out DIR] [--max-frames N]',
    summary: 'annotated frames: contact sheet PNG, animated GIF, HTML page',
    details: `Draws each result's boxes and track IDs (colour derived from the track ID) on the frames from S3.

  --out DIR          output folder (default .local/render/<id>)
  --max-frames N     most frames in the animation, evenly sampled (default 300)`,
    positionals: ['id'],
    options: { out: { type: 'string' }, 'max-frames': { type: 'string' } },
    run: (t, [id], v, io) =>
      renderCommand(
        t,
        { videoId: id!, ...(typeof v.out === 'string' ? { outDir: v.out } : {}), ...(v['max-frames'] !== undefined ? { maxFrames: intFlag(v, 'max-frames')! } : {}) },
        io,
      ),
  },
};

export function usage(): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length));
  return [
    'affinity: operate a frame-affinity pipeline (local stack by default)',
    '',
    'Usage: affinity <command> [options]',
    '',
    'Commands:',
    ...Object.values(COMMANDS).map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    '',
    GLOBAL_HELP,
    '',
    "Run 'affinity <command> --help' for a command's options. `npm run demo` runs the whole pipeline end to end.",
  ].join('\n');
}

function commandHelp(c: Command): string {
  return [`Usage: affinity ${c.usage}`, '', c.summary, '', c.details, '', GLOBAL_HELP].join('\n');
}

/** Index of the command word: the first token that is neither a flag nor a global flag's value. */
function commandIndex(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return i + 1 < argv.length ? i + 1 : -1;
    if (a.startsWith('-')) {
      const name = a.replace(/^--?/, '');
      if (!a.includes('=') && (GLOBAL_OPTIONS as Options)[name]?.type === 'string') i++;
      continue;
    }
    return i;
  }
  return -1;
}

/**
 * Runs the CLI with `argv` (without node and script); returns the exit code. Errors
 * are printed as one clear line on `io.err`; unexpected ones with their stack.
 */
export async function main(argv: readonly string[], io: Io = processIo(), targetFor: typeof resolveTarget = resolveTarget): Promise<number> {
  const at = commandIndex(argv);
  const name = at >= 0 ? argv[at]! : undefined;
  const rest = at >= 0 ? [...argv.slice(0, at), ...argv.slice(at + 1)] : [...argv];
  if (name === undefined || name === 'help') {
    const helpAsked = rest.includes('--help') || rest.includes('-h') || name === 'help';
    (helpAsked ? io.out : io.err)(usage());
    return helpAsked ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.err(`error: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  let target: Target | undefined;
  try {
    let parsed: { values: Values; positionals: string[] };
    try {
      parsed = parseArgs({ args: rest, options: { ...GLOBAL_OPTIONS, ...command.options }, allowPositionals: true, strict: true }) as typeof parsed;
    } catch (e) {
      throw new CliError(`${(e as Error).message}\n\n${commandHelp(command)}`, 2);
    }
    const { values, positionals } = parsed;
    if (values.help) {
      io.out(commandHelp(command));
      return 0;
    }
    if (positionals.length !== command.positionals.length) {
      throw new CliError(
        positionals.length < command.positionals.length
          ? `missing <${command.positionals[positionals.length]}>\nUsage: affinity ${command.usage}`
          : `unexpected argument "${positionals[command.positionals.length]}"\nUsage: affinity ${command.usage}`,
        2,
      );
    }
    target = await targetFor({
      ...(typeof values['state-dir'] === 'string' ? { stateDir: values['state-dir'] } : {}),
      ...(typeof values.stack === 'string' ? { stack: values.stack } : {}),
      ...(typeof values.region === 'string' ? { region: values.region } : {}),
    });
    await command.run(target, positionals, values, io);
    return 0;
  } catch (e) {
    if (e instanceof CliError) {
      io.err(`error: ${e.message}`);
      return e.exitCode;
    }
    const err = e as Error & { code?: string; $metadata?: unknown };
    if (err?.name === 'TimeoutError' || err?.code === 'ECONNREFUSED' || /ECONNREFUSED|connect/i.test(String(err?.message))) {
      io.err(`error: cannot reach ${target?.description ?? 'the target'}: ${err.message || err.code}. Is the stack running?`);
      return 1;
    }
    io.err(`error: ${err?.name ?? 'Error'}: ${err?.message ?? String(e)}`);
    if (process.env.AFFINITY_DEBUG) io.err(String(err?.stack));
    return 1;
  } finally {
    target?.close();
  }
}
