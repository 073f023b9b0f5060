/**
 * The apps (docs/dashboard.md, "Apps"): the list and a form to create one; an app's page with its
 * key, its secret behind "Reveal secret", rotation (at once or with an overlap, and a rotation's
 * state with "Retire old secret"), name, plan and rate limit, a sealing-key
 * generator that runs in this browser only, and deletion. Refusals show the service's message.
 */
import { FEATURES, type Feature, SEAL_KEY_BYTES, toBase64Url } from '@realtime/protocol';
import { useEffect, useRef, useState } from 'preact/hooks';
import { failed, useAction } from '../action.js';
import { api, seg } from '../api.js';
import { html } from '../html.js';
import { go, href } from '../route.js';

interface AppView {
  key: string;
  name: string;
  features: Feature[];
  rateLimit: { perSecond: number; burst: number };
  webhook: string;
  /** While the app holds two secrets: when the old one retires, and which one signs webhooks. */
  rotation?: Rotation;
}

interface Rotation {
  retiresAt: number;
  signer: 'new' | 'old';
}

/** How long the old secret keeps working after a rotation, as offered (seconds; 0: not at all). */
const OVERLAPS: ReadonlyArray<[number, string]> = [
  [0, 'Not at all: it stops at once (a leaked secret)'],
  [3600, 'One hour'],
  [86_400, '24 hours'],
  [7 * 86_400, 'Seven days'],
];

const when = (ms: number) => new Date(ms).toLocaleString();

const FEATURE_HELP: Record<Feature, string> = {
  history: 'History: rooms keep events for pages that join later',
  ask: 'Ask: the server asks a user’s pages and waits for replies',
  presence: 'Presence: who is in a room, and who is online',
  webhooks: 'Webhooks: the service tells your server what happened',
  calls: 'Calls between two people',
  groups: 'Group calls',
  streams: 'Live streams',
};

function plan(features: readonly Feature[]): string {
  return features.length === FEATURES.length ? 'everything' : features.length === 0 ? 'nothing' : features.join(', ');
}

function rate({ perSecond, burst }: AppView['rateLimit']): string {
  return `${perSecond.toLocaleString('en')}/s, burst ${burst.toLocaleString('en')}`;
}

/** A "Copy" button for one value; says so when the browser will not let the page write the clipboard. */
function Copy({ value, what }: { value: string; what: string }) {
  const [said, setSaid] = useState('');
  async function copy() {
    try {
      await navigator.clipboard.writeText(value);
      setSaid('Copied');
    } catch {
      setSaid('Select it and copy');
    }
    setTimeout(() => setSaid(''), 2000);
  }
  return html`<button class="btn" type="button" aria-label=${`Copy ${what}`} onClick=${copy}>${said || 'Copy'}</button>
    <span class="sr-only" aria-live="polite">${said}</span>`;
}

// ---- The list ---------------------------------------------------------------------------------

export function AppsList() {
  const [apps, setApps] = useState<AppView[] | undefined>(undefined);
  const [error, setError] = useState('');

  useEffect(() => {
    let live = true;
    api
      .get<{ apps: AppView[] }>('/apps')
      .then((answer) => live && setApps(answer.apps))
      .catch((failure: unknown) => live && setError(failed(failure, 'Reading the apps')));
    return () => {
      live = false;
    };
  }, []);

  return html`
    <section class="card" aria-labelledby="apps-title">
      <h1 id="apps-title">Apps</h1>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${apps === undefined && !error && html`<p class="muted">Loading…</p>`}
      ${apps?.length === 0 && html`<p class="muted">No apps yet: create the first one below.</p>`}
      ${apps !== undefined && apps.length > 0 && html`<${AppsTable} apps=${apps} />`}
    </section>
    <${CreateApp} />
  `;
}

function AppsTable({ apps }: { apps: AppView[] }) {
  return html`
    <div class="scroll">
      <table class="data stack apps">
        <caption class="sr-only">Every app of the service, by key</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Plan</th>
            <th scope="col">Rate limit</th>
            <th scope="col">Webhook</th>
          </tr>
        </thead>
        <tbody>
          ${apps.map(
            (app) => html`
              <tr key=${app.key}>
                <td data-label="Name"><a href=${href({ screen: 'apps', app: app.key })}>${app.name}</a></td>
                <td data-label="Key"><code>${app.key}</code></td>
                <td data-label="Plan">${plan(app.features)}</td>
                <td data-label="Rate limit">${rate(app.rateLimit)}</td>
                <td data-label="Webhook">${app.webhook ? html`<code>${app.webhook}</code>` : html`<span class="muted">none</span>`}</td>
              </tr>
            `,
          )}
        </tbody>
      </table>
    </div>
  `;
}

