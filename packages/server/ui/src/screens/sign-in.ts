/** The operator's password, and why it was refused (wrong, locked for a while, service away). */
import { useState } from 'preact/hooks';
import { ApiFailure, api } from '../api.js';
import { html } from '../html.js';

export function SignIn({ onSignedIn }: { onSignedIn: (csrf: string) => void }) {
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  async function submit(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError('');
    try {
      onSignedIn(await signIn(password));
    } catch (failure) {
      setError(describe(failure));
      setPassword('');
    } finally {
      setBusy(false);
    }
  }

  return html`
    <main class="sign-in">
      <form class="card" onSubmit=${submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title"><img src="/dashboard/favicon.svg" alt="" width="28" height="28" /> Realtime dashboard</h1>
        <label class="field">
          <span>Operator password</span>
          <input
            type="password"
            name="password"
            autocomplete="current-password"
            required
            value=${password}
            onInput=${(e: Event) => setPassword((e.target as HTMLInputElement).value)}
          />
        </label>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <button class="btn primary" type="submit" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </main>
  `;
}

/**
 * Tries a few more times, after the wait the service names, while the service is only busy (a flood
 * of other addresses' sign-ins, or another sign-in of this address being checked): the operator
 * waits through it, never retyping. `locked` (no tries left) is never tried again: the wait is minutes.
 */
const TURN_TRIES = 10;

async function signIn(password: string): Promise<string> {
  for (let tried = 1; ; tried++) {
    try {
      return (await api.post<{ csrf: string }>('/session', { password })).csrf;
    } catch (failure) {
      if (tried >= TURN_TRIES || !(failure instanceof ApiFailure) || !waitingTurn(failure)) throw failure;
      const seconds = Math.min(5, Math.max(1, failure.retryAfter ?? 1));
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    }
  }
}

/** Refused only for now: the node checks many sign-ins, or another from this address. */
function waitingTurn(failure: unknown): boolean {
  return failure instanceof ApiFailure && failure.code === 'busy';
}

function describe(failure: unknown): string {
  if (!(failure instanceof ApiFailure)) return 'Signing in failed.';
  if (failure.code === 'wrong_password') return 'Wrong password.';
  if (waitingTurn(failure)) return 'The service is checking many sign-ins: try again in a few seconds.';
  if (failure.code === 'locked') {
    const wait = failure.retryAfter ?? 0;
    const when = wait >= 60 ? `${Math.ceil(wait / 60)} min` : `${Math.max(1, wait)} s`;
    return `Locked after too many wrong passwords: try again in ${when}.`;
  }
  return failure.message;
}
