import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { RateLimiter } from '../apps/rate-limit.js';
import type { AskService } from '../asks/ask-service.js';
import type { Emitter } from '../core/emit.js';
import type { App, AppStore, HistoryStore, IdempotencyStore, PresenceStore } from '../engines/types.js';
import type { UserService } from '../users/user-service.js';
import type { Webhooks } from '../webhooks/webhooks.js';

/** What the API handlers need; passed explicitly, never the whole server. */
export interface ApiDeps {
  apps: AppStore;
  emitter: Emitter;
  ask: AskService;
  webhooks: Webhooks;
  presence: PresenceStore;
  /** Read by the room reads (kept events, epochs); writes go through the emitter. */
  history: HistoryStore;
  /** The API rate limit per app, over every node. */
  limiter: RateLimiter;
  log: Logger;
  now: () => number;
  /** Disconnects users and revokes tokens (the routes of user-actions.ts). */
  users: Pick<UserService, 'disconnect' | 'revoke'>;
  /** Idempotency keys of emits (idempotency.ts). */
  idempotency: IdempotencyStore;
  /**
   * Told of every answer: the route's name ('none' when no route matched), its status, when it began,
   * and whether it was refused for the app's request rate (other 429s are asks in flight).
   */
  answered: (route: string, status: number, startedMs: number, overAppRate: boolean) => void;
}

/** One verified request, handed to its route's handler. */
export interface ApiRequest {
  app: App;
  /** Path parameters, percent-decoded. */
  params: string[];
  /** The raw query string (after '?'), not decoded. */
  query: string;
  body: Buffer;
  /** The request's headers (the Idempotency-Key of emits). */
  headers: IncomingHttpHeaders;
}

/** A handler returns the answer's fields; `ok: true` is added by the pipeline. */
export type Handler = (
  request: ApiRequest,
  deps: ApiDeps,
) => Record<string, unknown> | Promise<Record<string, unknown>>;
