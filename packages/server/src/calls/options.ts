/**
 * How the service carries calls: how long a call rings, and the STUN/TURN servers pages are given
 * (docs/calls.md). TURN credentials are the TURN REST form coturn's `use-auth-secret` checks: the
 * username `<expiry seconds>:<user>`, the password base64(HMAC-SHA1(secret, username)).
 */
export interface IceConfig {
  /** STUN server addresses (`stun:host:port`). */
  stun?: string[];
  /** TURN servers sharing one secret with the service (`turn:host:port?transport=udp`, `turns:...`). */
  turn?: { urls: string[]; secret: string; ttlSeconds?: number };
}

export interface CallOptions {
  /** How long a call rings before it ends `missed` (ms); default 60,000. */
  ringMs?: number;
  ice?: IceConfig;
  /** Pages one group call takes at most; default GROUP_MAX_PAGES (12). */
  groupMaxPages?: number;
  /**
   * The pages at which a group call leaves the mesh for forwarding units (the streams' media
   * settings serve them); default GROUP_UNIT_FROM (5). A number above groupMaxPages keeps every group a mesh.
   */
  groupUnitFrom?: number;
}

/** TURN credentials last this long unless configured: a call may outlast an hour. */
export const DEFAULT_TURN_TTL_SECONDS = 12 * 3600;
