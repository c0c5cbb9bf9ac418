/**
 * The operator's overrides and repairs on videos and queues: `release`, `replay`, `redrive` and
 * `reconcile`. Each is a core operation; these entries only parse its flags.
 */
import { CliError } from '../io.ts';
import { reconcileCommand } from './reconcile.ts';
import { releaseCommand } from './release.ts';
import { redriveCommand, type RedriveQueues } from './redrive.ts';
import { replayCommand } from './replay.ts';
import { intFlag, type Command } from './flags.ts';

export const OPERATOR_COMMANDS = {
  release: {
    usage: 'release <id> --force [--yes]',
    summary: 'admin override: unpin a video (fenced: bumps its token)',
    details: `Unpins the video from its slot, conditional on the token just read, and bumps the token so
the current owner can no longer write for it. A video that was waiting (frames buffered behind a
missing one, late frames queued, an end marker not reached) has what its checkpoint holds re-sent
(tagged), so it is admitted again at once and its next owner goes on from the checkpoint; otherwise
its next upload admits it afresh.

  --force   required: this is an override
  --yes     do not ask for confirmation (required when not on a terminal)`,
    positionals: ['id'],
    options: { force: { type: 'boolean' }, yes: { type: 'boolean', short: 'y' } },
    run: (t, [id], v, io) => releaseCommand(t, { videoId: id!, force: Boolean(v.force), yes: Boolean(v.yes) }, io),
  },
  replay: {
    usage: 'replay <id> --from <frame>',
    summary: 'reprocess a video from a frame on, from the frames in S3',
    details: `Rewinds the video's checkpoint to its first frame with a fresh tracker and rules (bumping its token,
which fences the current owner), deletes the results from <frame> on, and re-sends the frames (and the end marker
if still needed) to the ingest queue with a fresh replay tag so FIFO deduplication does not drop them. Frames
below <frame> are re-run only to rebuild the tracker; when some of them have no record yet, the replay starts
at the lowest of them and says so.

  --from N   first frame to reprocess (required)`,
    positionals: ['id'],
    options: { from: { type: 'string' } },
    run: (t, [id], v, io) => {
      const from = intFlag(v, 'from');
      if (from === undefined) throw new CliError('replay needs --from <frame>', 2);
      return replayCommand(t, { videoId: id!, fromFrame: from }, io);
    },
  },
  redrive: {
    usage: 'redrive [--queue ingest|slot|all] [--slot N]',
    summary: 'move every DLQ message back to its queue (SQS DLQ redrive) and wait',
    details: `Moves the messages of the ingest DLQ and the slot DLQs back to their source queues and waits for
the move: SQS's own DLQ redrive (StartMessageMoveTask) on AWS; on the local stack, whose emulator has none,
receive, send to the source queue and delete (FIFO messages keep their video's group and get a fresh
deduplication id). Safe to repeat: a frame that already has a record is dropped as a duplicate. Events the
router rejects as bad input go straight back to the ingest DLQ with their reason.
  --queue Q   ingest, slot or all (default all)
  --slot N    only slot N's DLQ (with --queue slot or all)`,
    positionals: [],
    options: { queue: { type: 'string' }, slot: { type: 'string' } },
    run: (t, _p, v, io) => {
      const queue = (v.queue ?? 'all') as string;
      if (!['ingest', 'slot', 'all'].includes(queue)) throw new CliError(`--queue must be ingest, slot or all (got "${queue}")`, 2);
      const slot = intFlag(v, 'slot');
      return redriveCommand(t, { queue: queue as RedriveQueues, ...(slot !== undefined ? { slot } : {}) }, io);
    },
  },
  reconcile: {
    usage: 'reconcile <id> [--dry-run]',
    summary: 're-check a video against S3: frames whose object exists but whose record is a gap or missing',
    details: `Lists the video's objects and reads its records; a frame whose object exists but whose record is
\`gap\` (its object came after its gap, and its notification was lost), or that has no record at all, is
re-sent to the ingest queue with a fresh replay tag so FIFO deduplication does not drop it. The owning
worker processes it as \`late\` and its record replaces the gap. Safe to repeat; changes no lease.

  --dry-run   print what would be re-sent, send nothing`,
    positionals: ['id'],
    options: { 'dry-run': { type: 'boolean' } },
    run: (t, [id], v, io) => reconcileCommand(t, { videoId: id!, dryRun: Boolean(v['dry-run']) }, io),
  },
} satisfies Record<string, Command>;
