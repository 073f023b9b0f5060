/**
 * Webhook events (section 6, field types from decisions.md "Webhook event fields not shown"): what
 * the service sends in a batch's `events` and the SDK hands to the customer's handlers.
 */

/** Fields every webhook event has (section 2.4). */
export interface WebhookEventBase {
  /** Unique per event; the same on every try and resend of its batch. De-duplicate on it. */
  id: string;
  /** When it happened, in whole milliseconds since the Unix epoch. */
  at: number;
}

/** Kinds of media of a call or group call. */
export type WebhookMedia = 'audio' | 'video';

/** Why a call between two people ended. */
export type CallEndReason = 'completed' | 'missed' | 'rejected' | 'busy' | 'cancelled' | 'failed';

/** What a signed-in person was on a live stream. */
export type StreamRole = 'presenter' | 'viewer';

/**
 * `emit`: a page sent an event that its room token lists in `w` (room rule `webhook`).
 * `data` is what the page sent; in a sealed room it is the sealed string (open it with the room's key,
 * e.g. `realtime.open(event.data, roomLabel(event.room))`).
 */
export interface EmitWebhookEvent extends WebhookEventBase {
  type: 'emit';
  room: string;
  /** The event name the page sent. */
  event: string;
  data: unknown;
  /** The user who sent it, as the customer's server vouched for them; absent for a page without an identity. */
  from?: string;
  /** The event id the pages of the room saw (`<ms>-<seq>`). */
  event_id: string;
}

/** `room.occupied` (first one in) and `room.vacated` (last one out). */
export interface RoomWebhookEvent extends WebhookEventBase {
  type: 'room.occupied' | 'room.vacated';
  room: string;
}

/** `member.joined` and `member.left`, in a presence room. */
export interface MemberWebhookEvent extends WebhookEventBase {
  type: 'member.joined' | 'member.left';
  room: string;
  user: string;
}

/** `user.online` (connected anywhere in the app) and `user.offline` (10 s after the last connection went). */
export interface UserWebhookEvent extends WebhookEventBase {
  type: 'user.online' | 'user.offline';
  user: string;
}

/** `stream.live`: a live stream went live. */
export interface StreamLiveWebhookEvent extends WebhookEventBase {
  type: 'stream.live';
  stream: string;
  started_at: number;
  /** Not yet ended: the contract lists the field for both stream events; expect it absent or null here. */
  ended_at?: number | null;
}

/** `stream.ended`: a live stream ended. */
export interface StreamEndedWebhookEvent extends WebhookEventBase {
  type: 'stream.ended';
  stream: string;
  started_at: number;
  ended_at: number;
}

/** `call.ended`: a call between two people ended. Its `id` is the same however often it is sent. */
export interface CallEndedWebhookEvent extends WebhookEventBase {
  type: 'call.ended';
  call: string;
  call_id: string;
  /** The user who called. */
  from: string;
  /** The user who was called. */
  to: string;
  media: WebhookMedia[];
  started_at: number;
  /** When it was answered; null (or absent) when it never was. */
  answered_at?: number | null;
  ended_at: number;
  /** Talk time from answer to end, whole seconds (rounded down); 0 when never answered. */
  seconds: number;
  reason: CallEndReason;
}

/** `group.joined`: someone joined a group call, by the name the rules gave it. */
export interface GroupJoinedWebhookEvent extends WebhookEventBase {
  type: 'group.joined';
  call: string;
  user: string;
  media: WebhookMedia[];
  joined_at: number;
}

/** `group.left`: someone left a group call. */
export interface GroupLeftWebhookEvent extends WebhookEventBase {
  type: 'group.left';
  call: string;
  user: string;
  media: WebhookMedia[];
  joined_at: number;
  left_at: number;
  /** Whole seconds in the call (rounded down). */
  seconds: number;
}

/** `stream.joined`: a signed-in person started watching or presenting while the stream was live. */
export interface StreamJoinedWebhookEvent extends WebhookEventBase {
  type: 'stream.joined';
  stream: string;
  user: string;
  role: StreamRole;
  /** Pairs this event with its `stream.left`. */
  watch: string;
  joined_at: number;
}

/** `stream.left`: they stopped, or the stream ended. */
export interface StreamLeftWebhookEvent extends WebhookEventBase {
  type: 'stream.left';
  stream: string;
  user: string;
  role: StreamRole;
  watch: string;
  joined_at: number;
  left_at: number;
  /** Live time only, whole seconds (rounded down). */
  seconds: number;
}

/** `webhook.test`: requested by `POST /service/realtime/webhooks/test` (`realtime.webhooks.test()`). */
export interface TestWebhookEvent extends WebhookEventBase {
  type: 'webhook.test';
}

/**
 * Every webhook event of section 6, told apart by `type`.
 *
 * Only `id` (string), `at` (number) and `type` (string) are checked at run time; the other fields are
 * passed on as the service sent them. A newer service may send types this version does not list:
 * they are passed on too, so give a `switch` over `type` a `default` branch.
 *
 * @example
 * for (const event of events) {
 *   if (event.type === 'user.offline') await markOffline(event.user);
 * }
 */
export type WebhookEvent =
  | EmitWebhookEvent
  | RoomWebhookEvent
  | MemberWebhookEvent
  | UserWebhookEvent
  | StreamLiveWebhookEvent
  | StreamEndedWebhookEvent
  | CallEndedWebhookEvent
  | GroupJoinedWebhookEvent
  | GroupLeftWebhookEvent
  | StreamJoinedWebhookEvent
  | StreamLeftWebhookEvent
  | TestWebhookEvent;

/** The `type` of a webhook event. */
export type WebhookEventType = WebhookEvent['type'];

/** The event of one type, e.g. `WebhookEventOf<'call.ended'>`. */
export type WebhookEventOf<T extends WebhookEventType> = Extract<WebhookEvent, { type: T }>;

/** Every type of section 6, in its order. */
export const WEBHOOK_EVENT_TYPES = [
  'emit',
  'room.occupied',
  'room.vacated',
  'member.joined',
  'member.left',
  'user.online',
  'user.offline',
  'stream.live',
  'stream.ended',
  'call.ended',
  'group.joined',
  'group.left',
  'stream.joined',
  'stream.left',
  'webhook.test',
] as const satisfies readonly WebhookEventType[];

/** The events the service reports of what happens in an app (all but `webhook.test`). */
export type RealtimeWebhookEvent = Exclude<WebhookEvent, TestWebhookEvent>;

/**
 * An event as it is recorded, before the webhook queue gives it its `at` and, unless it has one of
 * its own (`call.ended`: the same however often it is sent), its `id`.
 */
export type Unstamped<E> = E extends unknown ? Omit<E, 'id' | 'at'> & { id?: string } : never;

/** What happens in an app that the realtime service records for the app's webhook. */
export type AppEvent = Unstamped<RealtimeWebhookEvent>;
