import { defineConfig } from 'vitest/config';

/**
 * Two lanes (the README says how to run each):
 *
 * - `unit`: every test that neither starts an emulator nor a process, binds a fixed port
 *   or writes a shared file: pure rules, twins, mocked SDK clients, CDK synthesis into its
 *   own temporary folder. Files run in parallel (one per core).
 * - `integration`: `*.int.test.ts`, the tests on DynamoDB Local and fauxqs and those that
 *   start processes (workers, the CLI, the crash probe's child). One file at a time: each
 *   starts Java and several Node processes, and the hostile-timing tests at the default
 *   tunables must not share two cores with another stack.
 *
 * A plain `vitest run` runs both: the unit lane first, then the integration lane (vitest
 * runs a project whose files are not parallel after the parallel ones).
 * `npm run test:unit` / `npm run test:int` run one lane (`--project`).
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
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          fileParallelism: false,
        },
      },
    ],
  },
});
