import type { Logger } from 'pino';
import { MemoryCallStore } from './memory/calls.js';
import { MemoryFanout } from './memory/fanout.js';
import { MemoryGroupStore } from './memory/groups.js';
import { MemoryLimitStore } from './memory/limits.js';
import { MemoryNodeStore } from './memory/nodes.js';
import { MemoryPresenceStore } from './memory/presence.js';
import { MemoryStreamStore } from './memory/streams.js';
import { newNodeId } from './node-id.js';
import { SqliteAppStore } from './sqlite/apps.js';
import { CommittedBroker } from './sqlite/committed-broker.js';
import { SqliteDashboardSessionStore } from './sqlite/dashboard-sessions.js';
import { openDb } from './sqlite/db.js';
import { GroupCommit } from './sqlite/group-commit.js';
import { SqliteHistoryStore } from './sqlite/history.js';
import { CommittedHistory } from './sqlite/history-commit.js';
import { SqliteIdempotencyStore } from './sqlite/idempotency.js';
import { savePendingOffline, takePendingOffline } from './sqlite/pending-offline.js';
import { SqliteRevocationStore } from './sqlite/revocations.js';
import { SqliteWebhookStore } from './sqlite/webhooks.js';
import type { AppStore, Engine, HistoryStore, LimitStore, WebhookStore } from './types.js';

/** What the embedded engine stores in SQLite; tests wrap them to inject failures. */
export interface EmbeddedStores {
  history: HistoryStore;
  webhooks: WebhookStore;
  apps: AppStore;
  /** In memory, not SQLite; here so tests can make it fail too. Left out of a wrap: the one made. */
  limits?: LimitStore;
}

export interface EmbeddedOptions {
  /** Folder of the SQLite file. */
  dataDir: string;
  offlineDelayMs?: number;
  log: Logger;
  /** Wraps the stores as they are made (tests inject store failures here). They must stay synchronous. */
  wrapStores?: (stores: EmbeddedStores) => Partial<EmbeddedStores>;
}

/**
 * The embedded engine: one process, one SQLite file (apps, history, webhook queue, offline reports
 * still to come), fan-out and presence in memory. Everything stored before it is delivered goes
 * through one group commit per event-loop turn (sqlite/group-commit.ts).
 */
export function openEmbeddedEngine(options: EmbeddedOptions): Engine {
  const db = openDb(options.dataDir);
  const commits = new GroupCommit(db);
  const memoryLimits = new MemoryLimitStore();
  const made: EmbeddedStores = {
    history: new SqliteHistoryStore(db, { group: commits }),
    webhooks: new SqliteWebhookStore(db, commits),
    apps: new SqliteAppStore(db),
    limits: memoryLimits,
  };
  // A wrapper may leave stores out: those stay as made.
  const stores: EmbeddedStores = options.wrapStores ? { ...made, ...options.wrapStores(made) } : made;
  const presence = new MemoryPresenceStore(
    options.offlineDelayMs === undefined ? {} : { offlineDelayMs: options.offlineDelayMs },
  );
  // A graceful stop kept the offline reports still to come: those users stay online until then.
  presence.restore(takePendingOffline(db));
  const apps = stores.apps;
  const broker = new CommittedBroker({
    commits,
    history: stores.history,
    webhooks: stores.webhooks,
    fanout: new MemoryFanout(),
  });
  return {
    kind: 'embedded',
    node: newNodeId(),
    apps,
    history: new CommittedHistory(commits, stores.history),
    broker,
    nodes: new MemoryNodeStore(),
    presence,
    webhooks: stores.webhooks,
    limits: stores.limits ?? memoryLimits,
    calls: new MemoryCallStore(),
    groups: new MemoryGroupStore(),
    streams: new MemoryStreamStore(),
    dashboardSessions: new SqliteDashboardSessionStore(db),
    revocations: new SqliteRevocationStore(db),
    idempotency: new SqliteIdempotencyStore(db),
    // A real read through the webhook queue: the store every accepted event passes through.
    check: async () => {
      await stores.webhooks.waiting();
    },
    close: async () => {
      await commits.close();
      try {
        savePendingOffline(db, presence.pendingOffline());
      } catch (error) {
        // A full disk must not stop the stop: those users get no user.offline after the restart.
        options.log.error({ err: error }, 'keeping the pending offline reports failed');
      }
      broker.close();
      presence.close();
      db.close();
    },
  };
}
