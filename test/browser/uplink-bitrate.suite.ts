import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ForwardingUnit } from '../../packages/server/src/units/forwarding-unit.js';
import { closeChromium, launchChromium } from './chromium.js';
import { writeGrainVideo } from './fake-video.js';
import { openPresenter, openViewer, rtpStats, startMediaPageServer } from './streams-harness.js';

const LOOPBACK = '127.0.0.1';
/** The target: above 1.5 Mbit/s within 15 s of the presenter connecting. */
const TARGET_BPS = 1_500_000;
const RAMP_MS = 15_000;
/** The send rate is taken over at least this long: bytesSent moves by whole frames. */
const WINDOW_MS = 1_000;

const mbps = (bps: number) => `${(bps / 1e6).toFixed(2)} Mbit/s`;

/** Samples the page's outgoing video; each call gives its rate (bit/s) over the last WINDOW_MS or more. */
function sendRate(page: Page): () => Promise<number> {
  const samples: Array<{ at: number; bytes: number }> = [];
  return async () => {
    const { at, videoBytesSent } = await rtpStats(page);
    samples.push({ at, bytes: videoBytesSent });
    const latest = { at, bytes: videoBytesSent };
    const from = samples.findLast((s) => latest.at - s.at >= WINDOW_MS);
    return from ? ((latest.bytes - from.bytes) * 8 * 1000) / (latest.at - from.at) : 0;
  };
}

describe('uplink congestion control: the unit sends transport-cc feedback to the presenter', () => {
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };
  let unit: ForwardingUnit;
  let video: ReturnType<typeof writeGrainVideo> | undefined;

  beforeAll(async () => {
    video = writeGrainVideo({ width: 1280, height: 720 });
    pages = await startMediaPageServer();
    browser = await launchChromium({ media: true, videoFile: video.path });
    unit = new ForwardingUnit({ hostAddresses: [LOOPBACK], allowRemoteAddress: (address) => address === LOOPBACK });
  }, 60_000);
  afterAll(async () => {
    await unit?.close();
    await closeChromium(browser);
    await pages?.close();
    video?.remove();
  });

  it('a presenter with a 1280x720 camera ramps its video above 1.5 Mbit/s within 15 s, and a viewer decodes it', async () => {
    const presenter = await openPresenter(browser, pages.url, unit.createPresenter('host'), {
      width: 1280,
      height: 720,
      frameRate: 30,
    });
    // Negotiated in the unit's answer: the feedback, and the header extension carrying the numbers.
    expect(presenter.unitSdp).toMatch(/^a=rtcp-fb:\d+ transport-cc\r?$/m);
    expect(presenter.unitSdp).toMatch(
      /^a=extmap:\d+ http:\/\/www\.ietf\.org\/id\/draft-holmer-rmcat-transport-wide-cc-extensions-01\r?$/m,
    );
    // And the rate its estimate starts at (packages/server/src/units/start-bitrate.ts).
    expect(presenter.unitSdp).toMatch(/^a=fmtp:\d+ x-google-start-bitrate=800\r?$/m);

    // The presenter's own getStats: the bytes of video it sends, per second.
    const started = Date.now();
    const rate = sendRate(presenter.page);
    let peak = 0;
    await expect
      .poll(
        async () => {
          peak = Math.max(peak, await rate());
          return peak;
        },
        { timeout: RAMP_MS, interval: 250 },
      )
      .toBeGreaterThan(TARGET_BPS);
    const { availableOutgoingBitrate, targetBitrate } = await rtpStats(presenter.page);
    console.info(
      `presenter after ${((Date.now() - started) / 1000).toFixed(1)} s: video sent ${mbps(peak)} (1 s window), encoder target ${mbps(targetBitrate)}, availableOutgoingBitrate ${mbps(availableOutgoingBitrate)}`,
    );
    // Its bandwidth estimate says the path carries that much.
    expect(availableOutgoingBitrate).toBeGreaterThan(TARGET_BPS);

    // A viewer (joining once the rate is up, so its decoding takes no CPU from the ramp) gets the
    // stream whole at that rate: it keeps decoding.
    const viewer = await openViewer(browser, pages.url, unit.createViewer('viewer'));
    await expect
      .poll(async () => (await rtpStats(viewer.page)).framesDecoded, { timeout: 10_000, interval: 250 })
      .toBeGreaterThan(30);
  }, 60_000);
});
