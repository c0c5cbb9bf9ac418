/** What `npm start` shows: never the metrics JSON; with --quiet, warnings, errors and crashes only. */
import { describe, expect, it } from 'vitest';
import { divertJsonWrites, shouldEcho, terminalLine } from '../../local/echo-filter.ts';

const EMF = JSON.stringify({ _aws: { Timestamp: 1, CloudWatchMetrics: [{ Namespace: 'FrameAffinity', Metrics: [{ Name: 'FramesProcessed' }] }] }, FramesProcessed: 8 });
const info = JSON.stringify({ level: 'INFO', message: 'processor ready' });
const warn = JSON.stringify({ level: 'WARN', message: 'DEMO MODEL ON REAL VIDEO: video v1 gave boxes in 0 of its first 30 frames' });
const error = JSON.stringify({ level: 'ERROR', message: 'commit failed' });

describe('shouldEcho', () => {
  it.each([
    ['an EMF metrics line', EMF, false, false],
    ['an info log line', info, true, false],
    ['a warning', warn, true, true],
    ['an error', error, true, true],
    ['a worker start', 'started worker local-slot0-seq1-abc (launchSeq 1: warm start)', true, false],
    ['a clean exit', 'exited (code 0, signal null)', true, false],
    ['a crash', 'exited (code 1, signal null)', true, true],
    ['a stack trace line', '    at main (gpu-worker/main.ts:10:3)', true, true],
    ['a line that only looks like JSON', '{ not json', true, true],
  ])('%s: shown %s by default, %s with --quiet', (_case, line, byDefault, quiet) => {
    expect(shouldEcho(line, false)).toBe(byDefault);
    expect(shouldEcho(line, true)).toBe(quiet);
  });
});

describe('divertJsonWrites', () => {
  it('sends the in-process JSON to the log file, shows what shouldEcho allows, and passes the banner through', () => {
    // Prepare
    for (const quiet of [false, true]) {
      const shown: string[] = [];
      const logged: string[] = [];
      const write = divertJsonWrites((c) => (shown.push(String(c)), true), (t) => logged.push(t), quiet);
      // Act
      write('Local stack ready.\n');
      write(`${EMF}\n`);
      write(`${info}\n${warn}\n`);
      // Assess
      expect(logged.join('')).toBe(`${EMF}\n${info}\n${warn}\n`);
      const warnText = 'WARN DEMO MODEL ON REAL VIDEO: video v1 gave boxes in 0 of its first 30 frames';
      expect(shown.join('')).toBe(quiet ? `Local stack ready.\n${warnText}\n` : `Local stack ready.\n${info}\n${warnText}\n`);
    }
  });
});

describe('terminalLine', () => {
  it('shows a warning or error as its words first, the fields that matter after, and the noise dropped', () => {
    const line = JSON.stringify({ level: 'WARN', message: 'DEMO MODEL ON REAL VIDEO: video v1 ...', timestamp: 't', service: 'worker', sampling_rate: 0, msg: 'DEMO MODEL ON REAL VIDEO: video v1 ...', videoId: 'v1', frames: 30 });
    expect(terminalLine(line, true)).toBe('WARN DEMO MODEL ON REAL VIDEO: video v1 ...  {"videoId":"v1","frames":30}');
    expect(terminalLine(error, false)).toBe('ERROR commit failed');
  });

  it('leaves other shown lines as they are, and hides what shouldEcho hides', () => {
    expect(terminalLine(info, false)).toBe(info);
    expect(terminalLine('ENV {}', true)).toBe('ENV {}');
    expect(terminalLine(EMF, false)).toBeUndefined();
    expect(terminalLine(info, true)).toBeUndefined();
  });
});
