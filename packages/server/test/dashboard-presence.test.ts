import { Realtime } from '@realtime/node';
import { type App, hashDashboardPassword, newApp } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardSession, dashboardAsk, dashboardSignIn, expectRefusal } from './dashboard-client.js';
import { waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * The dashboard's online users and occupied rooms over raw HTTP (docs/dashboard.md, "Online users
 * and rooms"): real pages over WebSockets open as users and join rooms, and the listings follow them
 * by name with their counts, up to the bound of 200 with `more`, and on with `after` and `prefix`.
 */

const PASSWORD = 'correct horse battery staple';

interface UserRow {
  user: string;
  pages: number;
}
interface RoomRow {
  room: string;
  pages: number;
  members: number;
}

let server: TestServer;
let session: DashboardSession;
/** An app of its own for the 200 bound, so its crowd stays out of the other listings. */
let crowdApp: App;
const pages: RawPage[] = [];

beforeAll(async () => {
  crowdApp = newApp({ name: 'crowd', rateLimit: { perSecond: 100_000, burst: 100_000 } });
  server = await startTestServer({
    dashboard: { passwordHash: await hashDashboardPassword(PASSWORD) },
    apps: [crowdApp],
  });
  session = await dashboardSignIn(server, PASSWORD);
});

afterAll(async () => {
  await Promise.all(pages.map((p) => p.close()));
  await server?.close();
});

const sdkOf = (app: App) => new Realtime({ url: server.url, key: app.key, secret: app.secret });

/** A page of `user` (none: a page without a user) that joined `rooms`, as a presence member of `presence`. */
async function openPage(
  sdk: Realtime,
  app: App,
  user: string | undefined,
  rooms: readonly string[],
  presence: readonly string[] = [],
): Promise<RawPage> {
  const identity = user === undefined ? undefined : await sdk.identityToken(user);
  const page = await helloPage(server.url, app.key, identity);
  pages.push(page);
  for (const [ref, room] of rooms.entries()) {
    const token = await sdk.roomToken(room, presence.includes(room) ? { presence: true } : {});
    page.send({ t: 'join', ref: ref + 1, room, token });
    const answer = await page.next((f) => f.ref === ref + 1 && (f.t === 'joined' || f.t === 'error'), `join ${room}`);
    expect(answer.t, JSON.stringify(answer)).toBe('joined');
  }
  return page;
}

const usersPath = (key: string, query = '') => `/dashboard/api/apps/${encodeURIComponent(key)}/users${query}`;
const roomsPath = (key: string, query = '') => `/dashboard/api/apps/${encodeURIComponent(key)}/rooms${query}`;

async function listUsers(key: string, query = ''): Promise<{ users: UserRow[]; more: boolean }> {
  const answer = await dashboardAsk(server, usersPath(key, query), session);
  expect(answer.status, answer.text).toBe(200);
  expect(answer.headers['cache-control']).toBe('no-store');
  return { users: answer.json.users as UserRow[], more: answer.json.more as boolean };
}

async function listRooms(key: string, query = ''): Promise<{ rooms: RoomRow[]; more: boolean }> {
  const answer = await dashboardAsk(server, roomsPath(key, query), session);
  expect(answer.status, answer.text).toBe(200);
  return { rooms: answer.json.rooms as RoomRow[], more: answer.json.more as boolean };
}

/** Polls a listing until it is what is expected: a page's close reaches the stores a moment after the socket ends. */
async function expectListing<T>(read: () => Promise<T>, expected: T): Promise<void> {
  let last: T | undefined;
  await waitFor(async () => {
    last = await read();
    return JSON.stringify(last) === JSON.stringify(expected);
  }, 'the listing').catch(() => expect(last).toEqual(expected));
}

describe('dashboard: online users and occupied rooms', () => {
  it('lists the pages of two users and the rooms they are in, with counts, and follows one leaving', async () => {
    const app = server.app;
    const sdk = sdkOf(app);
    expect(await listUsers(app.key)).toEqual({ users: [], more: false });
    expect(await listRooms(app.key)).toEqual({ rooms: [], more: false });

    await openPage(sdk, app, 'alice', ['lobby', 'alice-notes'], ['lobby']);
    await openPage(sdk, app, 'alice', ['lobby'], ['lobby']);
    const bob = await openPage(sdk, app, 'bob', ['lobby', 'bob-desk'], ['lobby']);
    // A page without a user occupies a room but is no online user.
    const visitor = await openPage(sdk, app, undefined, ['lobby', 'open-hall']);

    expect(await listUsers(app.key)).toEqual({
      users: [
        { user: 'alice', pages: 2 },
        { user: 'bob', pages: 1 },
      ],
      more: false,
    });
    expect(await listRooms(app.key)).toEqual({
      rooms: [
        { room: 'alice-notes', pages: 1, members: 0 },
        { room: 'bob-desk', pages: 1, members: 0 },
        { room: 'lobby', pages: 4, members: 2 },
        { room: 'open-hall', pages: 1, members: 0 },
      ],
      more: false,
    });
    // Other apps see none of it.
    expect(await listUsers(crowdApp.key, '?prefix=alice')).toEqual({ users: [], more: false });

    // Bob leaves: gone from the users at once (though online for webhooks during the offline delay),
    // his room vacated, the lobby one page and one member less.
    await bob.close();
    await visitor.close();
    await expectListing(() => listUsers(app.key), { users: [{ user: 'alice', pages: 2 }], more: false });
    await expectListing(() => listRooms(app.key), {
      rooms: [
        { room: 'alice-notes', pages: 1, members: 0 },
        { room: 'lobby', pages: 2, members: 1 },
      ],
      more: false,
    });
  });

  it('answers the first 200 by name with `more`, and the rest after the last name or by prefix', async () => {
    const sdk = sdkOf(crowdApp);
    const names = Array.from({ length: 201 }, (_, i) => `u-${String(i).padStart(3, '0')}`);
    // Opened from the last name to the first: the listing's order is the names', not the pages'.
    const reversed = [...names].reverse();
    for (let i = 0; i < reversed.length; i += 20) {
      await Promise.all(reversed.slice(i, i + 20).map((user) => openPage(sdk, crowdApp, user, [`room-${user}`])));
    }

    const first = await listUsers(crowdApp.key);
    expect(first.more).toBe(true);
    expect(first.users).toEqual(names.slice(0, 200).map((user) => ({ user, pages: 1 })));
    const rest = await listUsers(crowdApp.key, `?after=${encodeURIComponent('u-199')}`);
    expect(rest).toEqual({ users: [{ user: 'u-200', pages: 1 }], more: false });
    expect(await listUsers(crowdApp.key, '?prefix=u-19')).toEqual({
      users: names.slice(190, 200).map((user) => ({ user, pages: 1 })),
      more: false,
    });

    const rooms = await listRooms(crowdApp.key);
    expect(rooms.more).toBe(true);
    expect(rooms.rooms).toHaveLength(200);
    expect(rooms.rooms[0]).toEqual({ room: 'room-u-000', pages: 1, members: 0 });
    expect(rooms.rooms[199]).toEqual({ room: 'room-u-199', pages: 1, members: 0 });
    expect(await listRooms(crowdApp.key, '?after=room-u-199')).toEqual({
      rooms: [{ room: 'room-u-200', pages: 1, members: 0 }],
      more: false,
    });
  });

  it('refuses without a session, for an app that does not exist, and a query it does not take', async () => {
    const key = server.app.key;
    expectRefusal(await dashboardAsk(server, usersPath(key)), 401, 'signed_out');
    expectRefusal(await dashboardAsk(server, roomsPath(key)), 401, 'signed_out');
    expectRefusal(await dashboardAsk(server, usersPath('no-such-app'), session), 404, 'no_app');
    expectRefusal(await dashboardAsk(server, roomsPath('no-such-app'), session), 404, 'no_app');
    expectRefusal(await dashboardAsk(server, usersPath(key, '?limit=5'), session), 400, 'bad_request');
    expectRefusal(await dashboardAsk(server, usersPath(key, '?after=a&after=b'), session), 400, 'bad_request');
    expectRefusal(
      await dashboardAsk(server, roomsPath(key, `?prefix=${'x'.repeat(201)}`), session),
      400,
      'bad_request',
    );
    expectRefusal(await dashboardAsk(server, roomsPath(key, '?prefix=%E0%A4%A'), session), 400, 'bad_request');
    const post = await dashboardAsk(server, usersPath(key), session, 'POST');
    expectRefusal(post, 405, 'bad_method');
    expect(post.headers.allow).toBe('GET');
  });
});
