/**
 * The dashboard's live console as a test reads it: sign in for a session cookie, then open
 * `GET /dashboard/api/apps/:key/console` and read its Server-Sent Events from a real socket.
 */
import { type IncomingMessage, request } from 'node:http';
import { expect } from 'vitest';
import type { App } from '../src/index.js';
import { send } from './helpers.js';

export const CONSOLE_PASSWORD = 'console operator password';

export interface Entry {
  at: number;
  kind: string;
  room?: string;
  user?: string;
  event?: string;
  data?: string;
  status?: number;
  error?: string;
  count?: number;
}

/** Signs in to a server's dashboard; answers the `rt_dashboard` cookie value. */
export async function signIn(server: { url: string }): Promise<string> {
  const answer = await send(
    { url: server.url, app: { key: '', secret: '' } as App },
    {
      method: 'POST',
      path: '/dashboard/api/session',
      unsigned: true,
      body: JSON.stringify({ password: CONSOLE_PASSWORD }),
    },
  );
  expect(answer.status, answer.text).toBe(200);
  const raw = answer.headers['set-cookie'];
  const line = (Array.isArray(raw) ? raw : [raw ?? '']).find((l) => l.startsWith('rt_dashboard='));
  return (line ?? '').split(';')[0]?.slice('rt_dashboard='.length) ?? '';
}

export interface ConsoleStream {
  status: number;
  headers: IncomingMessage['headers'];
  /** The body of an answer that is not a stream (a refusal). */
  text: string;
  entries: Entry[];
  /** SSE comments (`: keepalive`), without the colon. */
  comments: string[];
  /** Events with a name (`event: end`), with their data read as JSON. */
  named: { event: string; data: unknown }[];
  /** Whether the service ended the stream. */
  readonly ended: boolean;
  res: IncomingMessage;
  /** Resolves with the first entry not yet taken by `next` that matches; fails after `ms`. */
  next(match: (entry: Entry) => boolean, what: string, ms?: number): Promise<Entry>;
  /** Waits until `test` holds of what came; fails after `ms`. */
  until(test: () => boolean, what: string, ms?: number): Promise<void>;
  close(): void;
}

/** Opens a console (query: `?room=...`); a refusal answers its status and body, with no entries. */
export function openConsole(
  server: { url: string },
  key: string,
  cookie: string | undefined,
  query = '',
): Promise<ConsoleStream> {
  const url = new URL(server.url);
  const headers: Record<string, string> = { Accept: 'text/event-stream' };
  if (cookie !== undefined) headers.Cookie = `rt_dashboard=${cookie}`;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `/dashboard/api/apps/${encodeURIComponent(key)}/console${query}`,
        headers,
      },
      (res) => {
        const entries: Entry[] = [];
        const comments: string[] = [];
        const named: { event: string; data: unknown }[] = [];
        const wakers = new Set<() => void>();
        let buffer = '';
        let taken = 0;
        let ended = false;
        const stream: ConsoleStream = {
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: '',
          entries,
          comments,
          named,
          get ended() {
            return ended;
          },
          res,
          until(test, what, ms = 8000) {
            return new Promise((done, fail) => {
              const check = () => {
                if (test()) {
                  stop();
                  done();
                } else if (ended) {
                  stop();
                  fail(new Error(`the stream ended before ${what}; got ${JSON.stringify(entries.slice(-5))}`));
                }
              };
              const timer = setTimeout(() => {
                stop();
                fail(new Error(`timed out waiting for ${what}; got ${JSON.stringify(entries.slice(-5))}`));
              }, ms);
              const stop = () => {
                clearTimeout(timer);
                wakers.delete(check);
              };
              wakers.add(check);
              check();
            });
          },
          async next(match, what, ms) {
            let found: Entry | undefined;
            await stream.until(
              () => {
                for (let i = taken; i < entries.length; i++) {
                  if (match(entries[i] as Entry)) {
                    found = entries[i];
                    taken = i + 1;
                    return true;
                  }
                }
                return false;
              },
              what,
              ms,
            );
            return found as Entry;
          },
          close: () => {
            req.destroy();
          },
        };
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (stream.status !== 200) {
            stream.text += chunk;
            return;
          }
          buffer += chunk;
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const lines = block.split('\n');
            const event = lines.find((line) => line.startsWith('event: '))?.slice(7);
            for (const line of lines) {
              if (!line.startsWith('data: ')) {
                if (line.startsWith(':')) comments.push(line.slice(1).trim());
              } else if (event === undefined) entries.push(JSON.parse(line.slice(6)) as Entry);
              else named.push({ event, data: JSON.parse(line.slice(6)) });
            }
          }
          for (const wake of [...wakers]) wake();
        });
        const over = () => {
          ended = true;
          for (const wake of [...wakers]) wake();
        };
        res.on('end', over);
        res.on('close', over);
        res.on('error', over);
        if (stream.status !== 200) res.on('end', () => resolve(stream));
        else resolve(stream);
      },
    );
    req.on('error', (error) => {
      if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
    });
    req.end();
  });
}
