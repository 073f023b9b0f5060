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
type Hook = Record<string, unknown>;

interface StreamWindow {
  RT: typeof import('@realtime/browser');
  client: import('@realtime/browser').RealtimeClient;
  log: Entry[];
  streams: import('@realtime/browser').LiveStream[];
  /** The remote MediaStream of each offer a viewer took, in order. */
  remotes: MediaStream[];
}

/** A service whose forwarding units talk to 127.0.0.1 only, with webhooks to a receiver on 127.0.0.1. */
async function service() {
  const app = newApp({ name: 'streams' });
  const receiver = await startReceiver(app);
  // The service's clock: a test moves it past a second instead of waiting one.
  const clock = skewedClock();
  const server = await startTestServer({
    app: { ...app, webhook: receiver.url },
    allowPrivateWebhooks: true,
    webhooks: { windowMs: 100 },
    streams: { remoteAddresses: ['127.0.0.1'] },
    now: clock.now,
  });
  const sdk = new Realtime({ url: server.url, key: app.key, secret: app.secret });
  return { server, receiver, sdk, clock };
}

describe('live streams in headless Chromium through the forwarding unit, ICE on loopback', { timeout: 120_000 }, () => {
  let env: Awaited<ReturnType<typeof service>>;
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };
  let opened: Page[] = [];

  beforeAll(async () => {
    env = await service();
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
    await env?.sdk.close();
    await env?.server.close();
    await env?.receiver.close();
  });

  /** A connected page of `user` (anonymous without one) on `on`, ICE candidates kept to 127.0.0.1 both ways. */
  async function open(user?: string, on: Pick<typeof env, 'server' | 'sdk'> = env): Promise<Page> {
    const page = await openSdkPage(browser, pages.url);
    opened.push(page);
    const identity = user === undefined ? undefined : await on.sdk.identityToken(user);
    await page.evaluate(
      ({ url, site, identity }) => {
        const w = window as unknown as StreamWindow;
        w.log = [];
        w.streams = [];
        w.remotes = [];
        // A candidate line: `candidate:<foundation> <component> <protocol> <priority> <address> <port> typ ...`.
        const loopback = (c: RTCIceCandidateInit) => (c.candidate ?? '').split(' ')[4] === '127.0.0.1';
        w.client = w.RT.connect({ url, site, identity, rtc: { candidateFilter: loopback } });
        w.client.on('$error', (error) => w.log.push(['$error', error.code, error.message]));
      },
      { url: on.server.url, site: on.server.app.key, identity },
    );
    await page.waitForFunction(() => (window as unknown as StreamWindow).client.state === 'connected');
    return page;
  }

  /** The page goes on `stream` with `grant`; its events are logged. Returns the stream's index on the page. */
  function enter(page: Page, stream: string, grant: string, role?: 'presenter' | 'viewer'): Promise<number> {
    return page.evaluate(
      ({ stream, grant, role }) => {
        const w = window as unknown as StreamWindow;
        const s = w.client.stream(stream, { grant, role, media: { audio: true, video: true } });
        const index = w.streams.push(s) - 1;
        s.on('state', (state) => w.log.push(['state', index, state]));
        s.on('live', ({ startedAt }) => w.log.push(['live', index, startedAt ?? null]));
        s.on('ended', () => w.log.push(['ended', index]));
        s.on('local', (media) => w.log.push(['local', index, media.getTracks().map((t) => t.kind)]));
        s.on('remote', (track, media) => {
          if (!w.remotes.includes(media)) w.remotes.push(media);
          w.log.push(['remote', index, track.kind, w.remotes.indexOf(media)]);
        });
        void s.left.then(({ error }) => w.log.push(['left', index, error?.code ?? null]));
        return index;
      },
      { stream, grant, role },
    );
  }

  const log = (page: Page) => page.evaluate(() => (window as unknown as StreamWindow).log);
  const count = async (page: Page, kind: string, index: number) =>
    (await log(page)).filter((e) => e[0] === kind && e[1] === index).length;

  /** Waits until the page has logged `n` entries of `kind` for stream `index` (and `value`, when given). */
  async function seen(page: Page, kind: string, index: number, n = 1, value?: unknown): Promise<Entry> {
    const handle = await page.waitForFunction(
      ({ kind, index, n, value }) => {
        const found = (window as unknown as StreamWindow).log.filter(
          (e) => e[0] === kind && e[1] === index && (value === undefined || e[2] === value),
        );
        return found.length >= n ? found[n - 1] : undefined;
      },
      { kind, index, n, value },
      { timeout: 30_000 },
    );
    return (await handle.jsonValue()) as Entry;
  }

  const state = (page: Page, index: number) =>
    page.evaluate((index) => (window as unknown as StreamWindow).streams[index]?.state, index);

  /** Video frames decoded and audio packets received on the stream's current connection to the unit. */
  function received(page: Page, index: number): Promise<{ framesDecoded: number; audioPackets: number }> {
    return page.evaluate(async (index) => {
      const pc = (window as unknown as StreamWindow).streams[index]?.peerConnection;
      const seen = { framesDecoded: 0, audioPackets: 0 };
      if (!pc) return seen;
      (await pc.getStats()).forEach((report: Record<string, unknown>) => {
        if (report.type === 'inbound-rtp' && report.kind === 'video')
          seen.framesDecoded += Number(report.framesDecoded ?? 0);
        if (report.type === 'inbound-rtp' && report.kind === 'audio')
          seen.audioPackets += Number(report.packetsReceived ?? 0);
      });
      return seen;
    }, index);
  }

  async function decodes(page: Page, index: number): Promise<void> {
    await expect
      .poll(async () => (await received(page, index)).framesDecoded, { timeout: 30_000, interval: 250 })
      .toBeGreaterThan(0);
    await expect
      .poll(async () => (await received(page, index)).audioPackets, { timeout: 30_000, interval: 250 })
      .toBeGreaterThan(0);
  }

  const leave = (page: Page, index: number) =>
    page.evaluate(async (index) => {
      const s = (window as unknown as StreamWindow).streams[index];
      const left = await s?.leave();
      return { state: s?.state, error: left?.error?.code ?? null };
    }, index);

  const hooks = (stream: string, type?: string): Hook[] =>
    env.receiver.events().filter((e) => e.stream === stream && (type === undefined || e.type === type));

  it('one presenter and two viewers (one a visitor) over two live runs: media decoded each run, and the webhooks', async () => {
    const name = 'keynote';
    const presenter = await open('pres');
    const member = await open('ann');
    const visitor = await open();

    // Both viewers come before the stream is live: they wait.
    await enter(member, name, await env.sdk.streamGrant(name, { role: 'viewer', userId: 'ann' }));
    await enter(visitor, name, await env.sdk.streamGrant(name, { role: 'viewer' }));
    for (const page of [member, visitor]) await seen(page, 'state', 0, 1, 'waiting');
    expect(await member.evaluate(() => (window as unknown as StreamWindow).streams[0]?.role)).toBe('viewer');

    const runs: { from: number; to: number }[] = [];
    for (let run = 0; run < 2; run++) {
      const from = env.clock.now();
      // The role comes from the grant.
      const index = await enter(
        presenter,
        name,
        await env.sdk.streamGrant(name, { role: 'presenter', userId: 'pres' }),
      );
      expect(index).toBe(run);
      const [, , kinds] = await seen(presenter, 'local', run);
      expect((kinds as string[]).sort()).toEqual(['audio', 'video']);
      const [, , startedAt] = await seen(presenter, 'live', run);
      expect(startedAt).toBeGreaterThanOrEqual(from);
      expect(await state(presenter, run)).toBe('live');
      expect(await presenter.evaluate((i) => (window as unknown as StreamWindow).streams[i]?.role, run)).toBe(
        'presenter',
      );

      for (const page of [member, visitor]) {
        expect(await seen(page, 'live', 0, run + 1)).toEqual(['live', 0, startedAt]);
        await seen(page, 'state', 0, run + 1, 'live');
        await decodes(page, 0);
        // A new remote stream for this run, holding the presenter's audio and video.
        const tracks = await page.evaluate(
          (run) =>
            (window as unknown as StreamWindow).remotes[run]
              ?.getTracks()
              .map((t) => t.kind)
              .sort(),
          run,
        );
        expect(tracks).toEqual(['audio', 'video']);
        expect(
          await page.evaluate((run) => {
            const w = window as unknown as StreamWindow;
            return w.streams[0]?.remoteStream === w.remotes[run];
          }, run),
        ).toBe(true);
      }
      // Live for over a second on the service's clock, so the webhooks' whole seconds are at least 1.
      env.clock.advance(1_200);

      expect(await leave(presenter, run)).toEqual({ state: 'left', error: null });
      runs.push({ from, to: env.clock.now() });
      for (const page of [member, visitor]) {
        await seen(page, 'ended', 0, run + 1);
        await expect.poll(() => state(page, 0)).toBe('waiting');
      }
    }
    // The viewers stayed on the stream through both runs; leaving now (not live) reports nothing.
    for (const page of [member, visitor]) expect(await leave(page, 0)).toEqual({ state: 'left', error: null });
    for (const page of [presenter, member, visitor]) {
      expect((await log(page)).filter((e) => e[0] === '$error')).toEqual([]);
      expect(await count(page, 'left', 0)).toBe(1);
    }

    await env.receiver.waitFor(() => hooks(name, 'stream.ended').length >= 2, 'two stream.ended', 15_000);
    // Anything late would have come before a later event.
    await laterEventReported(env.receiver, {
      url: env.server.url,
      key: env.server.app.key,
      identity: (u) => env.sdk.identityToken(u),
    });
    const all = hooks(name);
    const lives = hooks(name, 'stream.live');
    const ends = hooks(name, 'stream.ended');
    expect(lives).toHaveLength(2);
    expect(ends).toHaveLength(2);
    expect(all.filter((e) => e.type === 'stream.joined')).toHaveLength(4);
    expect(all.filter((e) => e.type === 'stream.left')).toHaveLength(4);
    expect(all).toHaveLength(12);
    // Nothing ever for the visitor (nor any page without a user).
    for (const event of all.filter((e) => e.type === 'stream.joined' || e.type === 'stream.left')) {
      expect(['pres', 'ann']).toContain(event.user);
    }

    const watches = new Set<unknown>();
    for (const [run, span] of runs.entries()) {
      const live = lives.find((e) => (e.started_at as number) >= span.from && (e.started_at as number) <= span.to);
      expect(live, `stream.live of run ${run}`).toBeDefined();
      const startedAt = live?.started_at as number;
      const ended = ends.find((e) => e.started_at === startedAt);
      expect(ended, `stream.ended of run ${run}`).toBeDefined();
      const endedAt = ended?.ended_at as number;
      expect(endedAt).toBeGreaterThanOrEqual(startedAt + 1_000);
      expect(endedAt).toBeLessThanOrEqual(span.to);

      for (const [user, role] of [
        ['pres', 'presenter'],
        ['ann', 'viewer'],
      ] as const) {
        const inRun = (e: Hook) =>
          e.user === user && (e.joined_at as number) >= startedAt && (e.joined_at as number) <= endedAt;
        const joined = all.filter((e) => e.type === 'stream.joined' && inRun(e));
        const left = all.filter((e) => e.type === 'stream.left' && inRun(e));
        expect(joined, `${user}'s stream.joined in run ${run}`).toHaveLength(1);
        expect(left, `${user}'s stream.left in run ${run}`).toHaveLength(1);
        const [j, l] = [joined[0] as Hook, left[0] as Hook];
        expect(j).toMatchObject({ stream: name, user, role });
        expect(l).toMatchObject({ stream: name, user, role, watch: j.watch, joined_at: j.joined_at });
        expect(typeof j.watch).toBe('string');
        watches.add(j.watch);
        // Live time only: ann was on the stream long before it went live, and stays after it ends.
        const leftAt = l.left_at as number;
        expect(leftAt).toBeGreaterThanOrEqual(j.joined_at as number);
        expect(leftAt).toBeLessThanOrEqual(endedAt);
        expect(l.seconds).toBe(Math.floor((leftAt - (j.joined_at as number)) / 1000));
        expect(l.seconds).toBeGreaterThanOrEqual(1);
        expect(l.seconds).toBeLessThanOrEqual(Math.ceil((endedAt - startedAt) / 1000));
      }
    }
    // A new watch per person per run.
    expect(watches.size).toBe(4);
  });

  it('a second presenter is refused stream_taken; a viewer grant cannot present (wrong_stream); a closed presenter page ends the run', async () => {
    const name = 'stage';
    const first = await open('p1');
    const second = await open('p2');
    const viewer = await open('v1');
    await enter(viewer, name, await env.sdk.streamGrant(name, { role: 'viewer', userId: 'v1' }));
    await enter(first, name, await env.sdk.streamGrant(name, { role: 'presenter', userId: 'p1' }));
    await seen(first, 'live', 0);
    await seen(viewer, 'live', 0);

    await enter(second, name, await env.sdk.streamGrant(name, { role: 'presenter', userId: 'p2' }));
    expect(await seen(second, 'left', 0)).toEqual(['left', 0, 'stream_taken']);
    expect(await state(second, 0)).toBe('left');
    // Its camera is released.
    expect(
      await second.evaluate(() =>
        (window as unknown as StreamWindow).streams[0]?.localStream?.getTracks().map((t) => t.readyState),
      ),
    ).toEqual(['ended', 'ended']);

    // A viewer's grant, told to present.
    const viewerGrant = await env.sdk.streamGrant('other-stage', { role: 'viewer', userId: 'p2' });
    await enter(second, 'other-stage', viewerGrant, 'presenter');
    expect(await seen(second, 'left', 1)).toEqual(['left', 1, 'wrong_stream']);
    const error = await second.evaluate(() => {
      const s = (window as unknown as StreamWindow).streams[1];
      return s?.left.then(({ error }) => ({
        name: error?.name,
        stream: error?.stream,
        isStreamError: error instanceof (window as unknown as StreamWindow).RT.StreamError,
      }));
    });
    expect(error).toEqual({ name: 'RealtimeSocketError', stream: 'other-stage', isStreamError: true });

    // The presenter's page goes away (pagehide): it leaves, and the run ends for the viewer.
    await first.goto('about:blank');
    await seen(viewer, 'ended', 0);
    expect(await state(viewer, 0)).toBe('waiting');
    for (const page of [second, viewer]) expect((await log(page)).filter((e) => e[0] === '$error')).toEqual([]);
    await env.receiver.waitFor(() => hooks(name, 'stream.ended').length === 1, 'stream.ended', 15_000);
    expect(hooks(name, 'stream.live')).toHaveLength(1);
    expect(hooks('other-stage')).toEqual([]);
    expect(hooks(name).filter((e) => e.user === 'p2')).toEqual([]);
  });
  it('a viewer the forwarding unit has no media port for leaves with unavailable; the seated viewer keeps the media', async () => {
    // Two ports: the presenter's unit and one viewer's session.
    const small = await startTestServer({ streams: { remoteAddresses: ['127.0.0.1'], portRange: await freeRange(2) } });
    const on = { server: small, sdk: new Realtime({ url: small.url, key: small.app.key, secret: small.app.secret }) };
    try {
      const name = 'one-seat';
      const [presenter, seated, late] = [await open('p1', on), await open('v1', on), await open('v2', on)];
      await enter(presenter, name, await on.sdk.streamGrant(name, { role: 'presenter', userId: 'p1' }));
      await enter(seated, name, await on.sdk.streamGrant(name, { role: 'viewer', userId: 'v1' }));
      await decodes(seated, 0);
      await enter(late, name, await on.sdk.streamGrant(name, { role: 'viewer', userId: 'v2' }));
      expect(await seen(late, 'left', 0)).toEqual(['left', 0, 'unavailable']);
      const error = await late.evaluate(() =>
        (window as unknown as StreamWindow).streams[0]?.left.then(({ error }) => [error?.stream, error?.message]),
      );
      expect(error).toEqual([name, 'stream.signal: the service has no free media port now; try again later']);
      expect(await state(late, 0)).toBe('left');
      expect((await log(late)).filter((e) => e[0] === '$error')).toEqual([]);
      const before = (await received(seated, 0)).framesDecoded;
      await expect
        .poll(async () => (await received(seated, 0)).framesDecoded, { timeout: 30_000, interval: 250 })
        .toBeGreaterThan(before);
    } finally {
      await on.sdk.close();
      await small.close();
    }
  });

  it('a viewer whose socket drops goes back on the stream with the next one, and gets the media again', async () => {
    const name = 'rejoin';
    const presenter = await open('rp');
    const viewer = await open('rv');
    await enter(presenter, name, await env.sdk.streamGrant(name, { role: 'presenter', userId: 'rp' }));
    const [, , startedAt] = await seen(presenter, 'live', 0);
    expect(startedAt).toEqual(expect.any(Number));
    // A grant function: called again for the new socket.
    await viewer.evaluate(
      ({ name, grant }) => {
        const w = window as unknown as StreamWindow;
        let calls = 0;
        const s = w.client.stream(name, {
          grant: async () => {
            calls++;
            w.log.push(['grant', 0, calls]);
            return grant;
          },
        });
        w.streams.push(s);
        s.on('state', (state) => w.log.push(['state', 0, state]));
        s.on('live', ({ startedAt }) => w.log.push(['live', 0, startedAt ?? null]));
        void s.left.then(({ error }) => w.log.push(['left', 0, error?.code ?? null]));
      },
      { name, grant: await env.sdk.streamGrant(name, { role: 'viewer', userId: 'rv' }) },
    );
    // Came while live: `live` at once, with the run's start time from the watching answer.
    expect(await seen(viewer, 'live', 0)).toEqual(['live', 0, startedAt]);
    await seen(viewer, 'state', 0, 1, 'live');
    await decodes(viewer, 0);
    await viewer.evaluate(() => {
      const w = window as unknown as StreamWindow & { firstPc?: RTCPeerConnection };
      w.firstPc = w.streams[0]?.peerConnection;
    });

    expect(env.server.disconnectUser(env.server.app.key, 'rv')).toBe(1);
    await seen(viewer, 'state', 0, 1, 'joining');
    await seen(viewer, 'grant', 0, 1, 2);
    await seen(viewer, 'state', 0, 2, 'live');
    await decodes(viewer, 0);
    expect(await count(viewer, 'left', 0)).toBe(0);
    // A new connection to the unit; the old one closed with the socket.
    expect(
      await viewer.evaluate(() => {
        const w = window as unknown as StreamWindow & { firstPc?: RTCPeerConnection };
        const now = w.streams[0]?.peerConnection;
        return { fresh: now !== undefined && now !== w.firstPc, old: w.firstPc?.connectionState };
      }),
    ).toEqual({ fresh: true, old: 'closed' });
    // The presenter's run went on throughout.
    expect(await state(presenter, 0)).toBe('live');
    expect(await count(presenter, 'ended', 0)).toBe(0);
    await env.receiver.waitFor(
      () => hooks(name, 'stream.joined').filter((e) => e.user === 'rv').length === 2,
      "the viewer's second stream.joined",
      15_000,
    );
    const left = hooks(name, 'stream.left').filter((e) => e.user === 'rv');
    expect(left).toHaveLength(1);
    expect(hooks(name, 'stream.ended')).toEqual([]);
  });
  it('dynacast: a viewer showing the video small makes the presenter stop its larger layers, and one asking more starts them again', async () => {
    const name = 'dyna';
    const presenter = await open('dp');
    const viewer = await open('dv');
    await enter(viewer, name, await env.sdk.streamGrant(name, { role: 'viewer', userId: 'dv' }));
    await enter(presenter, name, await env.sdk.streamGrant(name, { role: 'presenter', userId: 'dp' }));
    await seen(presenter, 'live', 0);
    await decodes(viewer, 0);

    /** Which of the presenter's three layers its browser is told to send, and the bytes each sent so far. */
    const layers = () =>
      presenter.evaluate(async () => {
        const pc = (window as unknown as StreamWindow).streams[0]?.peerConnection;
        const sender = pc?.getSenders().find((s) => s.track?.kind === 'video');
        const active = sender?.getParameters().encodings.map((e) => e.active !== false) ?? [];
        const bytes: Record<string, number> = {};
        (await pc?.getStats())?.forEach((r: Record<string, unknown>) => {
          if (r.type === 'outbound-rtp' && r.kind === 'video') bytes[String(r.rid)] = Number(r.bytesSent ?? 0);
        });
        return { active, bytes };
      });
    const size = (width: number, height: number) =>
      viewer.evaluate(([w, h]) => (window as unknown as StreamWindow).streams[0]?.setVideoSize(w, h), [width, height]);
    expect((await layers()).active).toEqual([true, true, true]);

    // The fake camera is 640x480: Chromium sends q (160x120) and h (320x240). Shown at 160x120, only q is used.
    size(160, 120);
    await expect
      .poll(async () => (await layers()).active, { timeout: 10_000, interval: 250 })
      .toEqual([true, false, false]);
    // h really stops (its bytes stand still while q sends 20 kB more: over a second), and the viewer keeps decoding.
    const off = await layers();
    const frames = (await received(viewer, 0)).framesDecoded;
    await expect
      .poll(async () => (await layers()).bytes.q ?? 0, { timeout: 10_000, interval: 250 })
      .toBeGreaterThan((off.bytes.q ?? 0) + 20_000);
    expect((await layers()).bytes.h ?? 0).toBeLessThanOrEqual((off.bytes.h ?? 0) + 1500);
    expect((await received(viewer, 0)).framesDecoded).toBeGreaterThan(frames);

    // Asked for more than any layer: every layer again, at once, and h sends again.
    size(1280, 720);
    await expect
      .poll(async () => (await layers()).active, { timeout: 5_000, interval: 250 })
      .toEqual([true, true, true]);
    const on = await layers();
    await expect
      .poll(async () => (await layers()).bytes.h ?? 0, { timeout: 10_000, interval: 250 })
      .toBeGreaterThan((on.bytes.h ?? 0) + 10_000);
  });
});
