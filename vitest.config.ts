import { defineConfig } from 'vitest/config';

// CI asks for a JSON report beside the console output, to print one summary line.
const report = process.env.TEAL_TEST_REPORT;

export default defineConfig({
  test: {
    reporters: report ? ['default', 'json'] : ['default'],
    ...(report ? { outputFile: { json: report } } : {}),
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/unit/**/*.test.ts'],
          // Some unit tests start a process (the operator, app.py): bounds against hangs,
          // as in e2e, not vitest's 5 s and 10 s, which a busy machine's slowest start passes.
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          // One control plane per run, started once and shared; tests isolate by namespace.
          globalSetup: ['test/e2e/global-setup.ts'],
          // Bounds against hangs, far above a busy machine's slowest pass (see WAIT_MS in test/support/kube.ts).
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
