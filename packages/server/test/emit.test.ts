import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, post, send, startTestServer, type TestServer } from './helpers.js';
import { helloPage } from './pages.js';

const EMIT = `${API}/emit`;
const BATCH = `${API}/emit/batch`;
const MB = 1_048_576;

describe('POST /emit', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('sends to rooms and users and answers ids only for rooms that keep the event', async () => {
    const a = await post(server, EMIT, {
      rooms: ['lobby', 'kept'],
      users: ['alice'],
      event: 'hello',
      data: { text: 'hi' },
      history: { kept: [10, 1] },
    });
    expect(a.status).toBe(200);
    expect(a.json.ok).toBe(true);
    expect(Object.keys(a.json.ids as object)).toEqual(['kept']);
    expect((a.json.ids as Record<string, string>).kept).toMatch(/^\d+-\d+$/);
  });

  it('gives strictly rising ids within a room, even many in one millisecond', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      const a = await post(server, EMIT, { rooms: ['rising'], event: 'n', data: i, history: { rising: [100, 1] } });
      ids.push((a.json.ids as Record<string, string>).rising ?? '');
    }
    const parsed = ids.map((id) => id.split('-').map(Number) as [number, number]);
    for (let i = 1; i < parsed.length; i++) {
      const [ms, seq] = parsed[i] as [number, number];
      const [pms, pseq] = parsed[i - 1] as [number, number];
      expect(ms > pms || (ms === pms && seq > pseq)).toBe(true);
    }
    expect(Math.abs((parsed[0]?.[0] ?? 0) - Date.now())).toBeLessThan(60_000);
  });

  it('sends a duplicated room once (one id)', async () => {
    const a = await post(server, EMIT, {
      rooms: ['dup', 'dup'],
      users: ['u', 'u'],
      event: 'e',
      history: { dup: [5, 1] },
    });
    expect(a.status).toBe(200);
    expect(Object.keys(a.json.ids as object)).toEqual(['dup']);
  });

  it('accepts data of exactly 1 MB as sent, refuses one byte more, measured with whitespace', async () => {
    const exact = `"${'x'.repeat(MB - 2)}"`;
    const ok = await send(server, { path: EMIT, body: `{"rooms":["big"],"event":"e","data":${exact}}` });
    expect(ok.status).toBe(200);
    const over = await send(server, {
      path: EMIT,
      body: `{"rooms":["big"],"event":"e","data":"${'x'.repeat(MB - 1)}"}`,
    });
    expect([over.status, over.json.error]).toEqual([413, 'too_large']);
    // The same value padded with spaces inside an array: its text as sent is over the limit.
    const padded = await send(server, {
      path: EMIT,
      body: `{"rooms":["big"],"event":"e","data":[ ${`"${'x'.repeat(MB - 10)}"`}${' '.repeat(20)}]}`,
    });
    expect([padded.status, padded.json.error]).toEqual([413, 'too_large']);
  });

  it('refuses a body over 2 MB before parsing it', async () => {
    const a = await send(server, { path: EMIT, body: `{"rooms":["a"],"event":"e","data":"${'x'.repeat(2 * MB)}"}` });
    expect([a.status, a.json.error]).toEqual([413, 'too_large']);
    const junk = await send(server, { path: EMIT, body: Buffer.alloc(2 * MB + 1, 0x7b) });
    expect([junk.status, junk.json.error]).toEqual([413, 'too_large']);
    // The server is fine afterwards.
    const after = await post(server, EMIT, { rooms: ['a'], event: 'e' });
    expect(after.status).toBe(200);
  });

  it('counts rooms plus users: 1,000 pass, 1,001 are too_many', async () => {
    const rooms = Array.from({ length: 600 }, (_, i) => `r${i}`);
    const users = Array.from({ length: 400 }, (_, i) => `u${i}`);
    expect((await post(server, EMIT, { rooms, users, event: 'e' })).status).toBe(200);
    const a = await post(server, EMIT, { rooms, users: [...users, 'one-more'], event: 'e' });
    expect([a.status, a.json.error]).toEqual([413, 'too_many']);
  });

  const badRooms: [string, unknown][] = [
    ['empty', ''],
    ['starting with $', '$system'],
    ['with a control character', 'a\u0001b'],
    ['with DEL', 'a\u007fb'],
    ['over 200 bytes', 'é'.repeat(101)],
    ['a lone surrogate', '\ud800'],
  ];
  for (const [why, room] of badRooms) {
    it(`answers bad_room for a room ${why}`, async () => {
      const a = await post(server, EMIT, { rooms: ['fine', room], event: 'e' });
      expect([a.status, a.json.error]).toEqual([400, 'bad_room']);
    });
  }

  it('answers bad_request for bad user ids', async () => {
    for (const user of ['', '$x', 'a\nb', 'u'.repeat(201)]) {
      const a = await post(server, EMIT, { users: [user], event: 'e' });
      expect([a.status, a.json.error]).toEqual([400, 'bad_request']);
    }
  });

  it('answers reserved for event names starting with $', async () => {
    const a = await post(server, EMIT, { rooms: ['a'], event: '$member.joined' });
    expect([a.status, a.json.error]).toEqual([400, 'reserved']);
  });

  const badRequests: [string, unknown, string][] = [
    ['an array body', [], 'JSON object'],
    ['a string body', 'hello', 'JSON object'],
    ['null', null, 'JSON object'],
    ['an unknown field', { rooms: ['a'], event: 'e', extra: 1 }, '"extra"'],
    ['no rooms nor users', { event: 'e' }, 'rooms or users'],
    ['empty rooms and users', { rooms: [], users: [], event: 'e' }, 'rooms or users'],
    ['rooms not an array', { rooms: 'a', event: 'e' }, 'rooms'],
    ['a room not a string', { rooms: [1], event: 'e' }, 'rooms[0]'],
    ['users not an array', { users: { a: 1 }, event: 'e' }, 'users'],
    ['no event', { rooms: ['a'] }, 'event'],
    ['event not a string', { rooms: ['a'], event: 5 }, 'event'],
    ['an empty event', { rooms: ['a'], event: '' }, 'event name'],
    ['an event over 100 bytes', { rooms: ['a'], event: 'e'.repeat(101) }, 'event name'],
    ['an event with a control character', { rooms: ['a'], event: 'a\tb' }, 'event name'],
    ['history not an object', { rooms: ['a'], event: 'e', history: [1, 2] }, 'history'],
    ['history for a room not targeted', { rooms: ['a'], event: 'e', history: { b: [1, 1] } }, 'not one of'],
    ['history limit 0', { rooms: ['a'], event: 'e', history: { a: [0, 1] } }, 'limit'],
    ['history limit 1001', { rooms: ['a'], event: 'e', history: { a: [1001, 1] } }, 'limit'],
    ['history limit 1.5', { rooms: ['a'], event: 'e', history: { a: [1.5, 1] } }, 'limit'],
    ['history hours 0', { rooms: ['a'], event: 'e', history: { a: [1, 0] } }, 'hours'],
    ['history hours 168.5', { rooms: ['a'], event: 'e', history: { a: [1, 168.5] } }, 'hours'],
    ['history hours a string', { rooms: ['a'], event: 'e', history: { a: [1, '1'] } }, 'hours'],
    ['history of three numbers', { rooms: ['a'], event: 'e', history: { a: [1, 1, 1] } }, 'history'],
  ];
  for (const [why, body, mention] of badRequests) {
    it(`answers bad_request for ${why}`, async () => {
      const a = await post(server, EMIT, body);
      expect([a.status, a.json.error]).toEqual([400, 'bad_request']);
      expect(a.json.message).toContain(mention);
      expect(a.json.message).not.toMatch(/\n/);
    });
  }

  it('accepts history at its bounds', async () => {
    const a = await post(server, EMIT, { rooms: ['a'], event: 'e', history: { a: [1000, 168] } });
    expect(a.status).toBe(200);
    const b = await post(server, EMIT, { rooms: ['b'], event: 'e', history: { b: [1, 0.01] } });
    expect(b.status).toBe(200);
  });

  it('answers bad_request for malformed JSON and wrong content types', async () => {
    for (const body of ['{', '{"rooms":["a"],}', 'nul', '\u0000', '{"a":1}{"b":2}']) {
      const a = await send(server, { path: EMIT, body });
      expect([a.status, a.json.error]).toEqual([400, 'bad_request']);
    }
    const empty = await send(server, { path: EMIT, method: 'POST', body: '' });
    expect([empty.status, empty.json.error]).toEqual([400, 'bad_request']);
    const text = await send(server, {
      path: EMIT,
      body: JSON.stringify({ rooms: ['a'], event: 'e' }),
      headers: [['Content-Type', 'text/plain']],
    });
    expect([text.status, text.json.error]).toEqual([400, 'bad_request']);
    const charset = await send(server, {
      path: EMIT,
      body: JSON.stringify({ rooms: ['a'], event: 'e' }),
      headers: [['Content-Type', 'application/json; charset=utf-8']],
    });
    expect(charset.status).toBe(200);
  });

  it('refuses a query on emit', async () => {
    const a = await send(server, { path: `${EMIT}?debug=1`, body: JSON.stringify({ rooms: ['a'], event: 'e' }) });
    expect([a.status, a.json.error]).toEqual([400, 'bad_request']);
  });
});

