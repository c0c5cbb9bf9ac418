/**
 * A replay's rebuild (decision 46) feeds the tracker exactly the frames the run it rebuilds
 * fed it: rebuildPlan (round-builder.ts) leaves out a frame below `silentBelow` whose record
 * says the tracker never saw it (`late`, `failed`), and turns a frame whose record is a gap
 * into a late frame replacing it. Found by the simulation (decision 61): a frame that came
 * late below `--from` was fed to the rebuilt tracker, and every track ID after it moved.
 */
import { describe, expect, it } from 'vitest';
import { rebuildPlan } from '../../../gpu-worker/runtime/round-builder.ts';
import type { SessionPlan } from '../../../gpu-worker/runtime/video-session.ts';
import type { SequencedStep } from '../../../core/ordering/sequencer-state.ts';

const ref = (frame: number) => ({ frame, bucket: 'b', key: `frames/v/${String(frame).padStart(6, '0')}.jpg`, sizeBytes: 10 });
const plan = (steps: SequencedStep[]): SessionPlan => ({ steps, parked: new Map(), handles: ['h1', 'h2'], logLength: 3 });
const frames = (...ns: number[]): SequencedStep[] => ns.map((n) => ({ type: 'frame', ref: ref(n) }));

describe('rebuildPlan', () => {
  const cases: { name: string; notSeen: number[]; gapNowHere: number[]; want: (p: SessionPlan) => SequencedStep[] }[] = [
    { name: 'every frame recorded ok: the plan as it is', notSeen: [], gapNowHere: [], want: (p) => [...p.steps] },
    {
      name: 'a frame recorded late is left out (a silent gap step: nothing processed, nothing recorded)',
      notSeen: [1],
      gapNowHere: [],
      want: () => [{ type: 'frame', ref: ref(0) }, { type: 'gap', frame: 1, reason: 'missing-frame' }, { type: 'frame', ref: ref(2) }],
    },
    {
      name: 'a frame whose record is a gap is processed late in its place',
      notSeen: [],
      gapNowHere: [2],
      want: () => [{ type: 'frame', ref: ref(0) }, { type: 'frame', ref: ref(1) }, { type: 'late', ref: { ...ref(2), replacesGap: true } }],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      // Prepare
      const p = plan(frames(0, 1, 2));
      // Act
      const out = rebuildPlan(p, { notSeen: new Set(c.notSeen), gapNowHere: new Set(c.gapNowHere) });
      // Assess: only the steps change; the handles and the log the unit covers stay
      expect(out.steps).toEqual(c.want(p));
      expect(out.handles).toEqual(p.handles);
      expect(out.logLength).toBe(p.logLength);
    });
  }

  it('leaves gap, late and reject steps alone', () => {
    const steps: SequencedStep[] = [{ type: 'gap', frame: 0, reason: 'missing-frame' }, { type: 'late', ref: { ...ref(1), replacesGap: false } }, { type: 'reject', ref: ref(2), reason: 'after-end-of-stream' }];
    expect(rebuildPlan(plan(steps), { notSeen: new Set([0, 1, 2]), gapNowHere: new Set() }).steps).toEqual(steps);
  });
});
