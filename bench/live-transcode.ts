/**
 * CPU per camera of the live transcode (issue 41, decision 74): a camera in another codec
 * than H.264/H.265 (MJPEG, MPEG-4 Part 2, ...) or with open GOPs is transcoded to H.264 on
 * the edge box by an `ffmpeg` child with exactly the arguments `affinity stream` and
 * `affinity edge` give it (cli/video/live-transcoder.ts `transcoderArgs`: libx264
 * `veryfast` `zerolatency`, 4:2:0, CRF 20, a keyframe every segment length).
 *
 * The camera is a file here, fed to the child's stdin in NUT as the capture feeds a
 * camera's packets (the capture's own remux into NUT is not counted: a copy), so the child
 * runs as fast as it can: a clip of ffmpeg's
 * `testsrc2` pattern with a little noise on it (`noise=alls=8:allf=t`: a camera's sensor
 * noise, which costs an encoder far more than a clean synthetic picture), made once per
 * size and codec by the `ffmpeg` binary (not timed). Frames per core-second = frames out
 * / the child's user + system CPU (read from the shell that waited for it: `/proc/$$/stat`
 * cutime + cstime), so the machine's other load does not count, only what the transcode
 * itself burns, whatever number of threads it used. A live transcoder starts once per
 * connection, so the steady state is what a camera costs: each clip is also transcoded as
 * its first frame alone, and that run's CPU (the process's start, the codecs' set-up) is
 * taken off: frames per core-second = (frames - 1) / (CPU of the clip - CPU of one frame).
 * Cores per camera at F fps = F / that. Rounds alternate the clips; medians are reported.
 *
 * Needs the `ffmpeg` binary with libx264 (apt-get install ffmpeg).
 * Run: npx node bench/live-transcode.ts [--rounds 3] [--seconds 6] [--sizes 640x480,1280x720,1920x1080] [--codecs mjpeg,mpeg4] [--noise 8] [--bitrate KBPS] [--out bench/results/live-transcode.json]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { transcoderArgs } from '../cli/video/live-transcoder.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '6' },
    sizes: { type: 'string', default: '640x480,1280x720,1920x1080' },
    codecs: { type: 'string', default: 'mjpeg,mpeg4' },
    fps: { type: 'string', default: '15' },
    noise: { type: 'string', default: '8' },
    bitrate: { type: 'string' },
    out: { type: 'string', default: 'bench/results/live-transcode.json' },
  },
});
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const fps = Number(values.fps);
/** Temporal noise on the pattern (ffmpeg's `noise=alls=N:allf=t`), 0 for a clean synthetic picture. */
const noise = Number(values.noise);
/** The transcode's average rate, kbit/s (a camera's `bitrateKbps`); absent: the product's default, CRF 20. */
const bitrateKbps = values.bitrate !== undefined ? Number(values.bitrate) : undefined;
const sizes = values.sizes.split(',');
const codecs = values.codecs.split(',');
const ENCODERS: Record<string, string[]> = { mjpeg: ['-c:v', 'mjpeg', '-q:v', '4', '-pix_fmt', 'yuvj422p'], mpeg4: ['-c:v', 'mpeg4', '-q:v', '4', '-g', String(fps)] };

if (spawnSync('ffmpeg', ['-hide_banner', '-h', 'encoder=libx264']).status !== 0) {
  console.error('bench/live-transcode.ts needs the ffmpeg binary with libx264: apt-get install ffmpeg');
  process.exit(2);
}
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim()) || 100;
const work = mkdtempSync(path.join(tmpdir(), 'live-transcode-'));

interface Clip {
  readonly size: string;
  readonly codec: string;
  readonly file: string;
  readonly frames: number;
  /** The clip's first frame alone: the start-up cost. */
  readonly first: string;
}

