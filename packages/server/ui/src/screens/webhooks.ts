/**
 * An app's webhooks (docs/dashboard.md, "Webhooks"): its address, a test send with what the
 * receiver answered, the tries of the last hour by outcome, and the delivery log (newest first)
 * with each batch's events and a resend. The chart and the log refresh every few seconds.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { failed, useAction } from '../action.js';
import { ApiFailure, api, seg } from '../api.js';
import { BarChart, type Series } from '../charts.js';
import { html } from '../html.js';

const REFRESH_MS = 3000;
const CHART_MINUTES = 60;

interface Delivery {
  id: string;
  state: 'pending' | 'taken' | 'retrying' | 'given_up';
  status: number;
  error?: string;
  events: number;
  attempts: number;
  at: number | null;
  next_at: number | null;
  resendable: boolean;
}

interface TryAnswer {
  delivered: boolean;
  status: number;
  error?: string;
}

type Outcome = '2xx' | '3xx' | '4xx' | '5xx' | 'timeout' | 'unreachable' | 'not_public';

interface TryMinute {
  at: number;
  outcomes: Record<Outcome, number>;
}

/** The chart's series, in the order the service counts them; each its own colour. */
const OUTCOMES: (Series & { id: Outcome })[] = [
  { id: '2xx', name: '2xx', tone: 'ok' },
  { id: '3xx', name: '3xx', tone: 'info' },
  { id: '4xx', name: '4xx', tone: 'warn' },
  { id: '5xx', name: '5xx', tone: 'bad' },
  { id: 'timeout', name: 'timeout', tone: 'slow' },
  { id: 'unreachable', name: 'unreachable', tone: 'gone' },
  { id: 'not_public', name: 'not public', tone: 'muted' },
];

const STATE_TONE: Record<Delivery['state'], string> = { taken: 'ok', pending: '', retrying: 'warn', given_up: 'bad' };
const STATE_NAME: Record<Delivery['state'], string> = {
  taken: 'taken',
  pending: 'pending',
  retrying: 'retrying',
  given_up: 'given up',
};

const ERROR_NAME: Record<string, string> = {
  timeout: 'no answer in time',
  unreachable: 'unreachable',
  not_public: 'not a public address',
};

/** A time as the operator reads it: the time of day, with the date when not today. */
function when(at: number | null): string {
  if (at === null) return '—';
  const date = new Date(at);
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString() : date.toLocaleString();
}

/** What a try's answer says, in one sentence. */
function told(answer: TryAnswer): string {
  if (answer.delivered) return `Delivered: your server answered ${answer.status}.`;
  if (answer.status === 0) {
    return `Not delivered: nothing answered (${ERROR_NAME[answer.error ?? ''] ?? answer.error ?? 'no answer'}).`;
  }
  return `Not delivered: your server answered ${answer.status}.`;
}

export function Webhooks({ appKey }: { appKey: string }) {
  const base = `/apps/${seg(appKey)}/webhooks`;
  // Bumped after a change here (address, test, resend): the log and chart load at once.
  const [changed, setChanged] = useState(0);
  const refresh = () => setChanged((n) => n + 1);
  return html`
    <${Address} appKey=${appKey} base=${base} onChanged=${refresh} />
    <${TriesChart} base=${base} changed=${changed} />
    <${DeliveryLog} base=${base} changed=${changed} onChanged=${refresh} />
  `;
}

