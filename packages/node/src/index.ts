/**
 * `@realtime/node`: the SDK for the customer's server. Sends signed requests to the realtime service
 * (emit, batch, ask, online, room reads, webhooks) and seals data the service must not read.
 *
 * @example
 * import { Realtime, RealtimeError, roomLabel } from '@realtime/node';
 * const realtime = new Realtime({ url, key, secret, localKey });
 * await realtime.emit({ rooms: ['lobby'], event: 'hello', data: realtime.seal(roomLabel('lobby'), { text: 'hi' }) });
 */
export type {
  AskRequest,
  CallMedia,
  DeliveryRecord,
  DeliveryState,
  EmitEvent,
  ErrorCode,
  EventIds,
  HistoryRule,
  Member,
  Reply,
} from '@realtime/protocol';
export { isSealed, roomLabel, userLabel } from '@realtime/protocol';
export {
  type AskOptions,
  type EmitOptions,
  Realtime,
  type RealtimeOptions,
  type RevokeTokensOptions,
} from './client.js';
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
export type {
  HistoryEvent,
  HistoryOptions,
  HistoryPage,
  MembersOptions,
  MembersPage,
  OccupiedRoom,
  RoomInfo,
  RoomsOptions,
  RoomsPage,
} from './rooms.js';
export type {
  CallTokenOptions,
  DirectCallTokenOptions,
  GroupCallTokenOptions,
  IdentityTokenOptions,
  RoomTokenOptions,
  StreamGrantOptions,
} from './tokens.js';
export {
  DEFAULT_DEDUPE_MAX_IDS,
  DEFAULT_DEDUPE_TTL_MS,
  MemoryDeduplicator,
  type MemoryDeduplicatorOptions,
  type WebhookDeduplicator,
} from './webhook-dedupe.js';
export {
  createWebhookReceiver,
  DEFAULT_WEBHOOK_BODY_LIMIT,
  type ExpressLikeMiddleware,
  type ExpressLikeRequest,
  expressWebhook,
  type FastifyLikeInstance,
  type FastifyLikeReply,
  type FastifyLikeRequest,
  type FastifyWebhookHandler,
  type FastifyWebhookOptions,
  type FastifyWebhookPlugin,
  fastifyWebhook,
  type WebhookAnswer,
  type WebhookAnswerError,
  type WebhookContext,
  type WebhookHandlerOptions,
  type WebhookReceiver,
  type WebhookReceiverOptions,
  webhookHandler,
} from './webhook-handlers.js';
export {
  type CallEndedWebhookEvent,
  type CallEndReason,
  createWebhookVerifier,
  type EmitWebhookEvent,
  type GroupJoinedWebhookEvent,
  type GroupLeftWebhookEvent,
  type HeadersLike,
  type MemberWebhookEvent,
  type RoomWebhookEvent,
  type StreamEndedWebhookEvent,
  type StreamJoinedWebhookEvent,
  type StreamLeftWebhookEvent,
  type StreamLiveWebhookEvent,
  type StreamRole,
  type TestWebhookEvent,
  type UserWebhookEvent,
  type VerifyWebhookOptions,
  verifyWebhook,
  WEBHOOK_EVENT_TYPES,
  type WebhookEvent,
  type WebhookEventBase,
  type WebhookEventOf,
  type WebhookEventType,
  type WebhookHeaders,
  type WebhookMedia,
  type WebhookRequestInput,
  type WebhookVerifier,
  type WebhookVerifierOptions,
  type WebhookVerifyError,
  type WebhookVerifyResult,
} from './webhook-verify.js';
export { Webhooks, type WebhookTry } from './webhooks.js';
