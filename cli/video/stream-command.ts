/**
 * `affinity stream <rtsp-url | file> --video <id> [--segment-seconds N] [--realtime]
 *  [--state-file path] [--end] [--container ts|mp4|mkv]`: the edge segmenter.
 *
 * Capture (cli/video/stream-source.ts) closes a segment every N seconds at the next
 * keyframe; each closed segment is numbered in the journal (cli/video/stream-journal.ts),
 * the state file is written (cli/video/stream-state.ts), and only then is it PUT as
 * `segmentKey(video, n)` with `x-amz-meta-frames: k`, one at a time in frame order,
 * retried with backoff until it lands. On start the state file and one listing of the
 * video's prefix decide where numbering continues and which journaled segments go up
 * again (under the same keys). SIGINT / SIGTERM close the open segment, upload what is
 * journaled and, with `--end`, write the end marker.
 *
 * What `affinity upload` checks, `stream` checks too (issue 41, issue 40 defect 4): a file
 * with no video, or video that cannot be decoded, is refused before anything is sent; a
 * file in another codec or with open GOPs is transcoded to H.264 first; a live source in
 * another codec, or with open GOPs, is transcoded to H.264 as it goes by an `ffmpeg` child
 * process (cli/video/stream-source.ts, cli/video/live-transcoder.ts; decision 74).
 */
import { existsSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { endMarkerKey } from '../../core/ingest/keys.ts';
import { FRAMES_METADATA_KEY, parseSourceKey } from '../../core/ingest/segment-keys.ts';
import { formatBytes } from '../format.ts';
import { CliError, type Io } from '../io.ts';
import type { Target } from '../target.ts';
import type { SegmentContainer } from './segment-file.ts';
import { listVideoObjects } from './segment-upload.ts';
import { closeSegment, lastFrame, markUploaded, objectEnd, resumeState, skipTo, StreamStateError, type JournalSegment, type RemoteSegment, type StreamState } from './stream-journal.ts';
import { backoffMs, isLiveSource, redactSource, type BackoffOptions } from './stream-segmenter.ts';
import { capture } from './stream-source.ts';
import { initialOutageState, noteDrop, noteFrames, outageSummary } from './stream-outage.ts';
import { hasOpenGops, probeSource, SourceError, transcodeFile } from './transcode.ts';
import { cleanSpool, readStateFile, spoolDirOf, writeStateFile } from './stream-state.ts';

const CONTENT_TYPES: Readonly<Record<SegmentContainer, string>> = { mpegts: 'video/mp2t', mp4: 'video/mp4', matroska: 'video/x-matroska' };

export interface StreamOptions {
  readonly source: string;
  readonly videoId: string;
  readonly segmentSeconds: number;
  readonly realtime?: boolean;
  /** @default .affinity-stream/<video>.json */
  readonly stateFile?: string;
  readonly end?: boolean;
  readonly container?: SegmentContainer;
  /** Number of the first frame of a new video (or of the file). @default 0 */
  readonly firstFrame?: number;
  /** How long a stop waits for journaled segments to land. @default 60 */
  readonly drainSeconds?: number;
  readonly backoff?: BackoffOptions;
  readonly readTimeoutSeconds?: number;
  /** Stops the stream (the CLI wires SIGINT and SIGTERM to it). */
  readonly signal?: AbortSignal;
  /** Average bit rate of a transcode (another codec, or open GOPs; a file or a live source), kbit/s; absent: constant quality. */
  readonly bitrateKbps?: number;
}

export interface StreamSummary {
  readonly segments: number;
  readonly nextFrame: number;
  readonly pending: number;
  /** Outages of the source: one per drop, however many attempts it took (cli/video/stream-outage.ts). */
  readonly outages: number;
  /** Reconnect attempts in all. */
  readonly reconnects: number;
  readonly endMarker: boolean;
}

/** What a transcoded live connection's line says after its codec: why, and how. Pure. */
export function transcodeNote(codec: string, why: 'codec' | 'open-gop', bitrateKbps?: number): string {
  const rate = bitrateKbps !== undefined ? `${bitrateKbps} kbit/s` : 'CRF 20';
  const because = why === 'codec' ? `the worker decodes H.264 and H.265, not ${codec}` : `its ${codec} has open GOPs, which cannot be cut`;
  return `transcoded to H.264 by an ffmpeg process, ${rate}, as ${because}`;
}

export function defaultStateFile(videoId: string): string {
  return path.join('.affinity-stream', `${videoId}.json`);
}

/** Objects under the video's prefix, with the declared frame count of the highest one (the only one whose `k` the start needs). */
export async function remoteSegments(s3: S3Client, bucket: string, videoId: string): Promise<RemoteSegment[]> {
  const listed: RemoteSegment[] = await listVideoObjects(s3, bucket, videoId);
  let top: RemoteSegment | undefined;
  for (const r of listed) if ((objectEnd(r) ?? -1) > (top ? objectEnd(top)! : -1)) top = r;
  if (!top || parseSourceKey(top.key).kind !== 'source') return listed;
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: top.key }));
  const k = Number(head.Metadata?.[FRAMES_METADATA_KEY]);
  return listed.map((r) => (r === top && Number.isSafeInteger(k) && k > 0 ? { ...r, frames: k } : r));
}

