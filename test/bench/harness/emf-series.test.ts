import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { emfSeries, metricNameOf, serviceOf, SeriesTally } from '../../../bench/harness/emf-series.ts';

/** What the real libraries print, caught at process.stdout (where both write). */
async function printed(run: () => Promise<void> | void): Promise<string[]> {
  const lines: string[] = [];
  const take = (text: string) => lines.push(...text.split('\n').filter(Boolean));
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (take(String(chunk)), true));
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => take(args.map(String).join(' ')));
  try {
    await run();
  } finally {
    out.mockRestore();
    log.mockRestore();
  }
  return lines;
}

describe('emfSeries', () => {
  afterEach(() => vi.unstubAllEnvs());

  it.each([
    ['a log line', 'worker started slot 3', []],
    ['JSON without _aws', '{"level":"INFO","msg":"x"}', []],
    ['broken JSON', '{"_aws": {', []],
    ['no directives', '{"_aws":{"Timestamp":1}}', []],
    [
      'one metric, one dimension set',
      '{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["service"]],"Metrics":[{"Name":"A","Unit":"Count"}]}]},"service":"worker","A":3}',
      ['N/A{service=worker}'],
    ],
    [
      'two metrics, two dimension sets: a series each',
      '{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["service"],["service","Reason"]],"Metrics":[{"Name":"A"},{"Name":"B"}]}]},"service":"router","Reason":"bad-key","A":1,"B":2}',
      ['N/A{service=router}', 'N/A{service=router,Reason=bad-key}', 'N/B{service=router}', 'N/B{service=router,Reason=bad-key}'],
    ],
    [
      'no dimensions',
      '{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[],"Metrics":[{"Name":"A"}]}]},"A":1}',
      ['N/A{}'],
    ],
    [
      'after a prefix',
      '[worker 1] {"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["service"]],"Metrics":[{"Name":"A"}]}]},"service":"worker","A":3}',
      ['N/A{service=worker}'],
    ],
  ])('%s', (_name, line, want) => {
    expect(emfSeries(line)).toEqual(want);
  });

  it("reads the worker's EMF lines (aws-embedded-metrics): one series per name and dimension values", async () => {
    // stdout EMF, as the task's environment says (aws-embedded-metrics resolves it when first loaded).
    process.env.AWS_EMF_ENVIRONMENT ??= 'Local';
    const { EmfMetrics } = await import('../../../gpu-worker/runtime/emf-metrics.ts');
    const m = new EmfMetrics('FrameAffinity', { service: 'worker' }, 3_600_000);
    const lines = await printed(async () => {
      m.count('FramesProcessed', 5);
      m.count('FramesProcessed', 2);
      m.count('SegmentsDescribed', 1, { Source: 'declared' });
      m.count('SegmentsDescribed', 1, { Source: 'container' });
      m.milliseconds('InferenceLatencyMs', 12);
      await m.close();
    });
    const tally = new SeriesTally();
    for (const l of lines) tally.offer(l);
    expect(tally.byService()).toEqual({
      worker: [
        'FrameAffinity/FramesProcessed{service=worker}',
        'FrameAffinity/InferenceLatencyMs{service=worker}',
        'FrameAffinity/SegmentsDescribed{service=worker,Source=container}',
        'FrameAffinity/SegmentsDescribed{service=worker,Source=declared}',
      ],
    });
  });

  it("reads the Lambda functions' EMF lines (Powertools Metrics), single metrics with their own dimensions included", async () => {
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    const metrics = new Metrics({ namespace: 'FrameAffinity', serviceName: 'router' });
    const lines = await printed(() => {
      metrics.addMetric('FramesRouted', MetricUnit.Count, 4);
      metrics.singleMetric().addDimensions({ Reason: 'malformed-key' }).addMetric('EventsRejected', MetricUnit.Count, 1);
      metrics.publishStoredMetrics();
    });
    const keys = lines.flatMap(emfSeries).sort();
    expect(keys).toEqual(['FrameAffinity/EventsRejected{service=router,Reason=malformed-key}', 'FrameAffinity/FramesRouted{service=router}']);
    expect(keys.map(serviceOf)).toEqual(['router', 'router']);
    expect(keys.map(metricNameOf)).toEqual(['EventsRejected', 'FramesRouted']);
  });
});
