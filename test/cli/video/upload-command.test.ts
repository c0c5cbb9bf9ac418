/** The pure flag parsing of `affinity upload <file>` (cli/video/upload-command.ts). */
import { describe, expect, it } from 'vitest';
import { parseBitrate, parseContainer, parseSeconds } from '../../../cli/video/upload-command.ts';
import { refusal } from '../../../cli/video/transcode.ts';

describe('parseContainer', () => {
  it.each([
    [undefined, 'mpegts'],
    ['ts', 'mpegts'],
    ['MP4', 'mp4'],
    ['mkv', 'matroska'],
    ['matroska', 'matroska'],
  ] as const)('%s -> %s', (raw, container) => expect(parseContainer(raw)).toBe(container));

  it('refuses another container as a usage error', () => expect(() => parseContainer('avi')).toThrow(/--container must be one of ts, mp4, mkv/));
});

describe('parseSeconds', () => {
  it.each([
    [undefined, 2],
    ['1', 1],
    ['0.5', 0.5],
    ['600', 600],
  ] as const)('%s -> %s', (raw, seconds) => expect(parseSeconds('segment-seconds', raw, 2)).toBe(seconds));

  it.each(['0', '-1', 'soon', '601', '1e3', ''])('refuses "%s"', (raw) => expect(() => parseSeconds('segment-seconds', raw, 2)).toThrow(/--segment-seconds must be a number of seconds/));
});

describe('parseBitrate', () => {
  it.each([
    [undefined, undefined],
    ['800', 800],
    ['800k', 800],
    ['2M', 2000],
    ['1.5m', 1500],
    ['50', 50],
  ] as const)('%s -> %s kbit/s', (raw, kbps) => expect(parseBitrate(raw)).toBe(kbps));

  it.each(['fast', '0', '49', '300M', '-5', '2G', ''])('refuses "%s" as a usage error', (raw) => expect(() => parseBitrate(raw)).toThrow(/--bitrate must be kbit\/s between 50 and 200000/));
});

describe('refusal (what a user is told when a source cannot go in)', () => {
  it.each([
    ['unreadable', 'cam.mp4', 'No such file or directory', undefined, /^cannot read cam\.mp4: No such file or directory\. Check the path or URL; .*ffprobe cam\.mp4/],
    ['no-video', 'talk.m4a', 'only aac', undefined, /^talk\.m4a holds no video stream \(only aac\): there is nothing to analyse\. Upload a file with a video track$/],
    ['undecodable', 'old.avi', 'no frame decoded from its first 120 packet(s)', 'mjpeg', /^old\.avi: its mjpeg video cannot be decoded here \(no frame decoded .*\)\. Convert it to H\.264 first, e\.g\. ffmpeg -i old\.avi -c:v libx264 -g 60 out\.mp4/],
  ] as const)('%s', (what, shown, detail, codec, expected) => expect(refusal(shown, what, detail, codec)).toMatch(expected));
});
