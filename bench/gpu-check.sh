#!/usr/bin/env bash
# FrameAffinity video path on a GPU: is NVDEC really used, does the CUDA execution
# provider load, and what do they give end to end through the worker? (issue 43, item 6)
#
#   bash bench/gpu-check.sh                # from the repository root, on a machine with an NVIDIA GPU
#
# Without a GPU (no nvidia-smi, or it lists none) it says so and exits 3 before doing
# anything: nothing it would print could prove NVDEC or the CUDA provider. GPU_CHECK_ALLOW_CPU=1
# runs it anyway (every check then shows its CPU fallback: a dry run of the script itself).
# Its figures go to bench/README.md ("GPU check").
#
# One NVIDIA GPU, 16 cores, no network: ~3-4 minutes, hard stop before 8 (DEADLINE_S).
# Writes only a scratch folder in the repository root (removed at exit) and the demo model
# under .local/models (what the worker builds when modelUri is empty).
#
# What it proves, each independently of the project's own decoder label (which a review found
# can say "nvdec (cuda)" while FFmpeg decodes on the CPU):
#   0. the machine: GPU, driver, whether libcuda / libnvcuvid are visible, the CUDA EP library;
#   1. a camera-like 1080p H.264 clip (sensor noise + moving squares of the demo model's colours,
#      5 Mbit/s, B-frames, 2-s GOPs; libx264 in node-av's FFmpeg: no ffmpeg binary) cut into 2-s
#      segments by the CLI's cutter in the three containers of `--container` (ts, mp4, mkv), plus
#      a 4:4:4 H.264 clip that NVDEC cannot decode;
#   2. raw node-av: frames decoded with the CUDA device are CUDA frames (isHwFrame) or not;
#      the 4:4:4 control shows what the worker's label says when FFmpeg silently falls back;
#   3. bare decode fps through gpu-worker/video/segment-decoder.ts (cpu vs cuda, 1 and 8 streams,
#      each container), with nvidia-smi's decoder utilisation sampled during each run;
#   4. end to end: the real worker (gpu-worker/runtime/worker.ts) on the in-memory twins
#      (harness/worker-harness.ts, memory backend: SQS FIFO model, lease-table and S3 twins),
#      with the real vision processor (onnxruntime-node, CUDA requested alone), 8 videos of
#      segments in mixed containers, videoDecoder=cpu then auto; every frame must get an ok
#      record; e2e fps, the provider and reason, the decoder label, and NVDEC utilisation.
# Knobs: GPU_CHECK_SIZE (1920x1080), GPU_CHECK_SECONDS (8: clip length), GPU_CHECK_VIDEOS (8).
set -uo pipefail

DEADLINE_S=450
T0=$(date +%s)
SIZE=${GPU_CHECK_SIZE:-1920x1080}
SECONDS_CLIP=${GPU_CHECK_SECONDS:-8}
VIDEOS=${GPU_CHECK_VIDEOS:-8}

if ! grep -q '"name": "frame-affinity"' package.json 2>/dev/null; then
  echo "run this from the FrameAffinity repository root (package.json named frame-affinity)" >&2
  exit 2
