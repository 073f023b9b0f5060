import { hashDashboardPassword, newApp } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, type RawAnswer, send, startTestServer, type TestServer } from './helpers.js';

/**
 * A rotation from the dashboard over raw HTTP (docs/dashboard.md, "Apps"): `POST .../secret` with
 * an overlap keeps the old secret working, the app's view shows the rotation, `POST
 * .../secret/retire` ends it; the refusals of each.
 */

const PASSWORD = 'correct horse battery staple';
const APPS = '/dashboard/api/apps';

let server: TestServer;
let session: { cookie: string; csrf: string };

function dash(method: string, path: string, body?: unknown, csrf = true): Promise<RawAnswer> {
  const headers: [string, string][] = [['Cookie', `rt_dashboard=${session.cookie}`]];
  if (csrf) headers.push(['X-CSRF-Token', session.csrf]);
  return send(server, {
    method,
    path,
    unsigned: true,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

function expectError(answer: RawAnswer, status: number, code: string): string {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.json).toEqual({ ok: false, error: code, message: expect.any(String) });
  return answer.json.message as string;
}

const apiAs = (key: string, secret: string) =>
  send({ url: server.url, app: newApp({ key, secret }) }, { path: `${API}/online?ids=alice` });

let made = 0;
async function freshApp(): Promise<{ key: string; secret: string; path: string }> {
  const app = newApp({ key: `rotating.${process.pid}-${++made}`, name: 'Rotating' });
  await server.apps.upsert(app);
  return { key: app.key, secret: app.secret, path: `${APPS}/${encodeURIComponent(app.key)}` };
}

beforeAll(async () => {
  server = await startTestServer({ dashboard: { passwordHash: await hashDashboardPassword(PASSWORD) } });
  const answer = await send(server, {
    method: 'POST',
    path: '/dashboard/api/session',
    unsigned: true,
    body: JSON.stringify({ password: PASSWORD }),
  });
  const raw = answer.headers['set-cookie'];
  const line = (Array.isArray(raw) ? raw : [raw ?? '']).find((l) => l.startsWith('rt_dashboard=')) ?? '';
  session = { cookie: (line.split(';')[0] ?? '').slice('rt_dashboard='.length), csrf: answer.json.csrf as string };
});
afterAll(async () => {
  await server?.close();
});

describe('rotating with an overlap from the dashboard', () => {
  it('keeps both secrets working, shows the rotation on the app, and retires the old one on demand', async () => {
    const app = await freshApp();
    const before = Date.now();
    const rotated = await dash('POST', `${app.path}/secret`, { overlapSeconds: 3600 });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.json).toEqual({
      ok: true,
      secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      rotation: { retiresAt: expect.any(Number), signer: 'new' },
    });
    const secret = rotated.json.secret as string;
    const rotation = rotated.json.rotation as { retiresAt: number };
    expect(rotation.retiresAt - before).toBeGreaterThanOrEqual(3_600_000);
    expect(rotation.retiresAt - Date.now()).toBeLessThanOrEqual(3_600_000);

    // This node takes both at once.
    expect((await apiAs(app.key, app.secret)).status).toBe(200);
    expect((await apiAs(app.key, secret)).status).toBe(200);

    // The app's view shows the state, never a secret; so does the list.
    const shown = await dash('GET', app.path);
    expect(shown.json.app).toMatchObject({ key: app.key, rotation: { retiresAt: rotation.retiresAt, signer: 'new' } });
    const listed = await dash('GET', APPS);
    expect((listed.json.apps as { key: string }[]).find((one) => one.key === app.key)).toMatchObject({
      rotation: { retiresAt: rotation.retiresAt, signer: 'new' },
    });
    for (const text of [shown.text, listed.text]) {
      expect(text).not.toContain(app.secret);
      expect(text).not.toContain(secret);
    }
    // A change of name keeps the rotation.
    const renamed = await dash('PATCH', app.path, { name: 'Renamed' });
    expect(renamed.json.app).toMatchObject({ name: 'Renamed', rotation: { retiresAt: rotation.retiresAt } });
    expect((await apiAs(app.key, app.secret)).status).toBe(200);

    // Another rotation with an overlap waits for this one.
    expect(expectError(await dash('POST', `${app.path}/secret`, { overlapSeconds: 60 }), 409, 'rotating')).toContain(
      new Date(rotation.retiresAt).toISOString(),
    );

    const retired = await dash('POST', `${app.path}/secret/retire`);
    expect(retired.json).toEqual({ ok: true, retired: true });
    const old = await apiAs(app.key, app.secret);
    expect([old.status, old.json.error]).toEqual([401, 'bad_signature']);
    expect((await apiAs(app.key, secret)).status).toBe(200);
    expect((await dash('GET', app.path)).json.app).not.toHaveProperty('rotation');
    expect((await dash('POST', `${app.path}/secret/retire`)).json).toEqual({ ok: true, retired: false });
  });

  it('a rotation with no body, or with no overlap, still stops the old secret at once', async () => {
    const app = await freshApp();
    const rotated = await dash('POST', `${app.path}/secret`, { overlapSeconds: 0 });
    expect(Object.keys(rotated.json).sort()).toEqual(['ok', 'secret']);
    expect((await apiAs(app.key, app.secret)).status).toBe(401);
    // Even during a rotation: the old secret is dropped too.
    const overlapping = await dash('POST', `${app.path}/secret`, { overlapSeconds: 600, signer: 'old' });
    expect(overlapping.json.rotation).toMatchObject({ signer: 'old' });
    const now = await dash('POST', `${app.path}/secret`);
    expect(Object.keys(now.json).sort()).toEqual(['ok', 'secret']);
    for (const secret of [rotated.json.secret as string, overlapping.json.secret as string]) {
      expect((await apiAs(app.key, secret)).status).toBe(401);
    }
    expect((await apiAs(app.key, now.json.secret as string)).status).toBe(200);
  });

  it('refuses a bad overlap or signer (400), an unknown app (404), a change without CSRF (403); nothing changes', async () => {
    const app = await freshApp();
    const bad: [unknown, string][] = [
      [{ overlapSeconds: -1 }, 'overlapSeconds must be a whole number from 0 to 2592000'],
      [{ overlapSeconds: 1.5 }, 'overlapSeconds'],
      [{ overlapSeconds: '1h' }, 'overlapSeconds'],
      [{ overlapSeconds: 2_592_001 }, 'overlapSeconds'],
      [{ overlapSeconds: 60, signer: 'both' }, 'signer must be "new" or "old"'],
      [{ signer: 'old' }, 'needs an overlapSeconds'],
      [{ overlap: 60 }, 'unknown field'],
      [[60], 'the body must be JSON object'],
    ];
    for (const [body, words] of bad) {
      expect(expectError(await dash('POST', `${app.path}/secret`, body), 400, 'bad_request')).toContain(words);
    }
    expectError(await dash('POST', `${APPS}/ghost/secret`, { overlapSeconds: 60 }), 404, 'no_app');
    expectError(await dash('POST', `${APPS}/ghost/secret/retire`), 404, 'no_app');
    expectError(await dash('POST', `${app.path}/secret/retire`, undefined, false), 403, 'bad_csrf');
    expectError(await dash('GET', `${app.path}/secret/retire`), 405, 'bad_method');
    expect((await apiAs(app.key, app.secret)).status).toBe(200);
    expect((await dash('GET', app.path)).json.app).not.toHaveProperty('rotation');
  });
});
