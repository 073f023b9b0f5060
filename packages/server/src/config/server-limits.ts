/** Bounds on what clients may hold open; see docs/operations.md. */
export interface ConnectionLimits {
  /** Open pages (WebSockets, greeted or not) on this node. */
  maxPages: number;
  /** Open pages per client address (an IPv6 client counts per /64). */
  maxPagesPerAddress: number;
  /** Connections waiting for a request: not yet sent a whole one, or idle on keep-alive between two. */
  maxPendingHandshakes: number;
  /** A request's headers must arrive within this time of its connection (or of its start on keep-alive), else 408. */
  headersTimeoutMs: number;
  /** Proxies (addresses, CIDR ranges) whose `X-Forwarded-For` names the client. */
  trustProxy: string[];
}

/** The `limits` of a server: its connection caps, and asks in flight per user (beyond: 429). */
export interface ServerLimits extends ConnectionLimits {
  maxAsksPerUser: number;
}
