import { CLOSE, LIMITS, withReconnectHint } from '@realtime/protocol';
import type { Logger } from 'pino';
import { diagnostics } from '../core/diagnostics.js';
import type { NodeChannel } from '../core/node-channel.js';
import type { Broker, RevocationStore, RevokeOutcome } from '../engines/types.js';
import { revocationEnd, type TokenRevocations } from './token-revocations.js';

export interface UserServiceDeps {
  node: string;
  broker: Pick<Broker, 'publish' | 'onGap'>;
  /** Revocations made on other nodes arrive here (`tokens.revoked`). */
  channel: Pick<NodeChannel, 'onBroadcast'>;
  store: RevocationStore;
  /** This node's cache of revocations, checked at every hello and join. */
  revocations: TokenRevocations;
  /**
   * Closes this node's pages of the app holding tokens (of `user`, or of anyone) issued before
   * `beforeMs`; answers how many.
   */
  closeRevoked(app: string, user: string | undefined, beforeMs: number): number;
  log: Logger;
  now: () => number;
}

/** Close reason of a disconnected page (one line, under 123 bytes). */
export const DISCONNECTED_REASON = "disconnected by the app's server";
/** Close reason of a page whose tokens were revoked: it fetches fresh ones. */
export const REVOKED_REASON = 'tokens revoked: fetch fresh ones';

/**
 * What the app's server does to users: closes every page of a user on every node (the user's
 * broker topic reaches them, as user events and asks do), and revokes tokens issued before a time,
 * for a user or the whole app (stored for every node, then told to every node, which closes its
 * pages that hold such tokens).
 */
export class UserService {
  readonly #deps: UserServiceDeps;
  #stopGaps: (() => void) | undefined;

  constructor(deps: UserServiceDeps) {
    this.#deps = deps;
    deps.channel.onBroadcast('tokens.revoked', (message) =>
      this.#revokedHere(message.app, message.user, message.before),
    );
  }

  start(): void {
    // Publications may have been missed: a revocation told meanwhile is read from the store again.
    this.#stopGaps = this.#deps.broker.onGap?.(() => this.#deps.revocations.forget());
  }

  close(): void {
    this.#stopGaps?.();
    this.#stopGaps = undefined;
  }

  /**
   * Closes every open page of the user, on every node, with 4004: the pages do not reconnect by
   * themselves. Answers once the close was published (the pages close as it reaches their nodes).
   */
  async disconnect(app: string, user: string): Promise<void> {
    const { broker, node, now } = this.#deps;
    await broker.publish(
      [{ kind: 'user.close', app, user, code: CLOSE.disconnected, reason: DISCONNECTED_REASON }],
      now(),
    );
    if (diagnostics.acted.hasSubscribers) diagnostics.acted.publish({ node, app, action: 'disconnect', user });
  }

  /**
   * Refuses from now on the identity and room tokens of `user` (or of every user) issued before
   * `beforeMs`, on every node, and closes the pages holding them (4005: they fetch fresh tokens).
   * 'full' when the app has as many user revocations in force as it may: nothing was stored.
   */
  async revoke(app: string, user: string | undefined, beforeMs: number): Promise<RevokeOutcome> {
    const { store, broker, node, now } = this.#deps;
    const at = now();
    const outcome = await store.revoke(app, user, beforeMs, revocationEnd(beforeMs), LIMITS.revokedUsersPerApp, at);
    if (outcome === 'full') return outcome;
    this.#revokedHere(app, user, beforeMs);
    // Every node (this one again: harmless) updates its cache and closes its pages that hold such tokens.
    const message = user === undefined ? { app, before: beforeMs } : { app, user, before: beforeMs };
    await broker.publish([{ kind: 'broadcast', message: { type: 'tokens.revoked', ...message } }], at);
    if (diagnostics.acted.hasSubscribers) {
      diagnostics.acted.publish({ node, app, action: 'revoke', user, before: beforeMs });
    }
    return outcome;
  }

  #revokedHere(app: string, user: string | undefined, beforeMs: number): void {
    this.#deps.revocations.noted(app, user, beforeMs);
    const closed = this.#deps.closeRevoked(app, user, beforeMs);
    if (closed > 0) this.#deps.log.info({ app, user, closed }, 'closed pages holding revoked tokens');
  }
}

/** The close reason of revoked pages, with the spread delay each waits before it comes back. */
export function revokedReason(delayMs: number): string {
  return withReconnectHint(REVOKED_REASON, delayMs);
}
