/**
 * The signed-in page: a header with the top screens and sign-out, then the screen the address
 * names. An app's screens share a second row of tabs.
 */
import { useState } from 'preact/hooks';
import { ApiFailure, api } from './api.js';
import { html } from './html.js';
import { href, type Route, useRoute } from './route.js';
import { appScreens, topScreens } from './screens/registry.js';

export function Shell({ onSignedOut }: { onSignedOut: () => void }) {
  const route = useRoute();

  const [error, setError] = useState('');

  async function signOut() {
    try {
      await api.delete('/session');
      onSignedOut();
    } catch (failure) {
      // Only a session the service no longer knows is gone; any other failure leaves it signed in.
      if (failure instanceof ApiFailure && failure.code === 'signed_out') onSignedOut();
      else setError(failure instanceof ApiFailure ? `Signing out failed: ${failure.message}` : 'Signing out failed.');
    }
  }

  return html`
    <header class="top">
      <a class="brand" href="#/apps"><img src="/dashboard/favicon.svg" alt="" width="24" height="24" /> Realtime</a>
      <nav aria-label="Dashboard">
        ${topScreens.map(
          (screen) =>
            html`<a
              href=${href({ screen: screen.id })}
              data-label=${screen.label}
              aria-current=${route.screen === screen.id ? 'page' : undefined}
              >${screen.label}</a
            >`,
        )}
      </nav>
      <button class="btn quiet" type="button" onClick=${signOut}>Sign out</button>
    </header>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <main class="content">${body(route)}</main>
  `;
}

function body(route: Route) {
  if (route.screen === 'apps' && route.app !== undefined) return appPage(route.app, route.tab);
  const screen = topScreens.find((s) => s.id === route.screen) ?? topScreens[0];
  if (screen === undefined) return html`<p>Signed in.</p>`;
  const Screen = screen.component;
  return html`<${Screen} />`;
}

function appPage(appKey: string, tab: string | undefined) {
  const screen = appScreens.find((s) => s.id === tab) ?? appScreens[0];
  if (screen === undefined) return html`<p>No screens for apps.</p>`;
  const Screen = screen.component;
  return html`
    <div class="app-head">
      <p class="crumbs"><a href="#/apps">Apps</a> / <strong>${appKey}</strong></p>
      <nav class="tabs" aria-label="App">
        ${appScreens.map(
          (s) =>
            html`<a
              href=${href({ screen: 'apps', app: appKey, tab: s.id })}
              data-label=${s.label}
              aria-current=${s === screen ? 'page' : undefined}
              >${s.label}</a
            >`,
        )}
      </nav>
    </div>
    <${Screen} key=${`${appKey}/${screen.id}`} appKey=${appKey} />
  `;
}
