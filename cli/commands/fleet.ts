/**
 * The commands that report the pipeline's state: `status` (slots, owners, queues, this month's cost) and
 * `video` (one video's lease, owner history, progress, gaps and failures).
 */
import { CliError } from '../io.ts';
import { statusCommand } from './status.ts';
import { videoCommand } from './video.ts';
import { intFlag, type Command, type Values } from './flags.ts';

/** A retention in days for the cost estimate: an integer, at least 0. */
function retentionDays(values: Values, name: string): number {
  const n = intFlag(values, name)!;
  if (n < 0) throw new CliError(`--${name} must be 0 or more days (got ${n})`, 2);
  return n;
}

export const FLEET_COMMANDS = {
  status: {
    usage: 'status [--json] [--frame-days N] [--results-days N] [--no-pitr]',
    summary: "slots, owners, heartbeats, leased videos, queue depths, this month's cost per camera",
    details:
      '  --json             print the report as JSON\n' +
      "  --frame-days N     the deployment's frameRetentionDays, for the cost estimate (default 30)\n" +
      "  --results-days N   its resultsRetentionDays (default 0 = never expire)\n" +
      '  --no-pitr          the deployment has pointInTimeRecovery=false (the lean profile)',
    positionals: [],
    options: { json: { type: 'boolean' }, 'frame-days': { type: 'string' }, 'results-days': { type: 'string' }, 'no-pitr': { type: 'boolean' } },
    run: (t, _p, v, io) =>
      statusCommand(
        t,
        {
          json: Boolean(v.json),
          ...(v['frame-days'] !== undefined ? { frameRetentionDays: retentionDays(v, 'frame-days') } : {}),
          ...(v['results-days'] !== undefined ? { resultsRetentionDays: retentionDays(v, 'results-days') } : {}),
          ...(v['no-pitr'] ? { pointInTimeRecovery: false } : {}),
        },
        io,
      ),
  },
  video: {
    usage: 'video <id> [--json]',
    summary: "a video's lease, owner history, progress, gaps and failures",
    details: '  --json   print the report as JSON',
    positionals: ['id'],
    options: { json: { type: 'boolean' } },
    run: (t, [id], v, io) => videoCommand(t, { videoId: id!, json: Boolean(v.json) }, io),
  },
} satisfies Record<string, Command>;
