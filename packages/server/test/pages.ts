import { SOCKET_PATH } from '@realtime/protocol';
import WebSocket from 'ws';

export interface RawPage {
  ws: WebSocket;
  frames: Record<string, unknown>[];
  closed: Promise<{ code: number; reason: string }>;
  send(frame: unknown): void;
  sendText(text: string): void;
  /** Resolves with the first frame (already received or coming) that matches; fails after 5 s. */
  next(match: (frame: Record<string, unknown>) => boolean, what?: string): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** A page speaking the raw protocol over a real WebSocket, recording every frame it gets. */
export async function openRawPage(url: string, site: string): Promise<RawPage> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${SOCKET_PATH}?site=${encodeURIComponent(site)}`);
  const frames: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  ws.on('message', (data) => {
    frames.push(JSON.parse(data.toString()) as Record<string, unknown>);
    for (const wake of waiters) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => {
      resolve({ code, reason: reason.toString() });
      for (const wake of waiters) wake();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let seen = 0;
  return {
    ws,
    frames,
    closed,
    send: (frame) => ws.send(JSON.stringify(frame)),
    sendText: (text) => ws.send(text),
    next(match, what = 'a frame') {
      return new Promise((resolve, reject) => {
        const look = () => {
          for (let i = seen; i < frames.length; i++) {
            const frame = frames[i] as Record<string, unknown>;
            if (match(frame)) {
              seen = i + 1;
              waiters.delete(look);
              clearTimeout(timer);
              resolve(frame);
              return;
            }
          }
          if (ws.readyState === WebSocket.CLOSED) {
            waiters.delete(look);
            clearTimeout(timer);
            reject(new Error(`socket closed while waiting for ${what}; got ${JSON.stringify(frames.slice(-5))}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(look);
          reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(frames.slice(-5))}`));
        }, 5000);
        waiters.add(look);
        look();
      });
    },
    async close() {
      if (ws.readyState === WebSocket.CLOSED) return;
      ws.close(1000);
      await closed;
    },
  };
}

/** Opens a page and says hello; resolves after welcome. */
export async function helloPage(url: string, site: string, identity?: string): Promise<RawPage> {
  const page = await openRawPage(url, site);
  page.send(identity === undefined ? { t: 'hello', v: 1 } : { t: 'hello', v: 1, identity });
  await page.next((f) => f.t === 'welcome', 'welcome');
  return page;
}

export const isEvent = (event: string, room?: string) => (f: Record<string, unknown>) =>
  f.t === 'event' && f.event === event && (room === undefined || f.room === room);
