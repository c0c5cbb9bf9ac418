/**
 * Console plumbing shared by the commands, so tests can run them in-process and
 * read what they printed.
 */
import { createInterface } from 'node:readline/promises';

/** An error the user caused or can fix; printed without a stack trace. */
export class CliError extends Error {
  override name = 'CliError';
  /** Process exit code: 2 for usage errors, 1 otherwise. */
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** Where a command writes. */
export interface Io {
  /** One line of normal output (stdout). */
  out(line: string): void;
  /** One line of diagnostics (stderr). */
  err(line: string): void;
  /** Raw text to stderr without newline (progress bars). */
  progress(text: string): void;
  /** Whether stdin and stderr are terminals (prompts and \r progress are allowed). */
  readonly interactive: boolean;
  /** Asks a yes/no question; resolves true only for "y"/"yes". */
  confirm(question: string): Promise<boolean>;
}

/** The real console. */
export function processIo(): Io {
  return {
    out: (line) => void process.stdout.write(`${line}\n`),
    err: (line) => void process.stderr.write(`${line}\n`),
    progress: (text) => void process.stderr.write(text),
    interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY),
    confirm: async (question) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        const answer = await rl.question(`${question} [y/N] `);
        return /^y(es)?$/i.test(answer.trim());
      } finally {
        rl.close();
      }
    },
  };
}

/** Collects output in memory (tests, the demo's quiet steps). */
export function memoryIo(options: { interactive?: boolean; answer?: boolean } = {}): Io & { lines: string[]; errors: string[]; questions: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  const questions: string[] = [];
  return {
    lines,
    errors,
    questions,
    out: (line) => void lines.push(line),
    err: (line) => void errors.push(line),
    progress: () => {},
    interactive: options.interactive ?? false,
    confirm: async (q) => {
      questions.push(q);
      return options.answer ?? false;
    },
  };
}