function CreateApp() {
  const [name, setName] = useState('');
  const [key, setKey] = useState('');
  const { busy, error, run } = useAction();

  function submit(event: Event) {
    event.preventDefault();
    return run('Creating the app', async () => {
      const body = key.trim() === '' ? { name } : { name, key: key.trim() };
      const { app } = await api.post<{ app: AppView }>('/apps', body);
      go({ screen: 'apps', app: app.key });
    });
  }

  return html`
    <section class="card" aria-labelledby="create-title">
      <h2 id="create-title">Create an app</h2>
      <form onSubmit=${submit} noValidate>
        <div class="row aligned">
          <label class="field grow">
            <span>Name</span>
            <input type="text" name="name" maxLength="100" value=${name} onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <label class="field grow">
            <span>Key (leave empty to have one made)</span>
            <input
              type="text"
              name="key"
              maxLength="64"
              autocomplete="off"
              spellcheck=${false}
              placeholder="app_…"
              value=${key}
              onInput=${(e: Event) => setKey((e.target as HTMLInputElement).value)}
            />
          </label>
        </div>
        <p class="muted small">A new app gets a new secret, every feature and a limit of 1,000 requests a second; change them on its page.</p>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <button class="btn primary" type="submit" disabled=${busy}>${busy ? 'Creating…' : 'Create app'}</button>
      </form>
    </section>
  `;
}

// ---- One app ----------------------------------------------------------------------------------

export function AppSettings({ appKey }: { appKey: string }) {
  const [app, setApp] = useState<AppView | undefined>(undefined);
  const [error, setError] = useState('');

  useEffect(() => {
    let live = true;
    api
      .get<{ app: AppView }>(`/apps/${seg(appKey)}`)
      .then((answer) => live && setApp(answer.app))
      .catch((failure: unknown) => live && setError(failed(failure, 'Reading the app')));
    return () => {
      live = false;
    };
  }, [appKey]);

  if (error) {
    return html`<section class="card"><p class="error" role="alert">${error}</p><a href="#/apps">All apps</a></section>`;
  }
  if (app === undefined) return html`<p class="muted">Loading…</p>`;
  return html`
    <h1 class="app-name">${app.name}</h1>
    <${Credentials} appKey=${app.key} rotation=${app.rotation} onRotation=${(rotation: Rotation | undefined) => setApp({ ...app, rotation })} />
    <${Settings} app=${app} onSaved=${setApp} />
    <${SealingKey} />
    <${DeleteApp} appKey=${app.key} />
  `;
}

