/**
 * The capture half of `affinity stream`: reads a live source (RTSP camera, or any URL
 * FFmpeg opens) or a file through node-av, and cuts it into segments by stream copy, no
 * re-encode (the rules are cli/video/stream-segmenter.ts). Each closed segment is handed
 * to `onSegment` (which journals and uploads it: cli/video/stream-command.ts).
 *
 * A live source that ends, errors or stays silent longer than `readTimeoutSeconds` is
 * reopened after a capped, jittered exponential backoff; the segment open at that moment
 * is closed first (it holds whole frames from a keyframe on, so it decodes). Each
 * reconnect is reported with its reason. A file is read once (`realtime`: at the pace of
 * its timestamps, as a camera would send it).
 */
import { renameSync, statSync } from 'node:fs';
import path from 'node:path';
import { Demuxer, Muxer } from 'node-av/api';
import { AV_NOPTS_VALUE } from 'node-av/constants';
import { listenFfmpegLog } from './ffmpeg-log.ts';
import { MAX_SEGMENT_FRAMES, segmentKey } from '../../core/ingest/segment-keys.ts';
import type { SegmentContainer } from './segment-file.ts';
import { PARTIAL_SEGMENT } from './stream-state.ts';
import { backoffMs, decidePacket, redactSource, secondsToTicks, Timeline, type BackoffOptions } from './stream-segmenter.ts';
import type { TimelineMark } from './stream-journal.ts';

const MUXER_FORMAT: Readonly<Record<SegmentContainer, string>> = { mp4: 'mp4', mpegts: 'mpegts', matroska: 'matroska' };

/** A segment closed in the spool folder, not numbered in the journal yet. */
export interface ClosedSegment {
  readonly key: string;
  readonly file: string;
  readonly firstFrame: number;
  readonly frames: number;
  readonly bytes: number;
}

