import { createHmac } from 'node:crypto';
import type { IceServer } from '@realtime/protocol';
import { DEFAULT_TURN_TTL_SECONDS, type IceConfig } from './options.js';

/**
 * The TURN user of a page without a user (a stream visitor, an anonymous page): `$anon:<page id>`.
 * User ids never start with `$`, so it cannot be mistaken for a user's in the TURN server's logs.
 */
export function iceUser(user: string | null, pageId: string): string {
  return user ?? `$anon:${pageId}`;
}

/**
 * TURN REST credentials (what coturn's `use-auth-secret` checks against `static-auth-secret`): the
 * username is `<expiry unix seconds>:<user>` and the password base64(HMAC-SHA1(secret, username)).
 * coturn reads the expiry from the digits before the first `:`, so a user holding `:` is fine.
 */
export function turnCredentials(
  secret: string,
  user: string,
  expirySeconds: number,
): { username: string; credential: string } {
  const username = `${expirySeconds}:${user}`;
  return { username, credential: createHmac('sha1', secret).update(username).digest('base64') };
}

/**
 * The STUN and TURN servers a page of `user` is given (docs/calls.md): the STUN servers as
 * configured, then the TURN servers with credentials that end `ttlSeconds` from now. No config: none,
 * and the browsers connect directly (or through their own defaults).
 */
export function iceServers(config: IceConfig | undefined, user: string, nowMs: number): IceServer[] {
  const servers: IceServer[] = [];
  if (config?.stun !== undefined && config.stun.length > 0) servers.push({ urls: [...config.stun] });
  const turn = config?.turn;
  if (turn !== undefined && turn.urls.length > 0) {
    const expiry = Math.floor(nowMs / 1000) + (turn.ttlSeconds ?? DEFAULT_TURN_TTL_SECONDS);
    servers.push({ urls: [...turn.urls], ...turnCredentials(turn.secret, user, expiry) });
  }
  return servers;
}
