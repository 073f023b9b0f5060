import { describe, expect, it, vi } from 'vitest';
import { ManualClock, NodeWebSocket, once, stateOf, TrackedTimers, useFakeService } from '../test/fake-service.js';
import { connect, RealtimeSocketError, type StateChange } from './index.js';

const { service, open } = useFakeService();

describe('handshake', () => {
  it('opens the socket URL with the site key and says hello with v 1 and the identity', async () => {
    const client = open({ site: 'app 1/é', identity: 'id-token' });
    expect(client.state).toBe('connecting');
    const page = await service().accept();
    expect(page.url.pathname).toBe('/service/realtime/socket');
    expect(page.url.searchParams.get('site')).toBe('app 1/é');
    expect(page.url.search).toBe(`?site=${encodeURIComponent('app 1/é')}`);
    const hello = await page.welcome({ user: 'alice' });
    expect(hello).toEqual({ t: 'hello', v: 1, identity: 'id-token' });
    await stateOf(client, 'connected');
    expect(client.user).toBe('alice');
  });

  it('says hello without identity for an anonymous page, whose user is null', async () => {
    const client = open();
    expect(client.user).toBeUndefined();
    const hello = await (await service().accept()).welcome({ user: null });
    expect(hello).toEqual({ t: 'hello', v: 1 });
    await stateOf(client, 'connected');
    expect(client.user).toBeNull();
  });

  it('calls an identity function before every connect, so a reconnect sends a fresh identity', async () => {
    let calls = 0;
    const client = open({ identity: async () => `identity-${++calls}` });
    const first = await service().accept();
    expect((await first.welcome({ user: 'alice' })).identity).toBe('identity-1');
    await stateOf(client, 'connected');
    first.close(4100, 'restarting');
    const second = await service().accept();
    expect((await second.welcome({ user: 'alice' })).identity).toBe('identity-2');
    await stateOf(client, 'connected');
    expect(calls).toBe(2);
  });

  it('sends nothing but hello before welcome, and ignores other frames until then', async () => {
    const client = open();
    const seen: unknown[] = [];
    client.on('early', (data) => seen.push(data));
    const late = once<unknown>((resolve) => client.on('late', resolve));
    client.join('lobby', { token: 'room-token' });
    const page = await service().accept();
    await page.next('hello');
    page.send({ t: 'event', event: 'early', data: 1 });
    page.send({ t: 'ping' });
    page.send({ t: 'welcome', v: 1, user: null, heartbeat: 25_000 });
    page.send({ t: 'event', event: 'early', data: 2 });
    page.send({ t: 'event', event: 'late', data: 3 });
    expect(await late).toBe(3);
    expect(seen).toEqual([2]);
    await page.next('pong');
    await page.next('join');
    // Only after welcome does the page join its rooms.
    expect(page.received.map((frame) => frame.t)).toEqual(['hello', 'pong', 'join']);
  });

  it('stops when the service welcomes with another protocol version', async () => {
    const client = open();
    const page = await service().accept();
    await page.next('hello');
    page.send({ t: 'welcome', v: 2, user: null, heartbeat: 25_000 });
    await stateOf(client, 'closed');
    expect((await page.closed).code).toBe(1000);
  });

  it('throws at once for a URL that is not http(s) or ws(s), and without a WebSocket', () => {
    expect(() => connect({ url: 'ftp://example.com', site: 'a', WebSocket: NodeWebSocket })).toThrow(TypeError);
    expect(() => connect({ url: service().url, site: '', WebSocket: NodeWebSocket })).toThrow(TypeError);
    // Node 20 has no global WebSocket.
    if (!('WebSocket' in globalThis)) expect(() => connect({ url: service().url, site: 'a' })).toThrow(/WebSocket/);
  });
});