fi
NODE=node_modules/.bin/node
[ -x "$NODE" ] || NODE=node
WORK=$(mktemp -d .gpu-check.XXXXXX) || exit 2
SAMPLER_PID=""
cleanup() {
  [ -n "$SAMPLER_PID" ] && kill "$SAMPLER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
SUMMARY="$WORK/summary.txt"
: >"$SUMMARY"

elapsed() { echo $(($(date +%s) - T0)); }
section() { printf '\n=== %s (t+%ss)\n' "$1" "$(elapsed)"; }
note() { echo "$*" | tee -a "$SUMMARY"; }
left() { echo $((DEADLINE_S - $(elapsed))); }

HAVE_SMI=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && HAVE_SMI=1
if [ "$HAVE_SMI" != 1 ] && [ "${GPU_CHECK_ALLOW_CPU:-0}" != 1 ]; then
  if command -v nvidia-smi >/dev/null 2>&1; then why="nvidia-smi lists no GPU ($(nvidia-smi -L 2>&1 | head -1))"; else why="nvidia-smi is not installed"; fi
  echo "gpu-check: no NVIDIA GPU on this machine: $why." >&2
  echo "gpu-check: nothing here could prove NVDEC or the CUDA execution provider; run it on a GPU instance (g5/g6) or in the worker image with --gpus all." >&2
  echo "gpu-check: GPU_CHECK_ALLOW_CPU=1 runs it anyway, showing every CPU fallback (a dry run of the script)." >&2
  exit 3
fi
SMI_MODE=none
if [ "$HAVE_SMI" = 1 ]; then
  if nvidia-smi --query-gpu=utilization.gpu,utilization.decoder --format=csv,noheader,nounits >/dev/null 2>&1; then SMI_MODE=query; else SMI_MODE=dmon; fi
fi

# Samples GPU (SM) and decoder (NVDEC) utilisation every 0.5 s into $1 until stopped.
start_sampler() {
  SAMPLER_PID=""
  case "$SMI_MODE" in
    query) nvidia-smi --query-gpu=utilization.gpu,utilization.decoder --format=csv,noheader,nounits -lms 500 >"$1" 2>/dev/null & SAMPLER_PID=$! ;;
    dmon) nvidia-smi dmon -s u -d 1 >"$1" 2>/dev/null & SAMPLER_PID=$! ;;
  esac
}
stop_sampler() {
  [ -n "$SAMPLER_PID" ] && kill "$SAMPLER_PID" 2>/dev/null && wait "$SAMPLER_PID" 2>/dev/null
  SAMPLER_PID=""
}
# Prints "sm max/avg, nvdec max/avg" of a sample file.
utilisation() {
  [ -s "$1" ] || { echo "no nvidia-smi samples"; return; }
  if [ "$SMI_MODE" = query ]; then
    awk -F', *' '$1 ~ /^[0-9]+$/ { n++; s+=$1; d+=$2; if ($1>sm) sm=$1; if ($2>dm) dm=$2 }
      END { if (n) printf "SM max %d%% avg %.0f%%, NVDEC max %d%% avg %.0f%% (%d samples)", sm, s/n, dm, d/n, n; else print "no samples" }' "$1"
  else
    awk '/^#/ { if (!h) for (i = 2; i <= NF; i++) { if ($i == "sm") c_sm = i - 1; if ($i == "dec") c_dec = i - 1 } h = 1; next }
      NF > 2 && $c_sm ~ /^[0-9]+$/ { n++; s+=$c_sm; d+=$c_dec; if ($c_sm>sm) sm=$c_sm; if ($c_dec>dm) dm=$c_dec }
      END { if (n) printf "SM max %d%% avg %.0f%%, NVDEC max %d%% avg %.0f%% (%d samples)", sm, s/n, dm, d/n, n; else print "no samples" }' "$1"
  fi
}
# Runs one node step with a timeout, sampling the GPU meanwhile; RESULT lines go to the summary.
step() {
  local name=$1 limit=$2; shift 2
  local budget; budget=$(left)
  if [ "$budget" -lt 20 ]; then note "SKIPPED $name: deadline"; return 1; fi
  [ "$limit" -gt "$budget" ] && limit=$budget
  start_sampler "$WORK/util-$name.txt"
  timeout --signal=TERM --kill-after=5 "$limit" "$NODE" "$@" 2>&1 | tee "$WORK/out-$name.txt" | grep -v '^RESULT ' | sed 's/^/    /' | tail -n 25
  local rc=${PIPESTATUS[0]}
  stop_sampler
  grep '^RESULT ' "$WORK/out-$name.txt" | sed 's/^RESULT //' >>"$SUMMARY"
  [ "$SMI_MODE" != none ] && note "util.$name: $(utilisation "$WORK/util-$name.txt")"
  [ "$rc" = 0 ] || note "FAILED $name: exit $rc$([ "$rc" = 124 ] && echo ' (timeout)')"
  return "$rc"
}

section "0. machine"
if [ "$HAVE_SMI" = 1 ]; then
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv,noheader | sed 's/^/    /'
  note "driver: $(nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | head -1) (highest CUDA the driver supports)"
else
  note "nvidia-smi: not found or no GPU (the checks below will show CPU fallbacks)"
