import type { Feature } from '@realtime/protocol';
import type { MaybePromise } from './maybe-promise.js';

/** Requests per second an app may make, refilled continuously, with a burst allowance. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

export interface App {
  /** The `X-Service-Site` value. */
  key: string;
  secret: string;
  name: string;
  /** Webhook address; empty string when none is set. */
  webhook: string;
  /** The plan: what the app may do. */
  features: Feature[];
  rateLimit: RateLimit;
}

/**
 * Apps and their secrets. Reads are on every API request, so `get` must be cheap;
 * writes come from the CLI or the config file, possibly from another process.
 */
export interface AppStore {
  get(key: string): Promise<App | undefined> | App | undefined;
  list(): Promise<App[]> | App[];
  /** Creates or replaces the app with this key. */
  upsert(app: App): Promise<void> | void;
  /** Replaces the secret; false when no app has the key. */
  setSecret(key: string, secret: string): Promise<boolean> | boolean;
  /** Sets the webhook address ('' clears it); false when no app has the key. */
  setWebhook(key: string, url: string): Promise<boolean> | boolean;
  /** Removes the app with this key; false when there was none. */
  remove(key: string): MaybePromise<boolean>;
  close(): Promise<void> | void;
}
