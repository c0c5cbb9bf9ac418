/**
 * How a live source is opened (cli/video/live-reads.ts `openOptions`): every network read
 * is bounded by the read timeout, by the protocol's own socket timeout where it has one, so
 * that a read of a silent source returns by itself and a stop never closes a demuxer under a
 * read still waiting in node-av's thread (decision 74: that crashed the process).
 */
import { describe, expect, it } from 'vitest';
import { openOptions } from '../../../cli/video/live-reads.ts';

describe('openOptions', () => {
  it.each([
    ['rtsp://cam/1', { rtsp_transport: 'tcp', timeout: '4000000' }],
    ['rtsps://cam/1', { rtsp_transport: 'tcp', timeout: '4000000' }],
    ['udp://127.0.0.1:5000', { rw_timeout: '4000000', timeout: '4000000' }],
    ['rtp://127.0.0.1:5004', { rw_timeout: '4000000', timeout: '4000000' }],
    ['http://cam/stream.mjpg', { rw_timeout: '4000000' }],
  ])('%s live gets %j', (source, want) => {
    expect(openOptions(source, true, 4)).toEqual(want);
  });

  it('opens a file with no timeouts', () => {
    expect(openOptions('/videos/a.mp4', false, 4)).toEqual({});
  });
});
