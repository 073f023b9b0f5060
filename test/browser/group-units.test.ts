import { createSocket } from 'node:dgram';
import { Realtime } from '@realtime/node';
import { newApp } from '@realtime/server';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freeRange } from '../../packages/server/test/free-ports.js';
import { skewedClock } from '../../packages/server/test/gateway-tools.js';
import { startTestServer } from '../../packages/server/test/helpers.js';
import { laterEventReported, startReceiver } from '../../packages/server/test/receiver.js';
import { closeChromium, launchChromium } from './chromium.js';
import { openSdkPage, startPageServer } from './harness.js';

type Entry = [kind: string, ...rest: unknown[]];

interface UnitWindow {
  RT: typeof import('@realtime/browser');
  client: import('@realtime/browser').RealtimeClient;
  group: import('@realtime/browser').Group | undefined;
  log: Entry[];
  /** Each peer as the page held it before a switch or restart, with its stream and connection then. */
  kept: Map<string, { peer: object; stream: MediaStream; pc: RTCPeerConnection | undefined }>;
  /** The client's socket, to send a frame the SDK sends only when media fails. */
  socket: WebSocket;
}

/** What a page's connection for one peer shows. */
interface PeerMedia {
  user: string;
  state: string;
  framesDecoded: number;
  audioPackets: number;
  /** Video frames this page sent on it: none over a unit's connection (receive-only). */
  framesSent: number;
  /** This page's description on it: `answer` over a unit's connection (the unit offers). */
  localType: string | null;
  /** The kinds of `peer.stream`'s live tracks. */
  liveKinds: string[];
  /** The addresses of the candidate pair the connection uses. */
  pair: string[];
}

/** What a page sends to its own unit. */
interface UplinkMedia {
  /** One entry per outbound video stream (simulcast layer): its rid, bytes and frames sent. */
  video: { rid: string; bytesSent: number; framesSent: number }[];
  audioPackets: number;
  /** Video frames received on it: none (send-only). */
  framesDecoded: number;
  pair: string[];
}

interface PageMedia {
  mode: string;
  peers: PeerMedia[];
  uplink: UplinkMedia | null;
}

/** Small video, so four pages decoding three each stay light on a shared machine. */
const MEDIA = { audio: true, video: { width: 320, height: 240, frameRate: 15 } };
const UNIT_FROM = 3;
const MAX_PAGES = 4;
interface Service {
  server: Awaited<ReturnType<typeof startTestServer>>;
  sdk: Realtime;
}

/**
 * A range of two UDP ports on 127.0.0.1 of which only the first is free: the test holds the second
 * (werift takes no range of one port).
 */
async function onePortFree(): Promise<{ range: [number, number]; release(): Promise<void> }> {
  const bind = (port: number) =>
    new Promise<ReturnType<typeof createSocket> | undefined>((resolve) => {
      const socket = createSocket('udp4');
      socket.once('error', () => socket.close(() => resolve(undefined)));
      socket.bind(port, '127.0.0.1', () => resolve(socket));
    });
  const close = (socket: ReturnType<typeof createSocket>) => new Promise<void>((resolve) => socket.close(resolve));
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = 42_000 + Math.floor(Math.random() * 8000);
    const probe = await bind(first);
    if (!probe) continue;
    await close(probe);
    const held = await bind(first + 1);
    if (held) return { range: [first, first + 1], release: () => close(held) };
  }
  throw new Error('no two free neighbouring UDP ports found');
}

