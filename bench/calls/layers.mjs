// Part 5 of bench:calls: simulcast and the layer each viewer gets (issue 21). A presenter page sends
// its camera (a 1280x720 picture of fine grain, so the encoder fills its rate as a real camera does:
// test/browser/fake-video.ts) to a forwarding unit (a node process of its own: ./layers-unit.mjs) in
// three layers, q/h/f at 1/4, 1/2 and 1/1 of the size, as the browser SDK sends a unit.
// (a) by link: one viewer behind 300 kbit/s, one behind 1.5 Mbit/s (each a Chromium in a network
//     namespace whose downlink is a tc token bucket: test/browser/shaped-link.ts) and one on
//     loopback: decoded fps, frame size and bytes received per second of each.
// (c) moves: the 300 kbit/s viewer's link opened (tbf removed), then at once shut back to 300 kbit/s:
//     the time until its decoded frame width (getStats) moves a layer, and until it reaches the top or
//     the bottom layer; the longest the picture stood still on the way; the unit's side of it.
// (b) CPU: 1 presenter and N viewers on loopback through a fresh unit, simulcast on, then the same
//     with the presenter sending one layer: the unit process's CPU over a window, per viewer.
// (a) and (c) need root (namespaces and tc); without it they are skipped and (b) still runs.

import { loadBrowserHelpers } from './browser-helpers.mjs';
import { forkRpc } from './rpc.mjs';

const LOOPBACK = '127.0.0.1';
const CAMERA = { width: 1280, height: 720, frameRate: 30 };
const SLOW_KBIT = 300;
const MID_KBIT = 1500;
/** How long a viewer may take to reach its layer, or a move to finish, before the bench moves on. */
const SETTLE_MS = 30_000;
const MOVE_MS = 25_000;
const POLL_MS = 100;
/** How long the loopback viewers of the CPU part may take to reach the whole picture. */
const CPU_SETTLE_MS = 20_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The page's side, in plain browser JavaScript: candidates leave the page only for the address in
// its URL (`?address=`), so each page's media goes the way the bench means (its link, or loopback).
const PAGE_SCRIPT = `
const ADDRESS = new URLSearchParams(location.search).get('address');
let pc;
function peer() {
  pc = new RTCPeerConnection({ iceServers: [] });
  pc.onicecandidate = (e) => { if (e.candidate && e.candidate.address === ADDRESS) window.toUnit(JSON.stringify(e.candidate.toJSON())); };
  return pc;
}
window.present = async (camera, simulcast) => {
  const media = await navigator.mediaDevices.getUserMedia({ audio: true, video: camera });
  peer();
  for (const track of media.getTracks()) {
    const init = { direction: 'sendonly', streams: [media] };
    // As the browser SDK sends a unit (packages/browser/src/calls/peer.ts, SIMULCAST_LAYERS).
    if (simulcast && track.kind === 'video') init.sendEncodings = [{ rid: 'q', scaleResolutionDownBy: 4 }, { rid: 'h', scaleResolutionDownBy: 2 }, { rid: 'f', scaleResolutionDownBy: 1 }];
    pc.addTransceiver(track, init);
  }
  await pc.setLocalDescription(await pc.createOffer());
  return pc.localDescription.sdp;
};
window.presented = (sdp) => pc.setRemoteDescription({ type: 'answer', sdp });
window.view = async (sdp) => {
  peer();
  pc.ontrack = (e) => {
    if (e.track.kind !== 'video') return;
    const video = document.createElement('video');
    video.muted = true;
    video.autoplay = true;
    video.srcObject = e.streams[0] ?? new MediaStream([e.track]);
    document.body.append(video);
    video.play().catch(() => {});
  };
  await pc.setRemoteDescription({ type: 'offer', sdp });
  await pc.setLocalDescription(await pc.createAnswer());
  return pc.localDescription.sdp;
};
window.stats = async () => {
  const out = { connected: pc?.connectionState === 'connected', framesDecoded: 0, frameWidth: 0, frameHeight: 0,
    videoBytes: 0, pairBytes: 0, freezeCount: 0, freezeSeconds: 0, lost: 0, local: '', sent: [] };
  if (!pc) return out;
  const report = await pc.getStats();
  report.forEach((s) => {
    if (s.type === 'inbound-rtp' && s.kind === 'video') {
      out.framesDecoded += s.framesDecoded || 0; out.frameWidth = s.frameWidth || 0; out.frameHeight = s.frameHeight || 0;
      out.videoBytes += s.bytesReceived || 0; out.freezeCount += s.freezeCount || 0;
      out.freezeSeconds += s.totalFreezesDuration || 0; out.lost += s.packetsLost || 0;
    }
    if (s.type === 'outbound-rtp' && s.kind === 'video') {
      out.sent.push({ rid: s.rid || '-', width: s.frameWidth || 0, bytes: s.bytesSent || 0, packets: s.packetsSent || 0, frames: s.framesEncoded || 0, limit: s.qualityLimitationReason || '' });
    }
    if (s.type === 'outbound-rtp' && s.kind === 'audio') out.sent.push({ rid: 'audio', width: 0, bytes: s.bytesSent || 0, packets: s.packetsSent || 0, frames: 0, limit: '' });
    if (s.type === 'transport') {
      // Everything that came in on the working pair: media, padding probes, RTCP (no IP/UDP headers).
      out.pairBytes += s.bytesReceived || 0;
      const pair = report.get(s.selectedCandidatePairId);
      out.local = (pair && report.get(pair.localCandidateId)?.address) || '';
    }
  });
  out.sent.sort((a, b) => a.rid.localeCompare(b.rid));
  return out;
};
window.ready = true;
`;

