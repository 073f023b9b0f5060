import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, post, startTestServer, type TestServer } from './helpers.js';
import { helloPage, isEvent, openRawPage, type RawPage } from './pages.js';

describe('page gateway: delivery, page sends, ask', () => {
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  const page = async (user?: string, info?: Record<string, unknown>) => {
    const identity = user === undefined ? undefined : await sdk.identityToken(user, info ? { info } : {});
    const p = await helloPage(server.url, server.app.key, identity);
    pages.push(p);
    return p;
  };
  let ref = 0;
  const join = async (p: RawPage, room: string, rules: Parameters<Realtime['roomToken']>[1] = {}, extra = {}) => {
    const r = ++ref;
    p.send({ t: 'join', ref: r, room, token: await sdk.roomToken(room, rules), ...extra });
    return p.next((f) => f.ref === r && (f.t === 'joined' || f.t === 'error'), `joined ${room}`);
  };

  beforeAll(async () => {
    server = await startTestServer();
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
  });

  it('welcomes a page with its identity, and an anonymous one', async () => {
    const alice = await page('alice');
    expect(alice.frames[0]).toMatchObject({ t: 'welcome', v: 1, user: 'alice' });
    const anon = await page();
    expect(anon.frames[0]).toMatchObject({ t: 'welcome', user: null });
  });

  it('delivers an emit to every page in the room, with its id, once per room', async () => {
    const a = await page('a1');
    const b = await page();
    expect(await join(a, 'lobby')).toMatchObject({ t: 'joined', room: 'lobby', replay: 0 });
    await join(b, 'lobby');
    await join(b, 'other');
    const ids = await sdk.emit({
      rooms: ['lobby', 'other'],
      event: 'hello',
      data: { n: 1 },
      history: { lobby: [10, 1] },
    });
    const fa = await a.next(isEvent('hello', 'lobby'));
    expect(fa).toMatchObject({ room: 'lobby', id: ids.lobby, data: { n: 1 } });
    const fb1 = await b.next(isEvent('hello'));
    const fb2 = await b.next(isEvent('hello'));
    expect(new Set([fb1.room, fb2.room])).toEqual(new Set(['lobby', 'other']));
    expect(fb2.id).toMatch(/^\d+-\d+$/);
  });

  it('delivers a user event to every open page of the user', async () => {
    const t1 = await page('bob');
    const t2 = await page('bob');
    await sdk.emit({ users: ['bob'], event: 'notice', data: 'x' });
    expect(await t1.next(isEvent('notice'))).toMatchObject({ data: 'x' });
    expect(await t2.next(isEvent('notice'))).not.toHaveProperty('room');
  });

  it('lets a page send what its token allows; others get it with from and id; the sender gets sent', async () => {
    const s = await page('sender');
    const r = await page('reader');
    await join(s, 'chat', { send: ['msg'], w: ['msg'] });
    await join(r, 'chat');
    s.send({ t: 'send', ref: 900, room: 'chat', event: 'msg', data: { text: 'hi' } });
    const sent = await s.next((f) => f.t === 'sent' && f.ref === 900);
    const got = await r.next(isEvent('msg', 'chat'));
    expect(got).toMatchObject({ from: 'sender', data: { text: 'hi' }, id: sent.id });
    expect(s.frames.some((f) => f.t === 'event' && f.event === 'msg')).toBe(false);
    const recorded = (server.events as unknown as { events: { event: Record<string, unknown> }[] }).events.find(
      (e) => e.event.type === 'emit' && e.event.event_id === sent.id,
    );
    expect(recorded?.event).toMatchObject({
      type: 'emit',
      room: 'chat',
      event: 'msg',
      from: 'sender',
      data: { text: 'hi' },
    });

    s.send({ t: 'send', ref: 901, room: 'chat', event: 'other', data: 1 });
    expect(await s.next((f) => f.ref === 901)).toMatchObject({ t: 'error', code: 'not_allowed' });
    s.send({ t: 'send', ref: 902, room: 'nowhere', event: 'msg' });
    expect(await s.next((f) => f.ref === 902)).toMatchObject({ t: 'error', code: 'not_joined' });
  });

  it('answers an ask from a page, with at; first reply without all', async () => {
    const p1 = await page('carol');
    const p2 = await page('carol');
    const asked = sdk.ask('carol', { event: 'confirm', data: { q: 1 }, timeout: 5000 });
    const q1 = await p1.next((f) => f.t === 'ask');
    const q2 = await p2.next((f) => f.t === 'ask');
    expect(q1).toMatchObject({ event: 'confirm', data: { q: 1 } });
    p2.send({ t: 'decline', ask: q2.ask });
    p1.send({ t: 'reply', ask: q1.ask, data: 'yes' });
    const replies = await asked;
    expect(replies).toHaveLength(1);
    expect(replies[0]?.data).toBe('yes');
    expect(typeof replies[0]?.at).toBe('number');
  });

  it('collects every reply until the timeout with all', async () => {
    const p1 = await page('dave');
    const p2 = await page('dave');
    const asked = sdk.ask('dave', { event: 'vote', timeout: 800, all: true });
    const q1 = await p1.next((f) => f.t === 'ask');
    const q2 = await p2.next((f) => f.t === 'ask');
    p1.send({ t: 'reply', ask: q1.ask, data: 1 });
    p2.send({ t: 'reply', ask: q2.ask, data: 2 });
    const replies = await asked;
    expect(replies.map((r) => r.data).sort()).toEqual([1, 2]);
  });

  it('answers at once with no replies when every page declines (without all)', async () => {
    const p1 = await page('erin');
    const asked = sdk.ask('erin', { event: 'nobody-handles', timeout: 30_000 });
    const q = await p1.next((f) => f.t === 'ask');
    p1.send({ t: 'decline', ask: q.ask });
    expect(await asked).toEqual([]);
  });

  it('reports users online while a page is open', async () => {
    await page('frank');
    expect(await sdk.online(['frank', 'nobody'])).toEqual(['frank']);
  });

  it('emits over HTTP reach a page joined with a room token issued to its user only', async () => {
    const g = await page('gina');
    expect(await join(g, 'mine', { userId: 'gina' })).toMatchObject({ t: 'joined' });
    expect(await join(g, 'theirs', { userId: 'someone-else' })).toMatchObject({ t: 'error', code: 'wrong_user' });
    const a = await post(server, `${API}/emit`, { rooms: ['mine'], event: 'e', data: 1 });
    expect(a.status).toBe(200);
    expect(await g.next(isEvent('e', 'mine'))).toMatchObject({ data: 1 });
  });

  it('refuses a socket for an unknown site with 4001', async () => {
    const p = await openRawPage(server.url, 'nobody');
    expect((await p.closed).code).toBe(4001);
  });
});