/** The pause between two reads of a page's stats in a bounded poll. */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('group calls in unit mode in headless Chromium, units and ICE on loopback', { timeout: 90_000 }, () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let sdk: Realtime;
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };
  let opened: Page[] = [];
  /** The service's clock: the test moves it past a second instead of waiting one. */
  const clock = skewedClock();

  beforeAll(async () => {
    const app = newApp({ name: 'group-units' });
    receiver = await startReceiver(app);
    server = await startTestServer({
      app: { ...app, webhook: receiver.url },
      allowPrivateWebhooks: true,
      webhooks: { windowMs: 100 },
      calls: { groupUnitFrom: UNIT_FROM, groupMaxPages: MAX_PAGES },
      // The units exchange media with 127.0.0.1 only.
      streams: { remoteAddresses: ['127.0.0.1'] },
      now: clock.now,
    });
    sdk = new Realtime({ url: server.url, key: app.key, secret: app.secret });
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
    await server?.close();
    await receiver?.close();
  });

  /** A connected page of `user` (of `on`, default the service of the suite), logging its group's events. ICE candidates it sends stay on 127.0.0.1. */
  async function phone(user: string, on: Service = { server, sdk }): Promise<Page> {
    const page = await openSdkPage(browser, pages.url);
    opened.push(page);
    const identity = await on.sdk.identityToken(user);
    await page.evaluate(
      ({ url, site, identity }) => {
        const w = window as unknown as UnitWindow;
        w.log = [];
        w.kept = new Map();
        // A candidate line: `candidate:<foundation> <component> <protocol> <priority> <address> <port> typ ...`.
        const loopback = (c: RTCIceCandidateInit) => (c.candidate ?? '').split(' ')[4] === '127.0.0.1';
        class Kept extends WebSocket {
          constructor(url: string | URL, protocols?: string | string[]) {
            super(url, protocols);
            w.socket = this;
          }
        }
        w.client = w.RT.connect({ url, site, identity, rtc: { candidateFilter: loopback }, WebSocket: Kept });
        w.client.on('$error', (error) => w.log.push(['$error', error.code, error.message]));
      },
      { url: on.server.url, site: on.server.app.key, identity },
    );
    await page.waitForFunction(() => (window as unknown as UnitWindow).client.state === 'connected');
    return page;
  }

  /** The page joins `group`, logging what the group does (its mode with `joined`). */
  async function join(page: Page, user: string, group: string, on: Service = { server, sdk }): Promise<void> {
    const token = await on.sdk.callToken(user, { group, media: ['audio', 'video'] });
    await page.evaluate(
      ({ group, token, media }) => {
        const w = window as unknown as UnitWindow;
        const g = w.client.group(group, { token: async () => token, media });
        w.group = g;
        g.on('state', (state) => w.log.push(['state', state, g.mode]));
        g.on('mode', (mode) => w.log.push(['mode', mode]));
        g.on('peer-joined', (peer) => w.log.push(['peer-joined', peer.user, peer.page]));
        g.on('peer-left', (peer) => w.log.push(['peer-left', peer.user, peer.page, peer.state]));
        g.on('peer-state', (peer, state) => w.log.push(['peer-state', peer.user, state]));
        void g.ended.then((end) => w.log.push(['ended', end.reason, end.error?.code ?? null]));
      },
      { group, token, media: MEDIA },
    );
  }

  async function seen(page: Page, kind: string, first?: unknown, ms = 20_000): Promise<Entry> {
    const handle = await page.waitForFunction(
      ({ kind, first }) =>
        (window as unknown as UnitWindow).log.find((e) => e[0] === kind && (first === undefined || e[1] === first)),
      { kind, first },
      { timeout: ms },
    );
    return (await handle.jsonValue()) as Entry;
  }

  const log = (page: Page) => page.evaluate(() => (window as unknown as UnitWindow).log);

  /** The page's group: its mode, each peer's connection and the uplink, with their stats. */
  function media(page: Page): Promise<PageMedia> {
    return page.evaluate(async () => {
      const group = (window as unknown as UnitWindow).group;
      if (!group) throw new Error('no group');
      type Report = Record<string, unknown>;
      const read = async (pc: RTCPeerConnection | undefined) => {
        const reports = new Map<string, Report>();
        (await pc?.getStats())?.forEach((r: Report) => {
          reports.set(String(r.id), r);
        });
        const all = [...reports.values()];
        const inbound = (kind: string) => all.filter((r) => r.type === 'inbound-rtp' && r.kind === kind);
        const transport = all.find((r) => r.type === 'transport' && r.selectedCandidatePairId);
        const selected = transport ? reports.get(String(transport.selectedCandidatePairId)) : undefined;
        const pair = selected
          ? [reports.get(String(selected.localCandidateId)), reports.get(String(selected.remoteCandidateId))].map((c) =>
              String(c?.address ?? c?.ip),
            )
          : [];
        return {
          framesDecoded: inbound('video').reduce((n, r) => n + Number(r.framesDecoded ?? 0), 0),
          audioIn: inbound('audio').reduce((n, r) => n + Number(r.packetsReceived ?? 0), 0),
          video: all
            .filter((r) => r.type === 'outbound-rtp' && r.kind === 'video')
            .map((r) => ({
              rid: String(r.rid ?? ''),
              bytesSent: Number(r.bytesSent ?? 0),
              framesSent: Number(r.framesSent ?? 0),
            })),
          audioOut: all
            .filter((r) => r.type === 'outbound-rtp' && r.kind === 'audio')
            .reduce((n, r) => n + Number(r.packetsSent ?? 0), 0),
          pair,
        };
      };
      const peers: PeerMedia[] = [];
      for (const peer of group.peers) {
        const s = await read(peer.peerConnection);
        peers.push({
          user: peer.user,
          state: peer.state,
          framesDecoded: s.framesDecoded,
          audioPackets: s.audioIn,
          framesSent: s.video.reduce((n, v) => n + v.framesSent, 0),
          localType: peer.peerConnection?.localDescription?.type ?? null,
          liveKinds: peer.stream
            .getTracks()
            .filter((t) => t.readyState === 'live')
            .map((t) => t.kind)
            .sort(),
          pair: s.pair,
        });
      }
      const up = group.uplink ? await read(group.uplink) : undefined;
      const uplink = up
        ? { video: up.video, audioPackets: up.audioOut, framesDecoded: up.framesDecoded, pair: up.pair }
        : null;
      return { mode: group.mode, peers: peers.sort((a, b) => a.user.localeCompare(b.user)), uplink };
    });
  }

  /** Waits until the page decodes video and gets audio from each of `users` (over `above` frames), and no one else. */
  async function flowingFrom(page: Page, users: string[], above: Record<string, number> = {}): Promise<PageMedia> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const now = await media(page);
      const ok =
        now.peers.map((p) => p.user).join() === [...users].sort().join() &&
        now.peers.every((p) => p.framesDecoded > (above[p.user] ?? 0) && p.audioPackets > 0 && p.pair.length === 2);
      if (ok) return now;
      if (Date.now() > deadline) throw new Error(`no media from ${users.join(', ')}: ${JSON.stringify(now)}`);
      await sleep(250);
    }
  }

  /**
   * A mesh page's media from `other`, once its own video to that peer has gone out too: a page may
   * decode its peer's frames before its encoder has sent one of its own.
   */
  async function meshBothWays(page: Page, other: string): Promise<PageMedia> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const now = await flowingFrom(page, [other]);
      if ((now.peers[0]?.framesSent ?? 0) > 0) return now;
      if (Date.now() > deadline) throw new Error(`no media sent to ${other}: ${JSON.stringify(now)}`);
      await sleep(250);
    }
  }

  /** Waits until the page's uplink has sent video beyond `above` bytes, and gives its stats. */
  async function sending(page: Page, above = 0): Promise<UplinkMedia> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const uplink = (await media(page)).uplink;
      const bytes = uplink?.video.reduce((n, v) => n + v.bytesSent, 0) ?? 0;
      if (uplink?.video.some((v) => v.framesSent > 0) && bytes > above && uplink.pair.length === 2) {
        return uplink;
      }
      if (Date.now() > deadline) throw new Error(`no media sent to the unit: ${JSON.stringify(uplink)}`);
      await sleep(250);
    }
  }

  /** Through units: each peer's media from its unit, over a receive-only connection the page answered, on loopback. */
  function expectViaUnits(seen: PageMedia, others: string[]): void {
    expect(seen.mode).toBe('unit');
    expect(seen.peers.map((p) => p.user)).toEqual([...others].sort());
    for (const peer of seen.peers) {
      expect(peer.state).toBe('connected');
      expect(peer.localType).toBe('answer');
      expect(peer.framesSent).toBe(0);
      expect(peer.liveKinds).toEqual(['audio', 'video']);
      expect(new Set(peer.pair)).toEqual(new Set(['127.0.0.1']));
    }
  }

  /**
   * The page's media goes once, to its unit, on loopback: one outbound video, as three simulcast
   * layers (the unit forwards each receiving page the one that fits it).
   */
  async function expectOneUplink(page: Page): Promise<void> {
    const first = await sending(page);
    expect(first.video.map((v) => v.rid).sort()).toEqual(['f', 'h', 'q']);
    expect(first.framesDecoded).toBe(0);
    expect(new Set(first.pair)).toEqual(new Set(['127.0.0.1']));
    const later = await sending(
      page,
      first.video.reduce((n, v) => n + v.bytesSent, 0),
    );
    expect(later.video).toHaveLength(3);
    // The audio goes on too (its count may lag the video's in one snapshot of the stats).
    await expect
      .poll(async () => (await sending(page)).audioPackets, { timeout: 10_000, interval: 250 })
      .toBeGreaterThan(first.audioPackets);
  }

  const byUser = (seen: PageMedia) => Object.fromEntries(seen.peers.map((p) => [p.user, p.framesDecoded]));
  const groupEvents = (type: string, group: string) => receiver.events(type).filter((e) => e.call === group);
  const errors = async (page: Page) => (await log(page)).filter((e) => e[0] === '$error' || e[0] === 'ended');

  it('two pages in a mesh; a third switches the group to units, the peers and their streams stay; it stays units when the third leaves', async () => {
    const group = 'switch-3';
    const [ann, ben, cid] = (await Promise.all(['ann', 'ben', 'cid'].map((user) => phone(user)))) as [Page, Page, Page];
    const startedAt = clock.now();
    await join(ann, 'ann', group);
    expect(await seen(ann, 'state', 'joined')).toEqual(['state', 'joined', 'mesh']);
    await join(ben, 'ben', group);
    expect(await seen(ben, 'state', 'joined')).toEqual(['state', 'joined', 'mesh']);
    // A mesh: media page to page, nothing to a unit.
    for (const [page, other] of [
      [ann, 'ben'],
      [ben, 'ann'],
    ] as const) {
      const mesh = await meshBothWays(page, other);
      expect(mesh.mode).toBe('mesh');
      expect(mesh.uplink).toBeNull();
      expect(mesh.peers[0]?.framesSent).toBeGreaterThan(0);
      // What the app holds: the peer, its stream, and the page-to-page connection.
      await page.evaluate(() => {
        const w = window as unknown as UnitWindow;
        for (const peer of w.group?.peers ?? []) {
          w.kept.set(peer.user, { peer, stream: peer.stream, pc: peer.peerConnection });
        }
      });
    }

    // The third page switches the group: the two hear `mode`, the newcomer joins in unit mode.
    await join(cid, 'cid', group);
    expect(await seen(cid, 'state', 'joined')).toEqual(['state', 'joined', 'unit']);
    for (const page of [ann, ben]) expect(await seen(page, 'mode')).toEqual(['mode', 'unit']);
    const users = { ann, ben, cid };
    const names = Object.keys(users);
    for (const [user, page] of Object.entries(users)) {
      const others = names.filter((u) => u !== user);
      const first = await flowingFrom(page, others);
      expectViaUnits(first, others);
      // Frames keep coming from both others.
      expectViaUnits(await flowingFrom(page, others, byUser(first)), others);
      await expectOneUplink(page);
    }
    // The peers of the mesh are the same objects with the same streams; their mesh connections closed.
    for (const page of [ann, ben]) {
      const same = await page.evaluate(() => {
        const w = window as unknown as UnitWindow;
        return [...w.kept].map(([user, kept]) => {
          const peer = w.group?.peers.find((p) => p.user === user);
          return [
            user,
            peer === kept.peer,
            peer?.stream === kept.stream,
            peer?.peerConnection !== kept.pc,
            kept.pc?.connectionState,
          ];
        });
      });
      expect(same).toEqual([[expect.any(String), true, true, true, 'closed']]);
    }
    // The newcomer offered only to its own unit: it answered each peer's unit and heard no switch.
    expect((await log(cid)).filter((e) => e[0] === 'mode')).toEqual([]);

    // The third leaves: the two hear it, and keep each other through their units.
    const cidPage = await cid.evaluate(() => (window as unknown as UnitWindow).group?.page);
    const before = { ann: byUser(await media(ann)), ben: byUser(await media(ben)) };
    expect(await cid.evaluate(async () => (await (window as unknown as UnitWindow).group?.leave())?.reason)).toBe(
      'left',
    );
    for (const page of [ann, ben]) expect(await seen(page, 'peer-left')).toEqual(['peer-left', 'cid', cidPage, 'left']);
    const annSees = await flowingFrom(ann, ['ben'], { ben: before.ann.ben ?? 0 });
    expectViaUnits(annSees, ['ben']);
    expectViaUnits(await flowingFrom(ben, ['ann'], { ann: before.ben.ann ?? 0 }), ['ann']);
    await expectOneUplink(ann);
    for (const page of [ann, ben, cid])
      expect(await errors(page)).toEqual(page === cid ? [['ended', 'left', null]] : []);

    // Over a second on the service's clock, so each page's whole seconds are at least 1; then the two leave.
    clock.advance(1_200);
    for (const page of [ann, ben]) {
      expect(await page.evaluate(async () => (await (window as unknown as UnitWindow).group?.leave())?.reason)).toBe(
        'left',
      );
    }
    const endedAt = clock.now();
    await receiver.waitFor(() => groupEvents('group.left', group).length >= 3, 'three group.left', 15_000);
    // Anything sent twice would have come before a later event.
    await laterEventReported(receiver, { url: server.url, key: server.app.key, identity: (u) => sdk.identityToken(u) });
    const joined = groupEvents('group.joined', group);
    const left = groupEvents('group.left', group);
    expect(joined.map((e) => e.user).sort()).toEqual(names);
    expect(left.map((e) => e.user).sort()).toEqual(names);
    for (const user of names) {
      const j = joined.find((e) => e.user === user) as Record<string, unknown>;
      const l = left.find((e) => e.user === user) as Record<string, unknown>;
      expect(j).toMatchObject({ type: 'group.joined', call: group, media: ['audio', 'video'] });
      expect(l).toMatchObject({ type: 'group.left', call: group, media: ['audio', 'video'], joined_at: j.joined_at });
      expect(j.joined_at as number).toBeGreaterThanOrEqual(startedAt);
      expect(l.left_at as number).toBeGreaterThanOrEqual(j.joined_at as number);
      expect(l.left_at as number).toBeLessThanOrEqual(endedAt);
      expect(l.seconds).toBe(Math.floor(((l.left_at as number) - (j.joined_at as number)) / 1000));
    }
  });

  it('a page that joins a group already in unit mode gets unit at join, offers to its unit only, and receives all three; a fresh offer replaces a connection', async () => {
    const group = 'units-4';
    const names = ['dan', 'eve', 'fay', 'gus'];
    const [dan, eve, fay, gus] = (await Promise.all(names.map((user) => phone(user)))) as [Page, Page, Page, Page];
    // Three at once: the join that makes three switches the group, whichever it is.
    await Promise.all([join(dan, 'dan', group), join(eve, 'eve', group), join(fay, 'fay', group)]);
    for (const page of [dan, eve, fay]) {
      await seen(page, 'state', 'joined');
      await page.waitForFunction(() => (window as unknown as UnitWindow).group?.mode === 'unit');
    }
    await flowingFrom(dan, ['eve', 'fay']);

    await join(gus, 'gus', group);
    expect(await seen(gus, 'state', 'joined')).toEqual(['state', 'joined', 'unit']);
    const all = { dan, eve, fay, gus };
    for (const [user, page] of Object.entries(all)) {
      const others = names.filter((u) => u !== user);
      expectViaUnits(await flowingFrom(page, others), others);
      await expectOneUplink(page);
    }
    // Gus asks dan's unit for a fresh offer, as the SDK does when the media from a unit fails: the
    // new offer replaces the connection; the peer and its stream stay.
    await gus.evaluate((group) => {
      const w = window as unknown as UnitWindow;
      const dan = w.group?.peers.find((p) => p.user === 'dan');
      if (!dan) throw new Error('no dan');
      w.kept.set('dan', { peer: dan, stream: dan.stream, pc: dan.peerConnection });
      w.socket.send(JSON.stringify({ t: 'group.signal', group, to: dan.page, data: { restart: true } }));
    }, group);
    await gus.waitForFunction(() => {
      const w = window as unknown as UnitWindow;
      const dan = w.group?.peers.find((p) => p.user === 'dan');
      return dan?.state === 'connected' && dan.peerConnection !== w.kept.get('dan')?.pc;
    });
    expectViaUnits(await flowingFrom(gus, ['dan', 'eve', 'fay']), ['dan', 'eve', 'fay']);
    const kept = await gus.evaluate(() => {
      const w = window as unknown as UnitWindow;
      const dan = w.group?.peers.find((p) => p.user === 'dan');
      const kept = w.kept.get('dan');
      return [
        dan === kept?.peer,
        dan?.stream === kept?.stream,
        dan?.stream.getTracks().length,
        kept?.pc?.connectionState,
      ];
    });
    expect(kept).toEqual([true, true, 2, 'closed']);
    const gusLog = await log(gus);
    expect(gusLog.filter((e) => e[0] === 'peer-state' && e[1] === 'dan').map((e) => e[2])).toEqual([
      'connected',
      'connecting',
      'connected',
    ]);
    expect(gusLog.filter((e) => e[0] === 'mode')).toEqual([]);
    expect(
      gusLog
        .filter((e) => e[0] === 'peer-joined')
        .map((e) => e[1])
        .sort(),
    ).toEqual(['dan', 'eve', 'fay']);
    for (const page of Object.values(all)) expect(await errors(page)).toEqual([]);
  });

  it('an offer to the unit the service refuses (no media port free) ends the group failed with its code', async () => {
    // A service whose units have one media port free: the first page's media takes it.
    const ports = await onePortFree();
    const small = await startTestServer({
      calls: { groupUnitFrom: 1 },
      streams: { remoteAddresses: ['127.0.0.1'], portRange: ports.range },
    });
    const on = { server: small, sdk: new Realtime({ url: small.url, key: small.app.key, secret: small.app.secret }) };
    try {
      const group = 'one-port';
      const [hal, ivy] = (await Promise.all([phone('hal', on), phone('ivy', on)])) as [Page, Page];
      await join(hal, 'hal', group, on);
      expect(await seen(hal, 'state', 'joined')).toEqual(['state', 'joined', 'unit']);
      await sending(hal);
      await join(ivy, 'ivy', group, on);
      expect(await seen(ivy, 'ended')).toEqual(['ended', 'failed', 'unavailable']);
      const ivyEnd = await ivy.evaluate(async () => {
        const w = window as unknown as UnitWindow;
        const end = await w.group?.ended;
        return [end?.error?.group, end?.error instanceof w.RT.GroupError, w.group?.uplink?.connectionState];
      });
      expect(ivyEnd).toEqual([group, true, 'closed']);
      // It left the group: the first page hears it go, and keeps sending.
      expect((await seen(hal, 'peer-left', 'ivy'))[1]).toBe('ivy');
      expect((await log(ivy)).filter((e) => e[0] === '$error')).toEqual([]);
      expect(await errors(hal)).toEqual([]);
      const before = await sending(hal);
      await sending(hal, before.video[0]?.bytesSent ?? 0);
    } finally {
      await on.sdk.close();
      await small.close();
      await ports.release();
    }
  });

  it('a peer whose unit finds no media port for this page fails alone with unavailable; the group stays', async () => {
    // Three ports: hal's unit, ivy's session on it and ivy's unit; hal's session on ivy's unit finds none.
    const range = await freeRange(3);
    const small = await startTestServer({
      calls: { groupUnitFrom: 1 },
      streams: { remoteAddresses: ['127.0.0.1'], portRange: range },
    });
    const on = { server: small, sdk: new Realtime({ url: small.url, key: small.app.key, secret: small.app.secret }) };
    try {
      const group = 'three-ports';
      const [hal, ivy] = (await Promise.all([phone('hal', on), phone('ivy', on)])) as [Page, Page];
      await join(hal, 'hal', group, on);
      await seen(hal, 'state', 'joined');
      await sending(hal);
      await join(ivy, 'ivy', group, on);
      await sending(ivy);
      await flowingFrom(ivy, ['hal']);
      const failed = await hal.waitForFunction(
        () => {
          const group = (window as unknown as UnitWindow).group;
          const peer = group?.peers.find((p) => p.user === 'ivy');
          return peer?.state === 'failed'
            ? [group?.state, peer.error?.code, peer.error?.group, peer.error?.message]
            : undefined;
        },
        undefined,
        { timeout: 20_000 },
      );
      expect(await failed.jsonValue()).toEqual([
        'joined',
        'unavailable',
        group,
        'group.signal: the service has no free media port now; try again later',
      ]);
      // Refused, not a connection that failed: no fresh offer is asked for, and nothing else ends.
      expect(await errors(hal)).toEqual([]);
      expect(await errors(ivy)).toEqual([]);
      expect((await log(hal)).filter((e) => e[0] === 'peer-state' && e[1] === 'ivy').map((e) => e[2])).toEqual([
        'failed',
      ]);
    } finally {
      await on.sdk.close();
      await small.close();
    }
  });
});
