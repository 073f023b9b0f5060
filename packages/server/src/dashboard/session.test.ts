import { createHmac, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DashboardSessionStore } from '../engines/dashboard-session-store.js';
import { MemoryDashboardSessionStore } from '../engines/memory/dashboard-sessions.js';
import { csrfMatches, DEVICE_SECONDS, SESSION_SECONDS, SessionKeys } from './session.js';
import { DashboardSessions, SECRET_READ_MS, SESSION_CHECK_MS } from './sessions.js';

const T0 = 1_800_000_000_000;
const TWELVE_H = SESSION_SECONDS * 1000;
const TEN_YEARS_S = 10 * 365 * 24 * 3600;
const SECRET = randomBytes(32);

/** The text with its last character replaced by another. */
const changed = (text: string) => `${text.slice(0, -1)}${text.endsWith('A') ? 'B' : 'A'}`;

describe('dashboard session cookies', () => {
  it('reads back what it issued until 12 h after its issue, with the same CSRF token', () => {
    const keys = new SessionKeys(SECRET, 'scrypt$hash-a');
    const { cookie, session } = keys.issue(T0);
    expect(session.expiresMs).toBe(T0 + TWELVE_H);
    expect(keys.read(cookie, T0)).toStrictEqual(session);
    expect(keys.read(cookie, T0 + TWELVE_H - 1000)).toStrictEqual(session);
    expect(keys.read(cookie, T0 + TWELVE_H)).toBeUndefined();
    // Another node with the same secret and hash takes it; another secret or another hash does not.
    expect(new SessionKeys(SECRET, 'scrypt$hash-a').read(cookie, T0)).toStrictEqual(session);
    expect(new SessionKeys(randomBytes(32), 'scrypt$hash-a').read(cookie, T0)).toBeUndefined();
    expect(new SessionKeys(SECRET, 'scrypt$hash-b').read(cookie, T0)).toBeUndefined();
  });

  it('refuses forged, stretched and malformed cookies, and any other CSRF token', () => {
    const keys = new SessionKeys(SECRET, 'scrypt$hash-a');
    const { cookie, session } = keys.issue(T0);
    const [v, issued, id, mac] = cookie.split('.') as [string, string, string, string];
    for (const forged of [
      undefined,
      '',
      `${v}.${Number(issued) + 3600}.${id}.${mac}`,
      `${v}.${Number(issued) + TEN_YEARS_S}.${id}.${mac}`,
      `${v}.${issued}.${changed(id)}.${mac}`,
      `${v}.${issued}.${id}.${changed(mac)}`,
      `v1.${issued}.${id}.${mac}`,
      `${cookie}.extra`,
    ]) {
      expect(keys.read(forged, T0)).toBeUndefined();
    }
    expect(csrfMatches(session, session.csrf)).toBe(true);
    expect(csrfMatches(session, undefined)).toBe(false);
    expect(csrfMatches(session, keys.issue(T0).session.csrf)).toBe(false);
  });

  it('refuses a cookie signed with the right key but issued 10 years ahead: no session outlives 12 h from now', () => {
    const keys = new SessionKeys(SECRET, 'scrypt$hash-a');
    const { cookie } = keys.issue(T0 + TEN_YEARS_S * 1000);
    expect(keys.read(cookie, T0)).toBeUndefined();
    // A minute ahead (another node's clock) is taken, and ends 12 h after that issue time.
    const { cookie: soon } = keys.issue(T0 + 60_000);
    expect(keys.read(soon, T0)?.expiresMs).toBe(T0 + 60_000 + TWELVE_H);
  });

  it('no cookie is made from the password hash alone', () => {
    const hash = 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g';
    const keys = new SessionKeys(SECRET, hash);
    const fromHash = createHmac('sha256', 'realtime dashboard session v1').update(hash).digest();
    for (const key of [fromHash, createHmac('sha256', hash).update('realtime dashboard session v2').digest()]) {
      const id = randomBytes(16).toString('base64url');
      for (const body of [`v1.${T0 / 1000 + 3600}.${id}`, `v2.${T0 / 1000}.${id}`]) {
        const built = `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
        expect(keys.read(built, T0)).toBeUndefined();
      }
    }
  });
});

describe('DashboardSessions over a store', () => {
  it('a session is open on every node until signed out on any of them', async () => {
    const store = new MemoryDashboardSessionStore();
    const [a, b] = [new DashboardSessions(store, 'scrypt$h'), new DashboardSessions(store, 'scrypt$h')];
    const { cookie, csrf } = await a.issue(T0);
    expect((await b.read(cookie, T0 + 1000))?.csrf).toBe(csrf);
    const session = await b.read(cookie, T0 + 1000);
    if (!session) throw new Error('not read');
    await b.end(session);
    expect(await a.read(cookie, T0 + 2000)).toBeUndefined();
    expect(await b.read(cookie, T0 + 2000)).toBeUndefined();
  });

  it('a session ends 12 h after its issue, its record too', async () => {
    const store = new MemoryDashboardSessionStore();
    const sessions = new DashboardSessions(store, 'scrypt$h');
    const { cookie } = await sessions.issue(T0);
    expect(await sessions.read(cookie, T0 + TWELVE_H - 1)).toBeDefined();
    expect(await sessions.read(cookie, T0 + TWELVE_H)).toBeUndefined();
    const id = cookie.split('.')[2] as string;
    expect(store.isOpen(id, T0 + TWELVE_H)).toBe(false);
  });

  it('another password hash on the same store refuses every earlier session', async () => {
    const store = new MemoryDashboardSessionStore();
    const { cookie } = await new DashboardSessions(store, 'scrypt$old').issue(T0);
    expect(await new DashboardSessions(store, 'scrypt$new').read(cookie, T0)).toBeUndefined();
    expect(await new DashboardSessions(store, 'scrypt$old').read(cookie, T0)).toBeDefined();
  });

  it('follows a secret that changed in the store (a Redis that lost it, made again by another node) within a second', async () => {
    let store = new MemoryDashboardSessionStore();
    let clock = T0;
    const shared: DashboardSessionStore = {
      signingSecret: (candidate) => store.signingSecret(candidate),
      storedSecret: () => store.storedSecret(),
      open: (id, expiresMs, nowMs) => store.open(id, expiresMs, nowMs),
      isOpen: (id, nowMs) => store.isOpen(id, nowMs),
      close: (id) => store.close(id),
    };
    const options = { now: () => clock };
    const [a, b] = [
      new DashboardSessions(shared, 'scrypt$h', options),
      new DashboardSessions(shared, 'scrypt$h', options),
    ];
    const before = await a.issue(T0);
    expect(await b.read(before.cookie, T0)).toBeDefined();
    store = new MemoryDashboardSessionStore();
    // Sessions of the lost store are gone; the next ones, made by either node, are taken by both.
    expect(await a.read(before.cookie, T0)).toBeUndefined();
    const after = await b.issue(T0);
    // a read the secret at its own sign-in, less than a second ago: it reads it again a second on.
    expect(await a.read(after.cookie, T0)).toBeUndefined();
    clock += SECRET_READ_MS;
    expect((await a.read(after.cookie, T0))?.csrf).toBe(after.csrf);
    const again = await a.issue(T0);
    expect((await b.read(again.cookie, T0))?.csrf).toBe(again.csrf);
  });

  it('a value not of the signed form costs no store call', async () => {
    const { counts, counted } = counting(new MemoryDashboardSessionStore());
    const sessions = new DashboardSessions(counted, 'scrypt$h');
    for (const value of [undefined, '', 'made-up', 'v2.1.2.3', `v1.${T0}.x.y`]) {
      expect(await sessions.read(value, T0)).toBeUndefined();
    }
    expect(counts).toEqual({ made: 0, read: 0, isOpen: 0 });
  });

  /** The store with every call counted: `made` the secret's write-if-absent, `read` its plain read. */
  function counting(store: MemoryDashboardSessionStore) {
    const counts = { made: 0, read: 0, isOpen: 0 };
    const counted: DashboardSessionStore = {
      signingSecret: (candidate) => {
        counts.made++;
        return store.signingSecret(candidate);
      },
      storedSecret: () => {
        counts.read++;
        return store.storedSecret();
      },
      open: (id, expiresMs, nowMs) => store.open(id, expiresMs, nowMs),
      isOpen: (id, nowMs) => {
        counts.isOpen++;
        return store.isOpen(id, nowMs);
      },
      close: (id) => store.close(id),
    };
    return { counts, counted };
  }

  /** A cookie of the signed form, issued at `nowMs`, whose signature is made up. */
  const forged = (nowMs: number) =>
    `v2.${Math.floor(nowMs / 1000)}.${randomBytes(16).toString('base64url')}.${randomBytes(32).toString('base64url')}`;

  it('a forged cookie of the signed form writes nothing, and the secret is read at most once a second', async () => {
    let clock = T0;
    const store = new MemoryDashboardSessionStore();
    const real = await new DashboardSessions(store, 'scrypt$h').issue(T0);
    const { counts, counted } = counting(store);
    const sessions = new DashboardSessions(counted, 'scrypt$h', { now: () => clock });
    // At once (requests in flight together) and one after another, within a second.
    const together = await Promise.all(Array.from({ length: 50 }, () => sessions.read(forged(T0), T0)));
    expect(together.every((session) => session === undefined)).toBe(true);
    for (let i = 0; i < 50; i++) expect(await sessions.read(forged(T0), T0)).toBeUndefined();
    expect(counts).toEqual({ made: 0, read: 1, isOpen: 0 });
    clock += 999;
    expect(await sessions.read(forged(T0), T0)).toBeUndefined();
    expect(counts.read).toBe(1);
    clock += 1;
    for (let i = 0; i < 20; i++) expect(await sessions.read(forged(T0), T0)).toBeUndefined();
    expect(counts).toEqual({ made: 0, read: 2, isOpen: 0 });
    // The real cookie still reads, with no read of the secret: its keys are known.
    expect((await sessions.read(real.cookie, T0))?.csrf).toBe(real.csrf);
    expect(counts).toEqual({ made: 0, read: 2, isOpen: 1 });
  });

  it('a known-browser cookie is taken for 30 days, on every node, and only when signed by this secret and hash', async () => {
    const store = new MemoryDashboardSessionStore();
    const { device } = await new DashboardSessions(store, 'scrypt$h').issue(T0);
    const { counts, counted } = counting(store);
    const other = new DashboardSessions(counted, 'scrypt$h', { now: () => T0 });
    expect(await other.knowsDevice(device, T0)).toBe(true);
    expect(await other.knowsDevice(device, T0 + DEVICE_SECONDS * 1000 - 1)).toBe(true);
    expect(await other.knowsDevice(device, T0 + DEVICE_SECONDS * 1000)).toBe(false);
    expect(await other.knowsDevice(changed(device), T0)).toBe(false);
    expect(await other.knowsDevice(undefined, T0)).toBe(false);
    expect(await other.knowsDevice('d1.x', T0)).toBe(false);
    // A session cookie is no known-browser cookie, nor the other way round.
    const { cookie } = await new DashboardSessions(store, 'scrypt$h').issue(T0);
    expect(await other.knowsDevice(cookie, T0)).toBe(false);
    expect(await other.read(device, T0)).toBeUndefined();
    expect(await new DashboardSessions(store, 'scrypt$other').knowsDevice(device, T0)).toBe(false);
    // Checking them wrote nothing and read the secret once.
    expect(counts).toEqual({ made: 0, read: 1, isOpen: 0 });
  });

  it('a forged cookie makes no secret in a store that has none', async () => {
    const store = new MemoryDashboardSessionStore();
    const { counts, counted } = counting(store);
    const sessions = new DashboardSessions(counted, 'scrypt$h', { now: () => T0 });
    for (let i = 0; i < 10; i++) expect(await sessions.read(forged(T0), T0)).toBeUndefined();
    expect(counts.made).toBe(0);
    expect(counts.read).toBeLessThanOrEqual(1);
    expect(store.storedSecret()).toBeUndefined();
    // The first sign-in makes it; this node follows it once a second has passed.
    const { cookie } = await new DashboardSessions(store, 'scrypt$h').issue(T0);
    expect(await new DashboardSessions(counted, 'scrypt$h', { now: () => T0 + 1000 }).read(cookie, T0)).toBeDefined();
  });
});

describe('watching a session (streams that outlive their request)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ends at once when signed out on this node, at the next check when on another, and when it expires', async () => {
    vi.useFakeTimers();
    let clock = T0;
    const store = new MemoryDashboardSessionStore();
    const here = new DashboardSessions(store, 'scrypt$h', { now: () => clock });
    const there = new DashboardSessions(store, 'scrypt$h', { now: () => clock });
    const [one, two, three] = [await here.issue(T0), await here.issue(T0), await here.issue(T0)];
    const read = async (sessions: DashboardSessions, cookie: string) => {
      const session = await sessions.read(cookie, clock);
      if (!session) throw new Error('not read');
      return session;
    };
    const ended: string[] = [];
    here.watch(await read(here, one.cookie), () => ended.push('one here'));
    there.watch(await read(there, one.cookie), () => ended.push('one there'));
    there.watch(await read(there, two.cookie), () => ended.push('two there'));
    const stop = there.watch(await read(there, three.cookie), () => ended.push('three, unwatched'));
    stop();

    await here.end(await read(here, one.cookie));
    expect(ended).toEqual(['one here']);
    await vi.advanceTimersByTimeAsync(SESSION_CHECK_MS);
    expect(ended).toEqual(['one here', 'one there']);
    // Unwatched, never called; open, not ended until it expires.
    clock = T0 + TWELVE_H;
    await vi.advanceTimersByTimeAsync(SESSION_CHECK_MS);
    expect(ended).toEqual(['one here', 'one there', 'two there']);
    // Nothing watched: no timer left behind.
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a store that fails ends nothing: the next check asks again', async () => {
    vi.useFakeTimers();
    const store = new MemoryDashboardSessionStore();
    let failing = true;
    const flaky: DashboardSessionStore = {
      signingSecret: (candidate) => store.signingSecret(candidate),
      storedSecret: () => store.storedSecret(),
      open: (id, expiresMs, nowMs) => store.open(id, expiresMs, nowMs),
      isOpen: (id, nowMs) => {
        if (failing) throw new Error('unavailable');
        return store.isOpen(id, nowMs);
      },
      close: (id) => store.close(id),
    };
    failing = false;
    const sessions = new DashboardSessions(flaky, 'scrypt$h', { now: () => T0 });
    const { cookie } = await sessions.issue(T0);
    const session = await sessions.read(cookie, T0);
    if (!session) throw new Error('not read');
    let ended = 0;
    sessions.watch(session, () => ended++);
    store.close(session.id);
    failing = true;
    await vi.advanceTimersByTimeAsync(SESSION_CHECK_MS);
    expect(ended).toBe(0);
    failing = false;
    await vi.advanceTimersByTimeAsync(SESSION_CHECK_MS);
    expect(ended).toBe(1);
  });
});
