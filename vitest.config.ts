import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Tests mirror the source tree (test/core/..., test/gpu-worker/runtime/...); those that run
    // on the emulators or start processes end in `.int.test.ts` (scripts/test-layout.ts), so
    // `vitest run --exclude '**/*.int.test.ts'` runs the quick ones.
    include: ['test/**/*.test.ts'],
    // Integration tests start Java (DynamoDB Local) and several worker processes;
    // on a 2-core machine running those files side by side only makes each slower.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    allowOnly: false,
  },
});
