/**
 * The storage seams, one file each. Each has an embedded implementation (memory or SQLite) and a
 * Redis one; engines/contract holds one test suite per seam that every implementation must pass.
 * Core, HTTP and gateway code depend only on these interfaces, and treat every call as one that may
 * answer later and may fail (a StoreError): a Redis store is on the network.
 *
 * This file only gathers them, so a caller may import every seam from one place.
 */
export type { App, AppStore, RateLimit, SecretRotation, WebhookSigner } from './app-store.js';
export type {
  AskQuestion,
  BroadcastMessage,
  BroadcastPublication,
  Broker,
  NodeMessage,
  NodePublication,
  Outgoing,
  OutgoingRoomEvent,
  Publication,
  PublicationHandler,
  Report,
  RoomEvent,
  Unsubscribe,
  UserClose,
  UserEvent,
  UserFrame,
} from './broker.js';
export { BROADCAST_TOPIC, nodeTopic, roomTopic, topicOf, userTopic } from './broker.js';
export type { CallRecord, CallStore } from './call-store.js';
export type { DashboardSessionStore } from './dashboard-session-store.js';
export type { Engine } from './engine.js';
export type { GroupJoin, GroupLimits, GroupMember, GroupStore, LapsedMember } from './group-store.js';
export type { HistoryPage, HistoryStore, KeptCount, KeptEvent, PageBound, ResumeResult } from './history-store.js';
export type { IdempotencyStore, Reservation } from './idempotency-store.js';
export type { LimitStore } from './limit-store.js';
export type { MaybePromise } from './maybe-promise.js';
export type { NodeClaim, NodeStore } from './node-store.js';
export type {
  Departure,
  GoneUser,
  MemberCount,
  MemberPage,
  NameRange,
  OccupiedRoom,
  OnlineUser,
  PresenceStore,
  RoomSize,
} from './presence-store.js';
export type { AppRevocations, RevocationStore, RevokeOutcome } from './revocation-store.js';
export type {
  LapsedStreamMember,
  StreamChange,
  StreamMember,
  StreamState,
  StreamStore,
  StreamWatch,
  StreamWatchEnd,
} from './stream-store.js';
export type { StoredBatch, TryMinute, TryOutcome, TryResult, WebhookStats, WebhookStore } from './webhook-store.js';
export { TRY_COUNTS_KEPT_MS } from './webhook-store.js';