export interface CaptureOptions {
  readonly source: string;
  readonly live: boolean;
  readonly realtime: boolean;
  readonly videoId: string;
  readonly container: SegmentContainer;
  readonly segmentSeconds: number;
  readonly spoolDir: string;
  /** The journal's next frame number (read at every segment start). */
  readonly nextFrame: () => number;
  /**
   * A file: the number of its first keyframe. Frames numbered below `nextFrame()` were
   * cut by an earlier run and are skipped (a restart continues where it stopped).
   */
  readonly fileFirstFrame: number;
  readonly timeline: TimelineMark | null;
  /** Journals and queues a closed segment; awaited before the next one opens. */
  readonly onSegment: (segment: ClosedSegment, mark: TimelineMark) => Promise<void>;
  readonly onReconnect: (e: { readonly reason: string; readonly attempt: number; readonly delayMs: number }) => void;
  readonly onConnected: (e: { readonly attempt: number; readonly codec: string }) => void;
  /** The first frame of a connection was written: the source is up again (cli/video/stream-outage.ts). */
  readonly onFrames?: () => void;
  readonly signal: AbortSignal;
  readonly backoff?: BackoffOptions;
  /** A live read that yields nothing this long is a dropped connection. @default 10 */
  readonly readTimeoutSeconds?: number;
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

function openOptions(source: string, live: boolean, readTimeoutSeconds: number): Record<string, string> {
  if (!live) return {};
  const us = String(Math.round(readTimeoutSeconds * 1_000_000));
  // TCP interleaving: no UDP ports to open through a NAT, and no silent packet loss.
  if (/^rtsps?:/i.test(source)) return { rtsp_transport: 'tcp', timeout: us };
  return { rw_timeout: us };
}

/** Reads the source until it ends (a file) or `signal` aborts (anything). */
export async function capture(o: CaptureOptions): Promise<{ readonly reason: 'ended' | 'stopped'; readonly frames: number }> {
  const readTimeoutSeconds = o.readTimeoutSeconds ?? 10;
  let timeBase: [number, number] | null = o.timeline ? [o.timeline.timeBase[0], o.timeline.timeBase[1]] : null;
  let timeline: Timeline | null = null;
  let lastWallMs = o.timeline?.wallMs ?? null;
  let attempt = 0;
  let totalFrames = 0;
  let fileIndex = 0;
  let sawKeyframe = false;
  // FFmpeg's own words for why a read failed ("Failed reading RTSP data: Connection timed
  // out", a warning to FFmpeg): kept for the reconnect's reason instead of being printed on
  // stderr, through the process's one shared log callback (several captures run in `affinity edge`)
  const ffmpegLog = listenFfmpegLog(o.source);
  const why = (base: string): string => {
    const said = ffmpegLog.recent();
    return said && !base.includes(said) ? `${base} (${said})` : base;
  };
  try {
    while (!o.signal.aborted) {
      let demuxer: Demuxer | undefined;
      let reason = 'the stream ended';
      let yielded = 0;
      ffmpegLog.clear();
      try {
        demuxer = await Demuxer.open(o.source, { options: openOptions(o.source, o.live, readTimeoutSeconds) });
        const stream = demuxer.video();
        if (!stream) throw new Error(`${redactSource(o.source)} holds no video stream`);
        const tb: [number, number] = [stream.timeBase.num, stream.timeBase.den];
        const defaultStep = stepOf(stream.avgFrameRate, tb);
        if (timeline === null) {
          // a live source continues the saved time line; a file keeps its own timestamps
          const last = o.live && o.timeline && timeBase ? rescale(BigInt(o.timeline.dts), timeBase, tb) : null;
          timeline = new Timeline({ lastDts: last, defaultStep }, !o.live);
        }
        if (timeBase && (timeBase[0] !== tb[0] || timeBase[1] !== tb[1]) && timeline.last !== null) {
          timeline = new Timeline({ lastDts: rescale(timeline.last, timeBase, tb), defaultStep }, false);
        }
        timeBase = tb;
        if (o.live && lastWallMs !== null) timeline.reconnected(BigInt(Math.round(((Date.now() - lastWallMs) / 1000) * (tb[1] / tb[0]))));
        o.onConnected({ attempt, codec: stream.codecpar.codecId.toString() });
        ffmpegLog.clear(); // what probing the stream said is no reason for what comes later
        const segmentTicks = secondsToTicks(o.segmentSeconds, tb) - defaultStep / 2n;
        const stop = (): void => demuxer?.interrupt();
        o.signal.addEventListener('abort', stop, { once: true });

        let muxer: Muxer | undefined;
        let open: { firstFrame: number; frames: number; startDts: bigint; outIndex: number } | null = null;
        const partial = path.join(o.spoolDir, PARTIAL_SEGMENT);
        let lastDts = 0n;
        const close = async (): Promise<void> => {
          if (!muxer || !open) return;
          await muxer.close();
          muxer = undefined;
          const done = open;
          open = null;
          const key = segmentKey(o.videoId, done.firstFrame, o.container);
          const file = path.join(o.spoolDir, path.basename(key));
          renameSync(partial, file);
          await o.onSegment({ key, file, firstFrame: done.firstFrame, frames: done.frames, bytes: statSync(file).size }, { dts: lastDts.toString(), timeBase: tb, wallMs: lastWallMs ?? Date.now() });
        };
        let pace: { wallMs: number; dts: bigint } | null = null;
        try {
          for await (const packet of demuxer.packets(stream.index)) {
            if (!packet) continue;
            if (o.signal.aborted) break;
            let number: number | null = null;
            if (!o.live) {
              // a file's frames are numbered by position from its first keyframe; frames an
              // earlier run cut are skipped (a restart continues where it stopped)
              if (!sawKeyframe && !packet.isKeyframe) continue;
              sawKeyframe = true;
              number = o.fileFirstFrame + fileIndex++;
              if (open === null && number < o.nextFrame()) continue;
            }
            const { dts, pts } = timeline.map({
              dts: packet.dts === AV_NOPTS_VALUE ? null : packet.dts,
              pts: packet.pts === AV_NOPTS_VALUE ? null : packet.pts,
              duration: packet.duration,
            });
            if (o.realtime) {
              pace ??= { wallMs: Date.now(), dts };
              const due = pace.wallMs + (Number(dts - pace.dts) * 1000 * tb[0]) / tb[1];
              if (due > Date.now()) await sleep(due - Date.now(), o.signal);
              if (o.signal.aborted) break;
            }
            const timestamped = !o.live || packet.pts !== AV_NOPTS_VALUE || packet.dts !== AV_NOPTS_VALUE;
            const action = decidePacket(open, { keyframe: packet.isKeyframe, dts, timestamped }, segmentTicks, MAX_SEGMENT_FRAMES);
            if (action === 'skip') continue;
            if (action === 'rotate') await close();
            if (action === 'open' || action === 'rotate') {
              muxer = await Muxer.open(partial, { format: MUXER_FORMAT[o.container] });
              const outIndex = muxer.addStream(stream);
              const first = number ?? o.nextFrame();
              open = { firstFrame: first, frames: 0, startDts: dts, outIndex };
            }
            packet.dts = dts;
            packet.pts = pts;
            await muxer!.writePacket(packet, open!.outIndex);
            if (yielded === 0) o.onFrames?.();
            open!.frames++;
            lastDts = dts;
            lastWallMs = Date.now();
            yielded++;
            totalFrames++;
          }
        } catch (e) {
          reason = (e as Error).message || String(e);
        } finally {
          o.signal.removeEventListener('abort', stop);
        }
        await close();
      } catch (e) {
        reason = (e as Error).message || String(e);
        if (!o.live) throw e;
      } finally {
        await demuxer?.close().catch(() => undefined);
      }
      if (!o.live) return { reason: o.signal.aborted ? 'stopped' : 'ended', frames: totalFrames };
      if (o.signal.aborted) break;
      if (yielded > 0) attempt = 0;
      await new Promise((r) => setTimeout(r, 50)); // FFmpeg's log lines reach JavaScript asynchronously
      const delayMs = backoffMs(attempt, o.backoff);
      o.onReconnect({ reason: why(reason), attempt: attempt + 1, delayMs });
      attempt++;
      await sleep(delayMs, o.signal);
    }
    return { reason: 'stopped', frames: totalFrames };
  } finally {
    ffmpegLog.close();
  }
}

function stepOf(rate: { num: number; den: number }, tb: readonly [number, number]): bigint {
  if (!(rate.num > 0 && rate.den > 0)) return BigInt(Math.max(1, Math.round(tb[1] / tb[0] / 30)));
  return BigInt(Math.max(1, Math.round((rate.den * tb[1]) / (rate.num * tb[0]))));
}

function rescale(ts: bigint, from: readonly [number, number], to: readonly [number, number]): bigint {
  return (ts * BigInt(from[0]) * BigInt(to[1])) / (BigInt(from[1]) * BigInt(to[0]));
}