fi
note "NVIDIA_DRIVER_CAPABILITIES=${NVIDIA_DRIVER_CAPABILITIES:-<unset>} NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES:-<unset>} (the image sets compute,utility,video)"
LDCONFIG=$(command -v ldconfig || echo /sbin/ldconfig)
for lib in libcuda.so.1 libnvcuvid.so.1 libnvidia-encode.so.1 libcudart.so.12 libcublasLt.so.12 libcudnn.so.9; do
  if "$LDCONFIG" -p 2>/dev/null | grep -q " $lib "; then note "lib $lib: visible"; else note "lib $lib: NOT in the linker cache"; fi
done
note "node: $("$NODE" --version) ($NODE); nproc: $(nproc)"
ORT_BIN=node_modules/onnxruntime-node/bin/napi-v6/linux/x64
if [ -f "$ORT_BIN/libonnxruntime_providers_cuda.so" ]; then
  missing=$(ldd "$ORT_BIN/libonnxruntime_providers_cuda.so" 2>/dev/null | awk '/not found/ { print $1 }' | tr '\n' ' ')
  note "ORT CUDA EP library: present; unresolved dependencies: ${missing:-none}"
else
  note "ORT CUDA EP library: ABSENT in this node_modules (onnxruntime-node installed without ONNXRUNTIME_NODE_INSTALL=cuda12, as .npmrc does): the CUDA EP can only be proven in the worker image (gpu-worker/Dockerfile installs it)"
fi

cat >"$WORK/make.mjs" <<'EOF'
// Makes the clips and their segments (no ffmpeg binary: libx264 in node-av's FFmpeg).
import { writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Demuxer, Encoder, Muxer } from 'node-av/api';
import { Frame, Log, avGetPixFmtName } from 'node-av/lib';
import { AV_LOG_ERROR, AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV444P, FF_ENCODER_LIBX264 } from 'node-av/constants';
import { cutFile } from '../cli/video/segment-file.ts';
import { DEMO_CLASSES } from '../gpu-worker/vision/demo-model/build-model.ts';

const [work, size, seconds] = process.argv.slice(2);
const [W, H] = size.split('x').map(Number);
const FPS = 30;
const tb = { num: 1, den: FPS };
let seed = 0x9e3779b9;
const rnd = () => { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return seed; };
const yuvOf = ([r, g, b]) => [16 + 0.257 * r + 0.504 * g + 0.098 * b, 128 - 0.148 * r - 0.291 * g + 0.439 * b, 128 + 0.439 * r - 0.368 * g - 0.071 * b].map(Math.round);
Log.setLevel(AV_LOG_ERROR);

/**
 * A camera-like clip: a dark background whose sensor noise changes every frame (8 fields in
 * turn) and squares of the demo model's colours moving across it, encoded by libx264 at a
 * fixed bitrate (a camera's encoder; with noise, CRF's bitrate jumps by orders of magnitude).
 */
async function encodeSynthetic(file, { width, height, frames, chroma, bitrate }) {
  const cw = chroma === 444 ? width : width / 2;
  const ch = chroma === 444 ? height : height / 2;
  const ySize = width * height;
  const cSize = cw * ch;
  const format = chroma === 444 ? AV_PIX_FMT_YUV444P : AV_PIX_FMT_YUV420P;
  const fields = Array.from({ length: 8 }, () => { const y = Buffer.alloc(ySize); for (let i = 0; i < ySize; i++) y[i] = 16 + (rnd() % 26); return y; });
  const side = Math.max(16, Math.round(height / 8) & ~1);
  const squares = DEMO_CLASSES.map((c, k) => ({ yuv: yuvOf(c.rgb.map((v) => (v ? 235 : 20))), y: Math.round(((k + 0.5) * height) / DEMO_CLASSES.length - side / 2) & ~1, x0: (k * 311) % width, vx: (k % 2 ? -1 : 1) * (4 + 2 * k) }));
  const enc = await Encoder.create(FF_ENCODER_LIBX264, {
    width, height, pixelFormat: format, timeBase: tb, frameRate: { num: FPS, den: 1 }, gopSize: 2 * FPS,
    context: { bitRate: bitrate, rcMaxRate: bitrate, rcBufferSize: 2 * bitrate },
    options: { preset: 'veryfast', bf: '2', sc_threshold: '0', keyint_min: String(2 * FPS) },
  });
  const mux = await Muxer.open(file);
  const out = mux.addStream(enc);
  const write = async (packets) => { for (const p of packets) { await mux.writePacket(p, out); p.free(); } };
  const sx = width / cw;
  const sy = height / ch;
  for (let f = 0; f < frames; f++) {
    const buf = Buffer.alloc(ySize + 2 * cSize, 128);
    fields[f % fields.length].copy(buf, 0);
    for (const q of squares) {
      const span = width + side;
      const x = (((((q.x0 + q.vx * f) % span) + span) % span) - side) & ~1;
      const x1 = Math.max(0, x);
      const x2 = Math.min(width, x + side);
      if (x2 <= x1) continue;
      const y1 = Math.max(0, q.y);
      const y2 = Math.min(height, q.y + side);
      for (let y = y1; y < y2; y++) buf.fill(q.yuv[0], y * width + x1, y * width + x2);
      for (let y = y1 / sy; y < y2 / sy; y++) {
        buf.fill(q.yuv[1], ySize + y * cw + x1 / sx, ySize + y * cw + x2 / sx);
        buf.fill(q.yuv[2], ySize + cSize + y * cw + x1 / sx, ySize + cSize + y * cw + x2 / sx);
      }
    }
    const fr = Frame.fromVideoBuffer(buf, { width, height, format, timeBase: tb });
    fr.pts = BigInt(f);
    try { await write(await enc.encodeAll(fr)); } finally { fr.free(); }
  }
  await write(await enc.encodeAll(null));
  await mux.close();
  enc.close();
  return frames;
}

