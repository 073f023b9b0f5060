import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeChromium, launchChromium } from './chromium.js';

/**
 * The chat demo (examples/chat/start.mjs, spawned from the build on free 127.0.0.1 ports) in two
 * headless Chromium tabs, ann and ben, clicked as a person would: a call from the members list, and
 * the lobby's live stream both ways. Media is Chromium's fake camera and microphone; the pages'
 * `?ice=loopback` keeps every candidate they send on 127.0.0.1.
 *
 * DEMO_SCREENSHOTS=docs/images writes the call and live panels (1280 px wide) as demo-call.png and
 * demo-live.png there; without it the screenshots are still taken and checked, not written.
 */

const START = fileURLToPath(new URL('../../examples/chat/start.mjs', import.meta.url));
const WIDTH = 1280;

/** This machine's own addresses. */
const hostAddresses = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));

/** What the page's open peer connections saw, from getStats. */
interface MediaSeen {
  framesDecoded: number;
  /** Addresses of the candidates the far side sent (peer-reflexive ones, learnt from checks, have theirs hidden). */
  remoteAddresses: string[];
  /** This side's address in each pair carrying media. */
  pairAddresses: string[];
}

interface RecordingWindow {
  /** Every RTCPeerConnection the page made, recorded by the init script below. */
  peers: RTCPeerConnection[];
}

/**
 * Runs before the demo's own script: records each RTCPeerConnection the SDK makes (a subclass that
 * only keeps a reference), so the test can read getStats without the page exposing its calls.
 */
function recordPeers(): void {
  const w = window as unknown as RecordingWindow & { RTCPeerConnection: typeof RTCPeerConnection };
  const Native = w.RTCPeerConnection;
  w.peers = [];
  w.RTCPeerConnection = class extends Native {
    constructor(config?: RTCConfiguration) {
      super(config);
      w.peers.push(this);
    }
  };
}

let dir: string;
let child: ChildProcess;
let exited: Promise<number | null>;
let output = '';
let demoUrl: string;
let browser: Browser;
const contexts: BrowserContext[] = [];

/** Starts the demo as test/demo.test.ts does, in a fresh data folder; resolves with the page's address. */
async function startDemo(): Promise<string> {
  dir = mkdtempSync(join(tmpdir(), 'realtime-demo-media-'));
  // The demo runs its own embedded engine: the test runner's engine choice is not its.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('REALTIME_')));
  child = spawn(process.execPath, [START], {
    cwd: dir,
    env: { ...env, PORT: '0', DEMO_PORT: '0', DATA: join(dir, 'data') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  exited = new Promise((done) => child.once('exit', (code) => done(code)));
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`the demo did not start\n${output}`)), 20_000);
    const read = (text: string) => {
      output += text;
      const url = /Chat demo: open (http:\/\/127\.0\.0\.1:\d+) /.exec(output)?.[1];
      if (url) {
        clearTimeout(timer);
        done(url);
      }
    };
    child.stdout?.setEncoding('utf8').on('data', read);
    child.stderr?.setEncoding('utf8').on('data', read);
    child.once('exit', () => fail(new Error(`the demo ended\n${output}`)));
  });
}

/** A tab of the demo as `name` (its own browser context), connected to the service. */
async function tab(name: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: WIDTH, height: 760 } });
  contexts.push(context);
  await context.addInitScript(recordPeers);
  const page = await context.newPage();
  await page.goto(`${demoUrl}/?name=${name}&ice=loopback`);
  await page.locator('#state.connected').waitFor({ timeout: 15_000 });
  return page;
}

/** Waits until the page's `selector` video plays decoded frames from a peer connection; its size. */
async function playing(page: Page, selector: string): Promise<{ width: number; height: number }> {
  const first = await page.waitForFunction(
    (selector) => {
      const video = document.querySelector<HTMLVideoElement>(selector);
      const track = video?.srcObject instanceof MediaStream ? video.srcObject.getVideoTracks()[0] : undefined;
      // Received media, not the page's own camera: the track is a receiver's of one of the page's peers.
      const received = (window as unknown as RecordingWindow).peers.some((pc) =>
        pc.getReceivers().some((r) => r.track === track),
      );
      if (!video || !track || !received || video.paused || video.videoWidth === 0) return undefined;
      return { at: video.currentTime };
    },
    selector,
    { timeout: 20_000 },
  );
  const { at } = (await first.jsonValue()) as { at: number };
  // Frames keep coming: the playback position moves on.
  await page.waitForFunction(
    ({ selector, at }) => (document.querySelector<HTMLVideoElement>(selector)?.currentTime ?? 0) > at,
    { selector, at },
    { timeout: 20_000 },
  );
  return page.$eval(selector, (v: HTMLVideoElement) => ({ width: v.videoWidth, height: v.videoHeight }));
}

