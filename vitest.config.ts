import { defineConfig } from 'vitest/config';

/**
 * The defaults lane: integration tests that hold the default tunables (15-s leases, 5-s
 * visibility, 10 receives) through hostile timing, so that most of their minutes are spent
 * waiting: a 65-s outage, a 22-s SIGSTOP. They run side by side, each file on its own
 * stack in its own process, after the unit lane and before the integration lane.
 */
export const DEFAULTS_LANE = [
  'test/system/outages-*.int.test.ts',
  'test/system/paused-worker-defaults*.int.test.ts',
  'test/gpu-worker/runtime/worker-kill-pause*.int.test.ts',
];

/**
 * Three lanes (the README says how to run each), run one after the other:
 *
 * - `unit`: every test that neither starts an emulator nor a process, binds a fixed port
 *   or writes a shared file: pure rules, twins, mocked SDK clients, CDK synthesis into its
 *   own temporary folder. Files run in parallel (one per core).
 * - `defaults` (DEFAULTS_LANE above): three files side by side, each on its own stack.
 * - `integration`: the other `*.int.test.ts`, the tests on DynamoDB Local and fauxqs and
 *   those that start processes (workers, the CLI, the crash probe's child). One file at a
 *   time: each starts Java and several Node processes.
 *
 * Groups run by `sequence.groupOrder`; a project whose files are not parallel runs after
 * them all. `npm run test:unit` / `test:defaults` / `test:int` run one lane (`--project`).
 * test/vitest-config.test.ts keeps the convention that sorts files into lanes.
 */
export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 120_000,
    allowOnly: false,
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
          maxWorkers: 3,
          // After the unit lane (group 0), before the integration lane (run last: not parallel).
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          exclude: DEFAULTS_LANE,
          fileParallelism: false,
          // One DynamoDB Local for the lane, one database per stack or harness (test/support/shared-dynamodb.ts).
          globalSetup: ['test/support/shared-dynamodb-setup.ts'],
        },
      },
    ],
  },
});
