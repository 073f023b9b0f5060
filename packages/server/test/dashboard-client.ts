import type { App } from '@realtime/server';
import { expect } from 'vitest';
import { type RawAnswer, send } from './helpers.js';

/** A signed-in dashboard session: the cookie's value and the CSRF token. */
export interface DashboardSession {
  cookie: string;
  csrf: string;
}

/** Dashboard requests are not signed as an app's: `send` needs an app only to sign, which it skips. */
const UNSIGNED: App = {
  key: '',
  secret: '',
  name: '',
  webhook: '',
  features: [],
  rateLimit: { perSecond: 1, burst: 1 },
};

/** Signs in as the dashboard page does; fails the test unless the password is taken. */
export async function dashboardSignIn(server: { url: string }, password: string): Promise<DashboardSession> {
  const answer = await send(
    { url: server.url, app: UNSIGNED },
    { method: 'POST', path: '/dashboard/api/session', unsigned: true, body: JSON.stringify({ password }) },
  );
  expect(answer.status, answer.text).toBe(200);
  const raw = answer.headers['set-cookie'];
  const line = (Array.isArray(raw) ? raw : [raw ?? '']).find((l) => l.startsWith('rt_dashboard=')) ?? '';
  return { cookie: (line.split(';')[0] ?? '').slice('rt_dashboard='.length), csrf: answer.json.csrf as string };
}

/** A dashboard request as the page sends it: the session's cookie (unless none), its CSRF token on changes. */
export function dashboardAsk(
  server: { url: string },
  path: string,
  session?: DashboardSession,
  method = 'GET',
): Promise<RawAnswer> {
  const headers: [string, string][] = [];
  if (session !== undefined) {
    headers.push(['Cookie', `rt_dashboard=${session.cookie}`]);
    if (method !== 'GET') headers.push(['X-CSRF-Token', session.csrf]);
  }
  return send({ url: server.url, app: UNSIGNED }, { method, path, unsigned: true, headers });
}

/** A refusal in the API's error shape, on one line. */
export function expectRefusal(answer: RawAnswer, status: number, code: string): void {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.json).toEqual({ ok: false, error: code, message: expect.any(String) });
  expect(answer.json.message).not.toMatch(/[\r\n]/);
}
