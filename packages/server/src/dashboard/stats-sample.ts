/** One sample of the dashboard's stats (docs/dashboard.md, "Stats"). No imports: the page reads the same type. */
export interface StatsSample {
  /** When it was taken (the service's clock, ms since the epoch). */
  at: number;
  /** Pages open on this node. */
  pages: number;
  /** Events published per second by this node: API emits and page sends. */
  messagesIn: number;
  /** Frames handed to this node's pages per second (events, replies, control frames). */
  messagesOut: number;
  /** Webhook tries per second made by this node, whatever their outcome. */
  deliveries: number;
  /** Webhook batches waiting to be delivered (pending or retrying), over every node; null when unread. */
  webhookBacklog: number | null;
  /** Webhook events not yet in a batch, over every node; null when unread. */
  webhookWaiting: number | null;
}
