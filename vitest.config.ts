import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration tests start Java (DynamoDB Local) and several worker processes;
    // on a 2-core machine running those files side by side only makes each slower.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    allowOnly: false,
  },
});
