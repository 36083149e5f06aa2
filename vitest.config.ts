import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/scratch-dir.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end files each start their own emulator and webhook on free ports,
    // so files may run in parallel; 2 workers match the 2-core CI machine.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
