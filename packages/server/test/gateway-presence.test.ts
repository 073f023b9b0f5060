import { Realtime, type RoomTokenOptions } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppEvent } from '../src/core/events.js';
import { type Frame, manualClock, waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, isEvent, type RawPage } from './pages.js';

/** Presence members, `$member.*` events, app events for webhooks, and who is online. */
describe('page gateway: presence', () => {
  const clock = manualClock();
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  let ref = 0;
  let marks = 0;

  const open = async (user?: string, info?: Record<string, unknown>) => {
    const identity = user === undefined ? undefined : await sdk.identityToken(user, info ? { info } : {});
    const p = await helloPage(server.url, server.app.key, identity);
    pages.push(p);
    return p;
  };
  const join = async (p: RawPage, room: string, rules: RoomTokenOptions = { presence: true }) => {
    const r = ++ref;
    p.send({ t: 'join', ref: r, room, token: await sdk.roomToken(room, rules) });
    const answer = await p.next((f) => f.ref === r && (f.t === 'joined' || f.t === 'error'), `joined ${room}`);
    expect(answer.t).toBe('joined');
    return answer;
  };
  /** Closes a page and waits until the service has let it go. */
  const closePage = async (p: RawPage) => {
    const before = server.pages();
    await p.close();
    await waitFor(() => server.pages() === before - 1, 'the service to drop the page');
  };
  /**
   * Emits a marker to the room and waits until each page has it. Frames reach a page in the order
   * they were published, so whatever `$member.*` event was due before the marker has arrived by then.
   */
  const barrier = async (room: string, ...to: RawPage[]) => {
    const n = ++marks;
    await sdk.emit({ rooms: [room], event: 'mark', data: n });
    for (const p of to) await p.next((f) => isEvent('mark', room)(f) && f.data === n, `mark ${n}`);
  };
  const memberEvents = (p: RawPage, room: string, event: '$member.joined' | '$member.left', user?: string) =>
    p.frames.filter(
      (f) =>
        isEvent(event, room)(f) && (user === undefined || (f.data as { user?: unknown } | undefined)?.user === user),
    );
  /** Waits until the page has a user's `$member.*` event: it goes out after the `joined` it follows. */
  const memberEvent = (p: RawPage, room: string, event: '$member.joined' | '$member.left', user: string) =>
    p.next((f) => isEvent(event, room)(f) && (f.data as Frame | undefined)?.user === user, `${user} ${event}`);
  const appEvents = (room: string) =>
    (server.events as unknown as { events: { app: string; event: AppEvent }[] }).events
      .filter((e) => e.app === server.app.key && 'room' in e.event && e.event.room === room)
      .map((e) => e.event);
  const byUser = (a: { user: string }, b: { user: string }) => a.user.localeCompare(b.user);

  beforeAll(async () => {
    server = await startTestServer({ now: clock.now });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret, now: clock.now });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
  });

  it('two tabs of one user: one $member.joined, none for the second tab, $member.left only when the last closes', async () => {
    const room = 'two-tabs';
    const obs = await open('obs', { name: 'Obs' });
    expect((await join(obs, room)).members).toEqual([{ user: 'obs', info: { name: 'Obs' } }]);

    const tab1 = await open('alice', { name: 'Alice' });
    const j1 = await join(tab1, room);
    expect([...(j1.members as { user: string }[])].sort(byUser)).toEqual([
      { user: 'alice', info: { name: 'Alice' } },
      { user: 'obs', info: { name: 'Obs' } },
    ]);
    const isMember = (event: string, user: string) => (f: Frame) =>
      isEvent(event, room)(f) && (f.data as Frame | undefined)?.user === user;
    const joinedEvent = await obs.next(isMember('$member.joined', 'alice'), 'alice joined');
    expect(joinedEvent).toMatchObject({ data: { user: 'alice', info: { name: 'Alice' } } });
    expect(joinedEvent).not.toHaveProperty('id');

    const tab2 = await open('alice', { name: 'Alice' });
    const j2 = await join(tab2, room);
    expect((j2.members as { user: string }[]).map((m) => m.user).sort()).toEqual(['alice', 'obs']);

    await barrier(room, obs, tab1, tab2);
    expect(memberEvents(obs, room, '$member.joined', 'alice')).toHaveLength(1);
    // The joining user's own page hears of its join; the second tab does not make another.
    expect(memberEvents(tab1, room, '$member.joined', 'alice')).toHaveLength(1);
    expect(memberEvents(tab2, room, '$member.joined')).toHaveLength(0);

    await closePage(tab1);
    await barrier(room, obs, tab2);
    expect(memberEvents(obs, room, '$member.left')).toHaveLength(0);
    expect(memberEvents(tab2, room, '$member.left')).toHaveLength(0);

    await closePage(tab2);
    const left = await obs.next(isMember('$member.left', 'alice'), 'alice left');
    expect(left.data).toMatchObject({ user: 'alice' });
    expect(left).not.toHaveProperty('id');
    await barrier(room, obs);
    expect(memberEvents(obs, room, '$member.left')).toHaveLength(1);

    // A newcomer no longer sees alice.
    const late = await open('late');
    expect((await join(late, room)).members as { user: string }[]).toEqual([
      { user: 'obs', info: { name: 'Obs' } },
      { user: 'late' },
    ]);
    await closePage(late);
    await closePage(obs);

    // App events (webhooks): one member.joined/left per user, one occupied and one vacated.
    await waitFor(() => appEvents(room).some((e) => e.type === 'room.vacated'), 'room.vacated');
    const events = appEvents(room);
    const count = (type: AppEvent['type'], user?: string) =>
      events.filter((e) => e.type === type && (user === undefined || ('user' in e && e.user === user))).length;
    expect(count('member.joined', 'alice')).toBe(1);
    expect(count('member.left', 'alice')).toBe(1);
    expect(count('member.joined', 'obs')).toBe(1);
    expect(count('member.left', 'obs')).toBe(1);
    expect(count('room.occupied')).toBe(1);
    expect(count('room.vacated')).toBe(1);
    expect(events[0]).toEqual({ type: 'room.occupied', room });
    // Vacated once nobody is left: after every join. (Today the last page's member.left is recorded
    // just after room.vacated, since its seat goes before its presence; the order is not asserted.)
    const vacatedAt = events.findIndex((e) => e.type === 'room.vacated');
    expect(events.slice(vacatedAt + 1).every((e) => e.type === 'member.left')).toBe(true);
    expect(events.slice(vacatedAt).some((e) => e.type === 'member.joined' || e.type === 'room.occupied')).toBe(false);
    const alice = events.filter((e) => 'user' in e && e.user === 'alice').map((e) => e.type);
    expect(alice).toEqual(['member.joined', 'member.left']);
  });

  it('joined.members lists each user once, with the info of their identity', async () => {
    const room = 'roster';
    const carol1 = await open('carol', { name: 'Carol', color: 'red' });
    const carol2 = await open('carol', { name: 'Carol', color: 'red' });
    const dave = await open('dave');
    const erin = await open('erin', { role: 'admin' });
    for (const [p, user] of [
      [carol1, 'carol'],
      [carol2, undefined],
      [dave, 'dave'],
      [erin, 'erin'],
    ] as const) {
      await join(p, room);
      if (user !== undefined) await memberEvent(p, room, '$member.joined', user);
    }
    const newcomer = await open('newcomer', { n: 1 });
    const members = (await join(newcomer, room)).members as { user: string }[];
    await memberEvent(newcomer, room, '$member.joined', 'newcomer');
    expect([...members].sort(byUser)).toEqual([
      { user: 'carol', info: { name: 'Carol', color: 'red' } },
      { user: 'dave' },
      { user: 'erin', info: { role: 'admin' } },
      { user: 'newcomer', info: { n: 1 } },
    ]);
    // carol's second tab joined with no event of its own.
    await barrier(room, dave);
    expect(memberEvents(dave, room, '$member.joined', 'carol')).toHaveLength(0); // carol was there before dave
    expect(memberEvents(dave, room, '$member.joined').map((f) => (f.data as Frame).user)).toEqual([
      'dave',
      'erin',
      'newcomer',
    ]);
  });

  it('anonymous pages and pages without presence in their token are not members', async () => {
    const room = 'not-members';
    const obs = await open('watcher');
    await join(obs, room);
    // Its own `$member.joined` goes out after `joined`: the pages below join once it went.
    await memberEvent(obs, room, '$member.joined', 'watcher');
    const anon = await open();
    await join(anon, room);
    const bob = await open('bob', { name: 'Bob' });
    const bobJoined = await join(bob, room, {});
    expect(bobJoined).not.toHaveProperty('members');
    const frank = await open('frank');
    await join(frank, room, { presence: false });

    await barrier(room, obs, anon, bob, frank);
    expect(memberEvents(obs, room, '$member.joined').map((f) => (f.data as Frame).user)).toEqual(['watcher']);
    const later = await open('later');
    expect(((await join(later, room)).members as { user: string }[]).map((m) => m.user).sort()).toEqual([
      'later',
      'watcher',
    ]);
    // They still get the room's events, $member.* included: they are seated, only not members.
    await memberEvent(later, room, '$member.joined', 'later');
    await barrier(room, anon, bob, frank);
    for (const p of [anon, bob, frank]) {
      expect(memberEvents(p, room, '$member.joined').map((f) => (f.data as Frame).user)).toEqual(['later']);
    }

    for (const p of [anon, bob, frank]) await closePage(p);
    await barrier(room, obs);
    expect(memberEvents(obs, room, '$member.left')).toHaveLength(0);
    const users = appEvents(room)
      .filter((e) => e.type === 'member.joined' || e.type === 'member.left')
      .map((e) => ('user' in e ? e.user : undefined));
    expect(users.sort()).toEqual(['later', 'watcher']);
  });

  it('online: while a tab is open, and until 10 s after the last one closes', async () => {
    expect(await sdk.online(['olive'])).toEqual([]);
    const tab1 = await open('olive');
    expect(await sdk.online(['olive', 'nobody'])).toEqual(['olive']);
    const tab2 = await open('olive');

    await closePage(tab1);
    clock.advance(30_000);
    expect(await sdk.online(['olive'])).toEqual(['olive']);

    await closePage(tab2);
    expect(await sdk.online(['olive'])).toEqual(['olive']);
    clock.advance(9_999);
    expect(await sdk.online(['olive'])).toEqual(['olive']);
    clock.advance(2);
    expect(await sdk.online(['olive'])).toEqual([]);

    // Back again: online at once.
    const tab3 = await open('olive');
    expect(await sdk.online(['olive'])).toEqual(['olive']);
    // An anonymous page makes nobody online.
    await open();
    await closePage(tab3);
    clock.advance(10_001);
    expect(await sdk.online(['olive'])).toEqual([]);
  });
});
