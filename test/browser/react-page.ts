/**
 * The React page of react.test.ts, bundled by esbuild: a connection badge, and a room (`lobby` until "Move",
 * mounted by "Join", unmounted by "Leave") that lists its members and its chat and news lines, and sends chat. Written with
 * createElement so the tests' type-check covers it without a JSX setting.
 */
import { connect, type RealtimeClient, Room } from '@realtime/browser';
import { RealtimeProvider, useConnectionState, useEvent, useMembers, useRealtime, useRoom } from '@realtime/react';
import { createElement as h, StrictMode, useState } from 'react';
import { createRoot } from 'react-dom/client';

/** What the test gives the page: the service, and tokens its server minted for the page's user. */
export interface PageConfig {
  url: string;
  site: string;
  identity: string;
  /** Room tokens by room name: `lobby` and `side`. */
  tokens: Record<string, string>;
}

/**
 * What the test reads: how often the page listened to `chat` (useEvent must not listen again for a
 * new listener), and the types of the frames the page wrote (StrictMode's second run of effects
 * must send no leave and no second join).
 */
export interface ReactWindow {
  mount(config: PageConfig): void;
  chatListens: number;
  sent: string[];
}

const win = window as unknown as ReactWindow;
win.chatListens = 0;
win.sent = [];
const write = WebSocket.prototype.send;
WebSocket.prototype.send = function (this: WebSocket, data: Parameters<WebSocket['send']>[0]) {
  if (typeof data === 'string') {
    const { t, room } = JSON.parse(data) as { t: string; room?: string };
    win.sent.push(room ? `${t} ${room}` : t);
  }
  return write.call(this, data);
};
const on = Room.prototype.on as (this: Room, name: string, listener: (...args: never[]) => void) => () => void;
Room.prototype.on = function (this: Room, name: string, listener: (...args: never[]) => void) {
  if (name === 'chat') win.chatListens++;
  return on.call(this, name, listener);
} as Room['on'];

function Badge() {
  return h('p', { id: 'state' }, useConnectionState());
}

/** The last user event `notice` (sent to this page's user, not to a room). */
function Notice() {
  const [notice, setNotice] = useState('');
  useEvent(useRealtime(), 'notice', (data: string) => setNotice(data));
  return h('p', { id: 'notice' }, notice);
}

function Lobby({ name, tokens }: { name: string; tokens: Record<string, string> }) {
  // A new token function each render: the room must not be joined again for it.
  const { room, status } = useRoom(name, { token: async () => tokens[name] ?? '' });
  const members = useMembers(room);
  const [label, setLabel] = useState('v1');
  const [lines, setLines] = useState<string[]>([]);
  const [text, setText] = useState('');
  // Each listener reads this render's label: after "Relabel" the next line must say v2.
  useEvent(room, 'chat', (data: { text: string }, { from }) =>
    setLines((l) => [...l, `${label} ${from}: ${data.text}`]),
  );
  useEvent(room, 'news', (data: { text: string }) => setLines((l) => [...l, `${label} news: ${data.text}`]));
  return h(
    'section',
    null,
    h('p', { id: 'room' }, status),
    h(
      'ul',
      { id: 'members' },
      members.map((member) => h('li', { key: member.user }, member.user)),
    ),
    h(
      'ul',
      { id: 'lines' },
      lines.map((line, i) => h('li', { key: i }, line)),
    ),
    h('input', { id: 'text', value: text, onChange: (e) => setText(e.target.value) }),
    h(
      'button',
      {
        id: 'send',
        type: 'button',
        disabled: status !== 'joined',
        onClick: () => {
          void room?.send('chat', { text });
          setText('');
        },
      },
      'Send',
    ),
    h('button', { id: 'relabel', type: 'button', onClick: () => setLabel('v2') }, 'Relabel'),
  );
}

function App({ client, tokens }: { client: RealtimeClient; tokens: Record<string, string> }) {
  // Joined by a click once connected: StrictMode's second run of effects then meets a live socket.
  const [inLobby, setInLobby] = useState(false);
  const [name, setName] = useState('lobby');
  return h(
    RealtimeProvider,
    { client },
    h(Badge),
    h(Notice),
    h('button', { id: 'toggle', type: 'button', onClick: () => setInLobby((v) => !v) }, inLobby ? 'Leave' : 'Join'),
    h('button', { id: 'move', type: 'button', onClick: () => setName('side') }, 'Move to side'),
    inLobby ? h(Lobby, { name, tokens }) : null,
  );
}

win.mount = ({ url, site, identity, tokens }) => {
  const client = connect({ url, site, identity: async () => identity });
  const root = document.getElementById('root');
  if (!root) throw new Error('no #root');
  // StrictMode: effects run, are undone and run again, as in development.
  createRoot(root).render(h(StrictMode, null, h(App, { client, tokens })));
};
