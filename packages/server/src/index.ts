export { ALL_FEATURES, DEFAULT_RATE_LIMIT } from './apps/defaults.js';
export { developmentAppBanner, ensureDevelopmentApp } from './apps/development-app.js';
export { newApp, newAppKey, newSecret } from './apps/generate.js';
export { hashDashboardPassword } from './config/password-hash.js';
export { type AppEvent, type EventSink, MemoryEventSink } from './core/events.js';
export type {
  App,
  AppStore,
  Broker,
  HistoryStore,
  PresenceStore,
  Publication,
  RateLimit,
  SecretRotation,
  WebhookSigner,
} from './engines/types.js';
export { handleStopSignals } from './lifecycle/stop-signals.js';
export { type RunningServer, type ServerOptions, startServer } from './lifecycle.js';
