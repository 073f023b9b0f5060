import { CLOSE } from '@realtime/protocol';
import type { App, AppStore } from '../engines/types.js';

/** A page whose app is read again before what depends on it: a gone app closes it. */
export interface AppPage {
  app: App;
  close(code: number, reason: string): void;
}

/**
 * The page's app as the store has it now (cached for a second): a rotated secret or a changed plan
 * applies to open pages too. An app that is gone closes the page.
 */
export async function refreshApp(deps: { apps: Pick<AppStore, 'get'> }, page: AppPage): Promise<App | undefined> {
  const app = await deps.apps.get(page.app.key);
  if (!app) {
    page.close(CLOSE.unknownSite, 'the app is gone');
    return undefined;
  }
  page.app = app;
  return app;
}