/** The app's key, its secret on demand, rotation after a confirmation, and a rotation's state. */
function Credentials({
  appKey,
  rotation,
  onRotation,
}: {
  appKey: string;
  rotation: Rotation | undefined;
  onRotation: (rotation: Rotation | undefined) => void;
}) {
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const [retiring, setRetiring] = useState(false);
  const [overlap, setOverlap] = useState(0);
  const [notice, setNotice] = useState('');
  const { busy, error, setError, run } = useAction();
  const path = `/apps/${seg(appKey)}/secret`;

  async function reveal() {
    setError('');
    setNotice('');
    try {
      setSecret((await api.get<{ secret: string }>(path)).secret);
    } catch (failure) {
      setError(failed(failure, 'Revealing the secret'));
    }
  }

  function rotate() {
    return run('Rotating the secret', async () => {
      const answer = await api.post<{ secret: string; rotation?: Rotation }>(
        path,
        overlap === 0 ? {} : { overlapSeconds: overlap },
      );
      setSecret(answer.secret);
      onRotation(answer.rotation);
      setNotice(
        answer.rotation
          ? `A new secret: the old one still works until ${when(answer.rotation.retiresAt)}. Give your servers this one, then retire the old one.`
          : 'A new secret: the old one stops working within a second. Give your servers this one.',
      );
      setConfirming(false);
    });
  }

  function retire() {
    return run('Retiring the old secret', async () => {
      await api.post(`${path}/retire`);
      onRotation(undefined);
      setNotice('The old secret is retired: only the current one works, within a second.');
      setRetiring(false);
    });
  }

  return html`
    <section class="card" aria-labelledby="credentials-title">
      <h2 id="credentials-title">Key and secret</h2>
      <div class="row aligned">
        <label class="field grow">
          <span>App key</span>
          <input type="text" readOnly class="mono" value=${appKey} />
        </label>
        <${Copy} value=${appKey} what="app key" />
      </div>
      ${
        secret === undefined
          ? html`<p class="muted">The secret signs your server’s requests; it stays hidden until you ask.</p>
              <div class="row aligned"><button class="btn" type="button" onClick=${reveal}>Reveal secret</button></div>`
          : html`<div class="row aligned">
              <label class="field grow">
                <span>Secret</span>
                <input type="text" readOnly class="mono" value=${secret} spellcheck=${false} />
              </label>
              <${Copy} value=${secret} what="secret" />
              <button class="btn" type="button" onClick=${() => setSecret(undefined)}>Hide secret</button>
            </div>`
      }
      ${notice && html`<p class="notice" role="status">${notice}</p>`}
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${
        rotation &&
        html`<p class="muted" data-rotation="on">
            ${`Rotation under way: the old secret works until ${when(rotation.retiresAt)}; webhooks are signed with the ${rotation.signer} secret, and carry the other’s signature too.`}
          </p>
          ${
            retiring
              ? html`<${Confirm}
                  label="Confirm the retirement"
                  text="Retire the old secret now? Servers and tokens still using it stop working within a second."
                  action="Retire now"
                  busy=${busy}
                  danger=${true}
                  onConfirm=${retire}
                  onCancel=${() => setRetiring(false)}
                />`
              : html`<div class="row aligned"><button class="btn" type="button" onClick=${() => setRetiring(true)}>Retire old secret</button></div>`
          }`
      }
      ${
        confirming
          ? html`<${Confirm}
              label="Confirm the rotation"
              text=${
                overlap === 0
                  ? 'Rotate the secret? The old one stops working within a second, for your servers and for room tokens not yet used.'
                  : 'Rotate the secret? The old one keeps working for the time chosen, so your servers can move to the new one.'
              }
              action="Rotate now"
              busy=${busy}
              onConfirm=${rotate}
              onCancel=${() => setConfirming(false)}
            />`
          : html`<div class="row aligned">
              <label class="field">
                <span>Old secret keeps working</span>
                <select value=${String(overlap)} onChange=${(e: Event) => setOverlap(Number((e.currentTarget as HTMLSelectElement).value))}>
                  ${OVERLAPS.map(([seconds, label]) => html`<option value=${String(seconds)}>${label}</option>`)}
                </select>
              </label>
              <button class="btn" type="button" onClick=${() => setConfirming(true)}>Rotate secret</button>
            </div>`
      }
    </section>
  `;
}

/** A question asked in place: the action's button takes the focus, Cancel puts things back. */
function Confirm(props: {
  label: string;
  text: string;
  action: string;
  busy: boolean;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => button.current?.focus(), []);
  return html`
    <div class="confirm" role="group" aria-label=${props.label}>
      <p>${props.text}</p>
      <div class="row aligned">
        <button ref=${button} class=${props.danger ? 'btn danger' : 'btn primary'} type="button" disabled=${props.busy} onClick=${props.onConfirm}>
          ${props.action}
        </button>
        <button class="btn" type="button" onClick=${props.onCancel}>Cancel</button>
      </div>
    </div>
  `;
}

