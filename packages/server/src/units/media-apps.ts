/**
 * Whether more than one app of the service may ask a node for forwarding units: only an app whose
 * plan has live streams or group calls can. With one such app there is nobody to keep a share of a
 * short port range for, so it may use the whole range (UnitBudget's reserve). Read from the app
 * store, which every node shares, at most once per `ttlMs`; an app added elsewhere counts within it.
 */
import type { Logger } from 'pino';

/** The features that start forwarding units. */
const MEDIA_FEATURES: readonly string[] = ['streams', 'groups'];

/** How long one read of the app store answers. */
export const MEDIA_APPS_TTL_MS = 30_000;

export interface MediaAppsDeps {
  /** The service's apps (the app store's `list`). */
  list(): Promise<readonly { features: readonly string[] }[]> | readonly { features: readonly string[] }[];
  now(): number;
  log: Logger;
  ttlMs?: number;
}

export class MediaApps {
  readonly #deps: MediaAppsDeps;
  /** The last answer and when it was read; none yet: another app is assumed (the reserve holds). */
  #known: { several: boolean; at: number } | undefined;
  #reading: Promise<boolean> | undefined;

  constructor(deps: MediaAppsDeps) {
    this.#deps = deps;
  }

  /**
   * Whether another app than one may use units here. A store that does not answer keeps the last
   * answer (or true before the first): a failed read never gives one app the whole range.
   */
  several(): Promise<boolean> {
    const known = this.#known;
    const ttl = this.#deps.ttlMs ?? MEDIA_APPS_TTL_MS;
    if (known && this.#deps.now() - known.at < ttl) return Promise.resolve(known.several);
    // Offers arriving together share one read.
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<boolean> {
    const at = this.#deps.now();
    try {
      const apps = await this.#deps.list();
      const media = apps.filter((app) => app.features.some((f) => MEDIA_FEATURES.includes(f))).length;
      this.#known = { several: media > 1, at };
      return media > 1;
    } catch (error) {
      this.#deps.log.warn({ err: error }, 'the apps could not be read: a share of a short media port range stays kept');
      // Tried again after the same wait: a store that is away is not asked on every offer.
      const several = this.#known?.several ?? true;
      this.#known = { several, at };
      return several;
    }
  }
}
