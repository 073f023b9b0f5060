import type { AppStore } from './app-store.js';
import type { Broker } from './broker.js';
import type { CallStore } from './call-store.js';
import type { DashboardSessionStore } from './dashboard-session-store.js';
import type { GroupStore } from './group-store.js';
import type { HistoryStore } from './history-store.js';
import type { IdempotencyStore } from './idempotency-store.js';
import type { LimitStore } from './limit-store.js';
import type { NodeStore } from './node-store.js';
import type { PresenceStore } from './presence-store.js';
import type { RevocationStore } from './revocation-store.js';
import type { StreamStore } from './stream-store.js';
import type { WebhookStore } from './webhook-store.js';

/**
 * One way to store everything: the embedded engine (SQLite file, memory fan-out, one process) or
 * Redis (any number of nodes). Made by engines/embedded.ts or engines/redis/; the rest of the
 * service sees only this.
 */
export interface Engine {
  readonly kind: 'embedded' | 'redis';
  /** This process among the nodes: page ids and leases carry it. Random per start. */
  readonly node: string;
  apps: AppStore;
  history: HistoryStore;
  broker: Broker;
  /** Which nodes are alive: the one lease each node holds, and the claims of lapsed nodes. */
  nodes: NodeStore;
  presence: PresenceStore;
  webhooks: WebhookStore;
  /** The API rate limit per app and asks in flight per user, over all nodes. */
  limits: LimitStore;
  /** Calls between two people (group calls and live streams follow). */
  calls: CallStore;
  groups: GroupStore;
  streams: StreamStore;
  /** The dashboard's signing secret and open sessions, shared by every node. */
  dashboardSessions: DashboardSessionStore;
  /** Token revocations of apps and users (POST /tokens/revoke), kept across restarts where anything is. */
  revocations: RevocationStore;
  /** Idempotency keys of API emits: reserved, then their answers for the retry window. */
  idempotency: IdempotencyStore;
  /** A cheap round trip to the storage (readiness probes); rejects with a StoreError when it cannot. */
  check(): Promise<void>;
  /**
   * Runs `repair` when the storage lost data it held (Redis restarted without it), before it serves
   * again: the node puts back what it must (the apps of its configuration). Engines that cannot
   * lose data behind the service's back leave it out.
   */
  onDataLost?(repair: () => Promise<void>): () => void;
  /** Closes every store; what is kept stays for the next start. */
  close(): Promise<void>;
}
