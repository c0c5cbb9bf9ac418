/**
 * The files of `affinity stream`: the state file (the numbering journal,
 * cli/video/stream-journal.ts), written atomically, and the spool folder beside it that
 * holds closed segments until S3 confirms them.
 *
 * Atomic: the JSON goes to a temporary file in the same folder, is fsynced, renamed over
 * the state file, and the folder is fsynced; a crash leaves the old state or the new one,
 * never a torn one.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { initialState, parseState, type StreamState } from './stream-journal.ts';
import type { SegmentContainer } from './segment-file.ts';

/** The spool folder of a state file: `<state-file>.spool/`. */
export function spoolDirOf(stateFile: string): string {
  return `${stateFile}.spool`;
}

/** The spool file the segment being written goes to (renamed when it closes). */
export const PARTIAL_SEGMENT = 'open.part';

/** Writes `state` to `file` atomically (temporary file, fsync, rename, fsync of the folder). */
export function writeStateFile(file: string, state: StreamState): void {
  writeJsonFile(file, state);
}

/** Writes any JSON value the way the state file is written (also `affinity edge`'s health.json). */
export function writeJsonFile(file: string, value: unknown): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, `${JSON.stringify(value, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  try {
    const dfd = openSync(dir, 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // some file systems cannot fsync a folder; the rename is still atomic
  }
}

/** The saved state, or a fresh one when there is no state file yet. */
export function readStateFile(file: string, videoId: string, container: SegmentContainer, firstFrame: number): { state: StreamState; existed: boolean } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { state: initialState(videoId, container, firstFrame), existed: false };
    throw e;
  }
  return { state: parseState(text, videoId), existed: true };
}

/**
 * Empties the spool of everything the journal does not name: the segment that was open
 * when the last run died (its frames never got numbers) and segments closed but not
 * journaled. Returns the names removed.
 */
export function cleanSpool(spoolDir: string, state: StreamState): string[] {
  mkdirSync(spoolDir, { recursive: true });
  const keep = new Set(state.pending.map((p) => path.basename(p.file)));
  const removed: string[] = [];
  for (const name of readdirSync(spoolDir)) {
    if (keep.has(name)) continue;
    rmSync(path.join(spoolDir, name), { force: true, recursive: true });
    removed.push(name);
  }
  return removed;
}
