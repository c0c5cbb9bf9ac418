/**
 * `npm start`'s command line: `--help`, the flags, and what is wrong with a bad one, as
 * a usage message instead of a stack trace. Pure apart from checking that the files
 * named by `--model` and `--classes` exist.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

export const START_USAGE = `Usage: npm start -- [options]

Starts the whole application on this machine, on local AWS emulators (DynamoDB Local,
fauxqs for S3 and SQS), with the router, the janitor and GPU workers (on the CPU here).
Ctrl-C stops everything.

Options:
  --model PATH          the detector workers run: an Ultralytics YOLOv8/11 ONNX export
                        (yolo export model=yolov8n.pt format=onnx). Default: the demo
                        detector, which finds only the demo's coloured squares
  --classes FILE        the model's class names, one per line (or a JSON array, or a
                        data.yaml with names:); default: the names the export embeds
  --port N              S3 + SQS port (default 4566; LOCAL_PORT)
  --dynamodb-port N     DynamoDB Local port (default 8000; LOCAL_DYNAMODB_PORT)
  --prefix NAME         resource name prefix (default FrameAffinity; LOCAL_PREFIX)
  --state-dir DIR       stack.json and logs/ (default .local; LOCAL_STATE_DIR)
  --warm-slots N        start N workers at once instead of on the first frame
  --worker-entry FILE   the worker's entry module (default lab/worker-main.ts)
  --no-router, --no-janitor, --no-event-relay
                        leave that part out
  --quiet               show only warnings, errors and crashes (metrics JSON is never
                        shown; everything is in <state-dir>/logs/)
  -h, --help            this text

Any tunable is set by its environment variable, e.g. SLOT_COUNT=2 npm start, or
DETECTION_SCORE_THRESHOLD=0.4 npm start -- --model yolov8n.onnx (README, "Configuration").`;

/** A command line `npm start` cannot run: the message says what and the usage follows. */
export class StartUsageError extends Error {
  override name = 'StartUsageError';
}

export interface StartOptions {
  readonly port?: string;
  readonly dynamodbPort?: string;
  readonly prefix?: string;
  readonly stateDir?: string;
  readonly workerEntry?: string;
  readonly warmSlots: number;
  readonly router: boolean;
  readonly janitor: boolean;
  readonly eventRelay: boolean;
  readonly quiet: boolean;
  /** Absolute path of `--model`. */
  readonly model?: string;
  /** Absolute path of `--classes`. */
  readonly classes?: string;
}

export type StartArgs = { readonly help: true } | ({ readonly help: false } & StartOptions);

function existingFile(flag: string, path: string, what: string): string {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new StartUsageError(`${flag} ${path}: the file does not exist (${abs})`);
  if (!statSync(abs).isFile()) throw new StartUsageError(`${flag} ${path}: not a file; give the ${what}`);
  return abs;
}

/** Parses `npm start`'s arguments; throws {@link StartUsageError} with what is wrong. */
export function parseStartArgs(argv: readonly string[]): StartArgs {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        help: { type: 'boolean', short: 'h' },
        model: { type: 'string' },
        classes: { type: 'string' },
        port: { type: 'string' },
        'dynamodb-port': { type: 'string' },
        prefix: { type: 'string' },
        'state-dir': { type: 'string' },
        'worker-entry': { type: 'string' },
        'warm-slots': { type: 'string' },
        'no-router': { type: 'boolean' },
        'no-janitor': { type: 'boolean' },
        'no-event-relay': { type: 'boolean' },
        quiet: { type: 'boolean' },
      },
      allowPositionals: false,
      strict: true,
    }));
  } catch (e) {
    // node:util's messages are clear ("Unknown option '--x'"); only the stack trace was not.
    throw new StartUsageError(e instanceof Error ? e.message : String(e));
  }
  if (values.help) return { help: true };
  const warm = values['warm-slots'] === undefined ? 0 : Number(values['warm-slots']);
  if (!Number.isInteger(warm) || warm < 0) throw new StartUsageError(`--warm-slots must be a whole number of workers, not "${String(values['warm-slots'])}"`);
  let model: string | undefined;
  if (typeof values.model === 'string') {
    if (!/\.onnx$/i.test(values.model)) throw new StartUsageError(`--model ${values.model}: give an ONNX file (.onnx), e.g. from yolo export model=yolov8n.pt format=onnx`);
    model = existingFile('--model', values.model, 'ONNX model file');
  }
  const classes = typeof values.classes === 'string' ? existingFile('--classes', values.classes, 'class names file') : undefined;
  const str = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
  return {
    help: false,
    port: str('port'),
    dynamodbPort: str('dynamodb-port'),
    prefix: str('prefix'),
    stateDir: str('state-dir'),
    workerEntry: str('worker-entry'),
    warmSlots: warm,
    router: !values['no-router'],
    janitor: !values['no-janitor'],
    eventRelay: !values['no-event-relay'],
    quiet: Boolean(values.quiet),
    ...(model ? { model } : {}),
    ...(classes ? { classes } : {}),
  };
}
