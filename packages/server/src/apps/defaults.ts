import { FEATURES, type Feature } from '@realtime/protocol';
import type { RateLimit } from '../engines/types.js';

/** Plans default to every feature: the embedded service is its operator's own. */
export const ALL_FEATURES: Feature[] = [...FEATURES];

/** Default API rate limit per app; an app entry of the config file may set another (`rateLimit`). */
export const DEFAULT_RATE_LIMIT: RateLimit = { perSecond: 1000, burst: 2000 };

/** App keys: 1 to 64 of A-Z a-z 0-9 . _ - (no ':' so keys can prefix topics). */
export const APP_KEY_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** Secrets shorter than this are refused: they sign every request of the app. */
export const MIN_SECRET_LENGTH = 16;