/** The page's open peer connections' stats, summed. */
function media(page: Page): Promise<MediaSeen> {
  return page.evaluate(async () => {
    const seen: MediaSeen = { framesDecoded: 0, remoteAddresses: [], pairAddresses: [] };
    for (const pc of (window as unknown as RecordingWindow).peers) {
      if (pc.connectionState === 'closed') continue;
      const byId = new Map<string, Record<string, unknown>>();
      (await pc.getStats()).forEach((report: Record<string, unknown>) => {
        byId.set(report.id as string, report);
      });
      for (const report of byId.values()) {
        if (report.type === 'inbound-rtp' && report.kind === 'video')
          seen.framesDecoded += Number(report.framesDecoded ?? 0);
        if (report.type === 'remote-candidate' && report.candidateType !== 'prflx')
          seen.remoteAddresses.push(String(report.address ?? report.ip));
        if (report.type === 'transport' && typeof report.selectedCandidatePairId === 'string') {
          const pair = byId.get(report.selectedCandidatePairId);
          const local = pair && byId.get(pair.localCandidateId as string);
          if (local) seen.pairAddresses.push(String(local.address ?? local.ip));
        }
      }
    }
    return seen;
  });
}

/** Waits until the page's peers decoded video, more of it on a second look; checks where it flowed. */
async function decoding(page: Page): Promise<MediaSeen> {
  const deadline = Date.now() + 20_000;
  let first: MediaSeen | undefined;
  for (;;) {
    const now = await media(page);
    if (!first && now.framesDecoded > 0) first = now;
    else if (first && now.framesDecoded > first.framesDecoded) {
      // Only 127.0.0.1 candidates crossed. Chromium binds a socket on every interface and ICE answers a
      // check at its source, so a pair may use another of this machine's own addresses, never one beyond it.
      expect(now.remoteAddresses.length).toBeGreaterThan(0);
      expect(new Set(now.remoteAddresses)).toEqual(new Set(['127.0.0.1']));
      expect(now.pairAddresses.length).toBeGreaterThan(0);
      for (const address of now.pairAddresses) expect(hostAddresses).toContain(address);
      return now;
    }
    if (Date.now() > deadline) throw new Error(`no video decoded: ${JSON.stringify(now)}`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

/** A screenshot of the whole tab, checked as a PNG `WIDTH` wide; written under DEMO_SCREENSHOTS when set. */
async function screenshot(page: Page, file: string): Promise<void> {
  const png = await page.screenshot();
  expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
  expect(png.readUInt32BE(16)).toBe(WIDTH); // the IHDR chunk's width
  const folder = process.env.DEMO_SCREENSHOTS;
  if (folder) {
    mkdirSync(resolve(folder), { recursive: true });
    writeFileSync(resolve(folder, file), png);
  }
}

describe('the chat demo in headless Chromium: calls and the live stream, ICE on loopback', { timeout: 120_000 }, () => {
  let ann: Page;
  let ben: Page;

  beforeAll(async () => {
    demoUrl = await startDemo();
    browser = await launchChromium({ media: true });
    ann = await tab('ann');
    ben = await tab('ben');
  }, 60_000);

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => {});
    await closeChromium(browser);
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("ann calls ben from the members list; ben accepts; both see each other's video; ann hangs up", async () => {
    await ann.getByRole('button', { name: 'call ben' }).click();
    await ann.locator('#call-title', { hasText: 'calling ben' }).waitFor();

    await ben.locator('#call-title', { hasText: 'ann is calling' }).waitFor();
    expect(await ben.locator('#call-state').textContent()).toBe('ringing');
    await ben.getByRole('button', { name: 'Accept' }).click();
    await ben.locator('#call-title', { hasText: 'with ann' }).waitFor();

    for (const page of [ann, ben]) {
      await page.locator('#call-state', { hasText: 'connected' }).waitFor({ timeout: 20_000 });
      const size = await playing(page, '#remote');
      expect(size.width).toBeGreaterThan(0);
      expect(size.height).toBeGreaterThan(0);
      await decoding(page);
    }
    await screenshot(ben, 'demo-call.png');

    await ann.getByRole('button', { name: 'Hang up' }).click();
    await ann.getByText('call with ben ended: completed').waitFor();
    await ben.getByText('call with ann ended: completed').waitFor();
    for (const page of [ann, ben]) await page.locator('#call').waitFor({ state: 'hidden' });
  });

  it('ann goes live and ben watches; ann stops and ben sees it end; then ben goes live and ann watches', async () => {
    await ann.getByRole('button', { name: 'Go live' }).click();
    await ann.getByRole('button', { name: 'Stop' }).waitFor();
    await ann.getByText('you are live').waitFor({ timeout: 20_000 });

    await ben.locator('#live').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await ben.locator('#live-title').textContent()).toBe('someone in the lobby');
    const size = await playing(ben, '#live-video');
    expect(size.width).toBeGreaterThan(0);
    await decoding(ben);
    await screenshot(ben, 'demo-live.png');

    await ann.getByRole('button', { name: 'Stop' }).click();
    await ben.locator('#live').waitFor({ state: 'hidden', timeout: 20_000 });
    await ann.locator('#live').waitFor({ state: 'hidden' });
    await ann.getByRole('button', { name: 'Go live' }).waitFor();

    await ben.getByRole('button', { name: 'Go live' }).click();
    await ben.getByRole('button', { name: 'Stop' }).waitFor();
    await ann.locator('#live').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await ann.locator('#live-title').textContent()).toBe('someone in the lobby');
    expect((await playing(ann, '#live-video')).width).toBeGreaterThan(0);
    await decoding(ann);

    await ben.getByRole('button', { name: 'Stop' }).click();
    await ann.locator('#live').waitFor({ state: 'hidden', timeout: 20_000 });
  });
});
