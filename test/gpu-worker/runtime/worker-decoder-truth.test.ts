/**
 * The worker tells the truth about where segments decode (issue 43, item 2): the real
 * worker on the in-memory twins, a simulated GPU whose CUDA device opens but whose NVDEC
 * cannot take the stream (the decoder hands out software frames, as FFmpeg does when it
 * retries get_format() without the hardware format), and an H.264 4:4:4 segment (made by
 * ffmpeg `-pix_fmt yuv444p -c:v libx264`, test/gpu-worker/video/fixtures). Before issue 43
 * the worker logged and counted `h264 nvdec (cuda)` here.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Decoder, type HardwareContext } from 'node-av/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';
import type { DecodeDevice } from '../../../gpu-worker/video/segment-decoder.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'video', 'fixtures');
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(path.join(FIXTURES, name)));

const SIMULATED_CUDA = Object.freeze({ deviceTypeName: 'cuda (simulated)' }) as unknown as HardwareContext;
const nvdecUnusable: DecodeDevice = {
  cuda: () => ({ hw: SIMULATED_CUDA, why: '' }),
  createDecoder: (stream, options) => Decoder.create(stream, { ...options, hardware: null }),
};

describe('worker: decoder truth on a GPU whose NVDEC cannot take the stream', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 300, videoDecoder: 'cuda' } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('an H.264 4:4:4 segment reports CPU decode (cpu-fallback) with its reason, once per video, and emits the WorkerDecodingOnCpu metric', async () => {
    // Prepare: a 4:4:4 video (NVDEC refuses its format) and a 4:2:0 one (software frames all the same: NVDEC unusable)
    const v444 = h.videoId('yuv444');
    const v420 = h.videoId('yuv420');
    await h.pinVideo(v444, 0);
    await h.pinVideo(v420, 0);
    await h.putSegment(v444, 0, fixture('h264-444-30.mp4'), { frames: 30 });
    await h.putSegment(v444, 30, fixture('h264-444-30.mp4'), { frames: 30 });
    await h.putEnd(v444, 59);
    await h.putSegment(v420, 0, fixture('bframes-45.mp4'), { frames: 45 });
    await h.putEnd(v420, 44);
    const worker = h.createWorker(0, { extraDeps: { decodeDevice: nvdecUnusable } }).start();

    // Act
    await h.sendSegment(0, v444, 0);
    await h.sendSegment(0, v444, 30);
    await h.sendEnd(0, v444);
    await h.waitForSummary(v444, (s) => s.status === 'complete');
    await h.sendSegment(0, v420, 0);
    await h.sendEnd(0, v420);
    await h.waitForSummary(v420, (s) => s.status === 'complete');
    await worker.stop();

    // Assess: every frame decoded, all of it counted as CPU decode, never nvdec
    expect((await h.frameResults(v444)).filter((r) => r.status === 'ok')).toHaveLength(60);
    expect((await h.frameResults(v420)).filter((r) => r.status === 'ok')).toHaveLength(45);
    const decoded = worker.metrics.filter((m) => m.name === METRIC_NAMES.worker.segmentFramesDecoded);
    expect(decoded.reduce((n, m) => n + m.value, 0)).toBe(105);
    expect(new Set(decoded.map((m) => m.dimensions.Decoder))).toEqual(new Set(['cpu-fallback']));
    // The alarm's metric (WorkerDecodingOnCpu reads SegmentDecoderInUse{Decoder=cpu-fallback}).
    expect(worker.metricTotal(METRIC_NAMES.worker.segmentDecoderInUse, { Decoder: 'cpu-fallback' })).toBeGreaterThanOrEqual(1);
    expect(worker.metrics.filter((m) => m.name === METRIC_NAMES.worker.segmentDecoderInUse).map((m) => m.dimensions.Decoder)).not.toContain('nvdec');
    // Said once per video, with the reason; the worker's set of placements said once.
    const said = worker.logsMatching(/^video decoded on the CPU: NVDEC not used$/, ['warn']).map((l) => [l.fields?.videoId, l.fields?.reason]);
    expect(said).toEqual([
      [v444, expect.stringMatching(/^H\.264 4:4:4 \(yuv444p\): NVDEC decodes H\.264 in 4:2:0 only/)],
      [v420, expect.stringMatching(/^FFmpeg decoded in software although a CUDA device opened/)],
    ]);
    expect(worker.logsMatching(/^segment decoder in use$/).map((l) => l.fields?.decoder)).toEqual(['cpu-fallback']);
  });
});
