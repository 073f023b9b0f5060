import { connect, type Socket } from 'node:net';
import { SOCKET_PATH } from '@realtime/protocol';
import WebSocket from 'ws';

/** A raw TCP connection to 127.0.0.1 that records what it receives and when it closed. */
export interface RawSocket {
  socket: Socket;
  /** Everything received so far, as latin1 text. */
  text(): string;
  /** Whether the server closed it (or it errored). */
  isClosed(): boolean;
  /** Resolves with all text received once the socket is closed; fails after `ms`. */
  closed(ms?: number): Promise<string>;
  /** Resolves with the text received once it contains `needle`; fails after `ms` or on close without it. */
  until(needle: string, ms?: number): Promise<string>;
}

export async function openRaw(port: number, first?: string): Promise<RawSocket> {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  let isClosed = false;
  const wakers = new Set<() => void>();
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
    for (const wake of wakers) wake();
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    isClosed = true;
    for (const wake of wakers) wake();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  if (first !== undefined) socket.write(first);
  const wait = (done: () => boolean, what: string, ms: number) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        if (done()) {
          finish();
          resolve(received);
        } else if (isClosed) {
          finish();
          reject(new Error(`closed before ${what}; got ${JSON.stringify(received.slice(0, 300))}`));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`no ${what} in ${ms} ms; got ${JSON.stringify(received.slice(0, 300))}`));
      }, ms);
      const finish = () => {
        clearTimeout(timer);
        wakers.delete(check);
      };
      wakers.add(check);
      check();
    });
  return {
    socket,
    text: () => received,
    isClosed: () => isClosed,
    closed: (ms = 5000) => wait(() => isClosed, 'close', ms),
    until: (needle, ms = 5000) => wait(() => received.includes(needle), JSON.stringify(needle), ms),
  };
}

/** The status line, headers and JSON body of one raw HTTP answer. */
export function parseAnswer(text: string): { status: number; head: string; json: Record<string, unknown> } {
  const end = text.indexOf('\r\n\r\n');
  const head = text.slice(0, end);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  return { status, head, json: JSON.parse(text.slice(end + 4)) as Record<string, unknown> };
}

export type PageAttempt =
  | { ok: true; ws: WebSocket; closed: Promise<number> }
  | { ok: false; status: number; json: Record<string, unknown> };

/**
 * Opens a page with extra upgrade headers and says hello: resolves with the page after welcome, or
 * with the status and JSON body of a refused upgrade.
 */
export function tryPage(url: string, site: string, headers: Record<string, string> = {}): Promise<PageAttempt> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${SOCKET_PATH}?site=${encodeURIComponent(site)}`, {
    headers,
  });
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => resolve({ ok: false, status: res.statusCode ?? 0, json: JSON.parse(body) }));
    });
    ws.once('error', reject);
    ws.once('open', () => ws.send(JSON.stringify({ t: 'hello', v: 1 })));
    ws.once('message', (data) => {
      const frame = JSON.parse(data.toString()) as { t?: string };
      if (frame.t === 'welcome') resolve({ ok: true, ws, closed });
      else reject(new Error(`expected welcome, got ${data.toString()}`));
    });
  });
}

/** Tries to open a page until it gets in (a closed page's slot is given back once its socket closes). */
export async function pageOnceFree(url: string, site: string, headers: Record<string, string> = {}) {
  for (let i = 0; i < 50; i++) {
    const attempt = await tryPage(url, site, headers);
    if (attempt.ok) return attempt;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the page never got in');
}
