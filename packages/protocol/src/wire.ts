/** Shapes of the HTTP API bodies and answers (section 4 and decisions.md). */

/** Base path of every API route. */
export const API_BASE = '/service/realtime';

/** `[limit, hours]`: keep at most `limit` events for at most `hours` hours. */
export type HistoryRule = [limit: number, hours: number];

export interface EmitEvent {
  rooms?: string[];
  users?: string[];
  event: string;
  data?: unknown;
  history?: Record<string, HistoryRule>;
}

/** Event ids kept, by room: `<ms>-<seq>`. */
export type EventIds = Record<string, string>;

export interface EmitAnswer {
  ok: true;
  ids: EventIds;
}

export interface EmitBatchAnswer {
  ok: true;
  ids: EventIds[];
}

export interface AskRequest {
  event: string;
  data?: unknown;
  /** Milliseconds, 1 to 30,000; default 5,000. */
  timeout?: number;
  /** Wait for every reply until `timeout` instead of answering with the first. */
  all?: boolean;
}

export interface Reply {
  data: unknown;
  at: number;
}

export interface AskAnswer {
  ok: true;
  replies: Reply[];
}

export interface OnlineAnswer {
  ok: true;
  online: string[];
}

export type DeliveryState = 'pending' | 'taken' | 'retrying' | 'given_up';

export interface DeliveryRecord {
  id: string;
  state: DeliveryState;
  status: number;
  error?: 'timeout' | 'unreachable' | 'not_public';
  events: number;
  attempts: number;
  at: number | null;
  next_at: number | null;
  resendable: boolean;
}

export interface DeliveriesAnswer {
  ok: true;
  deliveries: DeliveryRecord[];
}

export interface WebhookTryAnswer {
  ok: true;
  delivered: boolean;
  status: number;
}

export interface ErrorAnswer {
  ok: false;
  error: string;
  message: string;
}

/** Event ids are `<ms>-<seq>`, both parts digits. */
export const EVENT_ID_PATTERN = /^[0-9]{1,15}-[0-9]{1,15}$/;
