import { describe, expect, it } from 'vitest';
import type { FrameInput, FrameOutcome, FrameProcessor, LateFrameInput } from '../../../../core/ports.ts';
import { probedProcessor, probeStep, type FrameProbe, type ProbeResult, type ProbeStep } from '../../../../gpu-worker/runtime/crash/frame-probe.ts';
import { METRIC_NAMES } from '../../../../core/metric-names.ts';

describe('probeStep: what one probe result means for the frame', () => {
  const cases: [string, number, ProbeResult['kind'], number, ProbeStep][] = [
    ['survived: run it here', 0, 'survived', 2, 'run'],
    ['survived after a death (the first was bad luck): run it here', 1, 'survived', 2, 'run'],
    ['no probe could be had: run it here unprobed', 0, 'unavailable', 2, 'run'],
    ['a first death of two: try again in a fresh child', 0, 'died', 2, 'probe-again'],
    ['a second death: park', 1, 'died', 2, 'park'],
    ['one death is enough at crashProbeDeaths 1', 0, 'died', 1, 'park'],
    ['three needed: the second death tries again', 1, 'died', 3, 'probe-again'],
  ];
  it.each(cases)('%s', (_why, deathsBefore, result, deathsToPark, step) => {
    expect(probeStep(deathsBefore, result, deathsToPark)).toBe(step);
  });
});

/** A probe that answers from a script per frame, and records what it was asked. */
function scriptedProbe(script: Record<number, ProbeResult['kind'][]>): FrameProbe & { tried: number[] } {
  const left = new Map(Object.entries(script).map(([f, r]) => [Number(f), [...r]]));
  const tried: number[] = [];
  return {
    tried,
    async tryFrame(input: FrameInput): Promise<ProbeResult> {
      tried.push(input.frame);
      const kind = left.get(input.frame)?.shift() ?? 'survived';
      if (kind === 'died') return { kind, detail: 'the child killed by SIGKILL' };
      if (kind === 'unavailable') return { kind, reason: 'no child' };
      return { kind };
    },
    warm() {},
    async stop() {},
  };
}

/** A processor that records the frames it was handed. */
function recordingProcessor(): FrameProcessor & { handed: number[]; handedLate: number[] } {
  const handed: number[] = [];
  const handedLate: number[] = [];
  const ok = (f: FrameInput): FrameOutcome => ({ status: 'ok', detections: [], detail: `ran ${f.frame}` }) as unknown as FrameOutcome;
  return {
    handed,
    handedLate,
    description: 'recording',
    async start() {},
    openVideo() {},
    async process(frames: readonly FrameInput[]) {
      handed.push(...frames.map((f) => f.frame));
      return frames.map(ok);
    },
    async processLate(frames: readonly LateFrameInput[]) {
      handedLate.push(...frames.map((f) => f.frame));
      return frames.map(ok);
    },
    snapshot: () => 'state',
    closeVideo() {},
    async stop() {},
  };
}

function sinks() {
  const counts: Record<string, number> = {};
  const warnings: string[] = [];
  return {
    counts,
    warnings,
    metrics: { count: (n: string, v = 1) => void (counts[n] = (counts[n] ?? 0) + v), milliseconds: () => {} },
    log: { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} },
  };
}

const input = (frame: number): FrameInput => ({ videoId: 'v', frame, image: new Uint8Array([frame]), key: `frames/v/${frame}.jpg` });

describe('probedProcessor: the processor isolated rounds use', () => {
  it('a frame that kills the child twice gets a crashed-worker outcome and never reaches the real processor; the others run, in input order', async () => {
    const probe = scriptedProbe({ 2: ['died', 'died'] });
    const inner = recordingProcessor();
    const s = sinks();
    const p = probedProcessor(inner, { probe, deathsToPark: 2, metrics: s.metrics, log: s.log });
    const out = await p.process([input(1), input(2), input(3)]);
    expect(inner.handed).toEqual([1, 3]);
    expect(out.map((o) => o.status)).toEqual(['ok', 'failed', 'ok']);
    expect(out[0]).toMatchObject({ detail: 'ran 1' });
    expect(out[2]).toMatchObject({ detail: 'ran 3' });
    expect(out[1]).toMatchObject({ status: 'failed', reason: 'crashed-worker' });
    expect((out[1] as { detail: string }).detail).toContain('2 times');
    // One frame at a time (a death must name its frame), twice for the one that died
    expect(probe.tried).toEqual([1, 2, 2, 3]);
    expect(s.counts[METRIC_NAMES.worker.crashProbeDeaths]).toBe(2);
  });

  it('one death and then a survival: the frame runs here (one death may be the child\'s bad luck)', async () => {
    const probe = scriptedProbe({ 5: ['died', 'survived'] });
    const inner = recordingProcessor();
    const s = sinks();
    const out = await probedProcessor(inner, { probe, deathsToPark: 2, metrics: s.metrics, log: s.log }).process([input(5)]);
    expect(inner.handed).toEqual([5]);
    expect(out[0]!.status).toBe('ok');
    expect(s.counts[METRIC_NAMES.worker.crashProbeDeaths]).toBe(1);
  });

  it('no probe to be had: the frame runs here unprobed, with a warning and a metric', async () => {
    const probe = scriptedProbe({ 7: ['unavailable'] });
    const inner = recordingProcessor();
    const s = sinks();
    const out = await probedProcessor(inner, { probe, deathsToPark: 2, metrics: s.metrics, log: s.log }).process([input(7)]);
    expect(inner.handed).toEqual([7]);
    expect(out[0]!.status).toBe('ok');
    expect(s.counts[METRIC_NAMES.worker.crashProbeUnavailable]).toBe(1);
    expect(s.warnings.some((w) => w.includes('unprobed'))).toBe(true);
  });

  it('late frames are probed too, and a poison late frame is parked without reaching processLate', async () => {
    const probe = scriptedProbe({ 9: ['died', 'died'] });
    const inner = recordingProcessor();
    const s = sinks();
    const late = (f: number): LateFrameInput => ({ ...input(f) });
    const out = await probedProcessor(inner, { probe, deathsToPark: 2, metrics: s.metrics, log: s.log }).processLate([late(8), late(9)]);
    expect(inner.handedLate).toEqual([8]);
    expect(out.map((o) => o.status)).toEqual(['ok', 'failed']);
  });

  it('every frame parked: the real processor is not called at all', async () => {
    const probe = scriptedProbe({ 1: ['died'] });
    const inner = recordingProcessor();
    const s = sinks();
    const out = await probedProcessor(inner, { probe, deathsToPark: 1, metrics: s.metrics, log: s.log }).process([input(1)]);
    expect(inner.handed).toEqual([]);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ status: 'failed', reason: 'crashed-worker' });
  });

  it('every other member is the real processor\'s', () => {
    const inner = recordingProcessor();
    const s = sinks();
    const p = probedProcessor(inner, { probe: scriptedProbe({}), deathsToPark: 2, metrics: s.metrics, log: s.log });
    expect(p.description).toBe('recording');
    expect(p.snapshot('v')).toBe('state');
  });
});
