/**
 * Deleting an app, wherever it is deleted (the dashboard; a CLI command would call the same): its
 * room history, its webhook queue and counted tries, and its live consoles go with it
 * (docs/dashboard.md, "Apps").
 */
import type { AppStore, HistoryStore, MaybePromise, WebhookStore } from '../engines/types.js';

/** What an app leaves in the stores besides its record: dropped when it is deleted. */
export interface AppData {
  history: HistoryStore;
  webhooks: WebhookStore;
}

export interface AppRemovalDeps extends AppData {
  /** The store the app's record is removed through. */
  apps: AppStore;
  /** Ends the app's live consoles on every node; left out where none can be open. */
  consoles?: { endApp(app: string): MaybePromise<void> };
  now: () => number;
}

/**
 * Removes the app's data, then its record, then ends its consoles; false when no app had the key
 * (the caller, which knows the app exists, has it looked up uncached first). The data goes first: a
 * store failure then leaves the app in place, and deleting it again retries the whole. A write
 * racing the deletion (a node that still holds the app in its second of cache) may leave a little
 * behind; it ages out as any room event or done batch does.
 */
export async function removeApp(deps: AppRemovalDeps, key: string): Promise<boolean> {
  await deps.history.removeApp(key, deps.now());
  await deps.webhooks.removeApp(key, deps.now());
  const removed = await deps.apps.remove(key);
  // Ended even when another deletion took the record first: the consoles are of an app that is gone.
  await deps.consoles?.endApp(key);
  return removed;
}
