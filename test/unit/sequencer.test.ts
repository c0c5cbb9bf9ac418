import { describe, expect, it } from 'vitest';
import { VideoSequencer, type FrameRef, type SequencedStep } from '../../core/sequencer.ts';

const opts = { reorderWaitMs: 1000, reorderBufferFrames: 8, firstFrameNumber: 0 };
const ref = (frame: number): FrameRef => ({ frame, bucket: 'b', key: `frames/v/${frame}.jpg`, sizeBytes: 10 });
const frames = (steps: SequencedStep[]) => steps.map((s) => (s.type === 'frame' ? s.ref.frame : s.type === 'gap' ? `gap${s.frame}-${s.throughFrame}` : `rej${s.ref.frame}`));

describe('VideoSequencer', () => {
  it('emits shuffled frames in order once the head arrives', () => {
    // Prepare
    const seq = new VideoSequencer(opts);
    // Act
    for (const f of [2, 0, 3]) seq.offer(ref(f), 0);
    const first = seq.take(0);
    seq.offer(ref(1), 10);
    const second = seq.take(10);
    // Assess
    expect(frames(first)).toEqual([0]);
    expect(frames(second)).toEqual([1, 2, 3]);
    expect(seq.nextFrame).toBe(4);
  });

  it('starts at the configured first frame, gaps it if it never comes, and rejects frames below it', () => {
    const seq = new VideoSequencer({ ...opts, firstFrameNumber: 1 });
    expect(seq.offer(ref(0), 0)).toBe('before-first');
    seq.offer(ref(2), 0);
    expect(seq.take(0)).toEqual([]);
    expect(frames(seq.take(1000))).toEqual(['gap1-1', 2]);
  });

  it('turns a frame that never comes into a gap after the reorder wait, never blocking forever', () => {
    const seq = new VideoSequencer(opts);
    seq.offer(ref(0), 0);
    seq.offer(ref(3), 0);
    expect(frames(seq.take(0))).toEqual([0]);
    expect(seq.take(999)).toEqual([]);
    expect(frames(seq.take(1999))).toEqual(['gap1-2', 3]);
  });

  it('defers a gap while frames of the video keep arriving, until the buffer is full', () => {
    const seq = new VideoSequencer({ ...opts, reorderBufferFrames: 3 });
    seq.offer(ref(0), 0);
    seq.take(0);
    seq.offer(ref(2), 0);
    seq.take(0);
    expect(seq.take(5000, Infinity, () => 1, false)).toEqual([]);
    seq.offer(ref(3), 5000);
    seq.offer(ref(4), 5000);
    expect(frames(seq.take(5000, Infinity, () => 1, false))).toEqual(['gap1-1', 2, 3, 4]);
  });

  it('restarts the wait after a change of owner', () => {
    const seq = new VideoSequencer(opts);
    seq.offer(ref(0), 0);
    seq.offer(ref(2), 0);
    seq.take(0);
    const successor = new VideoSequencer(opts, seq.snapshot());
    successor.restartWait(10_000);
    expect(successor.take(10_500)).toEqual([]);
    expect(frames(successor.take(11_000))).toEqual(['gap1-1', 2]);
    const patient = new VideoSequencer(opts, seq.snapshot());
    patient.restartWait(10_000, 4000);
    expect(patient.take(14_500)).toEqual([]);
    expect(frames(patient.take(15_000))).toEqual(['gap1-1', 2]);
  });

  it('forces gaps when the buffer is full instead of waiting', () => {
    const seq = new VideoSequencer({ reorderWaitMs: 60_000, reorderBufferFrames: 3, firstFrameNumber: 0 });
    seq.offer(ref(0), 0);
    seq.take(0);
    for (const f of [5, 6, 7]) seq.offer(ref(f), 0);
    expect(frames(seq.take(1))).toEqual(['gap1-4', 5, 6, 7]);
  });

  it('recognises duplicates and redeliveries', () => {
    const seq = new VideoSequencer(opts);
    seq.offer(ref(0), 0);
    expect(seq.offer(ref(2), 0)).toBe('accepted');
    expect(seq.offer(ref(2), 0)).toBe('duplicate');
    seq.take(0);
    expect(seq.offer(ref(0), 0)).toBe('duplicate');
  });

  it('completes at the end marker, gapping missing tail frames after the wait', () => {
    const seq = new VideoSequencer(opts);
    seq.offer(ref(0), 0);
    seq.setEnd(2);
    expect(frames(seq.take(0))).toEqual([0]);
    expect(seq.isComplete()).toBe(false);
    expect(seq.take(10)).toEqual([]);
    expect(frames(seq.take(2000))).toEqual(['gap1-2']);
    expect(seq.isComplete()).toBe(true);
    expect(seq.hasPending()).toBe(false);
  });

  it('rejects frames beyond the end marker', () => {
    const seq = new VideoSequencer(opts);
    seq.offer(ref(0), 0);
    seq.offer(ref(5), 0);
    seq.setEnd(1);
    expect(seq.offer(ref(9), 0)).toBe('after-end');
    const steps = seq.take(0);
    expect(frames(steps)).toEqual(['rej5', 0]);
  });

  it('round-trips through a snapshot exactly, buffered frames included', () => {
    const seq = new VideoSequencer(opts);
    for (const f of [0, 2, 3]) seq.offer(ref(f), 0);
    seq.take(0);
    const restored = new VideoSequencer(opts, JSON.parse(JSON.stringify(seq.snapshot())));
    restored.offer(ref(1), 5);
    expect(frames(restored.take(5))).toEqual([1, 2, 3]);
  });

  it('stops before exceeding a step budget without losing frames', () => {
    const seq = new VideoSequencer(opts);
    for (let f = 0; f < 6; f++) seq.offer(ref(f), 0);
    expect(frames(seq.take(0, 4))).toEqual([0, 1, 2, 3]);
    expect(frames(seq.take(0, 4))).toEqual([4, 5]);
  });
});
