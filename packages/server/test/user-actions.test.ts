import { CLOSE, reconnectHint } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../src/index.js';
import { signToken } from './gateway-tools.js';
import { API, fetchPlain, post, send, startTestServer, type TestServer } from './helpers.js';
import { helloPage, openRawPage, type RawPage } from './pages.js';

/**
 * The routes that act on users, over real HTTP and real pages: POST /users/{id}/disconnect and
 * POST /tokens/revoke. Runs on every engine (ENGINE_SUITES).
 */

const SECONDS = () => Math.floor(Date.now() / 1000);

describe('POST /users/{id}/disconnect and POST /tokens/revoke', () => {
  let server: TestServer;
  const limited = newApp({ name: 'limited', rateLimit: { perSecond: 0.001, burst: 1 } });
  const opened: RawPage[] = [];

  beforeAll(async () => {
    server = await startTestServer({ apps: [limited] });
  });
  afterAll(async () => {
    for (const page of opened) await page.close();
    await server.close();
  });

  const identity = (sub: string, iat: number | undefined, exp = SECONDS() + 3600) =>
    signToken(iat === undefined ? { sub, exp } : { sub, iat, exp }, { secret: server.app.secret });
  const roomToken = (room: string, iat: number, sub?: string) =>
    signToken(sub === undefined ? { room, iat, exp: iat + 3600 } : { room, sub, iat, exp: iat + 3600 }, {
      secret: server.app.secret,
    });
  const page = async (token?: string): Promise<RawPage> => {
    const opening = await helloPage(server.url, server.app.key, token);
    opened.push(opening);
    return opening;
  };
  /** A page that says hello and is closed instead of welcomed. */
  const refusedHello = async (token: string): Promise<{ code: number; reason: string }> => {
    const raw = await openRawPage(server.url, server.app.key);
    raw.send({ t: 'hello', v: 1, identity: token });
    return raw.closed;
  };
  const join = async (p: RawPage, room: string, token: string, ref: number) => {
    p.send({ t: 'join', ref, room, token });
    return p.next((f) => f.ref === ref && (f.t === 'joined' || f.t === 'error'), `the answer to join ${ref}`);
  };

  describe('disconnect', () => {
    it("closes every page of the user with 4004 and answers { ok: true }; other users' pages stay", async () => {
      const now = SECONDS();
      const [a1, a2, bob] = await Promise.all([
        page(await identity('dana', now)),
        page(await identity('dana', now)),
        page(await identity('eli', now)),
      ]);
      const answer = await post(server, `${API}/users/dana/disconnect`, {});
      expect([answer.status, answer.json]).toEqual([200, { ok: true }]);
      for (const closed of await Promise.all([a1.closed, a2.closed])) {
        expect(closed).toEqual({ code: CLOSE.disconnected, reason: "disconnected by the app's server" });
      }
      // Eli's page still gets his events: a later event shows the close did not reach it.
      expect((await post(server, `${API}/emit`, { users: ['eli'], event: 'still' })).status).toBe(200);
      await bob.next((f) => f.t === 'event' && f.event === 'still', 'the event to the page that stayed');
    });

    it('takes a user with no page, a percent-encoded id and no body at all', async () => {
      expect((await post(server, `${API}/users/nobody/disconnect`, {})).json).toEqual({ ok: true });
      const bare = await send(server, { method: 'POST', path: `${API}/users/a%20b%2Fc%C3%A9/disconnect` });
      expect([bare.status, bare.json]).toEqual([200, { ok: true }]);
    });

    it('answers bad_request with a message for a bad id, a body with fields, a query', async () => {
      for (const [path, body] of [
        ['/users/%24root/disconnect', {}],
        [`/users/${'u'.repeat(201)}/disconnect`, {}],
        ['/users/alice/disconnect', { code: 4000 }],
        ['/users/alice/disconnect', [1]],
        ['/users/alice/disconnect?now=1', {}],
      ] as const) {
        const answer = await post(server, `${API}${path}`, body);
        expect([answer.status, answer.json.error], path).toEqual([400, 'bad_request']);
        expect(answer.json.message, path).toBeTruthy();
      }
      const get = await send(server, { method: 'GET', path: `${API}/users/alice/disconnect` });
      expect([get.status, get.json.error]).toEqual([405, 'bad_method']);
    });
  });

  describe('revoke', () => {
    it("closes the user's pages holding older identities with 4005 and a reconnect hint; refuses them at hello", async () => {
      const now = SECONDS();
      const old = await identity('fay', now - 20);
      const [fay, gus] = await Promise.all([page(old), page(await identity('gus', now - 20))]);
      const answer = await post(server, `${API}/tokens/revoke`, { user: 'fay', before: (now - 10) * 1000 });
      expect([answer.status, answer.json]).toEqual([200, { ok: true }]);
      const closed = await fay.closed;
      expect(closed.code).toBe(CLOSE.tokenRevoked);
      expect(reconnectHint(closed.reason)).toBeTypeOf('number');
      // The old identity is refused from now on; one issued after `before` is taken.
      expect((await refusedHello(old)).code).toBe(CLOSE.tokenRevoked);
      const fresh = await page(await identity('fay', now - 10));
      expect(fresh.ws.readyState).toBe(fresh.ws.OPEN);
      // Gus's page (as old) stays: a later event reaches it.
      await post(server, `${API}/emit`, { users: ['gus'], event: 'still' });
      await gus.next((f) => f.t === 'event' && f.event === 'still', 'the event to the page that stayed');
    });

    it('counts an identity without iat as issued 24 hours (and the leeway) before its exp', async () => {
      const now = SECONDS();
      await post(server, `${API}/tokens/revoke`, { user: 'hal', before: now * 1000 });
      expect((await refusedHello(await identity('hal', undefined, now + 3600))).code).toBe(CLOSE.tokenRevoked);
      // One expiring a whole day (and the leeway) after `before` can only have been issued at it or after.
      const late = await page(await identity('hal', undefined, now + 86_400 + 300));
      expect(late.ws.readyState).toBe(late.ws.OPEN);
    });

    it("a user's revocation closes a page whose identity is newer but whose room token of that user is older", async () => {
      const now = SECONDS();
      const kay = await page(await identity('kay', now));
      expect((await join(kay, 'den', await roomToken('den', now - 30, 'kay'), 1)).t).toBe('joined');
      expect((await post(server, `${API}/tokens/revoke`, { user: 'kay', before: (now - 10) * 1000 })).status).toBe(200);
      expect((await kay.closed).code).toBe(CLOSE.tokenRevoked);
    });

    it('the whole app: pages with older room tokens are closed, joins with them answer token_revoked', async () => {
      const now = SECONDS();
      const anonymous = await page();
      expect((await join(anonymous, 'hall', await roomToken('hall', now - 30), 1)).t).toBe('joined');
      const bystander = await page();
      const answer = await post(server, `${API}/tokens/revoke`, { before: (now - 10) * 1000 });
      expect([answer.status, answer.json]).toEqual([200, { ok: true }]);
      expect((await anonymous.closed).code).toBe(CLOSE.tokenRevoked);
      // The bystander held no token: it stays, and an old room token is refused at its join.
      const refused = await join(bystander, 'hall', await roomToken('hall', now - 30), 2);
      expect([refused.t, refused.code, refused.room]).toEqual(['error', 'token_revoked', 'hall']);
      expect((await join(bystander, 'hall', await roomToken('hall', now - 5), 3)).t).toBe('joined');
    });

    it('an earlier time than one in force changes nothing', async () => {
      const now = SECONDS();
      await post(server, `${API}/tokens/revoke`, { user: 'ivy', before: now * 1000 });
      await post(server, `${API}/tokens/revoke`, { user: 'ivy', before: (now - 3600) * 1000 });
      expect((await refusedHello(await identity('ivy', now - 60))).code).toBe(CLOSE.tokenRevoked);
    });

    it('answers bad_request with a message for a bad body', async () => {
      const now = Date.now();
      for (const body of [
        {},
        { before: 'now' },
        { before: -1 },
        { before: 1.5 },
        { before: now + 600_000 },
        // Seconds where milliseconds are meant: older than any token still valid.
        { before: Math.floor(now / 1000) },
        { before: now, user: 7 },
        { before: now, user: '$root' },
        { before: now, users: ['a'] },
        [now],
      ]) {
        const answer = await post(server, `${API}/tokens/revoke`, body);
        expect([answer.status, answer.json.error], JSON.stringify(body)).toEqual([400, 'bad_request']);
        expect(answer.json.message).toBeTruthy();
      }
      const empty = await send(server, { method: 'POST', path: `${API}/tokens/revoke` });
      expect([empty.status, empty.json.error]).toEqual([400, 'bad_request']);
      // Within the clock difference ahead is taken.
      expect((await post(server, `${API}/tokens/revoke`, { user: 'jon', before: now + 60_000 })).status).toBe(200);
    });
  });

  it('both routes count against the rate limit and in the metrics by route', async () => {
    const as = { url: server.url, app: limited };
    expect((await post(as, `${API}/users/kim/disconnect`, {})).status).toBe(200);
    const over = await post(as, `${API}/tokens/revoke`, { before: Date.now() });
    expect([over.status, over.json.error]).toEqual([429, 'rate_limited']);
    expect(over.headers['retry-after']).toBeDefined();
    const metrics = (await fetchPlain(server.url, '/metrics')).text;
    expect(metrics).toMatch(/realtime_api_requests_total\{route="user_disconnect",status="200"\} [1-9]/);
    expect(metrics).toMatch(/realtime_api_requests_total\{route="tokens_revoke",status="200"\} [1-9]/);
  });
});
