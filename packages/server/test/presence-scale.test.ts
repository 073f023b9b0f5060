import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppEvent } from '../src/core/events.js';
import { waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';
import { presenceView, walkMembers } from './presence-view.js';

const THRESHOLD = 20;
const PAGE = 50;
const N = 600;

/**
 * Large presence rooms (threshold lowered to 20): `joined` with a count and a first page, member
 * changes coalesced into `members` frames, pages of members by cursor, and every page ending with
 * the right count.
 */
describe('page gateway: large presence rooms', () => {
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  let ref = 0;

  const open = async (user: string) => {
    const page = await helloPage(server.url, server.app.key, await sdk.identityToken(user, { info: { n: user } }));
    pages.push(page);
    return page;
  };
  const join = async (page: RawPage, room: string) => {
    const r = ++ref;
    page.send({ t: 'join', ref: r, room, token: await sdk.roomToken(room, { presence: true }) });
    const answer = await page.next((f) => f.ref === r && (f.t === 'joined' || f.t === 'error'), `joined ${room}`);
    expect(answer.t).toBe('joined');
    return answer;
  };
  const closeAll = async (gone: RawPage[]) => {
    const before = server.pages();
    await Promise.all(gone.map((p) => p.close()));
    await waitFor(() => server.pages() === before - gone.length, 'the service to drop the pages');
  };
  const reported = (type: string, room: string) =>
    (server.events as unknown as { events: { app: string; event: AppEvent }[] }).events.filter(
      (e) => e.app === server.app.key && e.event.type === type && 'room' in e.event && e.event.room === room,
    );

  beforeAll(async () => {
    server = await startTestServer({
      gateway: {
        members: { threshold: THRESHOLD, pageSize: PAGE, minWindowMs: 200, maxWindowMs: 400, msPerMember: 1 },
      },
    });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
  });

  it(`${N} members: coalesced changes, the right count on every page, each member once by cursor`, async () => {
    const room = 'stadium';
    const users = Array.from({ length: N }, (_, i) => `u${i}`);
    const byUser = new Map<string, RawPage>();
    const answers = new Map<string, Record<string, unknown>>();
    // The first members one by one (a small room), then in bursts of 50 joining at once.
    for (let i = 0; i < N; ) {
      const burst = users.slice(i, i + (i < THRESHOLD + 5 ? 1 : 50));
      await Promise.all(
        burst.map(async (user) => {
          const page = await open(user);
          byUser.set(user, page);
          answers.set(user, await join(page, room));
        }),
      );
      i += burst.length;
    }

    for (const [i, user] of users.entries()) {
      const joined = answers.get(user) as Record<string, unknown>;
      const members = joined.members as { user: string; info?: unknown }[];
      if (joined.count === undefined) {
        // Joined while the room was small: the whole list, as always.
        expect(i).toBeLessThan(THRESHOLD + 5);
        expect(joined.cursor).toBeUndefined();
        expect(members.length).toBeLessThanOrEqual(THRESHOLD);
        expect(members).toContainEqual({ user, info: { n: user } });
      } else {
        expect(joined.count).toBeGreaterThan(THRESHOLD);
        expect(members).toHaveLength(THRESHOLD);
        expect(members[0]).toEqual({ user: 'u0', info: { n: 'u0' } });
        expect(joined.cursor).toEqual(expect.any(String));
      }
    }
    expect(answers.get(users[N - 1] as string)?.count).toBeGreaterThan(THRESHOLD);

    // Every page ends with the right count; pages given the whole list keep it whole.
    await waitFor(
      () => users.every((user) => presenceView(byUser.get(user) as RawPage, room).count === N),
      `every page to count ${N}`,
      20_000,
    );
    // A frame's count is the newest the node read, so it can run a change ahead of the list (a join's
    // count is read before a concurrent join is announced): the whole lists follow within a window.
    await waitFor(
      () => users.slice(0, THRESHOLD).every((user) => presenceView(byUser.get(user) as RawPage, room).users.size === N),
      `the whole lists to hold ${N}`,
      5_000,
    );
    for (const user of users.slice(0, THRESHOLD)) {
      const view = presenceView(byUser.get(user) as RawPage, room);
      expect(view.partial).toBe(false);
      expect(view.count).toBe(N);
    }
    // Changes went out coalesced: pages of the large room got no `$member.*` event, only `members` frames,
    // and those frames carry several changes each (bursts of 50 joins fall into one window).
    let frames = 0;
    let changes = 0;
    for (const user of users.slice(THRESHOLD + 5)) {
      const page = byUser.get(user) as RawPage;
      expect(presenceView(page, room).memberEvents).toBe(0);
      for (const f of page.frames) {
        if (f.t !== 'members') continue;
        frames++;
        changes += (f.joined as unknown[]).length + (f.left as unknown[]).length;
      }
    }
    expect(frames).toBeGreaterThan(0);
    expect(changes / frames).toBeGreaterThan(2);

    // A page walks every member by cursor, each exactly once (in join order: bursts joined in any order).
    const walker = byUser.get(users[N - 2] as string) as RawPage; // stays below
    const walked = await walkMembers(walker, room, 100_000);
    expect(walked.slice(0, THRESHOLD)).toEqual(users.slice(0, THRESHOLD));
    expect([...walked].sort()).toEqual([...users].sort());

    // Every odd user leaves; every remaining page ends with half the count, the whole lists stay right.
    const leaving = users.filter((_, i) => i % 2 === 1);
    const staying = users.filter((_, i) => i % 2 === 0);
    await closeAll(leaving.map((user) => byUser.get(user) as RawPage));
    await waitFor(
      () => staying.every((user) => presenceView(byUser.get(user) as RawPage, room).count === N / 2),
      `every page to count ${N / 2}`,
      20_000,
    );
    await waitFor(
      () =>
        staying
          .slice(0, THRESHOLD / 2)
          .every((user) => presenceView(byUser.get(user) as RawPage, room).users.size === N / 2),
      `the whole lists to hold ${N / 2}`,
      5_000,
    );
    for (const user of staying.slice(0, THRESHOLD / 2)) {
      expect([...presenceView(byUser.get(user) as RawPage, room).users].sort()).toEqual([...staying].sort());
    }
    expect((await walkMembers(walker, room, 200_000)).sort()).toEqual([...staying].sort());

    // Webhook events stay one per user.
    expect(reported('member.joined', room)).toHaveLength(N);
    expect(reported('member.left', room)).toHaveLength(N / 2);
  }, 120_000);

  it('list: pages of a room the page is in, refused for others and for a bad cursor', async () => {
    const page = await open('lister');
    page.send({ t: 'list', ref: 1, room: 'elsewhere' });
    expect(await page.next((f) => f.ref === 1, 'error 1')).toMatchObject({ t: 'error', code: 'not_joined' });
    page.send({ t: 'list', ref: 2, room: 'elsewhere', cursor: 5 });
    expect(await page.next((f) => f.ref === 2, 'error 2')).toMatchObject({ t: 'error', code: 'bad_frame' });
    await join(page, 'quiet');
    page.send({ t: 'list', ref: 3, room: 'quiet' });
    expect(await page.next((f) => f.ref === 3, 'listed 3')).toEqual({
      t: 'listed',
      ref: 3,
      room: 'quiet',
      members: [{ user: 'lister', info: { n: 'lister' } }],
      count: 1,
    });
    // A cursor the store never gave starts from the first member.
    page.send({ t: 'list', ref: 4, room: 'quiet', cursor: 'not-a-cursor' });
    expect(await page.next((f) => f.ref === 4, 'listed 4')).toMatchObject({ t: 'listed', count: 1 });
  });
});
