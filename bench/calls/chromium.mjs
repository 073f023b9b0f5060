// Headless Debian Chromium with fake camera and microphone (as test/browser/streams-harness.ts
// launches it), the page every bench page loads, and the CPU of one browser's process tree.
import { createServer } from 'node:http';
import { networkInterfaces } from 'node:os';
import { chromium } from 'playwright-core';
import { childrenOf, treeCpuSeconds } from './proc.mjs';

const LOOPBACK = '127.0.0.1';

/** A browser and the root pid of its processes (for its CPU, apart from any other browser's). */
export async function launchBrowser() {
  const before = new Set(childrenOf(process.pid));
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      '--autoplay-policy=no-user-gesture-required',
      '--allow-loopback-in-peer-connection',
      // Real addresses in candidates (no mDNS names), so the pages can keep only the loopback ones.
      '--disable-features=WebRtcHideLocalIpsWithMdns',
      // Pages in the background are not throttled: every page of a bench is a background tab.
      '--disable-background-timer-throttling',
      '--disable-renderer-backgrounding',
      '--disable-backgrounding-occluded-windows',
    ],
  });
  const root = childrenOf(process.pid).find((pid) => !before.has(pid));
  if (root === undefined) throw new Error('could not find the Chromium process just launched');
  return { browser, cpuSeconds: () => treeCpuSeconds(root) };
}

// The page's side, in plain browser JavaScript. Only candidates on 127.0.0.1 ever leave a page:
// trickled ones are filtered here, and an SDP handed out has every other candidate line removed.
const PAGE_SCRIPT = `
const LOOPBACK = '${LOOPBACK}';
const CAMERA = { audio: true, video: { width: 640, height: 480, frameRate: 30 } };
let media;
const camera = async () => (media ??= await navigator.mediaDevices.getUserMedia(CAMERA));
const loopbackOnly = (sdp) =>
  sdp.split('\\r\\n').filter((l) => !l.startsWith('a=candidate:') || l.split(' ')[4] === LOOPBACK).join('\\r\\n');
const pcs = new Map();
function play(e) {
  if (e.track.kind !== 'video') return;
  const video = document.createElement('video');
  video.muted = true;
  video.autoplay = true;
  video.srcObject = e.streams[0] ?? new MediaStream([e.track]);
  document.body.append(video);
  video.play().catch(() => {});
}
function peer(id, trickle) {
  const pc = new RTCPeerConnection({ iceServers: [] });
  if (trickle) pc.onicecandidate = (e) => {
    if (e.candidate && e.candidate.address === LOOPBACK) window.toUnit(id, JSON.stringify(e.candidate.toJSON()));
  };
  pc.ontrack = play;
  pcs.set(id, pc);
  return pc;
}
// Forwarding unit: the presenter offers (sendonly), a viewer answers the unit's offer; candidates trickle.
// A page of a group call through units has one of each per other page: its uplink to its own unit
// and a downlink from each other page's unit, each under an id of its own.
window.present = async (id = 'unit') => {
  const pc = peer(id, true);
  for (const track of (await camera()).getTracks()) pc.addTransceiver(track, { direction: 'sendonly', streams: [media] });
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  return offer.sdp;
};
window.presented = (sdp, id = 'unit') => pcs.get(id).setRemoteDescription({ type: 'answer', sdp });
window.view = async (sdp, id = 'unit') => {
  const pc = peer(id, true);
  await pc.setRemoteDescription({ type: 'offer', sdp });
  const answer = await pc.createAnswer();
  await pc.setLocalDescription(answer);
  return answer.sdp;
};
// Mesh: one connection per other page, each sending this page's camera and microphone; the whole
// SDP (every candidate gathered, then only loopback kept) goes in one piece.
const gathered = (pc) => new Promise((resolve) => {
  if (pc.iceGatheringState === 'complete') return resolve();
  pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve());
});
// addTrack after the offer is in, on the answering side, takes the offer's transceivers (sendrecv).
const send = async (pc) => { for (const track of (await camera()).getTracks()) pc.addTrack(track, media); };
window.meshOffer = async (id) => {
  const pc = peer(id, false);
  await send(pc);
  await pc.setLocalDescription(await pc.createOffer());
  await gathered(pc);
  return loopbackOnly(pc.localDescription.sdp);
};
window.meshAnswer = async (id, sdp) => {
  const pc = peer(id, false);
  await pc.setRemoteDescription({ type: 'offer', sdp });
  await send(pc);
  await pc.setLocalDescription(await pc.createAnswer());
  await gathered(pc);
  return loopbackOnly(pc.localDescription.sdp);
};
window.meshAccept = (id, sdp) => pcs.get(id).setRemoteDescription({ type: 'answer', sdp });
// Totals over every connection of the page; 'decoded' has the video frames decoded per connection id.
window.rtpStats = async () => {
  const out = { framesDecoded: 0, videoIn: 0, bytesSent: 0, bytesReceived: 0, packetsSent: 0, framesEncoded: 0 };
  Object.assign(out, { decoded: {}, pairs: [], connected: 0 });
  for (const [id, pc] of pcs) {
    if (pc.connectionState === 'connected') out.connected++;
    const report = await pc.getStats();
    report.forEach((s) => {
      if (s.type === 'inbound-rtp') out.bytesReceived += s.bytesReceived || 0;
      if (s.type === 'inbound-rtp' && s.kind === 'video') {
        out.framesDecoded += s.framesDecoded || 0;
        out.videoIn++;
        out.decoded[id] = (out.decoded[id] || 0) + (s.framesDecoded || 0);
      }
      if (s.type === 'outbound-rtp') { out.bytesSent += s.bytesSent || 0; out.packetsSent += s.packetsSent || 0; }
      if (s.type === 'outbound-rtp' && s.kind === 'video') out.framesEncoded += s.framesEncoded || 0;
      if (s.type === 'candidate-pair' && s.state === 'succeeded') {
        // A peer-reflexive remote (its checks came before its SDP) has its address hidden: the
        // local end, a socket on 127.0.0.1, says where it can go.
        out.pairs.push([report.get(s.localCandidateId)?.address, report.get(s.remoteCandidateId)?.address || LOOPBACK]);
      }
    });
  }
  return out;
};
window.ready = true;
`;

