/**
 * sharp's settings for the frame decode, one at a time, measured apart from the processor
 * (decision 40): core-ms per frame for the whole process (getrusage) and the main thread's
 * major collections, while the bench's own synthetic JPEGs (the frames of
 * bench/pipeline-cpu.ts: 640x480 and 1920x1080, quality 95, 4:4:4) are decoded and
 * letterboxed into two reused 640x640 buffers, two frames in flight, as the processor does.
 *
 * Variants (each differs from `current`, the processor's pipeline before decision 40, in one thing):
 * - `current`: `sharp(jpeg, { failOn: 'error', limitInputPixels }).removeAlpha().toColourspace('srgb')`,
 *   the resize where the frame needs one, `.raw().toBuffer()`, then the letterbox copy;
 * - `no-cache`: `sharp.cache(false)` (libvips' operation cache off);
 * - `bare`: without `removeAlpha()` and `toColourspace('srgb')` (what a 3-channel sRGB JPEG would allow);
 * - `concurrency-2`: `sharp.concurrency(2)` (sharp's default here is 1: glibc Linux without jemalloc);
 * - `sequential-false`: `sequentialRead: false` (sharp 0.35's default is true);
 * - `block-loaders`: every loader but JPEG's and PNG's blocked (`sharp.block`), so no other format is sniffed;
 * - `join-4`: 4 frames per sharp call (`join: { across: 1 }`), 640x480 only (a joined resize would mix frames);
 * - `detach`: `current`, then sharp's output Buffer detached at once (`releaseDecoded`, decision 40).
 * Rounds alternate the variants, so the machine's load falls on all of them; medians are reported.
 *
 * Run: npx node bench/decode-settings.ts [--frames 400] [--rounds 4] [--sizes 640x480,1920x1080] [--variants current,detach] [--out bench/results/decode-settings.json]
 */
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { letterboxGeometry, letterboxInto, releaseDecoded } from '../gpu-worker/vision/preprocess.ts';
import { generateClip } from '../gpu-worker/vision/synthetic/generate.ts';
import { numberOption } from './support.ts';

const INPUT = 640;
const IN_FLIGHT = 2;
const LIMIT = 26_214_400;
const VARIANTS = ['current', 'no-cache', 'bare', 'concurrency-2', 'sequential-false', 'block-loaders', 'join-4', 'detach'] as const;
type Variant = (typeof VARIANTS)[number];
/** Every buffer loader of sharp's libvips other than JPEG's and PNG's. */
const OTHER_LOADERS = ['VipsForeignLoadWebp', 'VipsForeignLoadTiff', 'VipsForeignLoadGif', 'VipsForeignLoadSvg', 'VipsForeignLoadHeif', 'VipsForeignLoadUhdr', 'VipsForeignLoadVips', 'VipsForeignLoadMatrix', 'VipsForeignLoadPpm', 'VipsForeignLoadCsv', 'VipsForeignLoadRad'];

const { values } = parseArgs({
  options: {
    frames: { type: 'string', default: '400' },
    rounds: { type: 'string', default: '4' },
    sizes: { type: 'string', default: '640x480,1920x1080' },
    variants: { type: 'string', default: VARIANTS.join(',') },
    out: { type: 'string' },
  },
});
const frames = numberOption(values, 'frames', 10, 100_000);
const rounds = numberOption(values, 'rounds', 1, 100);
const variants = values.variants.split(',').map((v) => {
  if (!(VARIANTS as readonly string[]).includes(v)) throw new Error(`--variants: ${v} is not one of ${VARIANTS.join(', ')}`);
  return v as Variant;
});

const gc = { major: 0 };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) gc.major++;
}).observe({ entryTypes: ['gc'] });

function setGlobals(v: Variant): void {
  sharp.cache(v !== 'no-cache');
  sharp.concurrency(v === 'concurrency-2' ? 2 : 1);
  if (v === 'block-loaders') sharp.block({ operation: OTHER_LOADERS });
  else sharp.unblock({ operation: OTHER_LOADERS });
}

