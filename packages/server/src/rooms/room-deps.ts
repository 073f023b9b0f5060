import type { RoomClaims } from '@realtime/protocol';
import type { Logger } from 'pino';
import type { Departures } from '../core/departures.js';
import type { Emitter } from '../core/emit.js';
import type { Hub } from '../core/hub.js';
import type { AppStore, Broker, HistoryStore, PresenceStore } from '../engines/types.js';
import type { RevocationCheck } from '../users/token-revocations.js';

/** What the rooms need: each step of a join, leave, list or send takes the part of this it uses. */
export interface RoomServiceDeps {
  /** This node: joins, leaves, presence and sends are told on the diagnostics channels as its own. */
  node: string;
  apps: Pick<AppStore, 'get'>;
  hub: Pick<Hub, 'addSeat' | 'removeSeat' | 'largeRoom' | 'memberScale'>;
  /** Presence changes go out on it (no id, nothing kept). */
  broker: Pick<Broker, 'publish'>;
  history: Pick<HistoryStore, 'since' | 'last'>;
  presence: Pick<PresenceStore, 'enterRoom' | 'exitRoom' | 'joinRoom' | 'leaveRoom' | 'memberPage' | 'memberCount'>;
  /** Page sends go out as API emits do: encoded, checked, published and told in one place. */
  emitter: Pick<Emitter, 'send'>;
  /** Webhook events of pages' lives (room.*, member.*): tried again until the store takes them. */
  departures: Pick<Departures, 'record'>;
  /** Checks a room token under the app's secret (either of two during a rotation); throws for a token that does not hold. */
  verifyToken(token: string, secret: string | readonly string[], nowMs: number): Promise<RoomClaims>;
  /** Refuses room tokens issued before a revocation (POST /tokens/revoke); none checked without it. */
  revocations?: RevocationCheck;
  log: Logger;
  now: () => number;
}
