/**
 * The live transcoder's pure parts (cli/video/live-transcoder.ts, decision 74): the
 * `ffmpeg` arguments that make segments the worker decodes (H.264 4:2:0, closed GOPs, a
 * keyframe every segment length by time, every frame kept at its own time), the redaction
 * of what the child says, and the words of an outage it causes.
 */
import { describe, expect, it } from 'vitest';
import { ffmpegProgram, redactUrls, TRANSCODER_INPUT_FORMAT, transcoderArgs, transcoderEnded } from '../../../cli/video/live-transcoder.ts';
import { transcodeNote } from '../../../cli/video/stream-command.ts';

const after = (args: readonly string[], flag: string): string | undefined => args[args.indexOf(flag) + 1];

describe('transcoderArgs', () => {
  it('takes the camera\'s packets in NUT on stdin (never its URL: its password stays in this process), and writes H.264 4:2:0 in MPEG-TS on stdout', () => {
    const a = transcoderArgs({ keyframeSeconds: 2 });
    expect(after(a, '-f')).toBe(TRANSCODER_INPUT_FORMAT);
    expect(after(a, '-i')).toBe('pipe:0');
    expect(a.join(' ')).not.toMatch(/:\/\//);
    expect(after(a, '-c:v')).toBe('libx264');
    expect(after(a, '-vf')).toMatch(/format=yuv420p$/); // NVDEC decodes 4:2:0; MJPEG is 4:2:2
    expect(after(a, '-vf')).toMatch(/^scale=trunc\(iw\/2\)\*2:trunc\(ih\/2\)\*2/); // 4:2:0 needs even sizes
    expect(after(a, '-fps_mode')).toBe('passthrough'); // no frame dropped or doubled
    expect(after(a, '-bf')).toBe('0');
    expect(a.slice(-3)).toEqual(['-f', 'mpegts', 'pipe:1']);
    expect(a).toContain('-an');
    expect(after(a, '-flush_packets')).toBe('1');
  });

  it('forces a keyframe every segment length by time, and none in between', () => {
    const a = transcoderArgs({ keyframeSeconds: 4 });
    expect(after(a, '-force_key_frames')).toBe('expr:gte(t,n_forced*4)');
    expect(after(a, '-sc_threshold')).toBe('0');
    expect(Number(after(a, '-g'))).toBeGreaterThan(10_000);
  });

  it.each([
    [undefined, ['-crf', '20'], '-b:v'],
    [1500, ['-b:v', '1500k', '-maxrate', '2250k', '-bufsize', '3000k'], '-crf'],
  ])('bit rate %j: %j', (bitrateKbps, expected, absent) => {
    const a = transcoderArgs({ keyframeSeconds: 2, bitrateKbps });
    const i = a.indexOf(expected[0]!);
    expect(a.slice(i, i + expected.length)).toEqual(expected);
    expect(a).not.toContain(absent);
  });
});

describe('what the transcoder says', () => {
  it('hides every URL password in its messages', () => {
    expect(redactUrls('rtsp://admin:s3cret@10.0.0.5:554/cam: Connection refused; also http://u:p@h/x')).toBe('rtsp://admin:***@10.0.0.5:554/cam: Connection refused; also http://u:***@h/x');
    expect(redactUrls('rtsp://10.0.0.5/cam: 401 Unauthorized')).toBe('rtsp://10.0.0.5/cam: 401 Unauthorized');
  });

  it.each([
    [{ code: null, signal: 'SIGKILL' as const }, null, 'the transcoder (ffmpeg) was killed by SIGKILL'],
    [{ code: null, signal: 'SIGSEGV' as const }, 'x', 'the transcoder (ffmpeg) was killed by SIGSEGV: x'],
    [{ code: 1, signal: null }, 'rtsp://h/cam: Connection refused', 'the transcoder (ffmpeg) exited with code 1: rtsp://h/cam: Connection refused'],
    [{ code: null, signal: null, spawnError: new Error('spawn ffmpeg ENOENT') }, null, 'the transcoder (ffmpeg) could not start: spawn ffmpeg ENOENT'],
  ])('an end %j is an outage with its reason', (exit, said, reason) => {
    expect(transcoderEnded(exit, said, 'ffmpeg')).toBe(reason);
  });

  it('runs AFFINITY_FFMPEG when set, else ffmpeg from the PATH', () => {
    expect(ffmpegProgram({})).toBe('ffmpeg');
    expect(ffmpegProgram({ AFFINITY_FFMPEG: '/opt/ffmpeg/bin/ffmpeg' })).toBe('/opt/ffmpeg/bin/ffmpeg');
  });

  it.each([
    ['mjpeg', 'codec' as const, undefined, 'transcoded to H.264 by an ffmpeg process, CRF 20, as the worker decodes H.264 and H.265, not mjpeg'],
    ['h264', 'open-gop' as const, 2000, 'transcoded to H.264 by an ffmpeg process, 2000 kbit/s, as its h264 has open GOPs, which cannot be cut'],
  ])('a transcoded %s connection (%s) is said with its codec and why', (codec, why, kbps, note) => {
    expect(transcodeNote(codec, why, kbps)).toBe(note);
  });
});
