import { describe, expect, it } from 'vitest';
import { lastFrameOf, planUpload, type PlannedSegment } from '../../../cli/video/upload-plan.ts';

const seg = (firstFrame: number, frames: number, bytes: number, ext = 'ts'): PlannedSegment => ({
  key: `frames/cam/${String(firstFrame).padStart(6, '0')}.${ext}`,
  firstFrame,
  frames,
  bytes,
});
const cut = [seg(0, 60, 1000), seg(60, 45, 800), seg(105, 60, 1200)];

describe('planUpload', () => {
  it.each([
    ['nothing there yet: everything goes', [], [0, 60, 105], [], []],
    ['a rerun after an interruption sends what did not land', [{ key: cut[0]!.key, size: 1000 }], [60, 105], [0], []],
    ['everything landed: nothing to send', cut.map((s) => ({ key: s.key, size: s.bytes })), [], [0, 60, 105], []],
    ['the end marker does not matter; a JPEG already at a segment\'s first frame conflicts', [{ key: 'frames/cam/_end', size: 3 }, { key: 'frames/cam/000000.jpg', size: 5 }], [60, 105], [], [0]],
    ['same key, other size: a conflict, never an overwrite', [{ key: cut[1]!.key, size: 799 }], [0, 105], [], [60]],
    ['first frame already covered under another extension: a conflict', [{ key: 'frames/cam/000105.mp4', size: 1200 }], [0, 60], [], [105]],
  ])('%s', (_name, remote, upload, skip, conflicts) => {
    const plan = planUpload(cut, remote);
    expect(plan.upload.map((s) => s.firstFrame)).toEqual(upload);
    expect(plan.skip.map((s) => s.firstFrame)).toEqual(skip);
    expect(plan.conflicts.map((c) => c.segment.firstFrame)).toEqual(conflicts);
    expect(plan.bytesToUpload).toBe(plan.upload.reduce((sum, s) => sum + s.bytes, 0));
  });

  it('says why a segment conflicts', () => {
    const plan = planUpload(cut, [{ key: cut[1]!.key, size: 799 }]);
    expect(plan.conflicts[0]!.why).toBe('frames/cam/000060.ts is already in S3 with 799 bytes, not this cut\'s 800');
  });
});

describe('lastFrameOf', () => {
  it.each([
    [cut, 164],
    [[seg(10, 1, 5)], 10],
    [[seg(0, 0, 5)], undefined],
    [[], undefined],
  ])('%j ends at %s', (segments, last) => {
    expect(lastFrameOf(segments)).toBe(last);
  });
});