describe('POST /emit/batch', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('answers one ids entry per event, in order', async () => {
    const a = await post(server, BATCH, {
      events: [
        { rooms: ['a'], event: 'x', history: { a: [10, 1] } },
        { users: ['u'], event: 'y' },
        { rooms: ['a', 'b'], event: 'z', history: { a: [10, 1], b: [10, 1] } },
      ],
    });
    expect(a.status).toBe(200);
    const ids = a.json.ids as Record<string, string>[];
    expect(ids).toHaveLength(3);
    expect(Object.keys(ids[0] ?? {})).toEqual(['a']);
    expect(ids[1]).toEqual({});
    expect(Object.keys(ids[2] ?? {}).sort()).toEqual(['a', 'b']);
    expect(ids[2]?.a && ids[0]?.a && ids[2].a > ids[0].a).toBeTruthy();
  });

  it('refuses 101 events with too_many and accepts 100', async () => {
    const events = Array.from({ length: 100 }, (_, i) => ({ rooms: [`r${i}`], event: 'e' }));
    expect((await post(server, BATCH, { events })).status).toBe(200);
    const a = await post(server, BATCH, { events: [...events, { rooms: ['x'], event: 'e' }] });
    expect([a.status, a.json.error]).toEqual([413, 'too_many']);
  });

  it('checks the whole batch first: one bad event refuses all, named by index, nothing kept', async () => {
    const a = await post(server, BATCH, {
      events: [
        { rooms: ['whole'], event: 'first', history: { whole: [10, 1] } },
        { rooms: ['whole'], event: '$bad' },
      ],
    });
    expect([a.status, a.json.error]).toEqual([400, 'reserved']);
    expect(a.json.message).toContain('events[1]');
    // Nothing of the refused batch was kept: a page joining for the room's last events gets none.
    const sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
    const reader = await helloPage(server.url, server.app.key);
    reader.send({ t: 'join', ref: 1, room: 'whole', token: await sdk.roomToken('whole'), last: 10 });
    expect(await reader.next((f) => f.t === 'joined')).toMatchObject({ replay: 0 });
    await reader.close();
    await sdk.close();
  });

  it('names the index for each kind of bad event', async () => {
    const cases: [unknown, number, string][] = [
      [{ rooms: ['$x'], event: 'e' }, 400, 'bad_room'],
      [{ rooms: ['a'], event: 'e', nope: true }, 400, 'bad_request'],
      [{ rooms: Array.from({ length: 1001 }, (_, i) => `r${i}`), event: 'e' }, 413, 'too_many'],
      ['not an object', 400, 'bad_request'],
    ];
    for (const [bad, status, code] of cases) {
      const a = await post(server, BATCH, {
        events: [{ rooms: ['ok'], event: 'e' }, { rooms: ['ok'], event: 'e' }, bad],
      });
      expect([a.status, a.json.error]).toEqual([status, code]);
      expect(a.json.message).toContain('events[2]');
    }
  });

  it('measures each event data as sent', async () => {
    const big = `"${'y'.repeat(MB - 1)}"`;
    const a = await send(server, {
      path: BATCH,
      body: `{"events":[{"rooms":["a"],"event":"e","data":1},{"rooms":["a"],"event":"e","data":${big}}]}`,
    });
    expect([a.status, a.json.error]).toEqual([413, 'too_large']);
    expect(a.json.message).toContain('events[1]');
  });

  it('answers bad_request for a batch without events, with an empty list, or with other fields', async () => {
    for (const body of [{}, { events: [] }, { events: {} }, { events: [{ rooms: ['a'], event: 'e' }], more: 1 }]) {
      const a = await post(server, BATCH, body);
      expect([a.status, a.json.error]).toEqual([400, 'bad_request']);
    }
  });
});