/** The listing the start needs, retried with backoff while S3 cannot be reached (an edge box that boots before its network). */
async function listWithRetries(target: Target, o: StreamOptions, io: Io, signal: AbortSignal): Promise<RemoteSegment[]> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await remoteSegments(target.clients.s3, target.bucket, o.videoId);
    } catch (e) {
      if (signal.aborted) throw new CliError(`stopped before the bucket could be listed: ${(e as Error).message}`);
      const delay = backoffMs(attempt, o.backoff);
      io.err(`cannot list s3://${target.bucket}/frames/${o.videoId}/ (${(e as Error).name}: ${(e as Error).message}); retry ${attempt + 1} in ${(delay / 1000).toFixed(1)} s`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delay);
        signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
    }
  }
}

export async function streamCommand(target: Target, o: StreamOptions, io: Io): Promise<StreamSummary> {
  const live = isLiveSource(o.source);
  const shown = redactSource(o.source);
  const container = o.container ?? 'mpegts';
  const firstFrame = o.firstFrame ?? 0;
  const stateFile = path.resolve(o.stateFile ?? defaultStateFile(o.videoId));
  const spoolDir = spoolDirOf(stateFile);
  const signal = o.signal ?? new AbortController().signal;
  if (o.realtime && live) throw new CliError('--realtime paces a file; a live source has its own pace', 2);

  let state: StreamState;
  try {
    const read = readStateFile(stateFile, o.videoId, container, firstFrame);
    const plan = resumeState(read.state, await listWithRetries(target, o, io, signal));
    state = plan.state;
    if (read.existed) io.err(`resuming ${o.videoId} from ${stateFile}: next frame ${state.nextFrame}, ${plan.resend.length} journaled segment(s) to send again, ${plan.landed.length} already in S3`);
    if (plan.advancedBy) io.err(`the bucket already holds ${plan.advancedBy.key}: numbering continues at frame ${plan.advancedBy.to}`);
    for (const c of plan.conflicts) io.err(`warning: ${c.key} is in S3 with other bytes than the journaled segment; the first version stays (frames ${c.firstFrame}-${c.firstFrame + c.frames - 1} keep their numbers)`);
  } catch (e) {
    if (e instanceof StreamStateError) throw new CliError(`${stateFile}: ${e.message}`);
    throw e;
  }
  for (const p of state.pending) {
    if (!existsSync(p.file)) {
      io.err(`warning: journaled segment ${p.key} lost its file ${p.file}; frames ${p.firstFrame}-${p.firstFrame + p.frames - 1} stay unnumbered again (a gap)`);
      state = markUploaded(state, p.key);
    }
  }
  cleanSpool(spoolDir, state);
  writeStateFile(stateFile, state);

  // --- the uploader: journaled segments in frame order, one at a time, retried until they land
  let wake: (() => void) | undefined;
  let draining = false;
  let drainDeadline = Infinity;
  const put = async (p: JournalSegment): Promise<void> => {
    await target.clients.s3.send(
      new PutObjectCommand({
        Bucket: target.bucket,
        Key: p.key,
        Body: await readFile(p.file),
        ContentLength: p.bytes,
        ContentType: CONTENT_TYPES[container],
        Metadata: { [FRAMES_METADATA_KEY]: String(p.frames) },
      }),
    );
  };
  const uploader = (async () => {
    let attempt = 0;
    for (;;) {
      const p = state.pending[0];
      if (!p) {
        if (draining) return;
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      try {
        await put(p);
        state = markUploaded(state, p.key);
        writeStateFile(stateFile, state);
        rmSync(p.file, { force: true });
        attempt = 0;
        io.err(`uploaded ${p.key}: frames ${p.firstFrame}-${p.firstFrame + p.frames - 1} (${p.frames}), ${formatBytes(p.bytes)}`);
      } catch (e) {
        const delay = backoffMs(attempt++, o.backoff);
        if (draining && Date.now() + delay > drainDeadline) return;
        io.err(`upload of ${p.key} failed (${(e as Error).name}: ${(e as Error).message}); retry ${attempt} in ${(delay / 1000).toFixed(1)} s`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  })();

  // A file is checked before anything is sent: a video FFmpeg decodes (else refused, with
  // the codec's name), and transcoded whole to H.264 first when it is another codec or has
  // open GOPs (cli/video/transcode.ts); its timestamps are kept, so --realtime paces it as before.
  let source = o.source;
  let transcodedFile: string | undefined;
  if (!live) {
    try {
      const probe = await probeSource(o.source, shown);
      const why = !probe.copy ? `its video is ${probe.codec}, which the worker does not decode` : (await hasOpenGops(o.source)) ? `its ${probe.codec} has open GOPs, which cannot be cut without re-encoding` : undefined;
      if (why) {
        transcodedFile = `${stateFile}.transcoded.mp4`;
        const rate = o.bitrateKbps !== undefined ? `${o.bitrateKbps} kbit/s` : 'constant quality (CRF 20)';
        io.err(`transcoding ${shown} to H.264 (${why}) at its own resolution and timestamps, ${rate}`);
        await transcodeFile(o.source, transcodedFile, { keyframeSeconds: o.segmentSeconds, ...(o.bitrateKbps !== undefined ? { bitrateKbps: o.bitrateKbps } : {}) });
        source = transcodedFile;
      }
    } catch (e) {
      if (e instanceof SourceError) throw new CliError(e.message);
      throw e;
    }
  }

  let outage = initialOutageState();
  const how = live ? 'H.264/H.265 by stream copy, other codecs transcoded' : 'stream copy';
  io.err(`streaming ${shown} as ${o.videoId} into s3://${target.bucket}/frames/${o.videoId}/ (~${o.segmentSeconds}-s segments, ${how}), from frame ${state.nextFrame}; state ${stateFile}`);
  let result: Awaited<ReturnType<typeof capture>>;
  try {
    result = await capture({
      source,
      live,
      realtime: Boolean(o.realtime),
      videoId: o.videoId,
      container,
      segmentSeconds: o.segmentSeconds,
      spoolDir,
      nextFrame: () => state.nextFrame,
      fileFirstFrame: firstFrame,
      timeline: state.timeline,
      ...(o.backoff ? { backoff: o.backoff } : {}),
      ...(o.readTimeoutSeconds !== undefined ? { readTimeoutSeconds: o.readTimeoutSeconds } : {}),
      signal,
      bitrateKbps: o.bitrateKbps,
      onConnected: (e) => {
        const how = live ? ` (${e.codec}${e.transcode ? `: ${transcodeNote(e.codec, e.transcode, o.bitrateKbps)}` : ''})` : '';
        io.err(e.attempt > 0 ? `reconnected to ${shown} after ${e.attempt} attempt(s)${how}` : `connected to ${shown}${how}`);
      },
      onOpenGops: (e) => io.err(e.message),
      onFrames: () => void (outage = noteFrames(outage, Date.now()).state),
      onReconnect: (e) => {
        outage = noteDrop(outage, e.reason, Date.now()).state;
        io.err(`reconnect: ${e.reason}; attempt ${e.attempt} in ${(e.delayMs / 1000).toFixed(1)} s`);
      },
      onSegment: async (s, mark) => {
        if (s.firstFrame > state.nextFrame) {
          io.err(`frames ${state.nextFrame}-${s.firstFrame - 1} of the file are skipped (resumed past them)`);
          state = skipTo(state, s.firstFrame);
        }
        // journaled before a byte is sent: a restart sends it again under this key
        state = { ...closeSegment(state, { ...s }), timeline: mark };
        writeStateFile(stateFile, state);
        wake?.();
      },
    });
  } catch (e) {
    // what was journaled before the failure still goes up (bounded), then the error
    draining = true;
    drainDeadline = Date.now() + (o.drainSeconds ?? 60) * 1000;
    wake?.();
    await uploader;
    if (transcodedFile) rmSync(transcodedFile, { force: true });
    if (e instanceof SourceError) throw new CliError(e.message);
    throw new CliError(`cannot read ${shown}: ${(e as Error).message}`);
  }
  // drain: everything journaled goes up (bounded), then the end marker
  draining = true;
  drainDeadline = Date.now() + (o.drainSeconds ?? 60) * 1000;
  wake?.();
  await uploader;
  if (transcodedFile) rmSync(transcodedFile, { force: true });
  const pending = state.pending.length;
  let endMarker = false;
  const last = lastFrame(state, firstFrame);
  if (pending > 0) {
    throw new CliError(`${pending} segment(s) not uploaded yet; they stay journaled in ${stateFile} and go up on the next run`);
  }
  if (o.end && last !== undefined) {
    await target.clients.s3.send(new PutObjectCommand({ Bucket: target.bucket, Key: endMarkerKey(o.videoId), Body: String(last), ContentType: 'text/plain' }));
    endMarker = true;
  }
  const summary: StreamSummary = { segments: state.uploadedSegments, nextFrame: state.nextFrame, pending, outages: outage.outages, reconnects: outage.attempts, endMarker };
  io.out(
    `stream ${o.videoId} ${result.reason === 'ended' ? 'ended' : 'stopped'}: ${result.frames} frame(s) this run, ${summary.segments} segment(s) uploaded in all, next frame ${state.nextFrame}` +
      (outage.outages > 0 ? `, ${outageSummary(outage)}` : '') +
      (endMarker ? `, end marker at frame ${last}` : ''),
  );
  return summary;
}