/** Serves the page from http://127.0.0.1:<port>/ (a secure context, so getUserMedia works). */
export async function startPageServer() {
  const html = `<!doctype html><meta charset="utf-8"><title>bench</title><script>${PAGE_SCRIPT}</script>`;
  const server = createServer((req, res) => {
    if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    else res.writeHead(404).end();
  });
  await new Promise((resolve) => server.listen(0, LOOPBACK, resolve));
  return {
    url: `http://${LOOPBACK}:${server.address().port}/`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A new page with the script loaded; `toUnit(candidate, id)` gets the page's trickled loopback
 * candidates, with the id of the page's connection they are for.
 */
export async function openPage(browser, url, toUnit = () => {}) {
  const page = await browser.newPage();
  await page.exposeFunction('toUnit', (id, json) => toUnit(JSON.parse(json), id));
  await page.goto(url);
  await page.waitForFunction(() => window.ready === true);
  return page;
}

export const rtpStats = (page) => page.evaluate(() => window.rtpStats());

/** This machine's own IPv4 addresses. */
const OWN = new Set(
  Object.values(networkInterfaces())
    .flat()
    .filter((i) => i?.family === 'IPv4')
    .map((i) => i.address),
);

/**
 * Every working candidate pair of the page ends on 127.0.0.1 (`loopback`), or the run stops. Between
 * two Chromium pages (`machine`) only loopback candidates are signalled, but Chromium checks from a
 * socket on each interface and ICE answers a check where it came from, so a pair may join 127.0.0.1
 * and another of this machine's own addresses (as test/browser/calls.test.ts allows): never beyond it.
 */
export async function assertLocal(page, who, scope) {
  const { pairs } = await rtpStats(page);
  const fine = (address) => address === LOOPBACK || (scope === 'machine' && OWN.has(address));
  if (pairs.length === 0 || !pairs.flat().every(fine))
    throw new Error(`${who} has candidate pairs ${JSON.stringify(pairs)}`);
}

/** Polls until `check()` is true, or fails after `ms`. */
export async function until(check, what, ms = 30_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