const t0 = performance.now();
const clip = join(work, 'clip.mp4');
// 5 Mbit/s at 1080p (cameras send 2-5), in proportion for other sizes.
const bitrate = Math.max(300_000, Math.round((5_000_000 * W * H) / (1920 * 1080)));
const n = await encodeSynthetic(clip, { width: W, height: H, frames: Math.round(Number(seconds) * FPS), chroma: 420, bitrate });
const mbps = (statSync(clip).size * 8) / (n / FPS) / 1e6;
console.log(`RESULT clip: ${W}x${H} H.264 4:2:0, ${n} frames at ${FPS} fps, ${mbps.toFixed(1)} Mbit/s (target ${(bitrate / 1e6).toFixed(1)}), B-frames, 2-s GOPs; made in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const segments = {};
for (const container of ['mpegts', 'mp4', 'matroska']) {
  const r = await cutFile(clip, { videoId: 'gpu-check', outDir: join(work, container), segmentSeconds: 2, container });
  segments[container] = r.segments.map((s) => ({ file: s.file, key: s.key, firstFrame: s.firstFrame, frames: s.frames, bytes: s.bytes }));
  console.log(`RESULT segments.${container}: ${r.segments.length} x ~${r.segments[0]?.frames} frames (${r.segments.map((s) => s.key.split('/').pop()).join(' ')})`);
}
// The control: H.264 High 4:4:4, which NVDEC does not decode (its H.264 is 4:2:0).
const control = join(work, 'h264-444.mp4');
const N4 = await encodeSynthetic(control, { width: 1280, height: 720, frames: 30, chroma: 444, bitrate: 2_000_000 });
const d = await Demuxer.open(control);
const cp = d.video().codecpar;
console.log(`RESULT control: H.264 profile ${cp.profile} (244 = High 4:4:4), ${avGetPixFmtName(cp.format)}, ${N4} frames 1280x720`);
await d.close();
writeFileSync(join(work, 'manifest.json'), JSON.stringify({ width: W, height: H, fps: FPS, frames: n, segments, control: { file: control, frames: N4 } }));
EOF

cat >"$WORK/bare.mjs" <<'EOF'
// Bare decode: raw node-av (are the frames CUDA frames?) and the worker's decoder (fps, label).
import { readFileSync } from 'node:fs';
import { Decoder, Demuxer, HardwareContext } from 'node-av/api';
import { Log, avGetPixFmtName } from 'node-av/lib';
import { AV_HWDEVICE_TYPE_CUDA, AV_LOG_WARNING } from 'node-av/constants';

const [work, phase] = process.argv.slice(2);
const m = JSON.parse(readFileSync(`${work}/manifest.json`, 'utf8'));
// The worker decodes straight to the letterbox of the model (resizeFor): a 640 input here, as a YOLO model's.
const scale = Math.min(640 / m.width, 640 / m.height);
const resize = { width: Math.round(m.width * scale), height: Math.round(m.height * scale) };

async function rawProbe(label, file, hw) {
  // As segment-decoder.ts asks node-av: Decoder.create(stream, { hardware }) with a CUDA device.
  const demuxer = await Demuxer.open(readFileSync(file));
  const stream = demuxer.video();
  const dec = await Decoder.create(stream, { hardware: hw, exitOnError: true, context: { threadCount: 1 } });
  let frames = 0;
  let hwFrames = 0;
  let first = '?';
  for await (const f of dec.frames(demuxer.packets(stream.index))) {
    if (!f) continue;
    if (frames === 0) first = avGetPixFmtName(f.format) ?? String(f.format);
    if (f.isHwFrame()) hwFrames++;
    frames++;
    f.free();
  }
  const codec = dec.getCodec().name;
  dec.close();
  await demuxer.close();
  console.log(`RESULT raw.${label}: decoder ${codec}, ${frames} frames, ${hwFrames} CUDA frames, first frame ${first} => NVDEC ${hwFrames > 0 ? 'USED' : 'NOT used'}`);
  return hwFrames > 0;
}

async function decodeAll(segs, container, hardware) {
  const { decodeSegment } = await import('../gpu-worker/video/segment-decoder.ts');
  let frames = 0;
  const labels = new Set();
  const failures = [];
  for (const s of segs) {
    const bytes = readFileSync(s.file);
    for await (const item of decodeSegment(bytes, { firstFrame: s.firstFrame, container, declaredFrames: s.frames, hardware, resize })) {
      if (item.kind === 'frame') frames++;
      else {
        labels.add(item.decoder);
        if (item.failure) failures.push(`${item.failure.reason}: ${item.failure.detail}`);
      }
    }
  }
  return { frames, labels, failures };
}

async function bench(container, hardware, streams, passes) {
  const segs = m.segments[container];
  await decodeAll(segs.slice(0, 1), container, hardware); // warm: the CUDA device opens once per process
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const runs = await Promise.all(Array.from({ length: streams }, async () => {
    const acc = { frames: 0, labels: new Set(), failures: [] };
    for (let p = 0; p < passes; p++) {
      const r = await decodeAll(segs, container, hardware);
      acc.frames += r.frames;
      r.labels.forEach((l) => acc.labels.add(l));
      acc.failures.push(...r.failures);
    }
    return acc;
  }));
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const frames = runs.reduce((n, r) => n + r.frames, 0);
  const labels = [...new Set(runs.flatMap((r) => [...r.labels]))];
  const failures = runs.flatMap((r) => r.failures);
  console.log(
    `RESULT bare ${hardware.padEnd(4)} ${container.padEnd(8)} ${streams} stream(s): ${(frames / s).toFixed(0)} fps (${frames} frames of ${m.width}x${m.height} -> ${resize.width}x${resize.height} RGB in ${s.toFixed(1)} s; ${((cpu.user + cpu.system) / 1000 / frames).toFixed(2)} core-ms/frame; UV_THREADPOOL_SIZE=${process.env.UV_THREADPOOL_SIZE ?? '4 (default)'}); label "${labels.join(' | ')}"${failures.length ? `; ${failures.length} FAILURES: ${failures[0]}` : ''}`,
  );
}

if (phase === 'probe') {
  console.log(`INFO hardware device types in this FFmpeg build: ${HardwareContext.listAvailable().join(', ')}`);
  Log.setLevel(AV_LOG_WARNING); // FFmpeg's own reasons (e.g. "Failed setup for format cuda") reach stderr here
  const hw = HardwareContext.create(AV_HWDEVICE_TYPE_CUDA);
  console.log(`RESULT cuda device (libcuda): ${hw ? 'opened' : 'NOT opened'}`);
  const main = await rawProbe(`h264 ${m.width}x${m.height} mpegts`, m.segments.mpegts[0].file, hw);
  const ctl = await rawProbe('h264 4:4:4 control', m.control.file, hw);
  const { describeDecoderChoice, decodeSegment, CUDA_DEVICE_OPTIONS } = await import('../gpu-worker/video/segment-decoder.ts');
  console.log(`RESULT describeDecoderChoice('cuda'): ${JSON.stringify(describeDecoderChoice('cuda'))} (CUDA device options ${JSON.stringify(CUDA_DEVICE_OPTIONS)}: the primary context, shared with ONNX Runtime)`);
  for (const [name, file, frames, raw] of [['4:4:4 control', m.control.file, m.control.frames, ctl], ['camera H.264', m.segments.mp4[0].file, m.segments.mp4[0].frames, main]]) {
    let end;
    for await (const item of decodeSegment(readFileSync(file), { firstFrame: 0, container: 'mp4', declaredFrames: frames, hardware: 'cuda' })) if (item.kind === 'end') end = item;
    const truthful = (end.placement === 'nvdec') === raw;
    console.log(`RESULT worker placement for the ${name}: "${end.placement}" (${end.decoder}${end.fallbackReason ? `; reason: ${end.fallbackReason}` : ''}); raw frames were ${raw ? 'CUDA' : 'software'} => ${truthful ? 'label matches the frames' : 'MISLABELLED'}`);
  }
  console.log(`RESULT verdict NVDEC for camera H.264: ${main ? 'USED' : 'NOT USED'}`);
} else {
  const [hardware, container, streams, passes] = phase.split(':');
  await bench(container, hardware, Number(streams), Number(passes));
}
process.exit(0);
EOF

cat >"$WORK/e2e.mjs" <<'EOF'
// End to end through the worker: the real Worker on the in-memory twins, the real vision processor.
import { readFileSync } from 'node:fs';
import { Logger } from '@aws-lambda-powertools/logger';
import { WorkerHarness } from '../harness/worker-harness.ts';
import { createProcessor } from '../gpu-worker/processor-factory.ts';
import { StageClock } from '../gpu-worker/runtime/stage-clock.ts';
import { METRIC_NAMES } from '../core/metric-names.ts';

const [work, decoder, videosText] = process.argv.slice(2);
const m = JSON.parse(readFileSync(`${work}/manifest.json`, 'utf8'));
const videos = Number(videosText);
const containers = ['mpegts', 'mp4', 'matroska'];
const h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { firstFrameNumber: 0, videoDecoder: decoder, reorderWaitMs: 2000, videosPerSlot: Math.max(8, videos) } });
const logger = new Logger({ serviceName: 'gpu-check', logLevel: 'WARN' });
const nullMetrics = { count() {}, milliseconds() {} };
let fatal;
const vp = await createProcessor('vision', h.tunables, logger, h.clients.s3, nullMetrics, (r) => { fatal = r; }, new StageClock());
const tLoad = performance.now();
await vp.start();
console.log(`RESULT e2e.${decoder} processor: provider=${vp.provider} (${vp.providerReason}); model loaded in ${((performance.now() - tLoad) / 1000).toFixed(1)} s; ${vp.description}`);

const ids = [];
let total = 0;
for (let v = 0; v < videos; v++) {
  const container = containers[v % containers.length];
  const id = h.videoId(`gpu-${container}`);
  ids.push({ id, container });
  await h.pinVideo(id, 0);
  let last = -1;
  for (const s of m.segments[container]) {
    await h.putSegment(id, s.firstFrame, new Uint8Array(readFileSync(s.file)), { frames: s.frames, container });
    last = s.firstFrame + s.frames - 1;
    total += s.frames;
  }
  await h.putEnd(id, last);
}
const worker = h.createWorker(0, { processor: () => vp }).start();
const t0 = performance.now();
await Promise.all(ids.map(async ({ id, container }) => {
  for (const s of m.segments[container]) await h.sendSegment(0, id, s.firstFrame, container);
  await h.sendEnd(0, id);
}));
const summaries = await Promise.all(ids.map(({ id }) => h.waitForSummary(id, (s) => s.status === 'complete', 240_000)));
const seconds = (performance.now() - t0) / 1000;
await worker.stop();
const records = (await Promise.all(ids.map(({ id }) => h.frameResults(id)))).flat();
const byStatus = {};
for (const r of records) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
const stamps = records.map((r) => r.committedAtMs).filter((x) => typeof x === 'number').sort((a, b) => a - b);
const decoded = {};
for (const x of worker.metrics) if (x.name === METRIC_NAMES.worker.segmentFramesDecoded) decoded[x.dimensions.Decoder] = (decoded[x.dimensions.Decoder] ?? 0) + x.value;
const framesOk = summaries.reduce((n, s) => n + (s.framesOk ?? 0), 0);
// A round stamps its records with the time it began (bench/worker-throughput.ts): the frames of every
// round but the last ran between the first and the last stamp.
const spanS = stamps.length > 1 ? (stamps.at(-1) - stamps[0]) / 1000 : 0;
const beforeLast = stamps.filter((x) => x < stamps.at(-1)).length;
const steady = spanS >= 0.5 && beforeLast > 0 ? `, ${(beforeLast / spanS).toFixed(0)} fps in steady state (${beforeLast} frames between the first and last commit round, ${spanS.toFixed(1)} s)` : '';
console.log(`RESULT e2e.${decoder}: ${videos} videos (${ids.map((i) => i.container).join(',')}), ${total} frames in ${seconds.toFixed(1)} s = ${(total / seconds).toFixed(0)} fps end to end${steady}; records ${JSON.stringify(byStatus)}; summaries ok ${framesOk}/${total}${framesOk === total ? '' : ' INCOMPLETE'}`);
const inUse = {};
for (const x of worker.metrics) if (x.name === METRIC_NAMES.worker.segmentDecoderInUse) inUse[x.dimensions.Decoder] = (inUse[x.dimensions.Decoder] ?? 0) + x.value;
console.log(`RESULT e2e.${decoder} SegmentFramesDecoded by Decoder: ${JSON.stringify(decoded)}; SegmentDecoderInUse: ${JSON.stringify(inUse)}; "segment decoder in use" log: ${JSON.stringify(worker.logsMatching(/^segment decoder in use$/).map((l) => [l.fields?.decoder, l.fields?.detail]))}; videos on the CPU: ${JSON.stringify(worker.logsMatching(/^video decoded on the CPU/).map((l) => l.fields?.reason))}`);
if (fatal) console.log(`RESULT e2e.${decoder} processor FATAL: ${fatal}`);
await h.stop();
process.exit(framesOk === total ? 0 : 1);
EOF

section "1. clips and segments (libx264 in node-av, the CLI's cutter)"
step make 120 "$WORK/make.mjs" "$WORK" "$SIZE" "$SECONDS_CLIP" || { note "cannot make the clips: stopping"; cat "$SUMMARY"; exit 1; }

section "2. raw node-av NVDEC probe, and the worker's label on a stream NVDEC cannot decode"
step probe 60 "$WORK/bare.mjs" "$WORK" probe

section "3. bare decode through gpu-worker/video/segment-decoder.ts"
step bare-cpu-1 60 "$WORK/bare.mjs" "$WORK" cpu:mpegts:1:2
step bare-cuda-1 60 "$WORK/bare.mjs" "$WORK" cuda:mpegts:1:2
step bare-cuda-mp4 45 "$WORK/bare.mjs" "$WORK" cuda:mp4:1:1
step bare-cuda-mkv 45 "$WORK/bare.mjs" "$WORK" cuda:matroska:1:1
step bare-cpu-8 75 "$WORK/bare.mjs" "$WORK" cpu:mpegts:8:1
step bare-cuda-8 60 "$WORK/bare.mjs" "$WORK" cuda:mpegts:8:1
UV_THREADPOOL_SIZE=16 step bare-cpu-8-uv16 75 "$WORK/bare.mjs" "$WORK" cpu:mpegts:8:1

section "4. end to end through the worker (in-memory twins, vision processor)"
step e2e-cpu 150 "$WORK/e2e.mjs" "$WORK" cpu "$VIDEOS"
step e2e-auto 150 "$WORK/e2e.mjs" "$WORK" auto "$VIDEOS"

section "summary"
cat "$SUMMARY"
echo
echo "Reading it: NVDEC is proven by 'raw ... NVDEC USED' with NVDEC utilisation above 0 during bare-cuda-* and e2e-auto."
echo "The worker's placement is read off the first frame: 'label matches the frames' on both placement lines (the 4:4:4 control must say cpu-fallback). The CUDA EP is proven by"
echo "'e2e.* processor: provider=cuda'; provider=cpu with the reason is the WorkerOnCpu case. Compare 'bare cuda ... fps'"
echo "with 'e2e.auto ... fps': the worker adds the model, tracking, commits and delivery to the bare decode."
echo "total $(elapsed) s"