const clips: Clip[] = [];
for (const size of sizes) {
  for (const codec of codecs) {
    // NUT: what the capture hands the transcoder on its stdin (the camera's packets as they came)
    const file = path.join(work, `${codec}-${size}.nut`);
    const made = spawnSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=${fps}:duration=${seconds}${noise > 0 ? `,noise=alls=${noise}:allf=t` : ''}`, ...ENCODERS[codec]!, file]);
    if (made.status !== 0) throw new Error(`cannot make ${file}: ${made.stderr.toString()}`);
    const first = path.join(work, `${codec}-${size}-first.nut`);
    const cut = spawnSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-i', file, '-frames:v', '1', '-c', 'copy', first]);
    if (cut.status !== 0) throw new Error(`cannot cut ${first}: ${cut.stderr.toString()}`);
    clips.push({ size, codec, file, first, frames: Math.round(seconds * fps) });
  }
}

/** One transcode of `file` with the product's arguments (the file on stdin, as the capture feeds the camera's packets); its CPU seconds and frames out. */
function transcode(file: string): { cpuS: number; wallS: number; framesOut: number; kbps: number } {
  const args = transcoderArgs({ keyframeSeconds: 2, bitrateKbps });
  args[args.length - 1] = path.join(work, 'out.ts'); // instead of the pipe the capture reads
  const started = Date.now();
  // the shell waits for ffmpeg, so its cutime/cstime (fields 16, 17 of /proc/$$/stat) are ffmpeg's CPU
  const r = spawnSync('sh', ['-c', 'ffmpeg -y "$@" < "$IN" || exit 1; cat /proc/$$/stat', 'sh', ...args], { env: { ...process.env, IN: file } });
  const wallS = (Date.now() - started) / 1000;
  if (r.status !== 0) throw new Error(`transcode of ${file} failed: ${r.stderr.toString()}`);
  const stat = r.stdout.toString();
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuS = (Number(fields[13]) + Number(fields[14])) / CLK_TCK; // cutime, cstime (fields 16, 17 counted from 1)
  const probe = spawnSync('ffprobe', ['-v', 'error', '-count_packets', '-select_streams', 'v:0', '-show_entries', 'stream=nb_read_packets', '-of', 'csv=p=0', path.join(work, 'out.ts')]);
  const framesOut = Number(probe.stdout.toString().split(/\s+/).find(Boolean));
  const kbps = (statSync(path.join(work, 'out.ts')).size * 8) / 1000 / (framesOut / fps);
  return { cpuS, wallS, framesOut, kbps };
}

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const samples = new Map<Clip, { fpc: number[]; wallFps: number[]; startCpuMs: number[]; framesOut: number; kbps: number }>();
const load = [loadavg()[0]!];
for (let round = 0; round < rounds; round++) {
  for (const clip of clips) {
    const r = transcode(clip.file);
    const one = transcode(clip.first);
    const s = samples.get(clip) ?? { fpc: [], wallFps: [], startCpuMs: [], framesOut: r.framesOut, kbps: Math.round(r.kbps) };
    s.fpc.push((r.framesOut - one.framesOut) / Math.max(0.001, r.cpuS - one.cpuS));
    s.wallFps.push(r.framesOut / r.wallS);
    s.startCpuMs.push(one.cpuS * 1000);
    samples.set(clip, s);
  }
  load.push(loadavg()[0]!);
}
const rows = clips.map((c) => {
  const s = samples.get(c)!;
  const framesPerCoreSecond = median(s.fpc);
  return {
    codec: c.codec,
    size: c.size,
    framesIn: c.frames,
    framesOut: s.framesOut,
    outputKbps: s.kbps,
    framesPerCoreSecond: +framesPerCoreSecond.toFixed(1),
    coresPerCamera15fps: +(15 / framesPerCoreSecond).toFixed(3),
    coresPerCamera30fps: +(30 / framesPerCoreSecond).toFixed(3),
    wallFramesPerSecond: +median(s.wallFps).toFixed(1),
    startCpuMs: Math.round(median(s.startCpuMs)),
    samples: s.fpc.map((v) => +v.toFixed(1)),
  };
});
console.log('| source | size | frames in / out | H.264 out, kbit/s | frames per core-second | cores per camera at 15 fps | at 30 fps | start-up, core-ms | wall frames/s (this machine) |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.codec} | ${r.size} | ${r.framesIn} / ${r.framesOut} | ${r.outputKbps} | ${r.framesPerCoreSecond} | ${r.coresPerCamera15fps} | ${r.coresPerCamera30fps} | ${r.startCpuMs} | ${r.wallFramesPerSecond} |`);
const ffmpegVersion = spawnSync('ffmpeg', ['-version']).stdout.toString().split('\n')[0];
const command = `npx node bench/live-transcode.ts --rounds ${rounds} --seconds ${seconds} --sizes ${values.sizes} --codecs ${values.codecs} --noise ${noise}${bitrateKbps !== undefined ? ` --bitrate ${bitrateKbps}` : ''}`;
writeFileSync(values.out, `${JSON.stringify({ command, noise, date: new Date().toISOString(), cpu: cpus()[0]?.model ?? '?', cores: availableParallelism(), loadavg1m: load.map((l) => +l.toFixed(2)), ffmpeg: ffmpegVersion, bitrateKbps: bitrateKbps ?? null, args: transcoderArgs({ keyframeSeconds: 2, bitrateKbps }), rows }, null, 2)}\n`);
console.log(`written ${values.out}`);
rmSync(work, { recursive: true, force: true });
