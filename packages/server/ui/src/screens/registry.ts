/**
 * Every screen of the dashboard, in the order of its navigation. A screen module adds itself here
 * with one line; the shell draws the navigation and routes from these lists.
 */
import type { ComponentType } from 'preact';
import { AppSettings, AppsList } from './apps.js';
import { Console } from './console.js';
import { Presence } from './presence.js';
import { Stats } from './stats.js';
import { Webhooks } from './webhooks.js';

/** A screen of its own in the top navigation (`#/<id>`). */
export interface TopScreen {
  id: string;
  label: string;
  component: ComponentType<Record<string, never>>;
}

/** A screen about one app (`#/apps/<key>/<id>`), a tab of the app's page. */
export interface AppScreen {
  id: string;
  label: string;
  component: ComponentType<{ appKey: string }>;
}

export const topScreens: TopScreen[] = [];

export const appScreens: AppScreen[] = [];

appScreens.push({ id: 'webhooks', label: 'Webhooks', component: Webhooks });
appScreens.push({ id: 'online', label: 'Online', component: Presence });
appScreens.push({ id: 'console', label: 'Console', component: Console });
topScreens.push({ id: 'stats', label: 'Stats', component: Stats });
// Apps first, whatever the import order: the screen of #/, and the tab an app's page opens on.
topScreens.unshift({ id: 'apps', label: 'Apps', component: AppsList });
appScreens.unshift({ id: 'settings', label: 'Settings', component: AppSettings });
