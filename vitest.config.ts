import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(`./packages/${p}/src/index.ts`, import.meta.url));

/**
 * Page and HTTP suites that go through every seam, run on each engine's project. Everything else
 * (and these) runs once, in main, on the embedded engine; Chromium runs in full there only, and once
 * per engine as a smoke test.
 */
const ENGINE_SUITES = [
  'packages/server/test/gateway.test.ts',
  'packages/server/test/gateway-resume.test.ts',
  'packages/server/test/gateway-presence.test.ts',
  'packages/server/test/emit.test.ts',
  'packages/server/test/ask-online.test.ts',
  'packages/server/test/room-reads.test.ts',
  'packages/server/test/replay-overtaken.test.ts',
  'packages/server/test/calls.test.ts',
  'packages/server/test/groups.test.ts',
  'packages/server/test/streams.test.ts',
  'packages/server/test/user-actions.test.ts',
  'packages/server/test/idempotent-emit.test.ts',
  'packages/server/test/secret-rotation.test.ts',
  'test/browser/engine-smoke.test.ts',
];

/** The Redis engine's store suites (each runs its seam's contract) that also run on a Redis Cluster. */
const CLUSTER_STORE_SUITES = [
  'apps',
  'broker',
  'calls',
  'dashboard-sessions',
  'groups',
  'history',
  'idempotency',
  'limits',
  'nodes',
  'presence',
  'revocations',
  'room-lua',
  'streams',
  'ttl',
  'webhooks',
].map((store) => `packages/server/src/engines/redis/${store}.test.ts`);

/** Suites of 3 service nodes (test/cluster) that also run on a Redis Cluster; outages and restarts stay on one Redis. */
const CLUSTER_NODE_SUITES = [
  'calls',
  'console',
  'delivery',
  'group-units',
  'limits',
  'node-death',
  'node-pause',
  'presence',
  'presence-scale',
  'room-reads',
  'streams',
].map((suite) => `packages/server/test/cluster/${suite}.test.ts`);

/**
 * The layer each viewer gets behind real shaped links (network namespaces and tc, as root): a
 * presenter and three viewers, a group of five. Their Chromiums' encoders and decoders need both
 * cores, and their timings (a link's estimate, a layer's ramp) go wrong when other suites take the
 * CPU: they run first, alone (group 0), and every other project after them (group 1).
 * `npm run test:layers` runs them by themselves.
 */
export const SHAPED_LINKS = 'test/browser/shaped-layers.test.ts';

/**
 * Suites that count what the whole process holds (sockets, handles, async resources, heap): each
 * runs in a fresh module cache and process of its own, where another file's leftovers cannot count.
 */
const PROCESS_WIDE = [
  'packages/server/test/start-rollback.test.ts',
  'packages/server/test/proc-sockets.test.ts',
  'packages/server/test/media-release.test.ts',
  'packages/server/test/gateway-slow.test.ts',
];

/** The Redis engine's suites beside its sources start redis-servers: they run in main, not with the unit tests. */
const REDIS_ENGINE_TESTS = 'packages/server/src/engines/redis/**/*.test.ts';

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
    // Most suites wait on sockets, Chromium and redis-server rather than compute: three files at a
    // time on the 2-core CI machine (vitest's default there is one).
    maxWorkers: 3,
    // One module cache per worker for all the files it runs: importing the sources again for each
    // file took a third of the workers' time. A file's own state is made in its hooks (see
    // cliLifecycle in packages/server/test/cli-harness.ts), never left at a shared module's top.
    isolate: false,
    sequence: { groupOrder: 1 },
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
          name: 'shaped-links',
          include: [SHAPED_LINKS],
          maxWorkers: 1,
          sequence: { groupOrder: 0 },
        },
      },
      {
        // The unit tests beside the sources: fakes and injected clocks, no process, socket or server
        // of their own.
        extends: true,
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts'],
          exclude: [...configDefaults.exclude, REDIS_ENGINE_TESTS],
        },
      },
      {
        extends: true,
        test: {
          name: 'main',
          include: [REDIS_ENGINE_TESTS, 'packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
          // Minutes of npm ci in a clone of its own: `npm run test:fresh-clone` (vitest.fresh-clone.config.ts).
          // The shaped-link suites run before the rest, alone (SHAPED_LINKS).
          exclude: [...configDefaults.exclude, 'test/readme/fresh-clone.test.ts', SHAPED_LINKS, ...PROCESS_WIDE],
        },
      },
      {
        extends: true,
        test: { name: 'process-wide', include: PROCESS_WIDE, isolate: true },
      },
      {
        // The page suites that lean on the store seams, again with every store call answering on a
        // later turn (as over a network): the code around the seams must not rely on a store
        // answering at once. The seams themselves are the contract suites, run on every engine in main.
        extends: true,
        test: {
          name: 'async-stores',
          include: [
            ...ENGINE_SUITES,
            // Failures injected at the embedded engine's seams, here answering later.
            'packages/server/test/store-failure-frames.test.ts',
            'packages/server/test/departure-events.test.ts',
            'packages/server/test/limits.test.ts',
          ],
          env: { REALTIME_TEST_ENGINE: 'embedded-async' },
        },
      },
      {
        // And on a real redis-server: the same page suites, and what only Redis shows (a restart that
        // keeps the data, readiness, the live console across the broker). Redis's own outages,
        // restarts, leases and several nodes are in src/engines/redis and test/cluster (main).
        extends: true,
        test: {
          name: 'redis',
          include: [
            ...ENGINE_SUITES,
            'packages/server/test/webhooks.test.ts',
            'packages/server/test/webhook-restart.test.ts',
            'packages/server/test/ops.test.ts',
            'packages/server/test/dashboard-console.test.ts',
          ],
          env: { REALTIME_TEST_ENGINE: 'redis' },
        },
      },
      {
        // And on a real Redis Cluster (3 primaries, 1 replica each; one for the whole project, shared
        // by key prefix): every seam's contract suite and the page suites. Failovers and reshards
        // start clusters of their own (main).
        extends: true,
        test: {
          name: 'redis-cluster',
          include: [
            ...ENGINE_SUITES,
            ...CLUSTER_STORE_SUITES,
            ...CLUSTER_NODE_SUITES,
            // Two nodes in one process acting on users (disconnect, revoke, idempotency keys).
            'packages/server/test/user-actions-nodes.test.ts',
          ],
          globalSetup: ['packages/server/test/cluster-setup.ts'],
          env: { REALTIME_TEST_ENGINE: 'redis-cluster', REALTIME_TEST_REDIS: 'cluster' },
        },
      },
    ],
  },
});
