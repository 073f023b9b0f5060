/** What the dashboard's endpoints use of the service. */
import type { Logger } from 'pino';
import type { AppData } from '../apps/remove-app.js';
import type { PasswordHash } from '../config/password-hash.js';
import type { AppStore, LimitStore, PresenceStore } from '../engines/types.js';
import type { TrustedProxies } from '../http/client-address.js';
import type { Webhooks } from '../webhooks/webhooks.js';
import type { CheckQueue } from './check-queue.js';
import type { ConsoleTap } from './console-tap.js';
import type { DashboardSessions } from './sessions.js';
import type { StatsSampler } from './stats-sampler.js';

export interface DashboardDeps {
  password: PasswordHash;
  /** Sessions: signed cookies and their records in the store, shared by every node. */
  sessions: DashboardSessions;
  /** This node's password checks: a few at once, the others waiting their turn. */
  checks: CheckQueue;
  /** The service's apps, cached for a second: writes through it apply on this node at once. */
  apps: AppStore;
  /** The same apps read from the store, uncached: what an operator sees and changes is what is stored now. */
  storedApps: AppStore;
  limits: LimitStore;
  trusted: TrustedProxies;
  /** Webhook addresses may be http:// and local (the server's --allow-private-webhooks). */
  allowPrivateWebhooks: boolean;
  /** The service's webhooks: test, delivery log, resend, tries by outcome. */
  webhooks: Webhooks;
  /** Who is where over every node: the online users and occupied rooms of an app. */
  presence: PresenceStore;
  /** The stats ring, sampled while the dashboard is on. */
  stats: StatsSampler;
  /** The live console's tap: open consoles here, see the traffic of every node. */
  console: ConsoleTap;
  /** What an app leaves in the stores (history, webhook queue): dropped when it is deleted. */
  appData: AppData;
  log: Logger;
  now: () => number;
}
