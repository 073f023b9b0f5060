import { Realtime } from '@realtime/node';
import { ALL_FEATURES, newApp } from '@realtime/server';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { skewedClock } from '../../packages/server/test/gateway-tools.js';
import { startTestServer } from '../../packages/server/test/helpers.js';
import { laterEventReported, startReceiver } from '../../packages/server/test/receiver.js';
import { closeChromium, launchChromium } from './chromium.js';
import { openSdkPage, roundTrip, startPageServer } from './harness.js';

type Entry = [kind: string, ...rest: unknown[]];

interface GroupWindow {
  RT: typeof import('@realtime/browser');
  client: import('@realtime/browser').RealtimeClient;
  group: import('@realtime/browser').Group | undefined;
  log: Entry[];
}

/** What a page's connection with one peer page shows in its stats. */
interface PeerMedia {
  user: string;
  state: string;
  framesDecoded: number;
  audioPackets: number;
  /** Addresses of the candidates the peer sent (peer-reflexive ones have theirs hidden). */
  remoteAddresses: string[];
  streamKinds: string[];
}

const GROUP_MAX = 3;
/** Small video, so three pages encoding twice each stay light on a shared machine. */
const MEDIA = { audio: true, video: { width: 320, height: 240, frameRate: 15 } };

describe('group calls in headless Chromium (a mesh), ICE candidates on loopback', { timeout: 90_000 }, () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let sdk: Realtime;
  /** An app of the same service whose plan has no group calls. */
  let plain: { key: string; sdk: Realtime };
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };
  let opened: Page[] = [];
  /** The service's clock: the test moves it past a second instead of waiting one. */
  const clock = skewedClock();

  beforeAll(async () => {
    const app = newApp({ name: 'groups' });
    const other = newApp({ name: 'no-groups', features: ALL_FEATURES.filter((f) => f !== 'groups') });
    receiver = await startReceiver(app);
    server = await startTestServer({
      app: { ...app, webhook: receiver.url },
      apps: [other],
      allowPrivateWebhooks: true,
      webhooks: { windowMs: 100 },
      calls: { groupMaxPages: GROUP_MAX },
      now: clock.now,
    });
    sdk = new Realtime({ url: server.url, key: app.key, secret: app.secret });
    plain = { key: other.key, sdk: new Realtime({ url: server.url, key: other.key, secret: other.secret }) };
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
    await sdk?.close();
    await plain?.sdk.close();
    await server?.close();
    await receiver?.close();
  });

  /** A connected page of `user` (its own browser context), logging its group's events. ICE stays on 127.0.0.1. */
  async function phone(user: string, options: { site?: string; identity?: string } = {}): Promise<Page> {
    const page = await openSdkPage(browser, pages.url);
    opened.push(page);
    const identity = options.identity ?? (await sdk.identityToken(user));
    await page.evaluate(
      ({ url, site, identity }) => {
        const w = window as unknown as GroupWindow;
        w.log = [];
        // A candidate line: `candidate:<foundation> <component> <protocol> <priority> <address> <port> typ ...`.
        const loopback = (c: RTCIceCandidateInit) => (c.candidate ?? '').split(' ')[4] === '127.0.0.1';
        w.client = w.RT.connect({ url, site, identity, rtc: { candidateFilter: loopback } });
        w.client.on('$error', (error) => w.log.push(['$error', error.code, error.message]));
      },
      { url: server.url, site: options.site ?? server.app.key, identity },
    );
    await page.waitForFunction(() => (window as unknown as GroupWindow).client.state === 'connected');
    return page;
  }

  /** The page joins `group` with `token` (default: one minted for it), logging what the group does. */
  async function join(page: Page, user: string, group: string, token?: string): Promise<void> {
    const text = token ?? (await sdk.callToken(user, { group, media: ['audio', 'video'] }));
    await page.evaluate(
      ({ group, token, media }) => {
        const w = window as unknown as GroupWindow;
        const g = w.client.group(group, { token: async () => token, media });
        w.group = g;
        g.on('state', (state) => w.log.push(['state', state]));
        g.on('local', (stream) => w.log.push(['local', stream.getTracks().map((t) => t.kind)]));
        g.on('peer-joined', (peer) => w.log.push(['peer-joined', peer.user, peer.page, [...peer.media]]));
        g.on('peer-left', (peer) => w.log.push(['peer-left', peer.user, peer.page, peer.state]));
        g.on('peer-state', (peer, state) => w.log.push(['peer-state', peer.user, state]));
        void g.ended.then((end) =>
          w.log.push(['ended', end.reason, end.error?.code ?? null, end.error?.group ?? null]),
        );
      },
      { group, token: text, media: MEDIA },
    );
  }

  async function seen(page: Page, kind: string, first?: unknown, ms = 20_000): Promise<Entry> {
    const handle = await page.waitForFunction(
      ({ kind, first }) =>
        (window as unknown as GroupWindow).log.find((e) => e[0] === kind && (first === undefined || e[1] === first)),
      { kind, first },
      { timeout: ms },
    );
    return (await handle.jsonValue()) as Entry;
  }

  const log = (page: Page) => page.evaluate(() => (window as unknown as GroupWindow).log);

  /** Each peer of the page's group, with its connection's stats. */
  function media(page: Page): Promise<PeerMedia[]> {
    return page.evaluate(async () => {
      const group = (window as unknown as GroupWindow).group;
      if (!group) throw new Error('no group');
      const out: PeerMedia[] = [];
      for (const peer of group.peers) {
        const seen: PeerMedia = {
          user: peer.user,
          state: peer.state,
          framesDecoded: 0,
          audioPackets: 0,
          remoteAddresses: [],
          streamKinds: peer.stream.getTracks().map((t) => t.kind),
        };
        const stats = await peer.peerConnection?.getStats();
        stats?.forEach((report: Record<string, unknown>) => {
          if (report.type === 'inbound-rtp' && report.kind === 'video')
            seen.framesDecoded += Number(report.framesDecoded ?? 0);
          if (report.type === 'inbound-rtp' && report.kind === 'audio')
            seen.audioPackets += Number(report.packetsReceived ?? 0);
          if (report.type === 'remote-candidate' && report.candidateType !== 'prflx') {
            seen.remoteAddresses.push(String(report.address ?? report.ip));
          }
        });
        out.push(seen);
      }
      return out.sort((a, b) => a.user.localeCompare(b.user));
    });
  }

  /** Waits until the page decodes video and gets audio from each of `users`, and from no one else. */
  async function flowingFrom(page: Page, users: string[], above: Record<string, number> = {}): Promise<PeerMedia[]> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const now = await media(page);
      // The peer's trickled candidates too: the media may flow before they come (on a pair its checks made).
      const ok =
        now.map((p) => p.user).join() === [...users].sort().join() &&
        now.every((p) => p.framesDecoded > (above[p.user] ?? 0) && p.audioPackets > 0 && p.remoteAddresses.length > 0);
      if (ok) return now;
      if (Date.now() > deadline) throw new Error(`no media from ${users.join(', ')}: ${JSON.stringify(now)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  const liveLocalTracks = (page: Page) =>
    page.evaluate(() =>
      ((window as unknown as GroupWindow).group?.localStream?.getTracks() ?? [])
        .filter((t) => t.readyState === 'live')
        .map((t) => t.kind),
    );

  const groupEvents = (type: string, group: string) => receiver.events(type).filter((e) => e.call === group);

  it('three pages join at once, each decodes both others; one leaves, the two keep their media; webhooks once per page', async () => {
    const group = 'standup-3';
    const users = ['ann', 'ben', 'cid'];
    const [ann, ben, cid] = (await Promise.all(users.map((user) => phone(user)))) as [Page, Page, Page];
    const startedAt = clock.now();
    // All three at once: a newcomer's offer may come before the page it goes to heard its own join answered.
    await Promise.all([join(ann, 'ann', group), join(ben, 'ben', group), join(cid, 'cid', group)]);
    const byUser = { ann, ben, cid };
    for (const [user, page] of Object.entries(byUser)) {
      await seen(page, 'state', 'joined');
      const others = users.filter((u) => u !== user);
      const got = await flowingFrom(page, others);
      for (const peer of got) {
        expect(peer.state).toBe('connected');
        expect(peer.streamKinds.sort()).toEqual(['audio', 'video']);
        expect(peer.framesDecoded).toBeGreaterThan(0);
        expect(new Set(peer.remoteAddresses)).toEqual(new Set(['127.0.0.1']));
      }
      const entries = await log(page);
      // Each other page once, with its user and the media of its token; the page's own media first.
      const joined = entries.filter((e) => e[0] === 'peer-joined');
      expect(joined.map((e) => e[1]).sort()).toEqual(others);
      for (const e of joined) expect(e[3]).toEqual(['audio', 'video']);
      expect((entries.find((e) => e[0] === 'local')?.[1] as string[] | undefined)?.sort()).toEqual(['audio', 'video']);
      expect(entries.filter((e) => e[0] === '$error')).toEqual([]);
    }
    const pageOf = (page: Page) => page.evaluate(() => (window as unknown as GroupWindow).group?.page);
    const benPage = await pageOf(ben);
    expect(benPage).toEqual(expect.any(String));

    // The group takes three pages: a fourth is refused, and the three go on.
    const dan = await phone('dan');
    await join(dan, 'dan', group);
    expect(await seen(dan, 'ended')).toEqual(['ended', 'failed', 'group_full', group]);
    expect(await liveLocalTracks(dan)).toEqual([]);
    expect((await log(dan)).map((e) => e[0])).toEqual(['local', 'state', 'ended']);

    // Over a second on the service's clock, so ben's whole seconds are at least 1.
    clock.advance(1_200);
    const before = Object.fromEntries((await media(ann)).map((p) => [p.user, p.framesDecoded]));
    const left = await ben.evaluate(async () => {
      const g = (window as unknown as GroupWindow).group;
      const leaving = g?.leave();
      const state = g?.state; // left at once: the media stops with the leave
      const peers = g?.peers.map((p) => [p.state, p.peerConnection?.connectionState]);
      return { state, peers, end: await leaving };
    });
    expect(left).toEqual({
      state: 'left',
      peers: [
        ['left', 'closed'],
        ['left', 'closed'],
      ],
      end: { reason: 'left' },
    });
    expect(await liveLocalTracks(ben)).toEqual([]);
    for (const page of [ann, cid]) {
      expect(await seen(page, 'peer-left')).toEqual(['peer-left', 'ben', benPage, 'left']);
    }
    // The two go on: more frames from each other, none from ben.
    const annSees = await flowingFrom(ann, ['cid'], { cid: before.cid ?? 0 });
    expect(annSees[0]?.state).toBe('connected');
    expect((await flowingFrom(cid, ['ann']))[0]?.state).toBe('connected');

    // Ann's page goes away (pagehide), and cid's client closes: each leaves, and the other hears it.
    await ann.goto('about:blank');
    expect((await seen(cid, 'peer-left', 'ann'))[1]).toBe('ann');
    await cid.evaluate(() => (window as unknown as GroupWindow).client.close());
    expect(await seen(cid, 'ended')).toEqual(['ended', 'left', null, null]);
    const endedAt = clock.now();

    await receiver.waitFor(() => groupEvents('group.left', group).length >= 3, 'three group.left', 15_000);
    // Anything sent twice would have come before a later event.
    await laterEventReported(receiver, { url: server.url, key: server.app.key, identity: (u) => sdk.identityToken(u) });
    const joinedEvents = groupEvents('group.joined', group);
    const leftEvents = groupEvents('group.left', group);
    expect(joinedEvents.map((e) => e.user).sort()).toEqual(users);
    expect(leftEvents.map((e) => e.user).sort()).toEqual(users);
    for (const user of users) {
      const j = joinedEvents.find((e) => e.user === user) as Record<string, unknown>;
      const l = leftEvents.find((e) => e.user === user) as Record<string, unknown>;
      expect(j).toMatchObject({ type: 'group.joined', call: group, media: ['audio', 'video'] });
      expect(l).toMatchObject({ type: 'group.left', call: group, media: ['audio', 'video'], joined_at: j.joined_at });
      const joinedAt = j.joined_at as number;
      const leftAt = l.left_at as number;
      expect(joinedAt).toBeGreaterThanOrEqual(startedAt);
      expect(leftAt).toBeGreaterThanOrEqual(joinedAt);
      expect(leftAt).toBeLessThanOrEqual(endedAt);
      expect(l.seconds).toBe(Math.floor((leftAt - joinedAt) / 1000));
      expect(l.seconds).toBeGreaterThanOrEqual(1);
    }
    // The refused page was never in: nothing reported for it.
    expect(receiver.events().filter((e) => e.user === 'dan' && String(e.type).startsWith('group.'))).toEqual([]);
  });

  it('a page that crashes or loses its socket is taken out: the others hear peer-left and keep their media', async () => {
    const group = 'crash-3';
    const [eve, fay, gus] = (await Promise.all(['eve', 'fay', 'gus'].map((user) => phone(user)))) as [Page, Page, Page];
    await join(eve, 'eve', group);
    await seen(eve, 'state', 'joined');
    await join(fay, 'fay', group);
    await seen(fay, 'state', 'joined');
    await join(gus, 'gus', group);
    await flowingFrom(eve, ['fay', 'gus']);
    await flowingFrom(gus, ['eve', 'fay']);

    // Fay's renderer crashes: no pagehide, no leave; the service sees the socket close.
    const cdp = await fay.context().newCDPSession(fay);
    void cdp.send('Page.crash').catch(() => {}); // never answered: the page is gone
    for (const page of [eve, gus]) expect((await seen(page, 'peer-left', 'fay'))[1]).toBe('fay');
    await flowingFrom(eve, ['gus']);

    // Gus's socket drops: its group ends failed (a new socket is a new page), and eve hears it leave.
    expect(server.disconnectUser(server.app.key, 'gus')).toBe(1);
    expect(await seen(gus, 'ended')).toEqual(['ended', 'failed', 'disconnected', group]);
    expect(await liveLocalTracks(gus)).toEqual([]);
    expect((await seen(eve, 'peer-left', 'gus'))[1]).toBe('gus');
    expect(await eve.evaluate(() => (window as unknown as GroupWindow).group?.peers.length)).toBe(0);
    expect(await eve.evaluate(() => (window as unknown as GroupWindow).group?.state)).toBe('joined');

    // After the reconnect, gus joins again and the two connect anew.
    await gus.waitForFunction(() => (window as unknown as GroupWindow).client.state === 'connected');
    await join(gus, 'gus', group);
    await flowingFrom(gus, ['eve']);
    await flowingFrom(eve, ['gus']);
    await receiver.waitFor(
      () => groupEvents('group.left', group).filter((e) => e.user === 'fay' || e.user === 'gus').length >= 2,
      'fay and gus left',
      15_000,
    );
    expect(groupEvents('group.joined', group).filter((e) => e.user === 'gus')).toHaveLength(2);
    for (const page of [eve, gus]) expect((await log(page)).filter((e) => e[0] === '$error')).toEqual([]);
  });

  it('refused joins end failed with the service code, naming the group', async () => {
    const hal = await phone('hal');
    // A token for another group.
    await join(hal, 'hal', 'room-a', await sdk.callToken('hal', { group: 'room-b' }));
    expect(await seen(hal, 'ended')).toEqual(['ended', 'failed', 'wrong_call', 'room-a']);
    expect(await liveLocalTracks(hal)).toEqual([]);
    // A token for a call to one person.
    await join(hal, 'hal', 'room-a', await sdk.callToken('hal', { to: 'ivy' }));
    await hal.waitForFunction(
      () => (window as unknown as GroupWindow).log.filter((e) => e[0] === 'ended').length === 2,
    );
    expect((await log(hal)).filter((e) => e[0] === 'ended')[1]).toEqual(['ended', 'failed', 'wrong_call', 'room-a']);
    // Not a token at all; then one that expired.
    const expired = new Realtime({
      url: server.url,
      key: server.app.key,
      secret: server.app.secret,
      now: () => Date.now() - 3_600_000,
    });
    const tokens = ['not.a.token', await expired.callToken('hal', { group: 'room-a', expiresIn: 60 })];
    await expired.close();
    const codes: unknown[] = [];
    for (const token of tokens) {
      await join(hal, 'hal', 'room-a', token);
      const end = await hal.evaluate(async () => {
        const e = await (window as unknown as GroupWindow).group?.ended;
        return [e?.reason, e?.error?.code, e?.error instanceof (window as unknown as GroupWindow).RT.GroupError];
      });
      codes.push(end);
    }
    expect(codes).toEqual([
      ['failed', 'bad_token', true],
      ['failed', 'token_expired', true],
    ]);
    expect((await log(hal)).filter((e) => e[0] === '$error')).toEqual([]);

    // An app whose plan has no group calls.
    const ivy = await phone('ivy', { site: plain.key, identity: await plain.sdk.identityToken('ivy') });
    await join(ivy, 'ivy', 'room-a', await plain.sdk.callToken('ivy', { group: 'room-a' }));
    expect(await seen(ivy, 'ended')).toEqual(['ended', 'failed', 'not_included', 'room-a']);

    // Leaving while the join is on its way: out at once; the service takes the join, then the leave.
    const token = await sdk.callToken('hal', { group: 'room-c' });
    const quick = await hal.evaluate(
      async ({ token, media }) => {
        const w = window as unknown as GroupWindow;
        const g = w.client.group('room-c', { token, media });
        // The join goes as soon as the media is here: a turn later it is on its way, unanswered.
        await new Promise((resolve) => g.on('local', () => setTimeout(resolve, 0)));
        const state = g.state;
        return { state, end: await g.leave() };
      },
      { token, media: MEDIA },
    );
    expect(quick).toEqual({ state: 'joining', end: { reason: 'left' } });
    await receiver.waitFor(() => groupEvents('group.left', 'room-c').length === 1, 'room-c left', 15_000);
    expect(groupEvents('group.joined', 'room-c')).toHaveLength(1);
    // Whatever the service answered to the join and the leave came before a later round trip.
    await roundTrip(hal, (room) => sdk.roomToken(room));
    expect((await log(hal)).filter((e) => e[0] === '$error')).toEqual([]);
  });
});