const stats = (page) => page.evaluate(() => window.stats());

/** Polls until `check()` is true (then true), or answers false after `ms`. */
async function waitFor(check, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await sleep(250);
  }
  return false;
}

/** Tallies each value seen: "320x180 (9), 640x360 (1)". */
const tally = (values) => {
  const counts = new Map();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts].map(([value, n]) => `${value} (${n})`).join(', ');
};

export async function layers({ seconds, warmupSeconds, cpuViewers, cycles, log }) {
  const helpers = await loadBrowserHelpers();
  const shaping = helpers.canShape();
  const links = shaping.ok ? await helpers.shapedLinks(2) : undefined;
  if (!shaping.ok) log({ layers: `by-link and moves skipped: ${shaping.reason}` });
  const host = links?.address ?? LOOPBACK;
  const video = helpers.writeGrainVideo({ width: CAMERA.width, height: CAMERA.height });
  const html = `<!doctype html><meta charset="utf-8"><title>layers</title><script>${PAGE_SCRIPT}</script>`;
  let pages;
  const browsers = [];
  const units = [];
  const result = { skipped: shaping.ok ? undefined : shaping.reason };
  try {
    pages = await helpers.servePages(
      (path) => (path.startsWith('/?') ? { type: 'text/html', body: html } : undefined),
      {
        host,
      },
    );
    const origin = new URL(pages.url).origin;
    const launch = async (options) => {
      const browser = await helpers.launchChromium({
        media: true,
        ...options,
        args: [helpers.secureOriginsFlag([origin])],
      });
      browsers.push(browser);
      return browser;
    };
    const camera = await launch({ videoFile: video.path });
    const outside = await launch({});

    /** A fresh unit on `hosts`, taking media only from `remotes`. */
    const startUnit = async (hosts, remotes) => {
      const unit = await forkRpc(new URL('./layers-unit.mjs', import.meta.url));
      units.push(unit);
      await unit.call('init', hosts, remotes);
      return unit;
    };
    const stopUnit = async (unit) => {
      units.splice(units.indexOf(unit), 1);
      await unit.stop();
    };
    const openPage = async (browser, address, toUnit) => {
      const page = await browser.newPage();
      await page.exposeFunction('toUnit', (json) => toUnit(JSON.parse(json)).catch(() => {}));
      await page.goto(`${pages.url}?address=${address}`);
      await page.waitForFunction(() => window.ready === true);
      return page;
    };
    const present = async (unit, simulcast) => {
      await unit.call('presenter', 'host');
      const page = await openPage(camera, LOOPBACK, (c) => unit.call('candidate', 'host', c));
      const offer = await page.evaluate(([c, s]) => window.present(c, s), [CAMERA, simulcast]);
      await page.evaluate((sdp) => window.presented(sdp), await unit.call('answer', 'host', offer));
      return page;
    };
    const view = async (unit, browser, address, id) => {
      await unit.call('viewer', id);
      const page = await openPage(browser, address, (c) => unit.call('candidate', id, c));
      const offer = await unit.call('offer', id);
      await unit.call('accept', id, await page.evaluate((sdp) => window.view(sdp), offer));
      return page;
    };

    if (links) {
      const [mid, slow] = links.links;
      await mid.rate(MID_KBIT);
      await slow.rate(SLOW_KBIT);
      const unit = await startUnit([links.address], [LOOPBACK, links.address, mid.inner, slow.inner]);
      const inMid = await mid.launchChromium({ media: true, secureOrigins: [origin] });
      const inSlow = await slow.launchChromium({ media: true, secureOrigins: [origin] });
      const viewers = [
        { name: `${SLOW_KBIT} kbit/s`, id: 'slow', page: await view(unit, inSlow, slow.inner, 'slow'), want: 320 },
        { name: `${MID_KBIT / 1000} Mbit/s`, id: 'mid', page: await view(unit, inMid, mid.inner, 'mid'), want: 640 },
        { name: 'unshaped (loopback)', id: 'fast', page: await view(unit, outside, LOOPBACK, 'fast'), want: 1280 },
      ];
      const started = Date.now();
      const presenter = await present(unit, true);

      // (a) Each viewer at the layer its link carries (or the bench goes on after SETTLE_MS and says so).
      const settled = await waitFor(
        async () =>
          (await Promise.all(viewers.map((v) => stats(v.page)))).every((s, i) => s.frameWidth === viewers[i].want),
        SETTLE_MS,
      );
      const settleSeconds = (Date.now() - started) / 1000;
      log({ layers: 'by link', settled, settleSeconds });
      for (const v of viewers) {
        const local = (await stats(v.page)).local;
        const expected = v.id === 'fast' ? LOOPBACK : v.id === 'mid' ? mid.inner : slow.inner;
        if (local !== expected) throw new Error(`viewer ${v.id} receives on ${local}, not ${expected}`);
      }
      await sleep(warmupSeconds * 1000);
      const first = await Promise.all(viewers.map((v) => stats(v.page)));
      const firstPresenter = await stats(presenter);
      const t0 = performance.now();
      const sizes = viewers.map(() => []);
      for (let i = 0; i < seconds; i++) {
        await sleep(1000);
        const now = await Promise.all(viewers.map((v) => stats(v.page)));
        for (const [k, s] of now.entries()) sizes[k].push(`${s.frameWidth}x${s.frameHeight}`);
      }
      const last = await Promise.all(viewers.map((v) => stats(v.page)));
      const lastPresenter = await stats(presenter);
      const wall = (performance.now() - t0) / 1000;
      const chosen = await unit.call('layers');
      result.byLink = viewers.map((v, k) => ({
        link: v.name,
        fps: (last[k].framesDecoded - first[k].framesDecoded) / wall,
        sizes: tally(sizes[k]),
        videoKbit: ((last[k].videoBytes - first[k].videoBytes) * 8) / wall / 1000,
        pairKbit: ((last[k].pairBytes - first[k].pairBytes) * 8) / wall / 1000,
        freezes: last[k].freezeCount - first[k].freezeCount,
        lost: last[k].lost - first[k].lost,
        layer: chosen[v.id]?.current,
        estimateKbit: (chosen[v.id]?.estimate ?? 0) / 1000,
      }));
      result.presenterLayers = lastPresenter.sent.map((layer) => {
        const before = firstPresenter.sent.find((s) => s.rid === layer.rid);
        return {
          rid: layer.rid,
          width: layer.width,
          kbit: ((layer.bytes - (before?.bytes ?? 0)) * 8) / wall / 1000,
          fps: (layer.frames - (before?.frames ?? 0)) / wall,
          limit: layer.limit,
        };
      });
      result.settleSeconds = settled ? settleSeconds : undefined;
      for (const row of result.byLink) log(row);

      // (c) The slow viewer's link opens (up to the top layer, or MOVE_MS), then at once shuts again
      // (down to the bottom layer, or MOVE_MS), `cycles` times. Widths are polled every POLL_MS.
      const slowPage = viewers[0].page;
      const sent = (await stats(presenter)).sent.filter((s) => s.rid !== 'audio' && s.width > 0);
      const top = Math.max(...sent.map((s) => s.width));
      const bottom = Math.min(...sent.map((s) => s.width));
      result.moves = [];
      for (let cycle = 0; cycle < cycles; cycle++) {
        for (const direction of ['up', 'down']) {
          const goal = direction === 'up' ? top : bottom;
          // The unit's side: when it first has the end layer (0 = q, 2 = f) as this viewer's layer.
          const goalLayer = direction === 'up' ? 2 : 0;
          const before = await stats(slowPage);
          const from = before.frameWidth;
          await slow.rate(direction === 'up' ? undefined : SLOW_KBIT);
          const start = performance.now();
          let frames = before.framesDecoded;
          let lastFrameAt = start;
          let stall = 0;
          let firstMove;
          let reached = from === goal ? 0 : undefined;
          let unitAt;
          const widths = [String(from)];
          let width = from;
          while (reached === undefined && performance.now() - start < MOVE_MS) {
            await sleep(POLL_MS);
            const s = await stats(slowPage);
            const at = performance.now() - start;
            if (s.framesDecoded > frames) {
              frames = s.framesDecoded;
              lastFrameAt = at + start;
            }
            stall = Math.max(stall, at + start - lastFrameAt);
            if (s.frameWidth !== width) {
              width = s.frameWidth;
              widths.push(`${width} @${(at / 1000).toFixed(1)} s`);
            }
            if (firstMove === undefined && (direction === 'up' ? width > from : width < from)) firstMove = at;
            if (unitAt === undefined && (await unit.call('layers')).slow?.current === goalLayer) unitAt = at;
            if (width === goal) reached = at;
          }
          const after = await stats(slowPage);
          const unitNow = (await unit.call('layers')).slow;
          const row = {
            cycle: cycle + 1,
            // Already at the end layer when the link changed: nothing to time.
            already: from === goal,
            direction: direction === 'up' ? `${SLOW_KBIT} kbit/s -> unshaped` : `unshaped -> ${SLOW_KBIT} kbit/s`,
            widths: widths.join(' -> '),
            firstMoveMs: firstMove,
            reachedMs: reached,
            stallMs: stall,
            freezes: after.freezeCount - before.freezeCount,
            unitMs: unitAt,
            unitLayer: unitNow?.current,
            estimateKbit: (unitNow?.estimate ?? 0) / 1000,
          };
          result.moves.push(row);
          log(row);
        }
      }
      await stopUnit(unit);
      for (const v of viewers) await v.page.close();
      await presenter.close();
    }

    // (b) Unit CPU per forwarded stream, simulcast on and off, everything on loopback.
    result.cpu = [];
    for (const simulcast of [true, false]) {
      const unit = await startUnit([LOOPBACK], [LOOPBACK]);
      const viewers = [];
      for (let i = 0; i < cpuViewers; i++) viewers.push(await view(unit, outside, LOOPBACK, `viewer-${i + 1}`));
      const presenter = await present(unit, simulcast);
      // With simulcast, loopback viewers climb q -> h -> f as their probes pass: measured once all
      // are at the top, or after CPU_SETTLE_MS at whatever layer they are (the row says which).
      const top = await waitFor(
        async () => (await Promise.all(viewers.map(stats))).every((s) => s.frameWidth === CAMERA.width),
        CPU_SETTLE_MS,
      );
      if (!top) log({ simulcast, warning: `not every viewer reached ${CAMERA.width} wide` });
      await sleep(warmupSeconds * 1000);
      const take = async () => ({
        unit: await unit.call('sample'),
        presenter: await stats(presenter),
        viewers: await Promise.all(viewers.map(stats)),
      });
      const a = await take();
      await sleep(seconds * 1000);
      const b = await take();
      const wall = (b.unit.wall - a.unit.wall) / 1000;
      const cpuPercent = ((b.unit.cpu - a.unit.cpu) / 1e6 / wall) * 100;
      const packets = b.unit.packets - a.unit.packets;
      const sentBytes = (s) => s.sent.reduce((n, layer) => n + layer.bytes, 0);
      // What the unit took in: the presenter's packets (on loopback none are lost).
      const packetsIn = b.presenter.sent.reduce(
        (n, layer) => n + layer.packets - (a.presenter.sent.find((s) => s.rid === layer.rid)?.packets ?? 0),
        0,
      );
      const row = {
        simulcast: simulcast ? 'on (q/h/f)' : 'off (one layer)',
        viewers: cpuViewers,
        unitCpu: cpuPercent,
        perStream: cpuPercent / cpuViewers,
        cpuPerPacket: (b.unit.cpu - a.unit.cpu) / Math.max(1, packets + packetsIn),
        packetsInPerSecond: packetsIn / wall,
        packetsPerSecond: packets / wall,
        mbitOut: ((b.unit.bytes - a.unit.bytes) * 8) / wall / 1e6,
        uplinkKbit: ((sentBytes(b.presenter) - sentBytes(a.presenter)) * 8) / wall / 1000,
        layersSent: b.presenter.sent
          .filter((s) => s.rid !== 'audio')
          .map((s) => `${s.rid}:${s.width}${s.limit && s.limit !== 'none' ? ` (${s.limit})` : ''}`)
          .join(' '),
        fps: b.viewers.reduce((n, s, i) => n + (s.framesDecoded - a.viewers[i].framesDecoded) / wall, 0) / cpuViewers,
        widths: tally(b.viewers.map((s) => s.frameWidth)),
      };
      result.cpu.push(row);
      log(row);
      await stopUnit(unit);
      for (const page of viewers) await page.close();
      await presenter.close();
    }
  } finally {
    for (const unit of units) await unit.stop();
    for (const browser of browsers) await helpers.closeChromium(browser);
    await links?.close();
    await pages?.close();
    video.remove();
    if (links) {
      const left = await helpers.ownLeftovers();
      if (left.length > 0) log({ warning: `namespaces or veth ends left: ${left.join(', ')}` });
    }
  }
  return result;
}
