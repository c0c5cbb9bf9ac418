/** `npm start`'s command line: help, usage errors in words (never a stack trace), and the model flags. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseStartArgs, START_USAGE, StartUsageError } from '../../local/start-args.ts';

const dir = mkdtempSync(join(tmpdir(), 'start-args-'));
const model = join(dir, 'yolov8n.onnx');
const names = join(dir, 'names.txt');
writeFileSync(model, 'not really a model: only its path is checked here');
writeFileSync(names, 'person\n');

describe('parseStartArgs', () => {
  it('answers --help and -h with the usage, which names the model flags', () => {
    expect(parseStartArgs(['--help'])).toEqual({ help: true });
    expect(parseStartArgs(['-h'])).toEqual({ help: true });
    expect(START_USAGE).toMatch(/--model PATH[\s\S]*--classes FILE[\s\S]*--quiet/);
  });

  it('reads the flags, with the model and class names as absolute paths', () => {
    const o = parseStartArgs(['--model', model, '--classes', names, '--warm-slots=2', '--quiet', '--no-router', '--state-dir', dir]);
    expect(o).toMatchObject({ help: false, model, classes: names, warmSlots: 2, quiet: true, router: false, janitor: true, eventRelay: true, stateDir: dir });
  });

  it('has the defaults of a plain npm start', () => {
    expect(parseStartArgs([])).toEqual({ help: false, warmSlots: 0, router: true, janitor: true, eventRelay: true, quiet: false, port: undefined, dynamodbPort: undefined, prefix: undefined, stateDir: undefined, workerEntry: undefined });
  });

  it.each([
    ['an unknown flag', ['--bogus'], /Unknown option '--bogus'/],
    ['a positional argument', ['clip.mp4'], /Unexpected argument 'clip\.mp4'/],
    ['a flag without its value', ['--model'], /--model/],
    ['a model that does not exist', ['--model', join(dir, 'none.onnx')], /--model .*none\.onnx: the file does not exist/],
    ['a model that is not ONNX', ['--model', names], /give an ONNX file \(\.onnx\)/],
    ['a classes file that does not exist', ['--classes', join(dir, 'none.txt')], /--classes .*none\.txt: the file does not exist/],
    ['a folder as the model', ['--model', `${dir}.onnx`], /does not exist/],
    ['a bad worker count', ['--warm-slots', 'two'], /--warm-slots must be a whole number/],
  ])('refuses %s with a usage error that says what is wrong', (_case, argv, message) => {
    expect(() => parseStartArgs(argv)).toThrow(StartUsageError);
    expect(() => parseStartArgs(argv)).toThrow(message);
  });
});
