/**
 * `@realtime/node`: the SDK for the customer's server. Sends signed requests to the realtime service
 * (emit, batch, ask, online, webhooks) and seals data the service must not read.
 *
 * @example
 * import { Realtime, RealtimeError, roomLabel } from '@realtime/node';
 * const realtime = new Realtime({ url, key, secret, localKey });
 * await realtime.emit({ rooms: ['lobby'], event: 'hello', data: realtime.seal(roomLabel('lobby'), { text: 'hi' }) });
 */
export type {
  AskRequest,
  DeliveryRecord,
  DeliveryState,
  EmitEvent,
  ErrorCode,
  EventIds,
  HistoryRule,
  Reply,
} from '@realtime/protocol';
export { isSealed, roomLabel, userLabel } from '@realtime/protocol';
export { type AskOptions, Realtime, type RealtimeOptions } from './client.js';
export { RealtimeError, type RealtimeErrorCode, type RealtimeErrorDetails, type TransportErrorCode } from './errors.js';
export { LOCAL_KEY_BYTES, type LocalKeyInput, parseLocalKey } from './local-key.js';
export {
  type ApiAnswer,
  createTransport,
  DEFAULT_TIMEOUT_MS,
  type HttpMethod,
  type SignedRequestOptions,
  type Transport,
  type TransportOptions,
} from './request.js';
export type { IdentityTokenOptions, RoomTokenOptions } from './tokens.js';
export { Webhooks, type WebhookTry } from './webhooks.js';
