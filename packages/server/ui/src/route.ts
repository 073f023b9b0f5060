/** The page's address is its state: `#/apps`, `#/apps/<key>/<tab>`, `#/stats`. */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  /** The top screen: `apps`, `stats`, … */
  screen: string;
  /** The app a screen of one app is about. */
  app?: string;
  /** The screen of that app: `settings`, `webhooks`, … */
  tab?: string;
}

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean);
  const [screen = 'apps', app, tab] = parts.map((part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  });
  return { screen, ...(app === undefined ? {} : { app }), ...(tab === undefined ? {} : { tab }) };
}

export function href(route: Route): string {
  const parts = [route.screen, route.app, route.tab].filter((part) => part !== undefined);
  return `#/${parts.map((part) => encodeURIComponent(part as string)).join('/')}`;
}

export function go(route: Route): void {
  location.hash = href(route);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return route;
}
