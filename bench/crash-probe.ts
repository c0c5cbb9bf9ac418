/**
 * What the crash probe (decision 41) costs where it runs: after a takeover from a dead
 * owner, while the videos taken from it run isolated. Per processor, the time from
 * `warm()` to the child's first answer (process start + model load + first frame), the
 * child's resident memory, and the round trip of one 640x480 JPEG through it (IPC copy,
 * decode, detection at batch 1). The normal path
 * never calls the probe; this is the price of the isolation window only.
 *
 *   npx node bench/crash-probe.ts [--frames 30]
 *
 * The YOLO rows need ../shared/models (skipped with a line where absent). CPU only here:
 * on a GPU the child adds a second CUDA context (a few hundred MB of GPU memory) for the
 * isolation window, and its session start is what `warm()` hides behind the takeover.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { benchMain, machine, RESULTS_DIR, writeResult, type Bench } from './harness/main.ts';
import { parseFlags } from './harness/options.ts';
import { ProcessProbe } from '../gpu-worker/runtime/crash/probe-process.ts';
import { YOLO11N_PATH, YOLOV8N_PATH } from '../harness/yolo-fixtures.ts';

const ENTRY = fileURLToPath(new URL('../lab/probe-main.ts', import.meta.url));
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

interface Row {
  readonly processor: string;
  readonly firstAnswerMs: number;
  readonly childRssMiB: number;
  readonly tryMsMedian: number;
  readonly tryMsP90: number;
}

function rssMiB(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;

async function measure(name: string, env: Record<string, string>, frames: number, image: Uint8Array, bench: Bench): Promise<Row> {
  const probe = new ProcessProbe({ entry: ENTRY, env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR', ...env }, log: quiet });
  try {
    const t0 = performance.now();
    probe.warm();
    const first = await probe.tryFrame({ videoId: 'v', frame: 0, image, key: 'frames/v/000000.jpg' });
    const firstAnswerMs = performance.now() - t0;
    if (first.kind !== 'survived') throw new Error(`${name}: ${JSON.stringify(first)}`);
    const tries: number[] = [];
    for (let f = 1; f <= frames; f++) {
      const t = performance.now();
      await probe.tryFrame({ videoId: 'v', frame: f, image, key: `frames/v/${f}.jpg` });
      tries.push(performance.now() - t);
    }
    const row = { processor: name, firstAnswerMs: Math.round(firstAnswerMs), childRssMiB: rssMiB(probe.pid), tryMsMedian: +pct(tries, 0.5).toFixed(1), tryMsP90: +pct(tries, 0.9).toFixed(1) };
    bench.say(`${name.padEnd(22)} first answer ${String(row.firstAnswerMs).padStart(5)} ms, child RSS ${row.childRssMiB} MiB, one frame p50 ${row.tryMsMedian} ms, p90 ${row.tryMsP90} ms`);
    return row;
  } finally {
    await probe.stop();
  }
}

export async function runCrashProbe(argv: readonly string[], bench: Bench): Promise<number> {
  const parsed = parseFlags('crash-probe.ts', { frames: { num: [30, 1, 1000], int: true } }, argv);
  if (!parsed) return 0;
  const { frames } = parsed;
  const image = await sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 0, g: 0, b: 0 }, noise: { type: 'gaussian', mean: 128, sigma: 40 } } }).jpeg({ quality: 90 }).toBuffer();
  const rows: Row[] = [];
  rows.push(await measure('stats', { FRAME_PROCESSOR: 'stats' }, frames, image, bench));
  rows.push(await measure('vision, demo model', { FRAME_PROCESSOR: 'vision', MODEL_URI: '' }, frames, image, bench));
  for (const [name, path] of [['vision, yolov8n', YOLOV8N_PATH], ['vision, yolo11n', YOLO11N_PATH]] as const) {
    if (!existsSync(path)) {
      bench.say(`${name}: SKIPPED, ${path} is absent (see shared/models/README.md)`);
      continue;
    }
    rows.push(await measure(name, { FRAME_PROCESSOR: 'vision', MODEL_URI: path }, frames, image, bench));
  }
  writeResult(join(RESULTS_DIR, 'crash-probe.json'), { scenario: 'crash-probe', frames, image: '640x480 JPEG q90', machine: machine(), rows }, bench.say);
  return 0;
}

if (import.meta.main) await benchMain('crash-probe', (bench) => runCrashProbe(process.argv.slice(2), bench));