/** Name, plan and rate limit in one form; only what changed is sent. */
function Settings({ app, onSaved }: { app: AppView; onSaved: (app: AppView) => void }) {
  const [name, setName] = useState(app.name);
  const [features, setFeatures] = useState<Feature[]>(app.features);
  const [perSecond, setPerSecond] = useState(String(app.rateLimit.perSecond));
  const [burst, setBurst] = useState(String(app.rateLimit.burst));
  const [notice, setNotice] = useState('');
  const { busy, error, setError, run } = useAction();

  function toggle(feature: Feature, on: boolean) {
    edited();
    setFeatures((now) => FEATURES.filter((f) => (f === feature ? on : now.includes(f))));
  }

  async function submit(event: Event) {
    event.preventDefault();
    setNotice('');
    setError('');
    const changes: Record<string, unknown> = {};
    if (name !== app.name) changes.name = name;
    if (features.join() !== app.features.join()) changes.features = features;
    const limit: Record<string, number> = {};
    // Sent as typed (a number when it reads as one): the service says what it takes.
    const asNumber = (text: string) => (text.trim() === '' ? Number.NaN : Number(text));
    if (asNumber(perSecond) !== app.rateLimit.perSecond) limit.perSecond = asNumber(perSecond);
    if (asNumber(burst) !== app.rateLimit.burst) limit.burst = asNumber(burst);
    if (Object.keys(limit).length > 0) changes.rateLimit = limit;
    if (Object.keys(changes).length === 0) {
      setNotice('Nothing to save: no field changed.');
      return;
    }
    await run('Saving', async () => {
      const saved = (await api.patch<{ app: AppView }>(`/apps/${seg(app.key)}`, changes)).app;
      onSaved(saved);
      setNotice('Saved: it applies to new requests and to open pages at their next join or send.');
    });
  }

  // What was said of the last save stops holding once a field changes.
  const edited = () => {
    setNotice('');
    setError('');
  };
  const text = (set: (v: string) => void) => (e: Event) => {
    edited();
    set((e.target as HTMLInputElement).value);
  };
  return html`
    <section class="card" aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <form onSubmit=${submit} noValidate>
        <label class="field">
          <span>Name</span>
          <input type="text" name="name" maxLength="100" value=${name} onInput=${text(setName)} />
        </label>
        <fieldset class="checks plan">
          <legend>Plan: what the app may do</legend>
          ${FEATURES.map(
            (feature) => html`
              <label key=${feature}>
                <input
                  type="checkbox"
                  name="features"
                  value=${feature}
                  checked=${features.includes(feature)}
                  onChange=${(e: Event) => toggle(feature, (e.target as HTMLInputElement).checked)}
                />
                ${FEATURE_HELP[feature]}
              </label>
            `,
          )}
        </fieldset>
        <fieldset class="plain">
          <legend>Rate limit of the API</legend>
          <div class="row aligned">
            <label class="field">
              <span>Requests per second</span>
              <input type="number" inputMode="numeric" min="1" max="1000000" step="1" value=${perSecond} onInput=${text(setPerSecond)} />
            </label>
            <label class="field">
              <span>Burst</span>
              <input type="number" inputMode="numeric" min="1" max="1000000" step="1" value=${burst} onInput=${text(setBurst)} />
            </label>
          </div>
        </fieldset>
        ${notice && html`<p class="notice" role="status">${notice}</p>`}
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <button class="btn primary" type="submit" disabled=${busy}>${busy ? 'Saving…' : 'Save changes'}</button>
      </form>
    </section>
  `;
}

/**
 * A sealing key made here with Web Crypto: 32 random bytes in base64url (43 characters), the form
 * `realtime keygen` prints and the SDKs take (`localKey`). It is never sent anywhere.
 */
function SealingKey() {
  const [key, setKey] = useState('');
  const generate = () => setKey(toBase64Url(crypto.getRandomValues(new Uint8Array(SEAL_KEY_BYTES))));
  return html`
    <section class="card" aria-labelledby="sealing-title">
      <h2 id="sealing-title">Sealing key</h2>
      <p class="muted">
        Sealed rooms carry data the service cannot read. Their key is made here, in this browser, and never sent to the
        service: keep it on your servers as <code>localKey</code> of <code>new Realtime({ … })</code>.
      </p>
      <div class="row aligned">
        <button class="btn" type="button" onClick=${generate}>${key ? 'Generate another' : 'Generate a sealing key'}</button>
      </div>
      ${
        key &&
        html`<div class="row aligned">
          <label class="field grow">
            <span>Sealing key</span>
            <input type="text" readOnly class="mono" value=${key} spellcheck=${false} />
          </label>
          <${Copy} value=${key} what="sealing key" />
        </div>`
      }
    </section>
  `;
}

function DeleteApp({ appKey }: { appKey: string }) {
  const [confirming, setConfirming] = useState(false);
  const { busy, error, run } = useAction();

  function remove() {
    return run('Deleting the app', async () => {
      await api.delete(`/apps/${seg(appKey)}`);
      go({ screen: 'apps' });
    });
  }

  return html`
    <section class="card" aria-labelledby="delete-title">
      <h2 id="delete-title">Delete the app</h2>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${
        confirming
          ? html`<${Confirm}
              label="Confirm the deletion"
              text=${`Delete ${appKey} for good? Its key and secret stop working, its rooms' history, webhook log and live consoles go with it, and its open pages are closed at their next join or send.`}
              action="Delete for good"
              danger=${true}
              busy=${busy}
              onConfirm=${remove}
              onCancel=${() => setConfirming(false)}
            />`
          : html`<div class="row aligned"><button class="btn danger" type="button" onClick=${() => setConfirming(true)}>Delete app</button></div>`
      }
    </section>
  `;
}
