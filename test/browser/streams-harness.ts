/**
 * Chromium pages that present or view a live stream through a ForwardingUnit, with the test itself
 * carrying SDP and candidates (no service in between). Chromium's fake camera and microphone feed
 * the presenter; only 127.0.0.1 candidates ever leave a page.
 */
import type { Browser, Page } from 'playwright-core';
import type {
  IceCandidateInit,
  PresenterSession,
  ViewerSession,
} from '../../packages/server/src/units/forwarding-unit.js';
import { servePages } from './chromium.js';

// The page's side, in plain browser JavaScript: present (camera + microphone, sendonly), view
// (answer the unit's offer, play the stream muted) and report inbound/outbound RTP stats.
const PAGE_SCRIPT = `
const LOOPBACK = '127.0.0.1';
function peer() {
  const pc = new RTCPeerConnection({ iceServers: [] });
  pc.onicecandidate = (e) => {
    if (e.candidate && e.candidate.address === LOOPBACK) window.toUnit(JSON.stringify(e.candidate.toJSON()));
  };
  window.pc = pc;
  return pc;
}
window.present = async (video, simulcast) => {
  const media = await navigator.mediaDevices.getUserMedia({ audio: true, video: video || { width: 640, height: 480, frameRate: 30 } });
  const pc = peer();
  for (const track of media.getTracks()) {
    const init = { direction: 'sendonly', streams: [media] };
    // As the browser SDK sends a unit: a quarter, a half and the whole size, low to high.
    if (simulcast && track.kind === 'video') init.sendEncodings = [{ rid: 'q', scaleResolutionDownBy: 4 }, { rid: 'h', scaleResolutionDownBy: 2 }, { rid: 'f', scaleResolutionDownBy: 1 }];
    pc.addTransceiver(track, init);
  }
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  return offer.sdp;
};
window.presented = (sdp) => window.pc.setRemoteDescription({ type: 'answer', sdp });
window.view = async (sdp) => {
  const pc = peer();
  pc.ontrack = (e) => {
    if (e.track.kind !== 'video') return;
    const video = document.createElement('video');
    video.muted = true;
    video.autoplay = true;
    video.srcObject = e.streams[0];
    document.body.append(video);
    video.play().catch(() => {});
  };
  await pc.setRemoteDescription({ type: 'offer', sdp });
  const answer = await pc.createAnswer();
  await pc.setLocalDescription(answer);
  return answer.sdp;
};
window.rtpStats = async () => {
  const out = { framesDecoded: 0, videoPackets: 0, videoPacketsLost: 0, videoBytesReceived: 0, frameWidth: 0, frameHeight: 0, freezeCount: 0, audioPackets: 0, pliCount: 0, framesEncoded: 0, videoBytesSent: 0, targetBitrate: 0, availableOutgoingBitrate: 0, at: 0, remoteAddresses: [] };
  const report = await window.pc.getStats();
  report.forEach((s) => {
    if (s.type === 'inbound-rtp' && s.kind === 'video') {
      out.framesDecoded += s.framesDecoded || 0; out.videoPackets += s.packetsReceived || 0; out.videoPacketsLost += s.packetsLost || 0;
      out.videoBytesReceived += s.bytesReceived || 0; out.frameWidth = s.frameWidth || 0; out.frameHeight = s.frameHeight || 0;
      out.freezeCount += s.freezeCount || 0; out.at = s.timestamp;
    }
    if (s.type === 'inbound-rtp' && s.kind === 'audio') out.audioPackets += s.packetsReceived || 0;
    if (s.type === 'outbound-rtp' && s.kind === 'video') {
      out.pliCount += s.pliCount || 0; out.framesEncoded += s.framesEncoded || 0; out.videoBytesSent += s.bytesSent || 0; out.targetBitrate += s.targetBitrate || 0; out.at = s.timestamp;
    }
    if (s.type === 'candidate-pair' && s.state === 'succeeded') {
      out.availableOutgoingBitrate = Math.max(out.availableOutgoingBitrate, s.availableOutgoingBitrate || 0);
      const remote = report.get(s.remoteCandidateId);
      if (remote) out.remoteAddresses.push(remote.address);
    }
  });
  return out;
};
window.ready = true;
`;