/** Decodes `images` (one, or several joined) the variant's way and letterboxes each into `hwc`. */
async function decodeInto(v: Variant, images: Uint8Array[], width: number, height: number, hwc: Uint8Array): Promise<void> {
  const g = letterboxGeometry(width, height, INPUT, INPUT);
  const input = v === 'join-4' ? images.map((i) => Buffer.from(i.buffer, i.byteOffset, i.byteLength)) : images[0]!;
  let pipeline = sharp(input, { failOn: 'error', limitInputPixels: LIMIT, ...(v === 'sequential-false' ? { sequentialRead: false } : {}), ...(v === 'join-4' ? { join: { across: 1 } } : {}) });
  if (v !== 'bare') pipeline = pipeline.removeAlpha().toColourspace('srgb');
  if (g.resizedWidth !== width || g.resizedHeight !== height) pipeline = pipeline.resize(g.resizedWidth, g.resizedHeight, { fit: 'fill', kernel: 'linear', fastShrinkOnLoad: true });
  const rgb = await pipeline.raw().toBuffer();
  const frameBytes = g.resizedWidth * g.resizedHeight * 3;
  for (let k = 0; k < images.length; k++) letterboxInto(hwc, rgb.subarray(k * frameBytes, (k + 1) * frameBytes), INPUT, g);
  if (v === 'detach') releaseDecoded(rgb);
}

interface Row {
  readonly size: string;
  readonly variant: Variant;
  readonly coreMsPerFrame: number[];
  readonly medianCoreMsPerFrame: number;
  readonly majorGcsPer100Frames: number[];
  readonly loadAverage1m: number[];
}

const rows: Row[] = [];
console.log(`decode settings: ${frames} JPEG frames per variant and round, ${IN_FLIGHT} in flight, ${rounds} rounds, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), sharp ${sharp.versions.sharp}, libvips ${sharp.versions.vips}`);
for (const size of values.sizes.split(',')) {
  const [width, height] = size.split('x').map(Number) as [number, number];
  const clip = await generateClip({ seed: 500, frames: 16, width, height, format: 'jpeg', objects: 6 });
  const images = clip.frames.map((f) => f.image);
  const buffers = Array.from({ length: IN_FLIGHT }, () => new Uint8Array(INPUT * INPUT * 3));
  const results = new Map<Variant, { ms: number[]; gcs: number[]; load: number[] }>();
  for (let round = 0; round < rounds; round++) {
    for (const v of variants) {
      if (v === 'join-4' && (width > INPUT || height > INPUT)) continue;
      setGlobals(v);
      const perCall = v === 'join-4' ? 4 : 1;
      const take = (k: number) => Array.from({ length: perCall }, (_, q) => images[(k + q) % images.length]!);
      for (let k = 0; k < 20; k++) await decodeInto(v, take(k), width, height, buffers[0]!);
      const before = process.cpuUsage();
      const gcBefore = gc.major;
      let next = 0;
      await Promise.all(
        buffers.map(async (hwc) => {
          while (next < frames) {
            const k = next;
            next += perCall;
            await decodeInto(v, take(k), width, height, hwc);
          }
        }),
      );
      const used = process.cpuUsage(before);
      const r = results.get(v) ?? { ms: [], gcs: [], load: [] };
      r.ms.push(+((used.user + used.system) / 1000 / frames).toFixed(3));
      r.gcs.push(+(((gc.major - gcBefore) * 100) / frames).toFixed(2));
      r.load.push(+loadavg()[0]!.toFixed(2));
      results.set(v, r);
    }
  }
  setGlobals('current');
  for (const [variant, r] of results) {
    const sorted = [...r.ms].sort((a, b) => a - b);
    const row: Row = { size, variant, coreMsPerFrame: r.ms, medianCoreMsPerFrame: sorted[Math.floor(sorted.length / 2)]!, majorGcsPer100Frames: r.gcs, loadAverage1m: r.load };
    rows.push(row);
    console.log(`${size} ${variant.padEnd(16)} median ${row.medianCoreMsPerFrame.toFixed(2)} core-ms per frame (rounds ${r.ms.join(' / ')}); major GCs per 100 frames ${r.gcs.join(' / ')}; load ${r.load.join(' / ')}`);
  }
}
if (values.out) {
  const command = `npx node bench/decode-settings.ts ${process.argv.slice(2).join(' ')}`.trim();
  writeFileSync(values.out, `${JSON.stringify({ command, date: new Date().toISOString(), cpu: cpus()[0]?.model ?? '?', cores: availableParallelism(), sharp: sharp.versions.sharp, vips: sharp.versions.vips, framesPerRound: frames, inFlight: IN_FLIGHT, rows }, null, 2)}\n`);
  console.log(`wrote ${values.out}`);
}
