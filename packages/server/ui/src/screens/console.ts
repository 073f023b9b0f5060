/**
 * An app's live console (docs/dashboard.md, "Live console"): its traffic on every node as it
 * happens, newest first, through an EventSource on the console address (same origin: the session
 * cookie goes along). Filters by room, user and event open the stream again with them; Pause holds
 * new entries back (counted) until Resume; Clear empties the list. The page keeps 500 rows.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ConsoleEntry } from '../../../src/dashboard/console-entry.js';
import { api, seg } from '../api.js';
import { html } from '../html.js';

/** Rows the page keeps, and entries it holds back while paused (the count goes on past it). */
const MAX_ROWS = 500;
/** Entries are drawn a few times a second, not one render each: a busy app sends hundreds. */
const DRAW_MS = 150;
/** Wait before opening again a stream the service refused (and said no Retry-After). */
const RETRY_MS = 5000;

type Entry = ConsoleEntry;

interface Row extends Entry {
  id: number;
}

interface Filter {
  room: string;
  user: string;
  event: string;
}

type Status =
  | { state: 'connecting' }
  | { state: 'live' }
  | { state: 'reconnecting' }
  | { state: 'refused'; message: string };

const NO_FILTER: Filter = { room: '', user: '', event: '' };

function queryOf(filter: Filter): string {
  // Percent-encoded, never form-encoded: the service reads '+' as a plus.
  const parts = (['room', 'user', 'event'] as const)
    .filter((name) => filter[name] !== '')
    .map((name) => `${name}=${encodeURIComponent(filter[name])}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

const time = (at: number) => {
  const d = new Date(at);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
};

/** Why the service refused the stream (EventSource does not say): the same address, read once. */
async function refusal(url: string): Promise<{ code: string; message: string; retryS?: number }> {
  const abort = new AbortController();
  try {
    const res = await fetch(url, { credentials: 'same-origin', signal: abort.signal });
    if (res.ok) return { code: 'open', message: '' };
    const answer = (await res.json()) as { error?: string; message?: string };
    const retry = Number(res.headers.get('Retry-After') ?? Number.NaN);
    return {
      code: answer.error ?? 'failed',
      message: answer.message ?? `The service answered ${res.status}.`,
      ...(Number.isFinite(retry) ? { retryS: retry } : {}),
    };
  } catch {
    return { code: 'network', message: 'The service did not answer: check that it is running.' };
  } finally {
    // A stream that opened after all is not kept: the EventSource opens its own.
    abort.abort();
  }
}

/** A name or data in a fixed-width font; nothing at all when absent (a phone hides the empty cell). */
const mono = (text: string | undefined) => (text === undefined ? null : html`<span class="mono">${text}</span>`);

function tone(entry: Entry): string {
  if (entry.kind === 'dropped' || entry.error !== undefined) return 'bad';
  if (entry.kind === 'webhook')
    return entry.status !== undefined && entry.status >= 200 && entry.status < 300 ? 'ok' : 'warn';
  return '';
}

/** What the Status column says: a webhook try's status, an error code, or how many were dropped. */
function outcome(entry: Entry): string {
  if (entry.kind === 'dropped') return `${entry.count ?? 0} not shown`;
  const parts: string[] = [];
  if (entry.status !== undefined) parts.push(String(entry.status));
  if (entry.error !== undefined) parts.push(entry.error);
  return parts.join(' ');
}

function FilterForm({ filter, onApply }: { filter: Filter; onApply: (filter: Filter) => void }) {
  const [draft, setDraft] = useState<Filter>(filter);
  const field = (name: keyof Filter, label: string, hint: string) => html`
    <label class="field grow">
      <span>${label}</span>
      <input
        type="text"
        name=${name}
        autocomplete="off"
        spellcheck=${false}
        placeholder=${hint}
        value=${draft[name]}
        onInput=${(e: Event) => setDraft({ ...draft, [name]: (e.target as HTMLInputElement).value })}
      />
    </label>
  `;
  return html`
    <form
      class="row aligned"
      aria-label="Filters"
      onSubmit=${(e: Event) => {
        e.preventDefault();
        onApply(draft);
      }}
    >
      ${field('room', 'Room', 'any room')} ${field('user', 'User', 'any user')} ${field('event', 'Event', 'any event')}
      <button class="btn primary" type="submit">Apply filters</button>
      <button
        class="btn"
        type="button"
        disabled=${filter.room === '' && filter.user === '' && filter.event === ''}
        onClick=${() => {
          setDraft(NO_FILTER);
          onApply(NO_FILTER);
        }}
      >
        Clear filters
      </button>
    </form>
  `;
}

/** The app's tab: its traffic as it happens. */
export function Console({ appKey }: { appKey: string }) {
  const [filter, setFilter] = useState<Filter>(NO_FILTER);
  const [status, setStatus] = useState<Status>({ state: 'connecting' });
  const [rows, setRows] = useState<Row[]>([]);
  const [paused, setPaused] = useState(false);
  const [held, setHeld] = useState(0);
  // Opening the stream again after a refusal: the effect below runs anew when this changes.
  const [attempt, setAttempt] = useState(0);
  const incoming = useRef<Row[]>([]);
  /** Entries that came since the last draw: more than `incoming` keeps in a flood. */
  const arrived = useRef(0);
  /** While paused: the newest entries held back (at most MAX_ROWS), and how many came in all. */
  const heldBack = useRef<{ rows: Row[]; count: number }>({ rows: [], count: 0 });
  const pausedRef = useRef(false);
  const nextId = useRef(0);

  useEffect(() => {
    const url = `/dashboard/api/apps/${seg(appKey)}/console${queryOf(filter)}`;
    let live = true;
    let drawTimer: ReturnType<typeof setTimeout> | undefined;
    let retryTimer: ReturnType<typeof setTimeout> | undefined;
    const draw = () => {
      drawTimer = undefined;
      const fresh = incoming.current;
      const count = arrived.current;
      incoming.current = [];
      arrived.current = 0;
      if (!live || fresh.length === 0) return;
      fresh.reverse(); // newest first
      if (pausedRef.current) {
        const back = heldBack.current;
        back.count += count;
        back.rows = [...fresh, ...back.rows].slice(0, MAX_ROWS);
        setHeld(back.count);
      } else {
        setRows((shown) => [...fresh, ...shown].slice(0, MAX_ROWS));
      }
    };
    setStatus({ state: 'connecting' });
    const source = new EventSource(url);
    source.onopen = () => live && setStatus({ state: 'live' });
    source.onmessage = (message: MessageEvent<string>) => {
      let entry: Entry;
      try {
        entry = JSON.parse(message.data) as Entry;
      } catch {
        return;
      }
      incoming.current.push({ ...entry, id: nextId.current++ });
      arrived.current++;
      // Bounded between draws too: a flood keeps only what the list could show.
      if (incoming.current.length > MAX_ROWS) incoming.current.splice(0, incoming.current.length - MAX_ROWS);
      drawTimer ??= setTimeout(draw, DRAW_MS);
    };
    // The service's last word on a stream it ends for good (the app was deleted): stop, and say so.
    source.addEventListener('end', (message: MessageEvent<string>) => {
      if (!live) return;
      source.close();
      let reason = '';
      try {
        reason = String((JSON.parse(message.data) as { reason?: unknown }).reason ?? '');
      } catch {
        // A reason that does not read: the stream still ended.
      }
      setStatus({
        state: 'refused',
        message:
          reason === 'app_deleted' ? 'This app was deleted: its console ended.' : 'The service ended the console.',
      });
    });
    source.onerror = () => {
      if (!live) return;
      if (source.readyState !== EventSource.CLOSED) {
        // The stream broke: EventSource opens it again by itself.
        setStatus({ state: 'reconnecting' });
        return;
      }
      // Refused (signed out, no app, too many consoles): say why, and try again later.
      void refusal(url).then(async ({ code, message, retryS }) => {
        if (!live) return;
        if (code === 'signed_out') {
          // Through the API, so the page goes back to sign-in.
          await api.get(`/apps/${seg(appKey)}`).catch(() => {});
          return;
        }
        if (code === 'no_app' || code === 'bad_request') {
          // Asking again would get the same answer.
          setStatus({ state: 'refused', message });
          return;
        }
        const wait = retryS === undefined ? RETRY_MS : retryS * 1000;
        setStatus({
          state: 'refused',
          message:
            code === 'open'
              ? 'The stream closed; opening it again.'
              : `${message} Trying again in ${Math.round(wait / 1000)} s.`,
        });
        retryTimer = setTimeout(() => live && setAttempt((n) => n + 1), code === 'open' ? 0 : wait);
      });
    };
    return () => {
      live = false;
      source.close();
      clearTimeout(drawTimer);
      clearTimeout(retryTimer);
      incoming.current = [];
      arrived.current = 0;
    };
  }, [appKey, filter, attempt]);

  function pause() {
    pausedRef.current = true;
    heldBack.current = { rows: [], count: 0 };
    setHeld(0);
    setPaused(true);
  }

  function resume() {
    pausedRef.current = false;
    const back = heldBack.current;
    heldBack.current = { rows: [], count: 0 };
    setRows((shown) => [...back.rows, ...shown].slice(0, MAX_ROWS));
    setHeld(0);
    setPaused(false);
  }

  function clear() {
    incoming.current = [];
    arrived.current = 0;
    heldBack.current = { rows: [], count: 0 };
    setHeld(0);
    setRows([]);
  }

  function apply(next: Filter) {
    if (next.room === filter.room && next.user === filter.user && next.event === filter.event) return;
    // Entries of the old filter would mislead under the new one.
    clear();
    setFilter({ ...next });
  }

  const statusText =
    status.state === 'live'
      ? 'Live'
      : status.state === 'connecting'
        ? 'Connecting…'
        : status.state === 'reconnecting'
          ? 'Connection lost; reconnecting…'
          : status.message;
  const heldText = paused ? `Paused: ${held} new${held > MAX_ROWS ? ` (the newest ${MAX_ROWS} kept)` : ''}` : '';

  return html`
    <section class="card" aria-labelledby="console-title">
      <h2 id="console-title">Live console</h2>
      <p class="muted small">
        Emits, page joins, sends and leaves, presence, asks and replies, and webhook tries of this app on every node, as
        they happen. Filters match exactly; the newest ${MAX_ROWS} are kept.
      </p>
      <${FilterForm} key=${`${filter.room}\u0000${filter.user}\u0000${filter.event}`} filter=${filter} onApply=${apply} />
      <div class="row console-bar">
        <button class="btn" type="button" onClick=${paused ? resume : pause}>
          ${paused ? 'Resume' : 'Pause'}
        </button>
        <button class="btn" type="button" onClick=${clear} disabled=${rows.length === 0 && held === 0}>Clear</button>
        <p class="console-status" role="status">
          <span class=${`tag ${status.state === 'live' ? 'ok' : status.state === 'refused' ? 'bad' : 'warn'}`}>${statusText}</span>
          ${heldText && html` <strong>${heldText}</strong>`}
        </p>
      </div>
    </section>
    <section class="card" aria-labelledby="console-entries-title">
      <h2 id="console-entries-title">Traffic <span class="muted">${rows.length} shown</span></h2>
      ${
        rows.length === 0
          ? html`<p class="muted">${paused ? 'Paused: new entries are counted above.' : 'Nothing yet: traffic shows here as it happens.'}</p>`
          : html`<div class="scroll">
              <table class="data stack console" aria-labelledby="console-entries-title">
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Room</th>
                    <th scope="col">User</th>
                    <th scope="col">Event</th>
                    <th scope="col">Data</th>
                    <th scope="col">Status</th>
                  </tr>
                </thead>
                <tbody>
                  ${rows.map(
                    (row) => html`<tr key=${row.id}>
                      <td data-label="Time"><span class="mono">${time(row.at)}</span></td>
                      <td data-label="Kind"><span class=${`tag ${tone(row)}`}>${row.kind}</span></td>
                      <td data-label="Room">${mono(row.room)}</td>
                      <td data-label="User">${mono(row.user)}</td>
                      <td data-label="Event">${mono(row.event)}</td>
                      <td data-label="Data" class="console-data">${mono(row.data)}</td>
                      <td data-label="Status">${outcome(row)}</td>
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
      }
    </section>
  `;
}