/** Serves the media page from http://127.0.0.1:<port>/ (a secure context, so getUserMedia works). */
export function startMediaPageServer(): Promise<{ url: string; close(): Promise<void> }> {
  const html = `<!doctype html><meta charset="utf-8"><title>live</title><script>${PAGE_SCRIPT}</script>`;
  return servePages((path) => (path === '/' ? { type: 'text/html', body: html } : undefined));
}

export interface RtpStats {
  /** Inbound video (`at` is the time of the report, ms). */
  framesDecoded: number;
  videoPackets: number;
  videoPacketsLost: number;
  videoBytesReceived: number;
  /** The size of the last frame decoded (0 before the first). */
  frameWidth: number;
  frameHeight: number;
  freezeCount: number;
  /** Inbound audio. */
  audioPackets: number;
  /** Outbound video: keyframe requests received, frames sent, payload bytes sent by `at` (ms). */
  pliCount: number;
  framesEncoded: number;
  videoBytesSent: number;
  at: number;
  /** The rate the browser's bandwidth estimate gives its video encoder (bit/s). */
  targetBitrate: number;
  /** The browser's estimate of what its working candidate pair carries (bit/s; 0 when unknown). */
  availableOutgoingBitrate: number;
  /** The far ends of the page's working candidate pairs. */
  remoteAddresses: string[];
}

interface MediaWindow {
  present(video?: MediaTrackConstraints, simulcast?: boolean): Promise<string>;
  presented(sdp: string): Promise<void>;
  view(sdp: string): Promise<string>;
  rtpStats(): Promise<RtpStats>;
  ready?: boolean;
}

/** A page whose candidates go to `session` (registered before the page makes any). */
async function mediaPage(browser: Browser, url: string, session: { addCandidate(c: IceCandidateInit): Promise<void> }) {
  const page = await browser.newPage();
  await page.exposeFunction('toUnit', (json: string) => session.addCandidate(JSON.parse(json) as IceCandidateInit));
  await page.goto(url);
  await page.waitForFunction(() => (window as unknown as MediaWindow).ready === true);
  return page;
}

/** A page and the SDP the unit gave it. */
export interface MediaPage {
  page: Page;
  unitSdp: string;
}

/**
 * A presenter page sending its fake camera (640x480 unless `video` says) and microphone to
 * `session`; its video in three layers with `simulcast`, as the browser SDK sends a unit.
 */
export async function openPresenter(
  browser: Browser,
  url: string,
  session: PresenterSession,
  video?: MediaTrackConstraints,
  simulcast = false,
): Promise<MediaPage> {
  const page = await mediaPage(browser, url, session);
  const offer = await page.evaluate(
    ([video, simulcast]) => (window as unknown as MediaWindow).present(video, simulcast),
    [video, simulcast] as const,
  );
  const unitSdp = await session.answer(offer);
  await page.evaluate((sdp) => (window as unknown as MediaWindow).presented(sdp), unitSdp);
  return { page, unitSdp };
}

/** A viewer page receiving from `session`. */
export async function openViewer(browser: Browser, url: string, session: ViewerSession): Promise<MediaPage> {
  const page = await mediaPage(browser, url, session);
  const unitSdp = await session.offer();
  const answer = await page.evaluate((sdp) => (window as unknown as MediaWindow).view(sdp), unitSdp);
  await session.accept(answer);
  return { page, unitSdp };
}

export function rtpStats(page: Page): Promise<RtpStats> {
  return page.evaluate(() => (window as unknown as MediaWindow).rtpStats());
}

/** The addresses of an SDP's candidate lines. */
export function sdpCandidateAddresses(sdp: string): string[] {
  return sdp
    .split(/\r\n|\n/)
    .filter((line) => line.startsWith('a=candidate:'))
    .map((line) => line.split(' ')[4] ?? '');
}
