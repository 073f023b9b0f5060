/**
 * An app's online users and occupied rooms, over every node (docs/dashboard.md, "Online users and
 * rooms"), refreshed every few seconds: two lists by name, each with a search by the start of the
 * name and paging through more than 200.
 */
import { useEffect, useState } from 'preact/hooks';
import { failed } from '../action.js';
import { api, seg } from '../api.js';
import { formatNumber } from '../charts.js';
import { html } from '../html.js';

const REFRESH_MS = 3000;

interface Column<Row> {
  label: string;
  cell: (row: Row) => string | number;
}

interface ListingProps<Row> {
  appKey: string;
  /** `users` or `rooms`: the address and the answer's field. */
  kind: 'users' | 'rooms';
  title: string;
  /** What one row is called, for the search's name ("user", "room"). */
  noun: string;
  empty: string;
  columns: Column<Row>[];
  name: (row: Row) => string;
}

/** One listing: its page of names (after the stack's last name) with a prefix, refreshed on a timer. */
function Listing<Row>({ appKey, kind, title, noun, empty, columns, name }: ListingProps<Row>) {
  const [prefix, setPrefix] = useState('');
  // The names the shown page starts after: empty for the first page.
  const [afters, setAfters] = useState<string[]>([]);
  const [rows, setRows] = useState<Row[] | undefined>(undefined);
  const [more, setMore] = useState(false);
  const [error, setError] = useState('');
  const after = afters.at(-1);

  useEffect(() => {
    let live = true;
    // Percent-encoded, never form-encoded: the service reads '+' as a plus.
    const query = [
      ...(after === undefined ? [] : [`after=${encodeURIComponent(after)}`]),
      ...(prefix === '' ? [] : [`prefix=${encodeURIComponent(prefix)}`]),
    ].join('&');
    const path = `/apps/${seg(appKey)}/${kind}${query === '' ? '' : `?${query}`}`;
    const load = async () => {
      try {
        const answer = await api.get<Record<string, unknown> & { more: boolean }>(path);
        if (!live) return;
        setRows(answer[kind] as Row[]);
        setMore(answer.more);
        setError('');
      } catch (failure) {
        if (!live) return;
        setError(failed(failure, `Reading the ${kind}`));
      }
    };
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [appKey, kind, prefix, after]);

  const id = `presence-${kind}`;
  const shown = rows?.length ?? 0;
  const count = rows === undefined ? '' : `${formatNumber(shown)}${more || afters.length > 0 ? ' shown' : ''}`;
  return html`
    <section class="card" aria-labelledby=${`${id}-title`}>
      <h2 id=${`${id}-title`}>${title} <span class="muted">${count}</span></h2>
      <label class="field">
        <span>Find a ${noun} by the start of its name</span>
        <input
          type="text"
          enterkeyhint="search"
          autocomplete="off"
          spellcheck=${false}
          value=${prefix}
          onInput=${(e: Event) => {
            setPrefix((e.target as HTMLInputElement).value);
            setAfters([]);
          }}
        />
      </label>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${rows === undefined && !error ? html`<p class="muted">Loading…</p>` : null}
      ${rows !== undefined && rows.length === 0 ? html`<p class="muted">${prefix ? `No ${noun} starts with “${prefix}”.` : empty}</p>` : null}
      ${
        rows !== undefined && rows.length > 0
          ? html`<div class="scroll">
              <table class="data stack" aria-labelledby=${`${id}-title`}>
                <thead>
                  <tr>${columns.map((c) => html`<th scope="col">${c.label}</th>`)}</tr>
                </thead>
                <tbody>
                  ${rows.map(
                    (row) => html`<tr key=${name(row)}>
                      ${columns.map(
                        (c, i) =>
                          html`<td data-label=${c.label}>${i === 0 ? html`<span class="mono">${c.cell(row)}</span>` : c.cell(row)}</td>`,
                      )}
                    </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
          : null
      }
      ${
        afters.length > 0 || more
          ? html`<div class="row">
              <button
                class="btn"
                type="button"
                disabled=${afters.length === 0}
                onClick=${() => setAfters(afters.slice(0, -1))}
              >
                Previous ${noun}s
              </button>
              <button
                class="btn"
                type="button"
                disabled=${!more || rows === undefined || rows.length === 0}
                onClick=${() => rows && rows.length > 0 && setAfters([...afters, name(rows[rows.length - 1] as Row)])}
              >
                Next ${noun}s
              </button>
            </div>`
          : null
      }
    </section>
  `;
}

interface UserRow {
  user: string;
  pages: number;
}

interface RoomRow {
  room: string;
  pages: number;
  members: number;
}

const userColumns: Column<UserRow>[] = [
  { label: 'User', cell: (r) => r.user },
  { label: 'Pages open', cell: (r) => r.pages },
];

const roomColumns: Column<RoomRow>[] = [
  { label: 'Room', cell: (r) => r.room },
  { label: 'Pages', cell: (r) => r.pages },
  { label: 'Presence members', cell: (r) => r.members },
];

/** The app's tab: who is online and where, on every node. */
export function Presence({ appKey }: { appKey: string }) {
  return html`
    <p class="muted">Every node of the service, refreshed every ${REFRESH_MS / 1000} seconds; names in code point order.</p>
    <div class="grid">
      <${Listing}
        appKey=${appKey}
        kind="users"
        title="Online users"
        noun="user"
        empty="Nobody is online: no page of this app is open as a user."
        columns=${userColumns}
        name=${(r: UserRow) => r.user}
      />
      <${Listing}
        appKey=${appKey}
        kind="rooms"
        title="Occupied rooms"
        noun="room"
        empty="No room has a page in it."
        columns=${roomColumns}
        name=${(r: RoomRow) => r.room}
      />
    </div>
  `;
}
