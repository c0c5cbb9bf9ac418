/**
 * The worker's memory budget (issue 43, item 3): what must fit under the container's hard
 * memory limit, so that the limit, `maxSegmentBytes` and the cap on open segment decoders
 * (`maxOpenSegments`) are checked together at synth instead of meeting as an OOM kill.
 *
 * An open segment decoder holds its whole segment's bytes (decoded from memory, node-av's
 * Demuxer over a Buffer) plus FFmpeg's reference and reorder frames and the frames decoded
 * ahead (gpu-worker/sources/segment/segment-reader.ts DECODE_AHEAD_FRAMES at the letterbox size):
 * {@link DECODER_OVERHEAD_MIB} covers the latter up to 4K (16 reference frames of 4K
 * 4:2:0 are 200 MB; of 1080p, 50 MB; 16 frames ahead at a 640 letterbox, 11 MB). The rest
 * of the process, {@link WORKER_BASE_MIB}: Node and its heap, onnxruntime's host arena and
 * the model, sharp's cache, the reorder buffers and checkpoints.
 */
const MIB = 1024 * 1024;

/** Memory of the worker process apart from its segment decoders and read-ahead bytes. */
export const WORKER_BASE_MIB = 4096;
/** Per open segment decoder, besides the segment's bytes. */
export const DECODER_OVERHEAD_MIB = 64;
/**
 * The hot spare (`hotSpare`, decision 75): a second worker process in the same container,
 * idle until promoted: Node and its heap, onnxruntime's session and the model, no segments
 * and no frames. Assumed, not measured on a GPU host.
 */
export const SPARE_WORKER_MIB = 1024;

export interface WorkerMemoryInputs {
  /** The container's hard limit (`taskMemoryLimitMiB`). */
  readonly memoryLimitMiB: number;
  readonly maxSegmentBytes: number;
  readonly segmentReadAheadBytes: number;
  /** Memory of a hot spare beside the worker ({@link SPARE_WORKER_MIB}), 0 without one. */
  readonly spareMiB?: number;
}

/** What the limit leaves the decoders: less the worker's base, a spare's share and the read-ahead bytes. */
const freeMiB = (i: WorkerMemoryInputs): number => i.memoryLimitMiB - WORKER_BASE_MIB - (i.spareMiB ?? 0) - i.segmentReadAheadBytes / MIB;

/** The most segment decoders that fit under the limit at once (0 when none does). */
export function openDecoderCap(i: WorkerMemoryInputs): number {
  return Math.max(0, Math.floor(freeMiB(i) / (i.maxSegmentBytes / MIB + DECODER_OVERHEAD_MIB)));
}

/**
 * Why `maxOpenSegments` decoders of `maxSegmentBytes` each, with the read-ahead bytes, do
 * not fit the limit, or why too few are allowed for a slot's videos (each keeps one
 * decoder open while it runs; fewer means decoders closed and reopened, every frame
 * decoded again from the segment's start); empty when they fit.
 */
export function workerMemoryProblems(i: WorkerMemoryInputs & { readonly maxOpenSegments: number; readonly videosPerSlot: number }): string[] {
  const cap = openDecoderCap(i);
  const problems: string[] = [];
  if (i.maxOpenSegments > cap) {
    const fitMiB = Math.floor(freeMiB(i) / i.maxOpenSegments - DECODER_OVERHEAD_MIB);
    problems.push(
      `maxOpenSegments (${i.maxOpenSegments}) decoders of up to maxSegmentBytes (${Math.round(i.maxSegmentBytes / MIB)} MiB) each, plus ${DECODER_OVERHEAD_MIB} MiB of frames per decoder, ` +
        `${Math.round(i.segmentReadAheadBytes / MIB)} MiB read ahead and ${WORKER_BASE_MIB} MiB for the rest of the worker` +
        (i.spareMiB ? ` and ${i.spareMiB} MiB for its hot spare (hotSpare)` : '') +
        `, do not fit taskMemoryLimitMiB (${i.memoryLimitMiB}): ` +
        `at most ${cap} fit. Lower maxOpenSegments to ${cap}` +
        (fitMiB > 0 ? `, or maxSegmentBytes to ${fitMiB * MIB} (${fitMiB} MiB)` : '') +
        ', or raise taskMemoryLimitMiB (a larger instance type)' +
        (i.spareMiB ? ', or set hotSpare=false' : ''),
    );
  }
  if (Math.min(i.maxOpenSegments, cap) < i.videosPerSlot) {
    problems.push(`maxOpenSegments (${Math.min(i.maxOpenSegments, cap)} that fit) must be at least videosPerSlot (${i.videosPerSlot}): each video of a slot keeps a segment decoder open while it runs`);
  }
  return problems;
}