function Address({ appKey, base, onChanged }: { appKey: string; base: string; onChanged: () => void }) {
  const [address, setAddress] = useState('');
  // Typed before the app was read: what the operator typed wins over the loaded address.
  const typed = useRef(false);
  const [saved, setSaved] = useState<string | undefined>(undefined);
  const [planned, setPlanned] = useState(true);
  const [notice, setNotice] = useState('');
  const { busy, error, setError, run } = useAction();
  const [testing, setTesting] = useState(false);
  const [answer, setAnswer] = useState<TryAnswer | undefined>(undefined);
  const [testError, setTestError] = useState('');

  useEffect(() => {
    api
      .get<{ app: { webhook: string; features: string[] } }>(`/apps/${seg(appKey)}`)
      .then(({ app }) => {
        if (!typed.current) setAddress(app.webhook);
        setSaved(app.webhook);
        setPlanned(app.features.includes('webhooks'));
      })
      .catch((failure: unknown) => setError(failed(failure, 'Reading the app')));
  }, [appKey]);

  function save(event: Event) {
    event.preventDefault();
    setNotice('');
    return run('Saving the address', async () => {
      const { app } = await api.patch<{ app: { webhook: string } }>(`/apps/${seg(appKey)}`, {
        webhook: address.trim(),
      });
      setAddress(app.webhook);
      setSaved(app.webhook);
      setNotice(app.webhook === '' ? 'Saved: no webhooks are sent.' : 'Saved.');
      onChanged();
    });
  }

  async function test() {
    setTesting(true);
    setAnswer(undefined);
    setTestError('');
    try {
      setAnswer(await api.post<TryAnswer>(`${base}/test`));
    } catch (failure) {
      setTestError(failed(failure, 'Sending a test'));
    } finally {
      setTesting(false);
      onChanged();
    }
  }

  return html`
    <section class="card" aria-labelledby="webhook-address-title">
      <h2 id="webhook-address-title">Address</h2>
      <p class="muted small">
        Where the service sends this app's events: an <code>https://</code> address that reaches the public
        internet. Empty: no webhooks.
      </p>
      ${!planned && html`<p class="error">This app's plan does not include webhooks: nothing is sent until it does.</p>`}
      <form class="row" onSubmit=${save}>
        <label class="field grow">
          <span>Webhook address</span>
          <input
            type="text"
            inputmode="url"
            name="webhook"
            autocomplete="off"
            spellcheck=${false}
            placeholder="https://hooks.example.com/realtime"
            value=${address}
            aria-invalid=${error ? 'true' : undefined}
            aria-describedby=${error ? 'webhook-address-error' : undefined}
            onInput=${(e: Event) => {
              typed.current = true;
              setAddress((e.target as HTMLInputElement).value);
            }}
          />
        </label>
        <button class="btn primary" type="submit" disabled=${busy || address.trim() === saved}>
          ${busy ? 'Saving…' : 'Save address'}
        </button>
      </form>
      ${error && html`<p class="error" id="webhook-address-error" role="alert">${error}</p>`}
      ${notice && html`<p class="notice" role="status">${notice}</p>`}
      <div class="row test-row">
        <button class="btn" type="button" onClick=${test} disabled=${testing || !saved}>
          ${testing ? 'Sending…' : 'Send test'}
        </button>
        <p class="test-answer" role="status" aria-label="Test answer">
          ${
            answer &&
            html`<span class=${`tag ${answer.delivered ? 'ok' : 'bad'}`}>${answer.delivered ? 'delivered' : 'not delivered'}</span>
            ${' '}${told(answer)}`
          }
        </p>
      </div>
      ${testError && html`<p class="error" role="alert">${testError}</p>`}
    </section>
  `;
}

/** Loads `path` now, whenever `changed` moves, and every few seconds; keeps the last answer. */
function usePolled<T>(path: string, changed: number): { data: T | undefined; error: ApiFailure | undefined } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiFailure | undefined>(undefined);
  // `changed` is the signal to load again at once.
  useEffect(() => {
    let live = true;
    const load = async () => {
      try {
        const answer = await api.get<T>(path);
        if (!live) return;
        setData(answer);
        setError(undefined);
      } catch (failure) {
        if (!live) return;
        setError(failure instanceof ApiFailure ? failure : new ApiFailure('failed', 'Reading failed.', 0));
      }
    };
    void load();
    const timer = setInterval(load, REFRESH_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [path, changed]);
  return { data, error };
}

function TriesChart({ base, changed }: { base: string; changed: number }) {
  const { data, error } = usePolled<{ minutes: TryMinute[] }>(`${base}/tries?minutes=${CHART_MINUTES}`, changed);
  const minutes = data?.minutes ?? [];
  const bars = minutes.map((m) => ({
    label: new Date(m.at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }),
    values: OUTCOMES.map((o) => m.outcomes[o.id] ?? 0),
  }));
  return html`
    <section class="card" aria-labelledby="webhook-tries-title">
      <h2 id="webhook-tries-title">Tries by outcome</h2>
      <p class="muted small">Every try of the last hour, per minute, on every node: answers by status class, or why none came.</p>
      ${error && html`<p class="error" role="alert">${error.message}</p>`}
      <${BarChart} label=${`Tries in the last ${CHART_MINUTES} minutes`} series=${OUTCOMES} bars=${bars} />
      ${bars.length > 1 && html`<p class="muted small span">One bar a minute, ${bars[0]?.label} to ${bars.at(-1)?.label}.</p>`}
    </section>
  `;
}

function DeliveryLog({ base, changed, onChanged }: { base: string; changed: number; onChanged: () => void }) {
  const { data, error } = usePolled<{ deliveries: Delivery[] }>(base, changed);
  const [open, setOpen] = useState<string | undefined>(undefined);
  const [resending, setResending] = useState<string | undefined>(undefined);
  const [said, setSaid] = useState('');
  const [resendError, setResendError] = useState('');

  async function resend(id: string) {
    setResending(id);
    setSaid('');
    setResendError('');
    try {
      const answer = await api.post<TryAnswer>(`${base}/${seg(id)}/resend`);
      setSaid(`Resent ${id}. ${told(answer)}`);
    } catch (failure) {
      setResendError(failed(failure, 'Resending'));
    } finally {
      setResending(undefined);
      onChanged();
    }
  }

  const deliveries = data?.deliveries;
  // No address, or a plan without webhooks: said once, not as an alarm.
  const quiet = error !== undefined && (error.code === 'no_webhook' || error.code === 'not_included');
  return html`
    <section class="card" aria-labelledby="webhook-log-title">
      <h2 id="webhook-log-title">Delivery log</h2>
      <p class="muted small">The last 100 batches, newest first. Open a batch to read its events.</p>
      ${error && (quiet ? html`<p class="muted">${error.message}.</p>` : html`<p class="error" role="alert">${error.message}</p>`)}
      ${said && html`<p class="notice" role="status">${said}</p>`}
      ${resendError && html`<p class="error" role="alert">${resendError}</p>`}
      ${deliveries?.length === 0 && !error && html`<p class="muted">No batch yet.</p>`}
      ${
        deliveries !== undefined &&
        deliveries.length > 0 &&
        !quiet &&
        html`<div class="scroll">
        <table class="data stack deliveries">
          <caption class="sr-only">Webhook batches, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Batch</th>
              <th scope="col">State</th>
              <th scope="col">Status</th>
              <th scope="col">Error</th>
              <th scope="col">Events</th>
              <th scope="col">Attempts</th>
              <th scope="col">Last try</th>
              <th scope="col">Next try</th>
              <th scope="col"><span class="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            ${deliveries.map(
              (d) => html`
                <tr key=${d.id} data-batch=${d.id}>
                  <td data-label="Batch">
                    <button
                      class="btn quiet mono batch"
                      type="button"
                      aria-expanded=${open === d.id ? 'true' : 'false'}
                      aria-controls=${`events-${d.id}`}
                      aria-label=${`Events of batch ${d.id}`}
                      onClick=${() => setOpen(open === d.id ? undefined : d.id)}
                    >
                      ${d.id}
                    </button>
                  </td>
                  <td data-label="State"><span class=${`tag ${STATE_TONE[d.state]}`}>${STATE_NAME[d.state]}</span></td>
                  <td data-label="Status">${d.status === 0 ? '—' : d.status}</td>
                  <td data-label="Error">${d.error ? (ERROR_NAME[d.error] ?? d.error) : '—'}</td>
                  <td data-label="Events">${d.events}</td>
                  <td data-label="Attempts">${d.attempts}</td>
                  <td data-label="Last try">${when(d.at)}</td>
                  <td data-label="Next try">${when(d.next_at)}</td>
                  <td data-label="">
                    ${
                      d.resendable &&
                      html`<button
                      class="btn"
                      type="button"
                      aria-label=${`Resend batch ${d.id}`}
                      disabled=${resending !== undefined}
                      onClick=${() => resend(d.id)}
                    >
                      ${resending === d.id ? 'Resending…' : 'Resend'}
                    </button>`
                    }
                  </td>
                </tr>
                ${
                  open === d.id &&
                  html`<tr class="batch-events">
                  <td colspan="9" id=${`events-${d.id}`}><${BatchEvents} base=${base} id=${d.id} /></td>
                </tr>`
                }
              `,
            )}
          </tbody>
        </table>
      </div>`
      }
    </section>
  `;
}

function BatchEvents({ base, id }: { base: string; id: string }) {
  const [events, setEvents] = useState<unknown[] | undefined>(undefined);
  const [error, setError] = useState('');
  useEffect(() => {
    api
      .get<{ events: unknown[] }>(`${base}/${seg(id)}`)
      .then((answer) => setEvents(answer.events))
      .catch((failure: unknown) => setError(failed(failure, 'Reading the batch')));
  }, [base, id]);
  if (error) return html`<p class="error" role="alert">${error}</p>`;
  if (events === undefined) return html`<p class="muted">Loading…</p>`;
  return html`
    <p class="small muted">${events.length === 1 ? '1 event' : `${events.length} events`} of ${id}, as sent:</p>
    <pre class="events" tabindex="0" role="region" aria-label=${`Events of ${id}`}>${JSON.stringify(events, null, 2)}</pre>
  `;
}