describe('states and reconnecting', () => {
  it('goes connecting → connected → reconnecting → connected after the service closes with 4100', async () => {
    const client = open();
    const changes: StateChange[] = [];
    client.on('$state', (change) => changes.push(change));
    const first = await service().acceptWelcomed();
    await stateOf(client, 'connected');
    first.close(4100, 'restarting');
    await service().acceptWelcomed();
    await stateOf(client, 'connected');
    expect(changes.map((c) => `${c.previous}>${c.state}`)).toEqual([
      'connecting>connected',
      'connected>reconnecting',
      'reconnecting>connected',
    ]);
    expect(changes[1]).toMatchObject({ code: 4100, reason: 'restarting', retryIn: 0 });
  });

  it('reconnects after a dropped TCP connection (1006) and after a failed attempt', async () => {
    const client = open();
    (await service().acceptWelcomed()).terminate();
    await stateOf(client, 'reconnecting');
    // The next attempt fails before welcome; the one after succeeds.
    (await service().accept()).terminate();
    await service().acceptWelcomed();
    await stateOf(client, 'connected');
    expect(service().pages).toHaveLength(3);
  });

  it.each([
    [4000, 'unsupported version'],
    [4001, 'unknown site'],
    [4003, 'bad hello'],
    [4099, 'end of the stop range'],
    [1000, 'closed on purpose'],
  ])('stops on close %i (%s): closed, no retry timer left', async (code, reason) => {
    const clock = new ManualClock();
    const client = open({ now: () => clock.now(), timers: clock });
    const page = await service().acceptWelcomed();
    await stateOf(client, 'connected');
    const change = once<StateChange>((resolve) => client.on('$state', resolve));
    page.close(code, reason);
    expect(await change).toMatchObject({ state: 'closed', previous: 'connected', code, reason });
    expect(client.state).toBe('closed');
    expect(clock.pendingTimers).toBe(0);
    clock.advance(60_000);
    expect(service().pages).toHaveLength(1);
  });

  it('stops on 4002 when the identity is a fixed string', async () => {
    const client = open({ identity: 'expired' });
    const page = await service().accept();
    await page.next('hello');
    page.close(4002, 'identity not valid');
    await stateOf(client, 'closed');
  });

  it('on 4002 with an identity function, fetches a fresh identity and reconnects', async () => {
    const identities = ['stale', 'fresh'];
    const client = open({ identity: () => identities.shift() });
    const first = await service().accept();
    expect((await first.next('hello')).identity).toBe('stale');
    first.close(4002, 'identity not valid');
    const second = await service().accept();
    expect((await second.welcome({ user: 'alice' })).identity).toBe('fresh');
    await stateOf(client, 'connected');
    expect(client.user).toBe('alice');
  });

  it('reports a failing identity function as $error identity_failed and tries again', async () => {
    let calls = 0;
    const client = open({
      identity: () => {
        calls++;
        if (calls === 1) throw new Error('offline');
        return 'ok';
      },
    });
    const error = await once<RealtimeSocketError>((resolve) => client.on('$error', resolve));
    expect(error).toBeInstanceOf(RealtimeSocketError);
    expect(error.code).toBe('identity_failed');
    expect((await (await service().accept()).welcome()).identity).toBe('ok');
    await stateOf(client, 'connected');
  });

  it('waits a full-jitter delay: base 500 ms after reconnect codes, 5 s after back-off codes (42xx, 1009)', async () => {
    const clock = new ManualClock();
    const client = open({ now: () => clock.now(), timers: clock, random: () => 0.5 });
    const changes: StateChange[] = [];
    client.on('$state', (change) => changes.push(change));
    let page = await service().acceptWelcomed();
    await stateOf(client, 'connected');

    page.close(4200, 'slow consumer');
    await stateOf(client, 'reconnecting');
    expect(changes.at(-1)?.retryIn).toBe(2500); // 0.5 x 5 s
    expect(service().pages).toHaveLength(1);
    clock.advance(2500);
    page = await service().acceptWelcomed();
    await stateOf(client, 'connected');

    page.close(4100, 'restarting');
    await stateOf(client, 'reconnecting');
    expect(changes.at(-1)?.retryIn).toBe(250); // 0.5 x 500 ms: the welcome reset the attempts
    clock.advance(250);
    page = await service().acceptWelcomed();
    await stateOf(client, 'connected');

    page.close(1009, 'too big');
    await stateOf(client, 'reconnecting');
    expect(changes.at(-1)?.retryIn).toBe(2500);
  });

  it("waits the service's hinted delay (`reconnect in <ms> ms`), then goes on with its own backoff", async () => {
    const clock = new ManualClock();
    // Records every timer the connection sets: the retry timer, then the watchdog of the attempt it starts.
    const set: number[] = [];
    const timers = {
      setTimeout: (callback: () => void, ms: number) => {
        set.push(ms);
        return clock.setTimeout(callback, ms);
      },
      clearTimeout: (handle: unknown) => clock.clearTimeout(handle),
    };
    const client = open({ now: () => clock.now(), timers, random: () => 0.5 });
    const changes: StateChange[] = [];
    client.on('$state', (change) => changes.push(change));
    let page = await service().acceptWelcomed();
    await stateOf(client, 'connected');

    page.close(4100, 'the service is stopping; reconnect in 7000 ms');
    await stateOf(client, 'reconnecting');
    expect(changes.at(-1)).toMatchObject({ code: 4100, retryIn: 7000 });
    expect(set.at(-1)).toBe(7000);
    clock.advance(6999);
    expect(set.at(-1)).toBe(7000); // no attempt yet: it would have armed its watchdog
    expect(service().pages).toHaveLength(1);
    clock.advance(1);
    expect(set.at(-1)).not.toBe(7000);
    // That attempt fails: the next delay is the second step of the page's own backoff (0.5 x 1 s).
    page = await service().accept();
    // Still reconnecting (no state change): the retry timer it sets shows the delay.
    page.close(4100, 'restarting');
    await vi.waitFor(() => expect(set.at(-1)).toBe(500));
    clock.advance(500);
    page = await service().acceptWelcomed();
    await stateOf(client, 'connected');

    // Without a hint, its own first step (0.5 x 500 ms); a hint counts after back-off codes too.
    page.close(4100, 'restarting');
    await stateOf(client, 'reconnecting');
    expect(changes.at(-1)?.retryIn).toBe(250);
    clock.advance(250);
    page = await service().acceptWelcomed();
    await stateOf(client, 'connected');
    page.close(4200, 'slow consumer; reconnect in 12000 ms');
    await stateOf(client, 'reconnecting');
    expect(changes.at(-1)?.retryIn).toBe(12_000);
  });

  it('close() closes the socket with 1000, ends in closed and leaves no timer', async () => {
    const timers = new TrackedTimers();
    const client = open({ timers });
    const page = await service().acceptWelcomed();
    await stateOf(client, 'connected');
    client.close();
    expect(client.state).toBe('closed');
    expect((await page.closed).code).toBe(1000);
    expect(timers.pending.size).toBe(0);
    client.close(); // a second close is harmless
    expect(client.state).toBe('closed');
  });

  it('close() while still connecting stops the attempt', async () => {
    const client = open();
    const page = await service().accept();
    client.close();
    expect(client.state).toBe('closed');
    await page.closed;
    expect(service().pages).toHaveLength(1);
  });
});

