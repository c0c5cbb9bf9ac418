/** The pure flag parsing of `affinity upload <file>` (cli/video/upload-command.ts). */
import { describe, expect, it } from 'vitest';
import { parseContainer, parseSeconds } from '../../../cli/video/upload-command.ts';

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
