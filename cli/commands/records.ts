/**
 * The commands that read what the pipeline wrote for a video: `results`, `export`, `events`, `counts`
 * and `render` (its frames drawn with their boxes and track ids).
 */
import { CliError } from '../io.ts';
import { countsCommand } from './counts.ts';
import { eventsCommand } from './events.ts';
import { EXPORT_FORMATS, exportCommand, type ExportFormat } from './export.ts';
import { renderCommand } from './render.ts';
import { resultsCommand, type ResultsFormat } from './results.ts';
import { intFlag, type Command } from './flags.ts';

export const RECORD_COMMANDS = {
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
} satisfies Record<string, Command>;
