import { Realtime, type RoomTokenOptions } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRICS_PATH } from '../src/http/ops.js';
import { newApp } from '../src/index.js';
import { waitFor } from './gateway-tools.js';
import { API, fetchPlain, type RawAnswer, send, startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

type Json = Record<string, unknown>;

/**
 * The room reads of the API over real HTTP, with real pages in the rooms: occupied rooms, one room,
 * a presence room's members and a room's kept events. Runs on every engine (ENGINE_SUITES).
 */
describe('room reads: GET /rooms, /rooms/{room}, /members, /history', () => {
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  let ref = 0;
  const fast = { perSecond: 100_000, burst: 100_000 };
  /** A plan without presence and history. */
  const bare = newApp({ name: 'bare', features: [], rateLimit: fast });
  /** One request, then rate limited for a long while. */
  const tiny = newApp({ name: 'tiny', rateLimit: { perSecond: 0.001, burst: 1 } });

  const get = (path: string, app = server.app): Promise<RawAnswer> =>
    send({ url: server.url, app }, { path: `${API}${path}` });
  const ok = async (path: string): Promise<Json> => {
    const answer = await get(path);
    expect([answer.status, answer.json.error, answer.json.message], path).toEqual([200, undefined, undefined]);
    return answer.json;
  };
  const open = async (user?: string, info?: Json): Promise<RawPage> => {
    const identity = user === undefined ? undefined : await sdk.identityToken(user, info ? { info } : {});
    const page = await helloPage(server.url, server.app.key, identity);
    pages.push(page);
    return page;
  };
  const join = async (page: RawPage, room: string, rules: RoomTokenOptions = {}): Promise<Json> => {
    const r = ++ref;
    page.send({ t: 'join', ref: r, room, token: await sdk.roomToken(room, rules) });
    const answer = await page.next((f) => f.ref === r && (f.t === 'joined' || f.t === 'error'), `joined ${room}`);
    expect(answer.t).toBe('joined');
    return answer;
  };

  beforeAll(async () => {
    server = await startTestServer({ apps: [bare, tiny] });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk?.close();
    await server?.close();
  });

  it('lists no room before any page joined one', async () => {
    expect(await ok('/rooms')).toEqual({ ok: true, rooms: [] });
    expect(await ok('/rooms/nobody-here')).toEqual({
      ok: true,
      room: 'nobody-here',
      pages: 0,
      users: 0,
      kept: 0,
      epoch: expect.any(String),
    });
  });

  it('lists the occupied rooms by name, with pages and presence users, and pages through them by cursor', async () => {
    const ann = await open('ann', { name: 'Ann' });
    const ann2 = await open('ann');
    const bob = await open('bob');
    const anonymous = await open();
    await join(ann, 'list:a', { presence: true });
    await join(ann2, 'list:a', { presence: true });
    await join(bob, 'list:a');
    for (const room of ['list:b', 'list:c é', 'list:d/e', 'other']) await join(anonymous, room);

    const all = await ok('/rooms?prefix=list%3A');
    expect(all).toEqual({
      ok: true,
      rooms: [
        { room: 'list:a', pages: 3, users: 1 },
        { room: 'list:b', pages: 1, users: 0 },
        { room: 'list:c é', pages: 1, users: 0 },
        { room: 'list:d/e', pages: 1, users: 0 },
      ],
    });
    const walked: string[] = [];
    let cursor: string | undefined;
    for (let round = 0; round < 10; round++) {
      const page = await ok(`/rooms?prefix=list%3A&limit=3${cursor === undefined ? '' : `&cursor=${cursor}`}`);
      walked.push(...(page.rooms as { room: string }[]).map((r) => r.room));
      cursor = page.cursor as string | undefined;
      if (cursor === undefined) break;
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    }
    expect(walked).toEqual(['list:a', 'list:b', 'list:c é', 'list:d/e']);
    const rooms = (await ok('/rooms?limit=1000')).rooms as { room: string }[];
    expect(rooms.map((r) => r.room)).toContain('other');

    // A room goes from the listing with its last page.
    await anonymous.close();
    await waitFor(
      async () => ((await ok('/rooms?prefix=list%3A')).rooms as unknown[]).length === 1,
      'the rooms of the closed page to be vacated',
    );
    expect(await ok('/rooms?prefix=list%3A')).toEqual({ ok: true, rooms: [{ room: 'list:a', pages: 3, users: 1 }] });
  });

  it('answers one room: pages and presence users on every node, kept events and the epoch pages are given', async () => {
    const carol = await open('carol');
    const dan = await open('dan');
    const joined = await join(carol, 'info', { presence: true });
    await join(dan, 'info');
    await sdk.emitBatch([
      { rooms: ['info'], event: 'kept', data: 1, history: { info: [2, 1] } },
      { rooms: ['info'], event: 'kept', data: 2, history: { info: [2, 1] } },
      { rooms: ['info'], event: 'kept', data: 3, history: { info: [2, 1] } },
      { rooms: ['info'], event: 'live', data: 4 },
    ]);
    expect(await ok(`/rooms/info`)).toEqual({
      ok: true,
      room: 'info',
      pages: 2,
      users: 1,
      kept: 2,
      epoch: joined.epoch,
    });
    expect((await ok(`/rooms/${encodeURIComponent('ünï 🚀/x')}`)).room).toBe('ünï 🚀/x');
  });

  it('pages through the members of a presence room in join order, each user once', async () => {
    const users = ['m1', 'm2', 'm3', 'm4', 'm5'];
    for (const user of users) await join(await open(user, { n: user }), 'members', { presence: true });
    await join(await open('m1'), 'members', { presence: true });
    await join(await open('watcher'), 'members');
    const first = await ok('/rooms/members/members?limit=2');
    expect(first).toEqual({
      ok: true,
      room: 'members',
      count: 5,
      members: [
        { user: 'm1', info: { n: 'm1' } },
        { user: 'm2', info: { n: 'm2' } },
      ],
      cursor: expect.any(String),
    });
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let round = 0; round < 10; round++) {
      const page = await ok(`/rooms/members/members?limit=2${cursor === undefined ? '' : `&cursor=${cursor}`}`);
      seen.push(...(page.members as { user: string }[]).map((m) => m.user));
      cursor = page.cursor as string | undefined;
      if (cursor === undefined) break;
    }
    expect(seen).toEqual(users);
    expect(await ok('/rooms/nobody-here/members')).toEqual({ ok: true, room: 'nobody-here', count: 0, members: [] });
  });

  it('reads kept events: the last N, since an id, from the oldest, paged by cursor, as pages get them', async () => {
    const room = 'history';
    const emitted: string[] = [];
    for (let i = 0; i < 7; i++) {
      const ids = await sdk.emit({ rooms: [room], event: 'n', data: { i }, history: { [room]: [5, 1] } });
      emitted.push(ids[room] as string);
    }
    const kept = emitted.slice(2);
    const sender = await open('sam');
    const joined = await join(sender, room, { send: ['chat'], history: [5, 1] });
    const epoch = joined.epoch as string;
    sender.send({ t: 'send', ref: ++ref, room, event: 'chat', data: 'sealed:1.abc' });
    const sent = await sender.next((f) => f.t === 'sent', 'sent');
    kept.shift();
    kept.push(sent.id as string);

    const last = await ok(`/rooms/${room}/history?last=2`);
    expect(last).toEqual({
      ok: true,
      room,
      epoch,
      truncated: false,
      events: [
        { id: kept[3], event: 'n', data: { i: 6 } },
        { id: kept[4], event: 'chat', from: 'sam', data: 'sealed:1.abc' },
      ],
    });

    // The last 4, two at a time: the cursor ends the read with its fourth event.
    const firstPage = await ok(`/rooms/${room}/history?last=4&limit=2`);
    expect((firstPage.events as Json[]).map((e) => e.id)).toEqual(kept.slice(1, 3));
    const secondPage = await ok(`/rooms/${room}/history?cursor=${firstPage.cursor}&limit=3`);
    expect((secondPage.events as Json[]).map((e) => e.id)).toEqual(kept.slice(3));
    expect(secondPage.cursor).toBeUndefined();
    expect(secondPage.truncated).toBe(false);

    // From the oldest kept, and since an id, with the room's epoch.
    expect(((await ok(`/rooms/${room}/history`)).events as Json[]).map((e) => e.id)).toEqual(kept);
    const since = await ok(`/rooms/${room}/history?since=${kept[1]}&epoch=${epoch}&limit=1`);
    expect(since).toMatchObject({ epoch, truncated: false, events: [{ id: kept[2] }] });
    const rest = await ok(`/rooms/${room}/history?cursor=${since.cursor}`);
    expect((rest.events as Json[]).map((e) => e.id)).toEqual(kept.slice(3));

    // An id the room dropped (limit 5), or another epoch: truncated, as a page's resume is.
    const dropped = await ok(`/rooms/${room}/history?since=${emitted[0]}`);
    expect(dropped.truncated).toBe(true);
    expect((dropped.events as Json[]).map((e) => e.id)).toEqual(kept);
    expect((await ok(`/rooms/${room}/history?since=${kept[3]}&epoch=not-the-epoch`)).truncated).toBe(true);

    // The room's limit passing a reader between two pages: the next page is truncated.
    const slow = await ok(`/rooms/${room}/history?last=5&limit=1`);
    for (let i = 0; i < 5; i++) await sdk.emit({ rooms: [room], event: 'n', data: i, history: { [room]: [5, 1] } });
    const overtaken = await ok(`/rooms/${room}/history?cursor=${slow.cursor}`);
    expect(overtaken.truncated).toBe(true);
    expect((await ok(`/rooms/${room}`)).kept).toBe(5);
  });

  it('answers not_included for members and history on a plan without presence or history; rooms and a room on any plan', async () => {
    for (const path of ['/rooms/a/members', '/rooms/a/history', '/rooms/a/history?last=5']) {
      const answer = await get(path, bare);
      expect([answer.status, answer.json.error], path).toEqual([403, 'not_included']);
    }
    expect((await get('/rooms', bare)).json).toEqual({ ok: true, rooms: [] });
    expect((await get('/rooms/a', bare)).status).toBe(200);
  });

  it('refuses bad input with a code and one line, never a 500', async () => {
    const cases: [string, number, string][] = [
      ['/rooms?limit=0', 400, 'bad_request'],
      ['/rooms?limit=1001', 400, 'bad_request'],
      ['/rooms?cursor=%2A%2A', 400, 'bad_request'],
      ['/rooms?prefix=%24x', 400, 'bad_request'],
      ['/rooms?other=1', 400, 'bad_request'],
      ['/rooms/%24x', 400, 'bad_room'],
      [`/rooms/${'r'.repeat(201)}`, 400, 'bad_room'],
      ['/rooms/a%00b/members', 400, 'bad_room'],
      ['/rooms/%ZZ/history', 400, 'bad_request'],
      ['/rooms/a?limit=5', 400, 'bad_request'],
      ['/rooms/a/members?cursor=abc', 400, 'bad_request'],
      ['/rooms/a/history?since=1-0&last=2', 400, 'bad_request'],
      ['/rooms/a/history?last=1001', 400, 'bad_request'],
      ['/rooms/a/history?since=yesterday', 400, 'bad_request'],
      ['/rooms/a/history?epoch=e', 400, 'bad_request'],
      ['/rooms/a/history?cursor=bm90LWEtY3Vyc29y', 400, 'bad_request'],
      ['/rooms/a/b/c', 404, 'not_found'],
      ['/rooms/', 404, 'not_found'],
    ];
    for (const [path, status, code] of cases) {
      const answer = await get(path);
      expect([answer.status, answer.json.error], path).toEqual([status, code]);
      expect(answer.json.message, path).toMatch(/^[^\n]+$/);
    }
    const withBody = await send(server, { method: 'GET', path: `${API}/rooms`, body: '{}' });
    expect([withBody.status, withBody.json.error]).toEqual([400, 'bad_request']);
    const posted = await send(server, { method: 'POST', path: `${API}/rooms/a/history`, body: '{}' });
    expect([posted.status, posted.json.error, posted.headers.allow]).toEqual([405, 'bad_method', 'GET']);
  });

  it('takes a token of the app rate limit per read, and counts each route in the metrics', async () => {
    expect((await get('/rooms', tiny)).status).toBe(200);
    for (const path of ['/rooms', '/rooms/a', '/rooms/a/members', '/rooms/a/history']) {
      const answer = await get(path, tiny);
      expect([answer.status, answer.json.error], path).toEqual([429, 'rate_limited']);
      expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    const metrics = (await fetchPlain(server.url, METRICS_PATH)).text;
    for (const route of ['rooms', 'room', 'room_members', 'room_history']) {
      expect(metrics, route).toMatch(
        new RegExp(`realtime_api_requests_total\\{route="${route}",status="200"\\} [1-9]`),
      );
    }
    expect(metrics).toMatch(/realtime_api_requests_total\{route="room_history",status="403"\} [1-9]/);
    expect(metrics).toMatch(/realtime_api_requests_total\{route="rooms",status="429"\} 1/);
  });
});
