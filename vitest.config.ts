import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The defaults lane: integration tests that hold the default tunables (15-s leases, 5-s
 * visibility, 10 receives) through hostile timing, so that most of their minutes are spent
 * waiting: a 65-s outage, a 22-s SIGSTOP. Each file runs on a stack of its own.
 */
export const DEFAULTS_LANE = [
  'test/system/outages-*.int.test.ts',
  'test/system/paused-worker-defaults*.int.test.ts',
  'test/gpu-worker/runtime/worker-kill-pause*.int.test.ts',
];

/**
 * The files that take longest (measured in the runs of docs/decisions.md, decision 53),
 * longest first: in each group they start before the others, so that no long file starts
 * last and runs on alone while the other slots sit idle. The rest follow in vitest's own
 * order (the longest first when it has timings of an earlier run, else the largest file).
 */
export const LONG_FIRST = [
  // The unit lane: CDK syntheses, and the worker on the twins decoding real H.264.
  'test/infra/iam-evaluation.test.ts',
  'test/infra/scale.test.ts',
  'test/gpu-worker/runtime/worker-segments.test.ts',
  'test/infra/subnet-plan.test.ts',
  'test/infra/deploy-day.test.ts',
  'test/infra/router-event-source.test.ts',
  'test/infra/stack.test.ts',
  'test/infra/monitoring.test.ts',
  'test/infra/hardening.test.ts',
  'test/gpu-worker/runtime/worker-segments-read-ahead.test.ts',
  'test/lab/sim/simulation.test.ts',
  'test/gpu-worker/vision/yolo-graphs.test.ts',
  'test/gpu-worker/runtime/worker-segments-backlog.test.ts',
  'test/infra/teardown-order.test.ts',
  // The defaults and integration lanes: real leases run out, workers are killed and
  // replaced, outages are waited out, cameras stream.
  'test/system/outages-s3.int.test.ts',
  'test/system/outages-dynamodb.int.test.ts',
  'test/gpu-worker/runtime/worker-kill-pause-segments.int.test.ts',
  'test/system/outages-sqs.int.test.ts',
  'test/system/failover.int.test.ts',
  'test/system/router-outage.int.test.ts',
  'test/system/late-frames.int.test.ts',
  'test/gpu-worker/runtime/worker-kill-pause.int.test.ts',
  'test/cli/edge/edge.int.test.ts',
  'test/gpu-worker/runtime/worker-kill-pause-simgpu.int.test.ts',
  'test/cli/video/stream.int.test.ts',
  'test/system/paused-worker-defaults.int.test.ts',
  'test/cli/video/stream-live-transcode.int.test.ts',
  'test/system/crash-loop.int.test.ts',
  'test/local/main.int.test.ts',
  'test/cli/video/stream-codecs.int.test.ts',
  'test/system/analytics-failover.int.test.ts',
  'test/cli/edge/edge-credentials.int.test.ts',
  'test/system/lifecycle.int.test.ts',
  'test/system/vision-failover.int.test.ts',
  'test/gpu-worker/runtime/worker-receive-ahead.int.test.ts',
  'test/cli/export.int.test.ts',
  'test/gpu-worker/runtime/idle-exit.int.test.ts',
  'test/system/pipeline.int.test.ts',
  'test/system/live-rate-calls.int.test.ts',
  'test/cli/commands.int.test.ts',
  'test/system/reconcile.int.test.ts',
  'test/system/hot-spare.int.test.ts',
  'test/cli/edge/edge-spool.int.test.ts',
  'test/gpu-worker/runtime/takeover-isolation.int.test.ts',
  'test/gpu-worker/runtime/crash/probe-process.int.test.ts',
];

/**
 * Files of the defaults and integration lanes that run at once. They spend most of their
 * time waiting (leases, outages, reorder waits), not on the CPU, and each has its own
 * stack: its own fauxqs and worker processes, its own database on the shared DynamoDB
 * Local or a DynamoDB Local of its own, its own state folder.
 */
export const WAITING_LANES_WORKERS = 4;

/** vitest's order, except that the files of {@link LONG_FIRST} start first (in that order) within their group. */
class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONG_FIRST.findIndex((path) => f.moduleId.endsWith(`/${path}`));
      return i < 0 ? LONG_FIRST.length : i;
    };
    // Stable: ties keep vitest's order.
    return sorted.sort((a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b));
  }
}

/**
 * Three lanes (the README says how to run each):
 *
 * - `unit`: every test that neither starts an emulator nor a process, binds a fixed port
 *   or writes a shared file: pure rules, twins, mocked SDK clients, CDK synthesis into its
 *   own temporary folder. Files run in parallel (one per core), first: they use the CPU.
 * - `defaults` (DEFAULTS_LANE above) and `integration`: the other `*.int.test.ts`, the
 *   tests on DynamoDB Local and fauxqs and those that start processes (workers, the CLI,
 *   the crash probe's child). The two lanes run together (one group), with
 *   WAITING_LANES_WORKERS files at a time, the long ones first (LONG_FIRST). Each lane's
 *   files share one DynamoDB Local (harness/shared-dynamodb.ts), each stack with a
 *   database of its own.
 *
 * Groups run by `sequence.groupOrder`, one after the other, and projects in one group must
 * have the same `maxWorkers`: a plain `vitest run` runs the unit lane first, then the
 * waiting lanes. `npm test` runs them at the same time instead, as two vitest runs
 * (scripts/test-lanes.ts, decision 81): the waiting lanes leave most of the CPU to the
 * unit lane. `npm run test:unit` / `test:defaults` / `test:int` run one lane
 * (`--project`). test/vitest-config.test.ts keeps the convention that sorts files into
 * lanes, and that `npm test` runs every lane.
 */
export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 120_000,
    allowOnly: false,
    sequence: { sequencer: LongFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.int.test.ts'],
          // vitest's default is one worker fewer than the cores: a single one on a 2-core machine.
          maxWorkers: '100%',
        },
      },
      {
        extends: true,
        test: {
          name: 'defaults',
          include: DEFAULTS_LANE,
          maxWorkers: WAITING_LANES_WORKERS,
          // After the unit lane (group 0), together with the integration lane.
          sequence: { groupOrder: 1 },
          // As the integration lane: one DynamoDB Local, a database per stack or harness.
          globalSetup: ['test/support/shared-dynamodb-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          exclude: DEFAULTS_LANE,
          maxWorkers: WAITING_LANES_WORKERS,
          sequence: { groupOrder: 1 },
          // One DynamoDB Local for the lane, one database per stack or harness (harness/shared-dynamodb.ts).
          globalSetup: ['test/support/shared-dynamodb-setup.ts'],
        },
      },
    ],
  },
});
