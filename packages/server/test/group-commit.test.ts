import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareIds } from './gateway-tools.js';
import { API, post, startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * Emits with history are answered after their turn's group commit; emits without history and page
 * sends that keep nothing are delivered at once. Mixed in one room, a page must still see every
 * event once, with ids rising: a client drops an event whose id is not above the last it saw.
 */
describe('group commit: mixed emits and sends in one room', () => {
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];

  beforeAll(async () => {
    server = await startTestServer({
      app: { webhook: 'http://127.0.0.1:9/hook' },
      allowPrivateWebhooks: true,
      webhooks: { windowMs: 600_000 },
      gateway: { framesPerSecond: 5000, frameBurst: 5000 },
    });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });

  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
  });

  const open = async (user: string, room: string, rules: Parameters<Realtime['roomToken']>[1]) => {
    const p = await helloPage(server.url, server.app.key, await sdk.identityToken(user));
    pages.push(p);
    p.send({ t: 'join', ref: 1, room, token: await sdk.roomToken(room, rules) });
    await p.next((f) => f.t === 'joined', 'joined');
    return p;
  };

  it('every event reaches the page once, ids rising, whatever kept it', async () => {
    const watcher = await open('watcher', 'mix', {});
    const kept = await open('kept', 'mix', { send: ['s'], w: ['s'], history: [1000, 1] });
    const plain = await open('plain', 'mix', { send: ['p'] });
    const expected = new Set<string>();
    const requests: Promise<unknown>[] = [];
    for (let i = 0; i < 120; i++) {
      const name = `e${i}`;
      expected.add(name);
      const history = i % 3 === 0 ? {} : { history: { mix: [1000, 1] } };
      requests.push(post(server, `${API}/emit`, { rooms: ['mix', `other${i % 4}`], event: name, data: i, ...history }));
      if (i % 2 === 0) {
        const sent = `s${i}`;
        expected.add(sent);
        kept.send({ t: 'send', ref: 1000 + i, room: 'mix', event: 's', data: sent });
      }
      if (i % 5 === 0) {
        const sent = `p${i}`;
        expected.add(sent);
        plain.send({ t: 'send', ref: 2000 + i, room: 'mix', event: 'p', data: sent });
      }
    }
    const answers = (await Promise.all(requests)) as { status: number }[];
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const names = (f: Record<string, unknown>) =>
      f.event === 's' || f.event === 'p' ? String(f.data) : String(f.event);
    const seen = () => watcher.frames.filter((f) => f.t === 'event' && f.room === 'mix').map(names);
    await watcher.next(() => seen().length >= expected.size, 'every event');
    const events = watcher.frames.filter((f) => f.t === 'event' && f.room === 'mix');
    expect(new Set(events.map(names))).toEqual(expected);
    expect(events).toHaveLength(expected.size);
    const ids = events.map((f) => String(f.id));
    for (let i = 1; i < ids.length; i++) expect(compareIds(ids[i - 1] as string, ids[i] as string)).toBeLessThan(0);
  });
});
