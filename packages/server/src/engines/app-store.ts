import type { Feature } from '@realtime/protocol';
import type { MaybePromise } from './maybe-promise.js';

/** Requests per second an app may make, refilled continuously, with a burst allowance. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

/** Which of an app's two secrets signs its webhooks (`X-Service-Signature`) during a rotation. */
export type WebhookSigner = 'new' | 'old';

/**
 * A rotation under way (docs/operations.md, "Rotating a secret"): the app's `secret` is the new one,
 * and the one it replaced is still accepted, by the API and for tokens, until `retiresAt`.
 */
export interface SecretRotation {
  /** The secret before the rotation. */
  oldSecret: string;
  /** When the old secret stops being accepted, in milliseconds since the Unix epoch. */
  retiresAt: number;
  /** Which secret signs webhooks; the other signs the second header while both are accepted. */
  signer: WebhookSigner;
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
  /** Present while the app holds two secrets (or until a lapsed rotation is written over). */
  rotation?: SecretRotation;
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
  /**
   * Replaces the secret; false when no app has the key. With `rotation`, the app holds both secrets
   * (the caller read the old one); without, a rotation under way ends: only `secret` is accepted.
   * With `ifSecret`, only while the app's secret is still that one (false otherwise): a write made
   * from a read that another write overtook changes nothing.
   */
  setSecret(key: string, secret: string, rotation?: SecretRotation, ifSecret?: string): Promise<boolean> | boolean;
  /** Sets the webhook address ('' clears it); false when no app has the key. */
  setWebhook(key: string, url: string): Promise<boolean> | boolean;
  /** Removes the app with this key; false when there was none. */
  remove(key: string): MaybePromise<boolean>;
  close(): Promise<void> | void;
}
