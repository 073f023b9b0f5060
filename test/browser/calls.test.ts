import { networkInterfaces } from 'node:os';
import { Realtime } from '@realtime/node';
import { newApp } from '@realtime/server';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { skewedClock } from '../../packages/server/test/gateway-tools.js';
import { startTestServer } from '../../packages/server/test/helpers.js';
import { startReceiver } from '../../packages/server/test/receiver.js';
import { closeChromium, launchChromium } from './chromium.js';
import { openSdkPage, roundTrip, startPageServer } from './harness.js';

type Entry = [kind: string, ...rest: unknown[]];

/** This machine's own addresses. */
const hostAddresses = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
interface PhoneWindow {
  RT: typeof import('@realtime/browser');
  client: import('@realtime/browser').RealtimeClient;
  log: Entry[];
  rings: import('@realtime/browser').IncomingCall[];
  calls: import('@realtime/browser').Call[];
  track(call: import('@realtime/browser').Call): void;
}

/** What a page's call saw: media decoded, and where the media went. */
interface MediaSeen {
  framesDecoded: number;
  audioPackets: number;
  /** Addresses of the candidates the other side sent (peer-reflexive ones, learnt from checks, have theirs hidden). */
  remoteAddresses: string[];
  /** This side's address in the pair carrying the media. */
  pairAddress: string | undefined;
  /** Types of this side's candidates: `host` only, with no STUN or TURN server given. */
  localTypes: string[];
  remoteKinds: string[];
}

/** A service for the suite: webhooks to a receiver on 127.0.0.1, calls ringing for `ringMs`. */
async function service(ringMs: number) {
  const app = newApp({ name: 'calls' });
  const receiver = await startReceiver(app);
  // The service's clock: a test moves it past a second instead of waiting one.
  const clock = skewedClock();
  const server = await startTestServer({
    app: { ...app, webhook: receiver.url },
    allowPrivateWebhooks: true,
    webhooks: { windowMs: 100 },
    calls: { ringMs },
    now: clock.now,
  });
  const sdk = new Realtime({ url: server.url, key: app.key, secret: app.secret });
  return { server, receiver, sdk, clock };
}
type Service = Awaited<ReturnType<typeof service>>;

