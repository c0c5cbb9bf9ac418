/**
 * One camera of `affinity edge`: the edge segmenter of `affinity stream` (capture:
 * cli/video/stream-source.ts, numbering: stream-journal.ts, files: stream-state.ts) run as
 * a supervisor the fleet starts and stops on its own, next to the others in one process.
 *
 * - It reconnects on its own with capped, jittered backoff (capture's), and reports each
 *   outage once: `source.stalled` at the drop, `source.resumed` at the first frame after
 *   it (cli/video/stream-outage.ts), however many attempts it took.
 * - Its segments wait in a bounded spool (cli/edge/spool-queue.ts); drops are counted.
 * - Its start waits for S3 (listing the video's prefix, so numbering never goes back)
 *   without holding the other cameras.
 * - `stop()` closes the open segment, drains what is journaled (bounded) and resolves; a
 *   restart continues the numbering from the state file, as `affinity stream` does.
 */
import { existsSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { FRAMES_METADATA_KEY } from '../../core/ingest/segment-keys.ts';
import { remoteSegments, transcodeNote } from '../video/stream-command.ts';
import { markUploaded, resumeState, skipTo, StreamStateError, type RemoteSegment, type StreamState } from '../video/stream-journal.ts';
import { initialOutageState, noteDrop, noteFrames, type OutageEvent, type OutageState } from '../video/stream-outage.ts';
import { backoffMs, redactSource, type BackoffOptions } from '../video/stream-segmenter.ts';
import { capture, type LiveTranscode } from '../video/stream-source.ts';
import { cleanSpool, readStateFile, spoolDirOf, writeStateFile } from '../video/stream-state.ts';
import type { SegmentContainer } from '../video/segment-file.ts';
import type { CameraConfig } from './edge-config.ts';
import { SpoolQueue, type SpoolDrop, type SpoolStats } from './spool-queue.ts';
import { classifyUploadError, uploadFailureHint } from './upload-errors.ts';

const CONTENT_TYPES: Readonly<Record<SegmentContainer, string>> = { mpegts: 'video/mp2t', mp4: 'video/mp4', matroska: 'video/x-matroska' };

export type CameraPhase = 'starting' | 'connecting' | 'streaming' | 'stalled' | 'stopping' | 'stopped' | 'failed';

/** One camera's health, as the status lines and `--json` show it. */
export interface CameraHealth {
  readonly video: string;
  /** The source with any password replaced. */
  readonly source: string;
  readonly phase: CameraPhase;
  readonly codec: string | null;
  /** Why the camera is transcoded to H.264 by an ffmpeg child (another codec, or open GOPs); null: stream copy. */
  readonly transcode: LiveTranscode | null;
  readonly nextFrame: number | null;
  readonly framesCaptured: number;
  readonly outages: number;
  readonly reconnectAttempts: number;
  /** Why the current outage began, when stalled. */
  readonly stalledReason: string | null;
  readonly stalledSinceMs: number | null;
  readonly spool: SpoolStats | null;
  /** Why the camera stopped, when failed. */
  readonly error: string | null;
}

export interface CameraDeps {
  readonly s3: S3Client;
  readonly bucket: string;
  /** The folder of state files and spools. */
  readonly stateDir: string;
  readonly backoff?: BackoffOptions;
  /** How long a stop waits for journaled segments to land. */
  readonly drainSeconds: number;
  readonly verbose: boolean;
  /** The AWS profile of the credentials, when the config names one (for the hints). */
  readonly profile?: string | undefined;
  /** A console line about this camera (the fleet prefixes it). */
  readonly log: (line: string) => void;
  readonly onOutage: (e: OutageEvent, frame: number) => void;
  readonly onDropped: (d: SpoolDrop) => void;
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/** The state file of a camera: `<stateDir>/<video>.json` (its spool: `<video>.json.spool/`). */
export function cameraStateFile(stateDir: string, video: string): string {
  return path.resolve(stateDir, `${video}.json`);
}

export class Camera {
  private readonly stopper = new AbortController();
  private phase: CameraPhase = 'starting';
  private codec: string | null = null;
  private transcode: LiveTranscode | null = null;
  private outage: OutageState = initialOutageState();
  private framesCaptured = 0;
  private queue: SpoolQueue | undefined;
  private error: string | null = null;
  private running: Promise<void> | undefined;
  private readonly shown: string;

  readonly config: CameraConfig;
  private readonly d: CameraDeps;

  constructor(config: CameraConfig, d: CameraDeps) {
    this.config = config;
    this.d = d;
    this.shown = redactSource(config.url);
  }

  /** Runs until {@link stop}; never rejects (a failure is the camera's phase and error). */
  start(): Promise<void> {
    this.running ??= this.run().catch((e: unknown) => {
      this.phase = 'failed';
      this.error = (e as Error).message;
      this.d.log(`stopped on an error: ${this.error}`);
    });
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.phase !== 'failed' && this.phase !== 'stopped') this.phase = 'stopping';
    this.stopper.abort();
    await this.start();
  }

  health(): CameraHealth {
    return {
      video: this.config.video,
      source: this.shown,
      phase: this.phase,
      codec: this.codec,
      transcode: this.transcode,
      nextFrame: this.queue?.state.nextFrame ?? null,
      framesCaptured: this.framesCaptured,
      outages: this.outage.outages,
      reconnectAttempts: this.outage.attempts,
      stalledReason: this.outage.phase === 'stalled' ? this.outage.reason : null,
      stalledSinceMs: this.outage.phase === 'stalled' ? this.outage.sinceMs : null,
      spool: this.queue?.stats() ?? null,
      error: this.error,
    };
  }

  private async run(): Promise<void> {
    const c = this.config;
    const signal = this.stopper.signal;
    const stateFile = cameraStateFile(this.d.stateDir, c.video);
    const spoolDir = spoolDirOf(stateFile);
    let state: StreamState;
    try {
      const read = readStateFile(stateFile, c.video, c.container, c.firstFrame);
      const remote = await this.listWithRetries(signal);
      if (remote === null) {
        this.phase = 'stopped';
        return;
      }
      const plan = resumeState(read.state, remote);
      state = plan.state;
      if (read.existed) this.d.log(`resuming from ${stateFile}: next frame ${state.nextFrame}, ${plan.resend.length} journaled segment(s) to send again`);
      if (plan.advancedBy) this.d.log(`the bucket already holds ${plan.advancedBy.key}: numbering continues at frame ${plan.advancedBy.to}`);
      for (const k of plan.conflicts) this.d.log(`warning: ${k.key} is in S3 with other bytes than the journaled segment; the first version stays`);
    } catch (e) {
      if (e instanceof StreamStateError) throw new Error(`${stateFile}: ${e.message}`);
      throw e;
    }
    for (const p of state.pending) {
      if (!existsSync(p.file)) {
        this.d.log(`warning: journaled segment ${p.key} lost its file; frames ${p.firstFrame}-${p.firstFrame + p.frames - 1} stay a gap`);
        state = markUploaded(state, p.key);
      }
    }
    cleanSpool(spoolDir, state);
    writeStateFile(stateFile, state);

    const queue = new SpoolQueue(state, {
      maxBytes: c.spoolMaxBytes,
      put: async (p) => {
        await this.d.s3.send(
          new PutObjectCommand({
            Bucket: this.d.bucket,
            Key: p.key,
            Body: await readFile(p.file),
            ContentLength: p.bytes,
            ContentType: CONTENT_TYPES[c.container],
            Metadata: { [FRAMES_METADATA_KEY]: String(p.frames) },
          }),
        );
      },
      persist: (s) => writeStateFile(stateFile, s),
      removeFile: (f) => rmSync(f, { force: true }),
      now: Date.now,
      sleep,
      ...(this.d.backoff ? { backoff: this.d.backoff } : {}),
      log: this.d.log,
      verbose: this.d.verbose,
      profile: this.d.profile,
      onDropped: this.d.onDropped,
    });
    this.queue = queue;
    void queue.start();
    this.phase = 'connecting';
    this.d.log(`capturing ${this.shown} (~${c.segmentSeconds}-s segments, H.264/H.265 by stream copy, other codecs transcoded) from frame ${state.nextFrame}; state ${stateFile}`);
    try {
      await capture({
        source: c.url,
        live: true,
        realtime: false,
        videoId: c.video,
        container: c.container,
        segmentSeconds: c.segmentSeconds,
        spoolDir,
        nextFrame: () => queue.state.nextFrame,
        fileFirstFrame: c.firstFrame,
        timeline: queue.state.timeline,
        ...(this.d.backoff ? { backoff: this.d.backoff } : {}),
        readTimeoutSeconds: c.readTimeoutSeconds,
        signal,
        bitrateKbps: c.bitrateKbps,
        onConnected: (e) => {
          // FFmpeg's name of the codec (`h264`, `hevc`, `mjpeg`), as the capture reports it.
          const codec = e.codec;
          // segments cut after the change carry the new codec (each decodes on its own); said once
          if (this.codec !== null && codec !== this.codec) this.d.log(`the camera's codec changed from ${this.codec} to ${codec}`);
          // a transcoded camera is said once per change of how it is taken, not at every reconnect
          if (e.transcode !== this.transcode && e.transcode !== null) this.d.log(`${codec}: ${transcodeNote(codec, e.transcode, c.bitrateKbps)}`);
          this.codec = codec;
          this.transcode = e.transcode;
        },
        onOpenGops: (e) => this.d.log(e.message),
        onFrames: () => {
          const r = noteFrames(this.outage, Date.now());
          this.outage = r.state;
          this.phase = 'streaming';
          if (r.event) this.d.onOutage(r.event, queue.state.nextFrame);
          else if (this.outage.outages === 0 && this.framesCaptured === 0) this.d.log(`connected to ${this.shown} (${this.codec ?? 'codec unknown'})`);
        },
        onReconnect: (e) => {
          if (signal.aborted) return;
          const r = noteDrop(this.outage, e.reason, Date.now());
          this.outage = r.state;
          this.phase = 'stalled';
          if (r.event) this.d.onOutage(r.event, queue.state.nextFrame);
        },
        onSegment: async (s, mark) => {
          this.framesCaptured += s.frames;
          if (s.firstFrame > queue.state.nextFrame) queue.update((st) => skipTo(st, s.firstFrame));
          queue.add({ ...s }, (st) => ({ ...st, timeline: mark }));
        },
      });
    } finally {
      this.phase = 'stopping';
      await queue.drain(this.d.drainSeconds * 1000);
      const left = queue.state.pending.length;
      if (left > 0) this.d.log(`${left} segment(s) not uploaded yet; they stay journaled in ${stateFile} and go up when this camera runs again`);
      this.phase = this.error ? 'failed' : 'stopped';
    }
  }

  /** The video's objects, retried with backoff while S3 cannot be reached or refuses the credentials; null when stopped first. */
  private async listWithRetries(signal: AbortSignal): Promise<RemoteSegment[] | null> {
    for (let attempt = 0; ; attempt++) {
      try {
        const listed = await remoteSegments(this.d.s3, this.d.bucket, this.config.video);
        this.error = null;
        return listed;
      } catch (e) {
        if (signal.aborted) return null;
        const delay = backoffMs(attempt, this.d.backoff);
        const kind = classifyUploadError(e);
        this.error = `${(e as Error).name}: ${(e as Error).message}`;
        this.d.log(`cannot list s3://${this.d.bucket}/frames/${this.config.video}/ (${this.error}): ${uploadFailureHint(kind, this.d.profile)} in ${(delay / 1000).toFixed(1)} s (attempt ${attempt + 1})`);
        await sleep(delay, signal);
        if (signal.aborted) return null;
      }
    }
  }
}