describe('heartbeat', () => {
  it("answers the service's ping with pong", async () => {
    const client = open();
    const page = await service().acceptWelcomed({ heartbeat: 60_000 });
    await stateOf(client, 'connected');
    page.send({ t: 'ping' });
    expect(await page.next('pong')).toEqual({ t: 'pong' });
    page.send({ t: 'ping' });
    expect(await page.next('pong')).toEqual({ t: 'pong' });
  });

  it('closes and reconnects when no frame at all arrives for twice the heartbeat', async () => {
    const clock = new ManualClock();
    const client = open({ now: () => clock.now(), timers: clock });
    const first = await service().acceptWelcomed({ heartbeat: 1000 });
    await stateOf(client, 'connected');
    clock.advance(1500);
    first.send({ t: 'ping' }); // a frame: the page keeps waiting
    await first.next('pong');
    clock.advance(1999);
    expect(client.state).toBe('connected');
    const change = once<StateChange>((resolve) => client.on('$state', resolve));
    clock.advance(1);
    expect(await change).toMatchObject({ state: 'reconnecting', code: 1006 });
    expect((await first.closed).code).toBe(1000);
    clock.advance(0);
    await service().acceptWelcomed();
    await stateOf(client, 'connected');
  });

  it('gives up an attempt that gets no welcome within connectTimeoutMs', async () => {
    const clock = new ManualClock();
    const client = open({ now: () => clock.now(), timers: clock, connectTimeoutMs: 3000 });
    const first = await service().accept();
    await first.next('hello');
    clock.advance(3000);
    await stateOf(client, 'reconnecting');
    await first.closed;
    clock.advance(0);
    await service().acceptWelcomed();
    await stateOf(client, 'connected');
  });
});

describe('user events and errors', () => {
  it('delivers events without a room to client listeners, with their name and sender', async () => {
    const client = open();
    const page = await service().acceptWelcomed({ user: 'alice' });
    const got = once<[unknown, unknown]>((resolve) => client.on('notice', (data, meta) => resolve([data, meta])));
    page.send({ t: 'event', event: 'notice', data: { n: 1 } });
    expect(await got).toEqual([{ n: 1 }, { event: 'notice', from: undefined }]);
  });

  it('never lets a user event named with $ reach the SDK listeners', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    const states: unknown[] = [];
    client.on('$state', (change) => states.push(change));
    page.send({ t: 'event', event: '$state', data: 'spoof' });
    page.send({ t: 'event', event: 'after', data: 1 });
    await once((resolve) => client.on('after', resolve));
    expect(states).toEqual([{ state: 'connected', previous: 'connecting' }]);
  });

  it('emits error frames without a pending ref as $error, and ignores junk frames', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    await stateOf(client, 'connected');
    page.sendText('not json');
    page.sendText('[1,2]');
    page.send({ t: 'something-new' });
    const error = once<RealtimeSocketError>((resolve) => client.on('$error', resolve));
    page.send({ t: 'error', code: 'rate_limited', message: 'slow down', ref: 999 });
    const got = await error;
    expect(got).toBeInstanceOf(RealtimeSocketError);
    expect(got.code).toBe('rate_limited');
    expect(got.message).toBe('slow down');
    expect(client.state).toBe('connected');
  });
});
