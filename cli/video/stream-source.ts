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
 *
 * Only segments that decode alone are uploaded (issue 41, issue 40 defect 4). A file in
 * another codec than H.264 / H.265, or with open GOPs, is transcoded whole before the
 * stream starts (stream-command.ts). A live source is transcoded as it goes
 * (docs/decisions.md 70): a connection whose codec is another one is still read here, and
 * its packets go, as they come, to an `ffmpeg` child process that transcodes them to
 * H.264 with closed GOPs (cli/video/live-transcoder.ts); the capture cuts the child's
 * output as it cuts a camera's H.264. The camera's end (a drop, a stall, a stop) closes the
 * child's input, and the child flushes every frame it holds before the connection ends. H.264 / H.265 is cut by stream copy until a frame
 * shows before the keyframe that opened its segment (open GOPs: that segment would not
 * decode alone): the segment being cut is dropped, unnumbered, said, and the source is
 * transcoded from the next connection on, at once, for as long as it sends that codec.
 * The transcoder's death ends the connection like a stalled source (reconnected with
 * backoff, its reason said); the frame it was writing when it was killed is not cut (the
 * last packet is held until the next one, or a clean exit, shows it whole).
 */
import { renameSync, statSync } from 'node:fs';
import path from 'node:path';
import { rmSync } from 'node:fs';
import { Demuxer, Muxer } from 'node-av/api';
import { openOptions, settleSilentRead } from './live-reads.ts';
import type { Packet } from 'node-av/lib';
import { AV_NOPTS_VALUE } from 'node-av/constants';
import { listenFfmpegLog } from './ffmpeg-log.ts';
import { MAX_SEGMENT_FRAMES, segmentKey } from '../../core/ingest/segment-keys.ts';
import type { SegmentContainer } from './segment-file.ts';
import { PARTIAL_SEGMENT } from './stream-state.ts';
import { backoffMs, decidePacket, redactSource, secondsToTicks, Timeline, type BackoffOptions } from './stream-segmenter.ts';
import type { TimelineMark } from './stream-journal.ts';
import { codecName } from '../../gpu-worker/video/segment-decoder.ts';
import { isCopied, refusal, SourceError } from './transcode.ts';
import { ffmpegProgram, startTranscoder, TRANSCODER_INPUT_FORMAT, transcoderEnded, type Transcoder } from './live-transcoder.ts';

/** Why a live connection is transcoded: its codec is not H.264 / H.265, or its H.264 / H.265 has open GOPs. */
export type LiveTranscode = 'codec' | 'open-gop';

