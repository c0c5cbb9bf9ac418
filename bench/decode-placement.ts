/**
 * Where should the JPEG decode run: on the main thread, or in a dedicated decode thread?
 * Measured apart from the processor, before it got its decode thread (decision 37, part
 * 2; `decodeInThread`, gpu-worker/vision/decode-thread.ts). sharp returns each frame's pixels as a new Buffer that
 * the pool cannot reuse and postMessage cannot move. That Buffer is garbage in whichever
 * V8 heap called sharp, and it triggers major collections there (bench/vision.md). A
 * decode thread keeps that garbage in its own small heap and sends the letterbox back in
 * a pooled buffer that is moved, not copied.
 *
 * Each placement runs twice per ballast, alternately. Both placements decode and letterbox the same 640x480 JPEGs, two frames in flight, into
 * buffers from one `BufferPool`. The thread placement moves the buffer there and back and
 * copies the JPEG bytes each way. Reported per frame: process CPU (all threads), the main
 * thread's major collections, and minor page faults. `--ballast N` first fills the main
 * heap with N x 10,000 small live objects, as a worker with SDK clients and caches holds
 * some; a major collection's cost grows with the heap.
 *
 * Run: npx node bench/decode-placement.ts [--frames 400] [--ballast 0,200] [--out bench/results/decode-placement.json]
 */
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import sharp from 'sharp';
import { BufferPool } from '../gpu-worker/vision/buffer-pool.ts';
import { letterboxGeometry, letterboxInto, releaseDecoded } from '../gpu-worker/vision/preprocess.ts';

const WIDTH = 640;
const HEIGHT = 480;
const INPUT = 640;
const FRAME_BYTES = INPUT * INPUT * 3;

/** The processor's decode for a 640x480 JPEG (no resize needed), letterboxed into `hwc`. */
async function decodeInto(image: Uint8Array, hwc: Uint8Array): Promise<void> {
  const g = letterboxGeometry(WIDTH, HEIGHT, INPUT, INPUT);
  const rgb = await sharp(image, { failOn: 'error', limitInputPixels: 26_214_400 }).removeAlpha().toColourspace('srgb').raw().toBuffer();
  letterboxInto(hwc, rgb, INPUT, g);
  // As the processor does since decision 40: sharp's Buffer is freed once copied.
  releaseDecoded(rgb);
}

interface DecodeRequest {
  readonly id: number;
  readonly image: Uint8Array;
  readonly hwc: ArrayBuffer;
}

if (!isMainThread) {
  parentPort!.on('message', async (m: DecodeRequest) => {
    await decodeInto(m.image, new Uint8Array(m.hwc));
    parentPort!.postMessage({ id: m.id, hwc: m.hwc }, [m.hwc]);
  });
} else {
  const { values } = parseArgs({
    options: { frames: { type: 'string', default: '400' }, ballast: { type: 'string', default: '0,200' }, out: { type: 'string' } },
  });
  const frames = Number(values.frames);
  const ballasts = values.ballast.split(',').map(Number);
  const { generateClip } = await import('../gpu-worker/vision/synthetic/generate.ts');
  const clip = await generateClip({ seed: 500, frames: 40, width: WIDTH, height: HEIGHT, format: 'jpeg', objects: 6 });
  const images = clip.frames.map((f) => f.image);
  const rows: object[] = [];
  const held: unknown[] = [];
  console.log(`decode placement: ${frames} 640x480 JPEG frames per row, 2 in flight, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})`);
  for (const ballast of ballasts) {
    // Live objects on the main heap, kept for the rest of the run (rows go up in ballast).
    while (held.length < ballast * 10_000) held.push({ i: held.length, s: `k${held.length}`, a: [held.length] });
    // Twice each, alternately: the first row after the ballast also meets the heap's first collections after it grew.
    for (const placement of ['main', 'thread', 'main', 'thread'] as const) {
      const pool = new BufferPool(64 << 20);
      const worker = placement === 'thread' ? new Worker(new URL(import.meta.url)) : undefined;
      const waiting = new Map<number, (b: ArrayBuffer) => void>();
      worker?.on('message', (m: { id: number; hwc: ArrayBuffer }) => {
        waiting.get(m.id)!(m.hwc);
        waiting.delete(m.id);
      });
      let nextId = 0;
      const one = async (image: Uint8Array) => {
        const lent = pool.acquire(FRAME_BYTES);
        if (!worker) {
          await decodeInto(image, new Uint8Array(lent));
          pool.release(lent);
          return;
        }
        const id = nextId++;
        const back = await new Promise<ArrayBuffer>((resolve) => {
          waiting.set(id, resolve);
          worker.postMessage({ id, image, hwc: lent } satisfies DecodeRequest, [lent]);
        });
        pool.releaseMoved(lent, back);
      };
      const run = async (n: number) => {
        let i = 0;
        await Promise.all([0, 1].map(async () => {
          while (i < n) await one(images[i++ % images.length]!);
        }));
      };
      await run(100); // warm-up: sharp, the thread, V8's compiled code
      let majors = 0;
      const observer = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) majors++;
      });
      observer.observe({ entryTypes: ['gc'] });
      const before = process.resourceUsage();
      await run(frames);
      const after = process.resourceUsage();
      observer.disconnect();
      await worker?.terminate();
      const row = {
        placement,
        ballastObjects: ballast * 10_000,
        coreMsPerFrame: (after.userCPUTime - before.userCPUTime + after.systemCPUTime - before.systemCPUTime) / 1000 / frames,
        mainMajorGcsPer100Frames: (majors / frames) * 100,
        minorPageFaultsPerFrame: (after.minorPageFault - before.minorPageFault) / frames,
        loadAverage1m: loadavg()[0]!,
      };
      rows.push(row);
      console.log(
        `${placement.padEnd(6)} ballast ${String(row.ballastObjects).padStart(9)} objects: ${row.coreMsPerFrame.toFixed(2)} core-ms per frame, ${row.mainMajorGcsPer100Frames.toFixed(1)} main major GCs per 100 frames, ${row.minorPageFaultsPerFrame.toFixed(0)} page faults per frame, load ${row.loadAverage1m.toFixed(2)}`,
      );
    }
  }
  if (values.out) {
    const command = `npx node bench/decode-placement.ts ${process.argv.slice(2).join(' ')}`.trim();
    writeFileSync(values.out, `${JSON.stringify({ command, date: new Date().toISOString(), cpu: cpus()[0]?.model ?? '?', cores: availableParallelism(), frames, rows }, null, 2)}\n`);
    console.log(`wrote ${values.out}`);
  }
}
