import type { Logger } from 'pino';
import type { Departures } from '../core/departures.js';
import type { Emitter } from '../core/emit.js';
import type { Hub } from '../core/hub.js';
import type { UserPresence } from '../core/user-presence.js';
import type { AppStore, Broker, HistoryStore, PresenceStore } from '../engines/types.js';
import type { RevocationCheck } from '../users/token-revocations.js';
import type { Connection } from './connection.js';
import type { Traffic } from './outbox.js';

/** What the page frame handlers need, passed explicitly. */
export interface GatewayDeps {
  /** This node's id: page ids carry it, so they are unique across the cluster. */
  node: string;
  apps: AppStore;
  hub: Hub<Connection>;
  broker: Broker;
  history: HistoryStore;
  presence: PresenceStore;
  /** Page sends go through it, as API emits do. */
  emitter: Emitter;
  users: UserPresence;
  /** Webhook events of pages' lives, and closes that could not be written: tried until they are. */
  departures: Pick<Departures, 'record' | 'closeLater'>;
  log: Logger;
  now: () => number;
  /** What pages were sent, for metrics. */
  traffic: Traffic;
  /** Refuses identities and room tokens issued before a revocation; none checked without it. */
  revocations?: RevocationCheck;
}