/** Thrown inside a connection that met open GOPs: ends it, and the next one transcodes at once. */
class OpenGops extends Error {
  readonly droppedFrames: number;
  constructor(droppedFrames: number) {
    super('open GOPs');
    this.droppedFrames = droppedFrames;
  }
}

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
  /**
   * `codec`: FFmpeg's name of the source's codec (`h264`, `hevc`, `mjpeg`, ...);
   * `transcode`: why this connection is transcoded to H.264 by an `ffmpeg` child, null when
   * it is cut by stream copy.
   */
  readonly onConnected: (e: { readonly attempt: number; readonly codec: string; readonly transcode: LiveTranscode | null }) => void;
  /** The source's H.264 / H.265 turned out to have open GOPs: the segment being cut was dropped, and the source is transcoded from now on. */
  readonly onOpenGops?: (e: { readonly codec: string; readonly droppedFrames: number; readonly message: string }) => void;
  /** Average bit rate of a live transcode, kbit/s; absent: constant quality (CRF 20). */
  readonly bitrateKbps?: number | undefined;
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
  // The codec whose open GOPs made this source transcoded; forgotten when the source sends another codec.
  let openGopCodec: string | null = null;
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
      let transcoder: Transcoder | undefined;
      /** A transcoded connection: the camera (read here, fed to the child), its feeding loop, and why the camera's stream ended. */
      let camera: Demuxer | undefined;
      let pump: Promise<void> | undefined;
      let cameraEnded: string | null = null;
      let watchdog: NodeJS.Timeout | undefined;
      let stop: (() => void) | undefined;
      let reason = 'the stream ended';
      let yielded = 0;
      let switchNow = false;
      // When the camera last gave a packet: a read of a silent source that a stop interrupted
      // still waits in node-av's thread until its timeout, and closing the demuxer under it
      // crashes the process (decision 74), so such a close waits out that timeout first.
      let lastPacketMs = Date.now();
      ffmpegLog.clear();
      try {
        demuxer = await Demuxer.open(o.source, { options: openOptions(o.source, o.live, readTimeoutSeconds) });
        let stream = demuxer.video();
        if (!stream) throw new SourceError(refusal(redactSource(o.source), 'no-video', demuxer.streams.map((s) => codecName(s.codecpar.codecId as number)).join(', ').replace(/^(.)/, 'only $1')));
        const codec = codecName(stream.codecpar.codecId as number);
        if (openGopCodec !== null && openGopCodec !== codec) openGopCodec = null;
        const transcode: LiveTranscode | null = !isCopied(stream.codecpar.codecId as number) ? 'codec' : openGopCodec !== null ? 'open-gop' : null;
        if (transcode !== null && !o.live) {
          // a file is transcoded whole before the stream starts (stream-command.ts)
          throw new SourceError(`${redactSource(o.source)} holds ${codec} video: transcode it first (affinity upload and affinity stream do)`);
        }
        if (transcode !== null) {
          // The camera's packets go to an ffmpeg child as they come (this process keeps reading
          // the camera, with its timeouts); the child's H.264 is what is cut.
          const cameraDemuxer = demuxer;
          const cameraStream = stream;
          camera = cameraDemuxer;
          demuxer = undefined;
          const child = startTranscoder({ keyframeSeconds: o.segmentSeconds, bitrateKbps: o.bitrateKbps });
          transcoder = child;
          // a child that is gone ends the camera's read too
          void child.exited.then(() => cameraDemuxer.interrupt());
          stop = () => cameraDemuxer.interrupt();
          o.signal.addEventListener('abort', stop, { once: true });
          pump = (async () => {
            let feeder: Muxer | undefined;
            try {
              feeder = await Muxer.open(child.input, { format: TRANSCODER_INPUT_FORMAT });
              // the camera's container's tag for the codec (MPEG-TS's stream type, RTP's) means nothing in NUT, which refuses it
              cameraStream.codecpar.codecTag = 0;
              const into = feeder.addStream(cameraStream);
              const step = stepOf(cameraStream.avgFrameRate, [cameraStream.timeBase.num, cameraStream.timeBase.den]);
              let lastPts: bigint | null = null;
              for await (const packet of cameraDemuxer.packets(cameraStream.index)) {
                if (!packet) continue;
                lastPacketMs = Date.now();
                if (child.gone()) {
                  packet.free();
                  break;
                }
                // A container needs a time for each packet. An RTSP camera's first packets may
                // have none (before its clock is known): the feed starts at the first keyframe
                // that has one (as a cut starts at a keyframe); a later packet without one comes
                // a frame after the last (its decode time is left to the muxer).
                if (packet.pts === AV_NOPTS_VALUE) {
                  if (lastPts === null) {
                    packet.free();
                    continue;
                  }
                  packet.pts = lastPts + step;
                  packet.dts = AV_NOPTS_VALUE;
                } else if (lastPts === null && !packet.isKeyframe) {
                  packet.free();
                  continue;
                }
                lastPts = packet.pts;
                await feeder.writePacket(packet, into);
              }
              // the camera's stream ended (or a stop interrupted it) while the child was alive
              if (!child.gone()) cameraEnded = 'the stream ended';
            } catch (e) {
              if (!child.gone()) cameraEnded = (e as Error).message || String(e);
            } finally {
              await feeder?.close().catch(() => undefined);
              child.finish(); // FFmpeg flushes what it holds and exits
            }
          })();
          // a child that never hands anything over is ended
          const opening = setTimeout(() => child.kill(), (readTimeoutSeconds * 2 + 10) * 1000);
          try {
            demuxer = await Demuxer.open(child.stdout, { format: 'mpegts' });
          } catch (e) {
            child.kill();
            const exit = await child.exited;
            if (exit.spawnError) {
              throw new SourceError(
                `${redactSource(o.source)} sends ${codec} video, which is transcoded to H.264 by the ffmpeg program, and ${ffmpegProgram()} cannot be run (${exit.spawnError.message}). ` +
                  'Install FFmpeg (apt-get install ffmpeg; the edge image has it) or set AFFINITY_FFMPEG to its path, or set the camera to H.264 or H.265 with closed GOPs',
              );
            }
            throw new Error(transcoderEnded(exit, child.said()));
          } finally {
            clearTimeout(opening);
          }
          stream = demuxer.video();
          if (!stream) throw new Error(`the transcoder's output holds no video stream (${child.said() ?? 'nothing said'})`);
        }
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
        o.onConnected({ attempt, codec, transcode });
        ffmpegLog.clear(); // what probing the stream said is no reason for what comes later
        const segmentTicks = secondsToTicks(o.segmentSeconds, tb) - defaultStep / 2n;
        if (!stop) {
          stop = () => demuxer?.interrupt();
          o.signal.addEventListener('abort', stop, { once: true });
        }
        // the camera's own read timeout ends a silent camera (its stream, then the child's); this ends a child that hangs
        const watchdogMs = (readTimeoutSeconds * 2 + 10) * 1000;
        const feed = (): void => {
          if (!transcoder) return;
          clearTimeout(watchdog);
          const child = transcoder;
          watchdog = setTimeout(() => {
            reason = `the transcoder (${ffmpegProgram()}) gave no frame for ${watchdogMs / 1000} s`;
            child.kill();
          }, watchdogMs);
        };
        feed();

        let muxer: Muxer | undefined;
        let open: { firstFrame: number; frames: number; startDts: bigint; startPts: bigint; outIndex: number } | null = null;
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
        const line: Timeline = timeline;
        /** Cuts one packet into the open segment. */
        const cut = async (packet: Packet, number: number | null): Promise<void> => {
          const { dts, pts } = line.map({
            dts: packet.dts === AV_NOPTS_VALUE ? null : packet.dts,
            pts: packet.pts === AV_NOPTS_VALUE ? null : packet.pts,
            duration: packet.duration,
          });
          if (o.realtime) {
            pace ??= { wallMs: Date.now(), dts };
            const due = pace.wallMs + (Number(dts - pace.dts) * 1000 * tb[0]) / tb[1];
            if (due > Date.now()) await sleep(due - Date.now(), o.signal);
            if (o.signal.aborted) return;
          }
          const timestamped = !o.live || packet.pts !== AV_NOPTS_VALUE || packet.dts !== AV_NOPTS_VALUE;
          const action = decidePacket(open, { keyframe: packet.isKeyframe, dts, timestamped }, segmentTicks, MAX_SEGMENT_FRAMES);
          if (action === 'skip') return;
          if (action === 'write' && open && pts < open.startPts) {
            // Open GOPs: this frame is shown before the keyframe that opened the segment and
            // needs the GOP before it, which another segment holds: the segment would not
            // decode. It is dropped (it was never numbered), and the connection ends; the
            // next one transcodes (a file never gets here: it is transcoded first).
            const dropped = open.frames;
            totalFrames -= dropped; // never numbered: not frames of this run
            await muxer?.close().catch(() => undefined);
            muxer = undefined;
            open = null;
            rmSync(partial, { force: true });
            if (!o.live || transcoder) {
              throw new SourceError(
                `${redactSource(o.source)} sends ${codec} with open GOPs (a frame shown before its keyframe), which cannot be cut into segments that decode alone; ` +
                  `the segment being cut (${dropped} frame(s), not numbered) is dropped` + (o.live ? '' : '. Upload the file with affinity upload, which transcodes it'),
              );
            }
            throw new OpenGops(dropped);
          }
          if (action === 'rotate') await close();
          if (action === 'open' || action === 'rotate') {
            muxer = await Muxer.open(partial, { format: MUXER_FORMAT[o.container] });
            const outIndex = muxer.addStream(stream);
            const first = number ?? o.nextFrame();
            open = { firstFrame: first, frames: 0, startDts: dts, startPts: pts, outIndex };
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
        };
        // A transcoder's last packet is cut only once the next one, or the child's clean exit,
        // shows it whole: a killed child may leave half a frame in the pipe.
        let held: Packet | null = null;
        try {
          for await (const packet of demuxer.packets(stream.index)) {
            if (!packet) continue;
            if (!transcoder) lastPacketMs = Date.now();
            if (o.signal.aborted && !transcoder) break;
            feed();
            if (transcoder) {
              const previous = held;
              held = packet;
              if (previous) await cut(previous, null);
              continue;
            }
            let number: number | null = null;
            if (!o.live) {
              // a file's frames are numbered by position from its first keyframe; frames an
              // earlier run cut are skipped (a restart continues where it stopped)
              if (!sawKeyframe && !packet.isKeyframe) continue;
              sawKeyframe = true;
              number = o.fileFirstFrame + fileIndex++;
              if (open === null && number < o.nextFrame()) continue;
            }
            await cut(packet, number);
          }
          if (transcoder) {
            clearTimeout(watchdog);
            const exit = await transcoder.exited;
            if (held && exit.signal === null && !exit.spawnError) {
              const last = held;
              held = null;
              await cut(last, null);
            }
            await pump;
            // the camera's end (a drop, a stall: its words) ended the child, or the child ended by itself (its words)
            if (!o.signal.aborted && !reason.startsWith('the transcoder')) reason = cameraEnded ?? transcoderEnded(exit, transcoder.said());
          }
        } catch (e) {
          if (e instanceof OpenGops) {
            openGopCodec = codec;
            switchNow = true;
            o.onOpenGops?.({
              codec,
              droppedFrames: e.droppedFrames,
              message:
                `${redactSource(o.source)} sends ${codec} with open GOPs (a frame shown before its keyframe), which cannot be cut into segments that decode alone: ` +
                `the segment being cut (${e.droppedFrames} frame(s), not numbered) is dropped, and from now on the source is transcoded to H.264 with closed GOPs by ${ffmpegProgram()}`,
            });
          } else {
            reason = (e as Error).message || String(e);
            if (e instanceof SourceError) throw e;
          }
        } finally {
          held?.free();
        }
        await close();
      } catch (e) {
        reason = (e as Error).message || String(e);
        if (!o.live) throw e;
        // A source that gives nothing to analyse is refused at its first connection, before anything is uploaded.
        if (e instanceof SourceError && totalFrames === 0) throw e;
      } finally {
        clearTimeout(watchdog);
        if (stop) o.signal.removeEventListener('abort', stop);
        transcoder?.kill();
        await transcoder?.exited;
        await pump;
        if (o.live && o.signal.aborted) await settleSilentRead(lastPacketMs, readTimeoutSeconds);
        await camera?.close().catch(() => undefined);
        await demuxer?.close().catch(() => undefined);
      }
      if (switchNow && !o.signal.aborted) continue; // not an outage: the same camera, transcoded from now on
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
