import { connect, type RealtimeClient, type Room, type WebSocketConstructor } from '@realtime/browser';
import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/** The browser SDK's member list in a large presence room, against the real service. */
describe('browser SDK: large presence rooms', () => {
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  const clients: RealtimeClient[] = [];

  const client = async (user: string) => {
    const identity = await sdk.identityToken(user);
    const c = connect({
      url: server.url,
      site: server.app.key,
      identity,
      WebSocket: WebSocket as unknown as WebSocketConstructor,
    });
    clients.push(c);
    return c;
  };
  const rawMember = async (user: string, room: string, ref: number) => {
    const page = await helloPage(server.url, server.app.key, await sdk.identityToken(user));
    pages.push(page);
    page.send({ t: 'join', ref, room, token: await sdk.roomToken(room, { presence: true }) });
    await page.next((f) => f.ref === ref && f.t === 'joined', `joined ${user}`);
    return page;
  };
  const users = (room: Room) => room.members().map((m) => m.user);

  beforeAll(async () => {
    server = await startTestServer({
      gateway: { members: { threshold: 10, pageSize: 15, minWindowMs: 20, maxWindowMs: 50 } },
    });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
  });

  it('keeps the count and, page by page, the whole list while members come and go', async () => {
    const room = 'hall';
    const token = () => sdk.roomToken(room, { presence: true });
    const early = (await client('early')).join(room, { token });
    await early.joined;
    const raw: RawPage[] = [];
    for (let i = 0; i < 40; i++) raw.push(await rawMember(`r${i}`, room, i + 1));
    const late = (await client('late')).join(room, { token });
    const info = await late.joined;
    expect(info.count).toBe(42);
    expect(info.members).toHaveLength(10);
    expect(late.hasMoreMembers).toBe(true);

    await waitFor(() => early.memberCount === 42 && late.memberCount === 42, 'both pages to count 42');
    // The page that joined small keeps the whole list from `$member.*` events; on a cluster engine
    // the count may be a step ahead of the last event, so the list is waited for too.
    await waitFor(() => users(early).length === 42, 'the early page to list 42');
    while (late.hasMoreMembers) await late.moreMembers();
    const everyone = ['early', 'late', ...raw.map((_, i) => `r${i}`)].sort();
    expect(users(late).sort()).toEqual(everyone);

    // Half the members leave: both pages count and list the rest.
    await Promise.all(raw.slice(0, 20).map((p) => p.close()));
    const rest = everyone.filter((u) => !raw.slice(0, 20).some((_, i) => u === `r${i}`));
    await waitFor(() => early.memberCount === 22 && late.memberCount === 22, 'both pages to count 22');
    await waitFor(() => users(early).length === 22 && users(late).length === 22, 'both lists to hold 22');
    expect(users(early).sort()).toEqual(rest);
    expect(users(late).sort()).toEqual(rest);
  });
});
