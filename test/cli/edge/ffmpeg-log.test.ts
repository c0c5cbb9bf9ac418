/**
 * FFmpeg's one log callback shared by the captures of one process (cli/video/ffmpeg-log.ts):
 * a message that names a host:port belongs to that camera only; one that names none to
 * every listener, for a second.
 */
import { describe, expect, it } from 'vitest';
import { hostPortOf, owns } from '../../../cli/video/ffmpeg-log.ts';

describe('which camera owns an FFmpeg message', () => {
  it.each([
    ['rtsp://admin:p@10.0.0.5:8554/h264', '10.0.0.5:8554'],
    ['rtsp://10.0.0.5/h264', '10.0.0.5:554'],
    ['rtsps://Cam.Example/x', 'cam.example:322'],
    ['Connection to tcp://127.0.0.1:40095?timeout=0 failed: Connection refused', '127.0.0.1:40095'],
    ['Failed reading RTSP data: Connection timed out', null],
  ])('%s names %s', (text, hostPort) => {
    expect(hostPortOf(text)).toBe(hostPort);
  });

  it.each([
    ['10.0.0.5:554', 'Connection to tcp://10.0.0.5:554?timeout=0 failed: Connection refused', true],
    ['10.0.0.6:554', 'Connection to tcp://10.0.0.5:554?timeout=0 failed: Connection refused', false],
    ['10.0.0.6:554', 'Failed reading RTSP data: Connection timed out', true],
  ])('a listener of %s owns %j: %s', (hostPort, message, expected) => {
    expect(owns(hostPort, message)).toBe(expected);
  });
});
