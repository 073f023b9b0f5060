import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(`./packages/${p}/src/index.ts`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against the sources, so a test never reads a stale build.
    alias: {
      '@realtime/protocol': src('protocol'),
      '@realtime/node': src('node'),
      '@realtime/server': src('server'),
      '@realtime/browser': src('browser'),
    },
  },
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    reporters: ['default', './test/summary-reporter.ts'],
    // `npm run test:coverage`: line coverage of the service's sources (issue 18 compares it before/after).
    coverage: {
      provider: 'v8',
      include: ['packages/server/src/**/*.ts'],
      exclude: ['**/*.test.ts', '**/contract/**'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: 'coverage',
    },
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
        },
      },
      {
        // The service's suites again with every store call answering on a later turn (as over a
        // network): the code around the seams must not rely on a store answering at once.
        extends: true,
        test: {
          name: 'async-stores',
          include: ['packages/server/test/**/*.test.ts', 'test/browser/**/*.test.ts'],
          exclude: [
            'packages/server/test/cli.test.ts',
            'packages/server/test/ops-cli.test.ts',
            'packages/server/test/cli-calls.test.ts',
            'packages/server/test/cli-streams.test.ts',
            'packages/server/test/cli-dashboard.test.ts',
            'packages/server/test/cluster/**',
            // The forwarding unit stands alone: no engine under it.
            'test/browser/forwarding-unit.test.ts',
            // The chat demo runs its own embedded engine (start.mjs): no engine choice to take.
            'test/browser/demo-media.test.ts',
            'test/browser/demo-chat.test.ts',
            // The dashboard's page; its API runs in every project (packages/server/test/dashboard-*).
            'test/browser/dashboard-*.test.ts',
          ],
          env: { REALTIME_TEST_ENGINE: 'embedded-async' },
        },
      },
      {
        // And once more on a real redis-server: every page, API and webhook test through the Redis engine.
        extends: true,
        test: {
          name: 'redis',
          include: ['packages/server/test/**/*.test.ts', 'test/browser/**/*.test.ts'],
          exclude: [
            // The CLI's own processes, SQLite's disk and group commit, and the cluster's own Redis.
            'packages/server/test/cli.test.ts',
            'packages/server/test/ops-cli.test.ts',
            'packages/server/test/cli-calls.test.ts',
            'packages/server/test/cli-streams.test.ts',
            'packages/server/test/cli-dashboard.test.ts',
            'test/browser/forwarding-unit.test.ts',
            'test/browser/demo-media.test.ts',
            'test/browser/demo-chat.test.ts',
            'test/browser/dashboard-*.test.ts',
            'packages/server/test/storage-full.test.ts',
            'packages/server/test/group-commit.test.ts',
            'packages/server/test/webhook-crash.test.ts',
            'packages/server/test/replay-memory.test.ts',
            'packages/server/test/cluster/**',
          ],
          env: { REALTIME_TEST_ENGINE: 'redis' },
        },
      },
    ],
  },
});