describe('plans', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ app: { features: [] } });
  });
  afterAll(() => server.close());

  it('answers not_included for history outside the plan, and sends plain events', async () => {
    const a = await post(server, EMIT, { rooms: ['a'], event: 'e', history: { a: [1, 1] } });
    expect([a.status, a.json.error]).toEqual([403, 'not_included']);
    const b = await post(server, BATCH, {
      events: [
        { rooms: ['a'], event: 'e' },
        { rooms: ['a'], event: 'e', history: { a: [1, 1] } },
      ],
    });
    expect([b.status, b.json.error]).toEqual([403, 'not_included']);
    const c = await post(server, EMIT, { rooms: ['a'], event: 'e' });
    expect(c.json).toEqual({ ok: true, ids: {} });
  });

  it('answers not_included for ask, online and webhooks outside the plan', async () => {
    const ask = await post(server, `${API}/users/alice/ask`, { event: 'q' });
    expect([ask.status, ask.json.error]).toEqual([403, 'not_included']);
    const online = await send(server, { path: `${API}/online?ids=alice` });
    expect([online.status, online.json.error]).toEqual([403, 'not_included']);
    for (const [method, path] of [
      ['GET', `${API}/webhooks`],
      ['POST', `${API}/webhooks/test`],
      ['POST', `${API}/webhooks/b1/resend`],
    ] as const) {
      const a = await send(server, { method, path });
      expect([a.status, a.json.error]).toEqual([403, 'not_included']);
    }
  });
});