describe('calls between two people in headless Chromium, ICE candidates on loopback', { timeout: 60_000 }, () => {
  let main: Service;
  let short: Service;
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };
  let opened: Page[] = [];

  beforeAll(async () => {
    main = await service(30_000);
    short = await service(1_500);
    pages = await startPageServer();
    browser = await launchChromium({ media: true });
  }, 60_000);
  afterEach(async () => {
    await Promise.all(opened.map((page) => page.close().catch(() => {})));
    opened = [];
  });
  afterAll(async () => {
    await closeChromium(browser);
    await pages?.close();
    for (const env of [main, short]) {
      await env?.sdk.close();
      await env?.server.close();
      await env?.receiver.close();
    }
  });

  /**
   * A page of `user` (each in its own browser context), connected, logging rings, call states and
   * ends. ICE is kept to 127.0.0.1 both ways, unless `candidates: 'none'` drops every candidate.
   */
  async function phone(
    user: string,
    options: { env?: Service; candidates?: 'loopback' | 'none'; connectTimeoutMs?: number } = {},
  ): Promise<Page> {
    const env = options.env ?? main;
    const page = await openSdkPage(browser, pages.url);
    opened.push(page);
    const identity = await env.sdk.identityToken(user);
    await page.evaluate(
      ({ url, site, identity, candidates, connectTimeoutMs }) => {
        const w = window as unknown as PhoneWindow;
        w.log = [];
        w.rings = [];
        w.calls = [];
        // A candidate line: `candidate:<foundation> <component> <protocol> <priority> <address> <port> typ ...`.
        const loopback = (c: RTCIceCandidateInit) => (c.candidate ?? '').split(' ')[4] === '127.0.0.1';
        w.client = w.RT.connect({
          url,
          site,
          identity,
          rtc: { candidateFilter: candidates === 'none' ? () => false : loopback, connectTimeoutMs },
        });
        w.track = (call) => {
          w.calls.push(call);
          call.on('state', (state) => w.log.push(['state', state]));
          call.on('local', (stream) => w.log.push(['local', stream.getTracks().map((t) => t.kind)]));
          call.on('remote', (track) => w.log.push(['remote', track.kind]));
          void call.ended.then((end) => w.log.push(['ended', end.reason, end.error?.code ?? null]));
        };
        w.client.on('$error', (error) => w.log.push(['$error', error.code, error.message]));
        w.client.on('$call', (incoming) => {
          w.rings.push(incoming);
          w.log.push(['ring', incoming.id, incoming.from, incoming.media]);
          incoming.on('ended', (end) => w.log.push(['ring-ended', incoming.id, end.reason, end.error?.code ?? null]));
        });
      },
      {
        url: env.server.url,
        site: env.server.app.key,
        identity,
        candidates: options.candidates ?? 'loopback',
        connectTimeoutMs: options.connectTimeoutMs,
      },
    );
    await page.waitForFunction(() => (window as unknown as PhoneWindow).client.state === 'connected');
    return page;
  }

  /** The page calls `to` with a call token minted for it. */
  async function dial(
    page: Page,
    from: string,
    to: string,
    options: { env?: Service; video?: boolean; tokenTo?: string } = {},
  ): Promise<void> {
    const env = options.env ?? main;
    const video = options.video ?? true;
    const token = await env.sdk.callToken(from, {
      to: options.tokenTo ?? to,
      media: video ? ['audio', 'video'] : ['audio'],
    });
    await page.evaluate(
      ({ to, token, video }) => {
        const w = window as unknown as PhoneWindow;
        w.track(w.client.call(to, { token: async () => token, media: { audio: true, video } }));
      },
      { to, token, video },
    );
  }

  /** Waits for a log entry of `kind` (and `first` value); returns it. */
  async function seen(page: Page, kind: string, first?: unknown, ms = 20_000): Promise<Entry> {
    const handle = await page.waitForFunction(
      ({ kind, first }) =>
        (window as unknown as PhoneWindow).log.find((e) => e[0] === kind && (first === undefined || e[1] === first)),
      { kind, first },
      { timeout: ms },
    );
    return (await handle.jsonValue()) as Entry;
  }

  const log = (page: Page) => page.evaluate(() => (window as unknown as PhoneWindow).log);

  /** Accepts the page's ring `index` with its default media (audio, and video for a video call). */
  async function accept(page: Page, index = 0): Promise<void> {
    await page.evaluate((index) => {
      const w = window as unknown as PhoneWindow;
      const ring = w.rings[index];
      if (!ring) throw new Error('no ring');
      w.track(ring.accept());
    }, index);
  }

  /** The page's call's media as its peer connection's stats show it. */
  function media(page: Page, index = 0): Promise<MediaSeen> {
    return page.evaluate(async (index) => {
      const call = (window as unknown as PhoneWindow).calls[index];
      const pc = call?.peerConnection;
      if (!call || !pc) throw new Error('no peer connection');
      const stats = await pc.getStats();
      const seen: MediaSeen = {
        framesDecoded: 0,
        audioPackets: 0,
        remoteAddresses: [],
        pairAddress: undefined,
        remoteKinds: call.remoteStream.getTracks().map((t) => t.kind),
        localTypes: [],
      };
      const byId = new Map<string, Record<string, unknown>>();
      stats.forEach((report: Record<string, unknown>) => {
        byId.set(report.id as string, report);
      });
      for (const report of byId.values()) {
        if (report.type === 'inbound-rtp' && report.kind === 'video')
          seen.framesDecoded += Number(report.framesDecoded ?? 0);
        if (report.type === 'inbound-rtp' && report.kind === 'audio')
          seen.audioPackets += Number(report.packetsReceived ?? 0);
        if (report.type === 'local-candidate') seen.localTypes.push(String(report.candidateType));
        if (report.type === 'remote-candidate' && report.candidateType !== 'prflx') {
          seen.remoteAddresses.push(String(report.address ?? report.ip));
        }
        if (report.type === 'transport' && typeof report.selectedCandidatePairId === 'string') {
          const pair = byId.get(report.selectedCandidatePairId);
          const local = pair && byId.get(pair.localCandidateId as string);
          if (local) seen.pairAddress = String(local.address ?? local.ip);
        }
      }
      return seen;
    }, index);
  }

  /** Waits until the page's call decoded video frames and received audio packets. */
  async function flowing(page: Page): Promise<MediaSeen> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const now = await media(page);
      if (now.framesDecoded > 0 && now.audioPackets > 0) return now;
      if (Date.now() > deadline) throw new Error(`no media decoded: ${JSON.stringify(now)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  const callId = (page: Page, index = 0) =>
    page.evaluate((index) => (window as unknown as PhoneWindow).calls[index]?.id, index);

  async function webhook(env: Service, id: string): Promise<Record<string, unknown>> {
    const { receiver } = env;
    const mine = () => receiver.events('call.ended').filter((e) => e.call_id === id);
    await receiver.waitFor(() => mine().length > 0, `call.ended of ${id}`, 15_000);
    return mine()[0] as Record<string, unknown>;
  }

  /** Tracks of the page's calls' local streams that are still live (the SDK stops what it got). */
  const liveLocalTracks = (page: Page) =>
    page.evaluate(() =>
      (window as unknown as PhoneWindow).calls.flatMap((c) =>
        (c.localStream?.getTracks() ?? []).filter((t) => t.readyState === 'live').map((t) => t.kind),
      ),
    );

  it('a video call connects, decodes media both ways with loopback candidates only, hangs up, and is reported completed', async () => {
    const alice = await phone('alice');
    const bob = await phone('bob');
    const placedAt = main.clock.now();
    await dial(alice, 'alice', 'bob');
    const [, id, from, kinds] = await seen(bob, 'ring');
    expect([from, kinds]).toEqual(['alice', ['audio', 'video']]);
    expect(await seen(alice, 'state', 'ringing')).toEqual(['state', 'ringing']);
    expect(await callId(alice)).toBe(id);

    await accept(bob);
    await seen(alice, 'state', 'connected');
    await seen(bob, 'state', 'connected');
    for (const page of [alice, bob]) {
      const got = await flowing(page);
      expect(got.framesDecoded).toBeGreaterThan(0);
      expect(got.audioPackets).toBeGreaterThan(0);
      expect(got.remoteKinds.sort()).toEqual(['audio', 'video']);
      // Only loopback candidates crossed; host ones only. Chromium binds a socket on every interface
      // and ICE answers a check at its source, so the media may run between 127.0.0.1 and another
      // of this machine's own addresses, never beyond the machine.
      expect(got.remoteAddresses.length).toBeGreaterThan(0);
      expect(new Set(got.remoteAddresses)).toEqual(new Set(['127.0.0.1']));
      expect(new Set(got.localTypes)).toEqual(new Set(['host']));
      expect(hostAddresses).toContain(got.pairAddress);
    }
    for (const page of [alice, bob]) {
      const entries = await log(page);
      expect(entries).toEqual(
        expect.arrayContaining([
          ['remote', 'audio'],
          ['remote', 'video'],
        ]),
      );
      const local = entries.find((e) => e[0] === 'local');
      expect((local?.[1] as string[] | undefined)?.sort()).toEqual(['audio', 'video']);
    }
    // Over a second on the service's clock, so the webhook's whole seconds are at least 1.
    main.clock.advance(1_200);

    const end = await alice.evaluate(async () => {
      const call = (window as unknown as PhoneWindow).calls[0];
      const hungUp = call?.hangup();
      const state = call?.state; // ended at once: the media stops with the hangup
      return { state, end: await hungUp };
    });
    const endedAt = main.clock.now();
    expect(end).toEqual({ state: 'ended', end: { reason: 'completed' } });
    expect(await seen(bob, 'ended')).toEqual(['ended', 'completed', null]);
    expect(await liveLocalTracks(alice)).toEqual([]);
    expect(await liveLocalTracks(bob)).toEqual([]);
    expect(await bob.evaluate(() => (window as unknown as PhoneWindow).calls[0]?.peerConnection?.connectionState)).toBe(
      'closed',
    );

    const event = await webhook(main, id as string);
    expect(event).toMatchObject({
      type: 'call.ended',
      from: 'alice',
      to: 'bob',
      media: ['audio', 'video'],
      reason: 'completed',
    });
    const answeredAt = event.answered_at as number;
    expect(event.started_at).toBeGreaterThanOrEqual(placedAt);
    expect(answeredAt).toBeGreaterThanOrEqual(event.started_at as number);
    expect(event.ended_at).toBeLessThanOrEqual(endedAt);
    expect(event.seconds).toBe(Math.floor(((event.ended_at as number) - answeredAt) / 1000));
    expect(event.seconds).toBeGreaterThanOrEqual(1);
  });

  it('an unanswered call ends missed when its ring time is up, on both sides', async () => {
    const alice = await phone('alice-m', { env: short });
    const bob = await phone('bob-m', { env: short });
    await dial(alice, 'alice-m', 'bob-m', { env: short, video: false });
    const [, id, , kinds] = await seen(bob, 'ring');
    expect(kinds).toEqual(['audio']);
    expect(await seen(alice, 'ended')).toEqual(['ended', 'missed', null]);
    expect(await seen(bob, 'ring-ended')).toEqual(['ring-ended', id, 'missed', null]);
    expect(await liveLocalTracks(alice)).toEqual([]);
    expect(await webhook(short, id as string)).toMatchObject({ reason: 'missed', seconds: 0, answered_at: null });
  });

  it('a rejected call ends rejected for the caller', async () => {
    const alice = await phone('alice-r');
    const bob = await phone('bob-r');
    await dial(alice, 'alice-r', 'bob-r');
    const [, id] = await seen(bob, 'ring');
    await bob.evaluate(() => (window as unknown as PhoneWindow).rings[0]?.reject());
    expect(await seen(alice, 'ended')).toEqual(['ended', 'rejected', null]);
    expect(await seen(bob, 'ring-ended')).toEqual(['ring-ended', id, 'rejected', null]);
    expect(await webhook(main, id as string)).toMatchObject({ reason: 'rejected', seconds: 0 });
  });

  it('calling someone already in a call ends busy without a ring', async () => {
    const carol = await phone('carol-b');
    const bob = await phone('bob-b');
    const alice = await phone('alice-b');
    await dial(carol, 'carol-b', 'bob-b', { video: false });
    await seen(bob, 'ring');
    await accept(bob);
    await seen(carol, 'state', 'connected');

    await dial(alice, 'alice-b', 'bob-b');
    expect(await seen(alice, 'ended')).toEqual(['ended', 'busy', null]);
    const id = await callId(alice);
    expect(id).toMatch(/^call_/);
    expect((await log(bob)).filter((e) => e[0] === 'ring')).toHaveLength(1);
    expect(await liveLocalTracks(alice)).toEqual([]);
    expect(await webhook(main, id as string)).toMatchObject({
      reason: 'busy',
      from: 'alice-b',
      to: 'bob-b',
      seconds: 0,
    });
    // The call in progress goes on.
    expect(await carol.evaluate(() => (window as unknown as PhoneWindow).calls[0]?.state)).toBe('connected');
  });

  it('a caller hanging up while it rings cancels it, and the ring stops', async () => {
    const alice = await phone('alice-c');
    const bob = await phone('bob-c');
    await dial(alice, 'alice-c', 'bob-c');
    const [, id] = await seen(bob, 'ring');
    const end = await alice.evaluate(() => (window as unknown as PhoneWindow).calls[0]?.hangup());
    expect(end).toEqual({ reason: 'cancelled' });
    expect(await seen(bob, 'ring-ended')).toEqual(['ring-ended', id, 'cancelled', null]);
    // Accepting a ring that stopped gives a call that is over already, with why.
    const late = await bob.evaluate(async () => {
      const call = (window as unknown as PhoneWindow).rings[0]?.accept();
      return { state: call?.state, end: await call?.ended };
    });
    expect(late).toEqual({ state: 'ended', end: { reason: 'cancelled' } });
    expect(await webhook(main, id as string)).toMatchObject({ reason: 'cancelled', seconds: 0 });
  });

  it('a page that dies without hanging up ends the call failed for the other', async () => {
    const alice = await phone('alice-f');
    const bob = await phone('bob-f');
    await dial(alice, 'alice-f', 'bob-f', { video: false });
    const [, id] = await seen(bob, 'ring');
    await accept(bob);
    await seen(alice, 'state', 'connected');
    // The renderer crashes: no pagehide, no hangup; the service sees the socket close.
    const cdp = await bob.context().newCDPSession(bob);
    void cdp.send('Page.crash').catch(() => {}); // never answered: the page is gone
    expect(await seen(alice, 'ended')).toEqual(['ended', 'failed', null]);
    expect(await liveLocalTracks(alice)).toEqual([]);
    expect(await webhook(main, id as string)).toMatchObject({ reason: 'failed' });
  });

  it('media that never connects ends the call failed (hangup with failed), on both sides', async () => {
    const alice = await phone('alice-n', { connectTimeoutMs: 3_000 });
    // Bob drops every candidate, sent or received: no path for the media.
    const bob = await phone('bob-n', { candidates: 'none', connectTimeoutMs: 3_000 });
    await dial(alice, 'alice-n', 'bob-n', { video: false });
    const [, id] = await seen(bob, 'ring');
    await accept(bob);
    const [, aliceReason, aliceCode] = await seen(alice, 'ended');
    const [, bobReason, bobCode] = await seen(bob, 'ended');
    expect([aliceReason, bobReason]).toEqual(['failed', 'failed']);
    // At least one side gave up itself (its timeout); the other may have heard it from the service first.
    expect([aliceCode, bobCode]).toContain('peer_failed');
    for (const code of [aliceCode, bobCode]) expect([null, 'peer_failed']).toContain(code);
    expect(await webhook(main, id as string)).toMatchObject({ reason: 'failed' });
  });

  it("a callee's two pages both ring; one accepts, the other hears elsewhere", async () => {
    const alice = await phone('alice-2');
    const bobPhone = await phone('bob-2');
    const bobLaptop = await phone('bob-2');
    await dial(alice, 'alice-2', 'bob-2');
    const [, id] = await seen(bobPhone, 'ring');
    expect((await seen(bobLaptop, 'ring'))[1]).toBe(id);
    await accept(bobLaptop);
    expect(await seen(bobPhone, 'ring-ended')).toEqual(['ring-ended', id, 'elsewhere', null]);
    await seen(alice, 'state', 'connected');
    await seen(bobLaptop, 'state', 'connected');
    expect((await flowing(bobLaptop)).framesDecoded).toBeGreaterThan(0);
    await bobLaptop.evaluate(() => (window as unknown as PhoneWindow).calls[0]?.hangup());
    expect(await seen(alice, 'ended')).toEqual(['ended', 'completed', null]);
    expect(await webhook(main, id as string)).toMatchObject({ reason: 'completed', to: 'bob-2' });
    expect((await log(bobPhone)).filter((e) => e[0] === 'ring-ended')).toHaveLength(1);
  });

  it('leaving the page (pagehide) or closing the client hangs up: completed, not failed', async () => {
    const alice = await phone('alice-p');
    const bob = await phone('bob-p');
    await dial(alice, 'alice-p', 'bob-p', { video: false });
    const [, first] = await seen(bob, 'ring');
    await accept(bob);
    await seen(alice, 'state', 'connected');
    await bob.goto('about:blank'); // pagehide
    expect(await seen(alice, 'ended')).toEqual(['ended', 'completed', null]);
    expect(await webhook(main, first as string)).toMatchObject({ reason: 'completed' });

    const carol = await phone('carol-p');
    await dial(alice, 'alice-p', 'carol-p', { video: false });
    const [, second] = await seen(carol, 'ring');
    await accept(carol);
    await seen(carol, 'state', 'connected');
    await alice.evaluate(() => (window as unknown as PhoneWindow).client.close());
    expect(await seen(carol, 'ended')).toEqual(['ended', 'completed', null]);
    expect(await webhook(main, second as string)).toMatchObject({ reason: 'completed', from: 'alice-p' });
  });

  it('a lost socket ends the call failed at once; after the reconnect the page calls again', async () => {
    const alice = await phone('alice-l');
    const bob = await phone('bob-l');
    await dial(alice, 'alice-l', 'bob-l', { video: false });
    const [, id] = await seen(bob, 'ring');
    await accept(bob);
    await seen(alice, 'state', 'connected');
    expect(main.server.disconnectUser(main.server.app.key, 'alice-l')).toBe(1);
    // The service ends a call whose page went without hanging up: this page cannot take it back.
    expect(await seen(alice, 'ended')).toEqual(['ended', 'failed', 'disconnected']);
    expect(await liveLocalTracks(alice)).toEqual([]);
    expect(await seen(bob, 'ended')).toEqual(['ended', 'failed', null]);
    expect(await webhook(main, id as string)).toMatchObject({ reason: 'failed' });

    await alice.waitForFunction(() => (window as unknown as PhoneWindow).client.state === 'connected');
    await dial(alice, 'alice-l', 'bob-l', { video: false });
    await bob.waitForFunction(() => (window as unknown as PhoneWindow).rings.length === 2);
    await accept(bob, 1);
    await alice.waitForFunction(() => (window as unknown as PhoneWindow).calls[1]?.state === 'connected');
    expect(await alice.evaluate(() => (window as unknown as PhoneWindow).calls[1]?.hangup())).toEqual({
      reason: 'completed',
    });
  });

  it("a rejection on one of the callee's pages stops the ring on the other", async () => {
    const alice = await phone('alice-x');
    const one = await phone('bob-x');
    const two = await phone('bob-x');
    await dial(alice, 'alice-x', 'bob-x');
    const [, id] = await seen(one, 'ring');
    await seen(two, 'ring');
    await two.evaluate(() => (window as unknown as PhoneWindow).rings[0]?.reject());
    expect(await seen(alice, 'ended')).toEqual(['ended', 'rejected', null]);
    expect(await seen(two, 'ring-ended')).toEqual(['ring-ended', id, 'rejected', null]);
    // The other page stops ringing: rejected elsewhere, as when another page accepts.
    expect(await seen(one, 'ring-ended')).toEqual(['ring-ended', id, 'elsewhere', null]);
    expect(await webhook(main, id as string)).toMatchObject({ reason: 'rejected' });
  });

  it('both sides hanging up at once: completed on both, and no stray error', async () => {
    const alice = await phone('alice-h');
    const bob = await phone('bob-h');
    await dial(alice, 'alice-h', 'bob-h', { video: false });
    const [, id] = await seen(bob, 'ring');
    await accept(bob);
    await seen(alice, 'state', 'connected');
    await seen(bob, 'state', 'connected');
    const hangup = (page: Page) => page.evaluate(() => (window as unknown as PhoneWindow).calls[0]?.hangup());
    const ends = await Promise.all([hangup(alice), hangup(bob)]);
    expect(ends).toEqual([{ reason: 'completed' }, { reason: 'completed' }]);
    expect(await webhook(main, id as string)).toMatchObject({ reason: 'completed' });
    // The later hangup is refused `no_call` by the service: a race the page knows the end of. That
    // answer comes before a later round trip's.
    for (const page of [alice, bob]) await roundTrip(page, (room) => main.sdk.roomToken(room));
    for (const page of [alice, bob]) expect((await log(page)).filter((e) => e[0] === '$error')).toEqual([]);
  });

  it('a refused invite ends the call failed with the service error, before any ring', async () => {
    const alice = await phone('alice-e');
    const bob = await phone('bob-e');
    // A token for calling someone else.
    await dial(alice, 'alice-e', 'bob-e', { tokenTo: 'dave-e' });
    expect(await seen(alice, 'ended')).toEqual(['ended', 'failed', 'wrong_call']);
    expect(await alice.evaluate(() => (window as unknown as PhoneWindow).calls[0]?.id)).toBeUndefined();
    expect(await liveLocalTracks(alice)).toEqual([]);
    // The page's connection and other calls are unaffected.
    await dial(alice, 'alice-e', 'bob-e', { video: false });
    await seen(bob, 'ring');
    expect(await alice.evaluate(() => (window as unknown as PhoneWindow).calls[1]?.hangup())).toEqual({
      reason: 'cancelled',
    });
  });
});
