/** The line `affinity release --force` ends with (cli/commands/release.ts): what happens to the video next. */
import { describe, expect, it } from 'vitest';
import { releaseFollowUp } from '../../cli/commands/release.ts';

describe('releaseFollowUp', () => {
  it.each([
    { r: { complete: true, resentFrames: [], resentEndMarker: false }, says: 'it had completed: nothing re-sent' },
    { r: { complete: false, resentFrames: [], resentEndMarker: false }, says: 'its checkpoint waited on nothing in S3: its next upload admits it afresh' },
    { r: { complete: false, resentFrames: [11, 12, 14], resentEndMarker: true }, says: 're-sent what its checkpoint held (frames 11-12, 14 and its end marker): it is admitted again now, and its next owner goes on from the checkpoint' },
    { r: { complete: false, resentFrames: [7], resentEndMarker: false }, says: 're-sent what its checkpoint held (frame 7): it is admitted again now, and its next owner goes on from the checkpoint' },
    { r: { complete: false, resentFrames: [], resentEndMarker: true }, says: 're-sent what its checkpoint held (its end marker): it is admitted again now, and its next owner goes on from the checkpoint' },
  ])('$says', ({ r, says }) => {
    expect(releaseFollowUp(r)).toBe(says);
  });
});
