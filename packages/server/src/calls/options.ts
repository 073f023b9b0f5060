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

/** A token bucket for invites: `burst` at once, refilled at `perMinute`. */
export interface InviteRate {
  perMinute: number;
  burst: number;
}

/**
 * How often calls may be placed, counted over every node: by one user (`perCaller`), and to one user
 * from anyone (`perCallee`), so a call token reused in a loop cannot ring someone's pages (and report
 * `call.ended`) without end.
 */
export interface InviteLimits {
  perCaller: InviteRate;
  perCallee: InviteRate;
}

/** Room for a caller who cancels and calls again, or a callee called by a few people at once. */
export const DEFAULT_INVITE_LIMITS: InviteLimits = {
  perCaller: { perMinute: 10, burst: 5 },
  perCallee: { perMinute: 20, burst: 10 },
};

export interface CallOptions {
  /** How long a call rings before it ends `missed` (ms); default 60,000. */
  ringMs?: number;
  /** Invite rates; each part left out is DEFAULT_INVITE_LIMITS'. */
  invites?: Partial<InviteLimits>;
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
