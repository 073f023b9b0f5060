/** The dashboard's page: signed in (the shell) or not (the password), as the session says. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, setCsrf, whenSignedOut } from './api.js';
import { html } from './html.js';
import { SignIn } from './screens/sign-in.js';
import { Shell } from './shell.js';

type State = 'loading' | 'signed-out' | 'signed-in';

function Dashboard() {
  const [state, setState] = useState<State>('loading');
  useEffect(() => {
    whenSignedOut(() => setState('signed-out'));
    api
      .get<{ csrf: string }>('/session')
      .then(({ csrf }) => {
        setCsrf(csrf);
        setState('signed-in');
      })
      .catch(() => setState('signed-out'));
  }, []);
  if (state === 'loading') return html`<p class="loading">Loading…</p>`;
  if (state === 'signed-out') {
    return html`<${SignIn}
      onSignedIn=${(csrf: string) => {
        setCsrf(csrf);
        setState('signed-in');
      }}
    />`;
  }
  return html`<${Shell} onSignedOut=${() => setState('signed-out')} />`;
}

const root = document.getElementById('root');
if (root) {
  root.textContent = '';
  render(html`<${Dashboard} />`, root);
}
