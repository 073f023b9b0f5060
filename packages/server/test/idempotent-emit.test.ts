import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken } from './gateway-tools.js';
import { API, fetchPlain, type RawAnswer, send, startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * Idempotent emits over real HTTP: an Idempotency-Key makes a retry of emit or emit/batch deliver
 * once and answer the same ids. Runs on every engine (ENGINE_SUITES).
 */
describe('Idempotency-Key on emit and emit/batch', () => {
  let server: TestServer;
  let watcher: RawPage;
  let keys = 0;
  const newKey = () => `key-${Date.now()}-${++keys}`;

  beforeAll(async () => {
    server = await startTestServer();
    watcher = await helloPage(server.url, server.app.key);
    const now = Math.floor(Date.now() / 1000);
    const token = await signToken({ room: 'feed', iat: now, exp: now + 3600 }, { secret: server.app.secret });
    watcher.send({ t: 'join', ref: 1, room: 'feed', token });
    await watcher.next((f) => f.t === 'joined', 'joined');
  });
  afterAll(async () => {
    await watcher.close();
    await server.close();
  });

  const emit = (body: unknown, key?: string, path = `${API}/emit`): Promise<RawAnswer> =>
    send(server, {
      path,
      body: JSON.stringify(body),
      ...(key === undefined ? {} : { headers: [['Idempotency-Key', key]] as [string, string][] }),
    });
  /** How many events of this name the watcher got, once a later marker shows every earlier one came. */
  const delivered = async (event: string): Promise<number> => {
    const marker = `marker-${++keys}`;
    await emit({ rooms: ['feed'], event: marker });
    await watcher.next((f) => f.t === 'event' && f.event === marker, marker);
    return watcher.frames.filter((f) => f.t === 'event' && f.event === event).length;
  };

  it('a retry with the same key and body delivers once and answers the same ids', async () => {
    const key = newKey();
    const body = { rooms: ['feed'], event: 'once', data: { n: 1 }, history: { feed: [10, 1] } };
    const first = await emit(body, key);
    expect(first.status).toBe(200);
    expect(first.json.ids).toEqual({ feed: expect.stringMatching(/^\d+-\d+$/) });
    const again = await emit(body, key);
    expect([again.status, again.json]).toEqual([200, first.json]);
    expect(await delivered('once')).toBe(1);
    // Without the key the same body is delivered again, as always.
    await emit(body);
    expect(await delivered('once')).toBe(2);
    const metrics = (await fetchPlain(server.url, '/metrics')).text;
    expect(metrics).toMatch(/realtime_idempotency_reserves_total\{outcome="reserved"\} [1-9]/);
    expect(metrics).toMatch(/realtime_idempotency_reserves_total\{outcome="answered"\} [1-9]/);
  });

  it('the same key with another body, or on the other route, answers 409 idempotency_conflict', async () => {
    const key = newKey();
    expect((await emit({ rooms: ['feed'], event: 'a' }, key)).status).toBe(200);
    const other = await emit({ rooms: ['feed'], event: 'b' }, key);
    expect([other.status, other.json.error]).toEqual([409, 'idempotency_conflict']);
    expect(other.json.message).toContain('another');
    const batch = await emit({ events: [{ rooms: ['feed'], event: 'a' }] }, key, `${API}/emit/batch`);
    expect([batch.status, batch.json.error]).toEqual([409, 'idempotency_conflict']);
    expect(await delivered('b')).toBe(0);
  });

  it('a batch retried delivers once; concurrent duplicates do not both deliver', async () => {
    const key = newKey();
    const body = {
      events: [
        { rooms: ['feed'], event: 'batched', history: { feed: [10, 1] } },
        { users: ['x'], event: 'y' },
      ],
    };
    const answers = await Promise.all(Array.from({ length: 5 }, () => emit(body, key, `${API}/emit/batch`)));
    const ok = answers.filter((a) => a.status === 200);
    expect(ok.length).toBeGreaterThan(0);
    for (const answer of answers) {
      // A duplicate either waited for the first answer, or was refused while it was in flight.
      if (answer.status === 200) expect(answer.json).toEqual(ok[0]?.json);
      else expect([answer.status, answer.json.error]).toEqual([409, 'idempotency_conflict']);
    }
    expect(await delivered('batched')).toBe(1);
  });

  it('a refused request reserves nothing: fixed and sent again with the key, it is delivered', async () => {
    const key = newKey();
    const bad = await emit({ rooms: ['$feed'], event: 'fixed' }, key);
    expect([bad.status, bad.json.error]).toEqual([400, 'bad_room']);
    expect((await emit({ rooms: ['feed'], event: 'fixed' }, key)).status).toBe(200);
    expect(await delivered('fixed')).toBe(1);
  });

  it('takes keys of 1 to 200 printable ASCII characters; refuses others with bad_request', async () => {
    for (const key of ['k', `~ !${'x'.repeat(197)}`]) {
      expect((await emit({ rooms: ['feed'], event: 'edge' }, key)).status, key).toBe(200);
    }
    for (const key of ['', 'x'.repeat(201), 'caf\u00e9']) {
      const answer = await emit({ rooms: ['feed'], event: 'edge' }, key);
      expect([answer.status, answer.json.error], key).toEqual([400, 'bad_request']);
      expect(answer.json.message).toContain('Idempotency-Key');
    }
    const twice = await send(server, {
      path: `${API}/emit`,
      body: JSON.stringify({ rooms: ['feed'], event: 'edge' }),
      headers: [
        ['Idempotency-Key', 'a'],
        ['Idempotency-Key', 'b'],
      ],
    });
    expect([twice.status, twice.json.error]).toEqual([400, 'bad_request']);
  });
});
