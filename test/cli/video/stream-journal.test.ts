/**
 * The numbering journal of `affinity stream` (cli/video/stream-journal.ts), table-driven:
 * a restart continues after the journal and after the bucket, journaled segments go up
 * again under their keys, and nothing is ever numbered twice.
 */
import { describe, expect, it } from 'vitest';
import {
  closeSegment,
  initialState,
  lastFrame,
  markUploaded,
  objectEnd,
  parseState,
  resumeState,
  skipTo,
  StreamStateError,
  type JournalSegment,
  type RemoteSegment,
  type StreamState,
} from '../../../cli/video/stream-journal.ts';

const seg = (n: number, k: number, bytes = 1000): JournalSegment => ({ key: `frames/cam/${String(n).padStart(6, '0')}.ts`, firstFrame: n, frames: k, file: `/spool/${n}.ts`, bytes });
const remote = (n: number, size: number, frames?: number, ext = 'ts'): RemoteSegment => ({ key: `frames/cam/${String(n).padStart(6, '0')}.${ext}`, size, ...(frames !== undefined ? { frames } : {}) });
const state = (nextFrame: number, pending: JournalSegment[] = []): StreamState => ({ ...initialState('cam', 'mpegts', 0), nextFrame, pending });

describe('closeSegment / markUploaded', () => {
  it('numbers segments back to back and forgets them once confirmed', () => {
    let s = initialState('cam', 'mpegts', 0);
    s = closeSegment(s, seg(0, 30));
    s = closeSegment(s, seg(30, 15));
    expect([s.nextFrame, s.pending.map((p) => p.key)]).toEqual([45, ['frames/cam/000000.ts', 'frames/cam/000030.ts']]);
    s = markUploaded(s, 'frames/cam/000000.ts');
    expect([s.nextFrame, s.pending.length, s.uploadedSegments]).toEqual([45, 1, 1]);
    expect(markUploaded(s, 'frames/cam/999999.ts')).toBe(s);
  });

  it.each<[string, JournalSegment]>([
    ['a segment that does not start at nextFrame (a hole)', seg(31, 15)],
    ['a segment that starts before nextFrame (a second number for frames)', seg(29, 15)],
    ['an empty segment', seg(30, 0)],
  ])('refuses %s', (_what, s) => expect(() => closeSegment(state(30), s)).toThrow(StreamStateError));

  it('skipTo only moves forward; lastFrame is the last number handed out', () => {
    expect(skipTo(state(30), 45).nextFrame).toBe(45);
    expect(skipTo(state(30), 10).nextFrame).toBe(30);
    expect(lastFrame(state(30), 0)).toBe(29);
    expect(lastFrame(state(0), 0)).toBeUndefined();
  });
});

describe('resumeState', () => {
  it.each<[string, StreamState, RemoteSegment[], { next: number; resend: number[]; landed: number[]; conflicts: number[]; advanced: string | null }]>([
    ['a fresh start on an empty bucket', state(0), [], { next: 0, resend: [], landed: [], conflicts: [], advanced: null }],
    ['journaled segments not in S3 go up again', state(45, [seg(0, 30), seg(30, 15)]), [], { next: 45, resend: [0, 30], landed: [], conflicts: [], advanced: null }],
    ['a journaled segment that landed before the crash is not sent again', state(45, [seg(0, 30), seg(30, 15)]), [remote(0, 1000, 30)], { next: 45, resend: [30], landed: [0], conflicts: [], advanced: null }],
    ['a key holding other bytes is left as it is', state(45, [seg(30, 15)]), [remote(30, 999, 15)], { next: 45, resend: [], landed: [], conflicts: [30], advanced: null }],
    ['a lost state file: the bucket moves numbering past its last segment', state(0), [remote(0, 5, 30), remote(30, 5, 15)], { next: 45, resend: [], landed: [], conflicts: [], advanced: 'frames/cam/000030.ts' }],
    ['an older state file never makes numbering go back', state(30), [remote(0, 5, 30), remote(30, 5, 20)], { next: 50, resend: [], landed: [], conflicts: [], advanced: 'frames/cam/000030.ts' }],
    ['a segment without a declared count is counted as one frame (a lower bound)', state(0), [remote(90, 5)], { next: 91, resend: [], landed: [], conflicts: [], advanced: 'frames/cam/000090.ts' }],
    ['an image counts one frame', state(0), [remote(7, 5, undefined, 'jpg')], { next: 8, resend: [], landed: [], conflicts: [], advanced: 'frames/cam/000007.jpg' }],
    ['the end marker and stray keys do not count', state(12), [{ key: 'frames/cam/_end', size: 2 }, { key: 'frames/cam/notes.txt', size: 2 }], { next: 12, resend: [], landed: [], conflicts: [], advanced: null }],
    ['a journal ahead of the bucket keeps its number', state(60), [remote(0, 5, 30)], { next: 60, resend: [], landed: [], conflicts: [], advanced: null }],
  ])('%s', (_what, saved, listing, want) => {
    const plan = resumeState(saved, listing);
    expect({
      next: plan.state.nextFrame,
      resend: plan.resend.map((p) => p.firstFrame),
      landed: plan.landed.map((p) => p.firstFrame),
      conflicts: plan.conflicts.map((p) => p.firstFrame),
      advanced: plan.advancedBy?.key ?? null,
    }).toEqual(want);
    expect(plan.state.pending).toEqual(plan.resend);
  });

  it('objectEnd reads n from the key and k from the listing', () => {
    expect(objectEnd(remote(120, 1, 45))).toBe(165);
    expect(objectEnd({ key: 'frames/cam/_end', size: 1 })).toBeUndefined();
  });
});

describe('parseState', () => {
  const good = JSON.stringify(closeSegment(state(30), seg(30, 15)));
  it('reads back what was written', () => expect(parseState(good, 'cam')).toEqual(JSON.parse(good)));

  it.each<[string, string, string]>([
    ['not JSON', '{', 'not JSON'],
    ['another version', JSON.stringify({ ...JSON.parse(good), version: 2 }), 'version'],
    ['another video', good.replace('"cam"', '"other"'), 'belongs to video "other"'],
    ['a negative nextFrame', JSON.stringify({ ...JSON.parse(good), nextFrame: -1 }), 'nextFrame'],
    ['overlapping pending segments', JSON.stringify({ ...JSON.parse(good), nextFrame: 60, pending: [seg(30, 15), seg(40, 5)] }), 'overlap'],
    ['nextFrame below the pending end', JSON.stringify({ ...JSON.parse(good), nextFrame: 40 }), 'below'],
  ])('refuses %s', (_what, text, message) => {
    expect(() => parseState(text, 'cam')).toThrow(StreamStateError);
    expect(() => parseState(text, 'cam')).toThrow(message);
  });
});
