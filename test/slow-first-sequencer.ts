import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds each slow file took in a full run on the 2-core machine (vitest's JSON report of
 * `npm test`, 2026-11-27; the larger where a file runs in several projects). Refresh them when the
 * slowest files change: `npx vitest run --reporter=json --outputFile=run.json`.
 */
const SECONDS = new Map<string, number>([
  ['packages/server/test/cli-apps.test.ts', 34],
  ['test/browser/video-ramp.test.ts', 31],
  ['test/browser/calls.test.ts', 30],
  ['packages/server/test/cluster/presence-10k.test.ts', 28],
  ['packages/server/test/dashboard-signin.test.ts', 28],
  ['test/browser/demo-chat.test.ts', 24],
  ['packages/server/test/webhook-crash.test.ts', 22],
  ['test/browser/group-units.test.ts', 21],
  ['packages/server/test/cli-rotation.test.ts', 18],
  ['packages/server/test/cli-redis.test.ts', 18],
  ['packages/server/test/group-units.test.ts', 17],
  ['packages/server/test/cli-config.test.ts', 16],
  ['packages/server/test/redis-cluster-clients.test.ts', 15],
  ['test/readme/readme-cli.test.ts', 15],
  ['test/browser/speakers.test.ts', 15],
  ['test/browser/forwarding-unit.test.ts', 13],
  ['test/browser/streams.test.ts', 13],
  ['packages/server/test/cli-streams.test.ts', 13],
  ['packages/server/test/replay-memory.test.ts', 12],
  ['packages/server/test/cli-dashboard.test.ts', 12],
  ['packages/server/test/cli-serve.test.ts', 12],
  ['packages/server/test/cli-redis-cluster.test.ts', 10],
  ['test/browser/chromium.test.ts', 10],
  ['test/browser/groups.test.ts', 10],
  ['packages/server/test/webhooks.test.ts', 10],
  ['test/browser/dashboard-signin.test.ts', 10],
  ['packages/server/test/cluster/calls.test.ts', 8],
  ['test/browser/demo-media.test.ts', 7],
  ['test/browser/dashboard-narrow.test.ts', 7],
  ['packages/server/src/engines/redis/shard-generation.test.ts', 7],
  ['packages/server/src/engines/redis/presence.test.ts', 7],
  ['packages/server/test/cluster/redis-cluster-spread.test.ts', 7],
  ['test/browser/dashboard-presence.test.ts', 6],
  ['packages/server/test/cluster/redis-cluster-failover.test.ts', 6],
  ['packages/server/test/cluster/limits.test.ts', 6],
  ['packages/server/src/engines/redis/sharded-subscriber.test.ts', 6],
  ['test/packed-install.test.ts', 6],
  ['packages/server/test/cluster/group-units.test.ts', 6],
  ['packages/server/test/cluster/redis-outage.test.ts', 6],
  ['packages/server/test/redis-cluster.test.ts', 6],
  ['test/browser/dashboard-console.test.ts', 6],
  ['packages/server/test/cluster/redis-cluster-reshard.test.ts', 6],
  ['test/stop-by-pid.test.ts', 6],
  ['test/browser/dashboard-webhooks.test.ts', 5],
  ['packages/server/src/engines/redis/broker.test.ts', 5],
  ['packages/server/test/cluster/node-death.test.ts', 5],
  ['packages/server/test/dashboard-apps.test.ts', 4],
  ['packages/server/test/cluster/streams.test.ts', 4],
  ['packages/server/test/webhook-restart.test.ts', 4],
  ['packages/server/test/cluster/presence-scale.test.ts', 4],
  ['packages/server/src/webhooks/webhooks.test.ts', 4],
  ['packages/server/test/media-ports.test.ts', 4],
]);

/**
 * Runs the slowest files first (longest-first scheduling), so the run does not end waiting on one
 * long file that a worker took up last. On a fresh clone vitest has no timings of its own and would
 * start by file size.
 */
export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const seconds = (file: TestSpecification) => SECONDS.get(relative(process.cwd(), file.moduleId)) ?? 0;
    // Stable: files of no known time keep vitest's own order, after the slow ones.
    return [...sorted].sort((a, b) => seconds(b) - seconds(a));
  }
}
