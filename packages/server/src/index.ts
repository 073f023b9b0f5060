export { startServer, type RunningServer, type ServerOptions } from './lifecycle.js';
export type { App, AppStore, Broker, HistoryStore, PresenceStore, Publication, RateLimit } from './engines/types.js';
export { newApp, newAppKey, newSecret } from './apps/generate.js';
export { ALL_FEATURES, DEFAULT_RATE_LIMIT } from './apps/defaults.js';
