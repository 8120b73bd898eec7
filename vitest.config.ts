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
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          // One control plane per run, started once and shared; tests isolate by namespace.
          globalSetup: ['test/e2e/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
