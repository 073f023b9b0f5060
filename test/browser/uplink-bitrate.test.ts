import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ForwardingUnit } from '../../packages/server/src/units/forwarding-unit.js';
import { closeChromium, launchChromium } from './chromium.js';
import { openPresenter, openViewer, type RtpStats, rtpStats, startMediaPageServer } from './streams-harness.js';

const LOOPBACK = '127.0.0.1';
/** The target: above 1.5 Mbit/s within 15 s of the presenter connecting. */
const TARGET_BPS = 1_500_000;
const RAMP_MS = 15_000;

const mbps = (bps: number) => `${(bps / 1e6).toFixed(2)} Mbit/s`;

describe('uplink congestion control: the unit sends transport-cc feedback to the presenter', () => {
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };
  let unit: ForwardingUnit;

  beforeAll(async () => {
    pages = await startMediaPageServer();
    browser = await launchChromium({ media: true });
    unit = new ForwardingUnit({ hostAddresses: [LOOPBACK], allowRemoteAddress: (address) => address === LOOPBACK });
  }, 60_000);
  afterAll(async () => {
    await unit?.close();
    await closeChromium(browser);
    await pages?.close();
  });

  it('a presenter with a 1280x720 camera ramps its send rate above 1.5 Mbit/s within 15 s, and a viewer decodes it', async () => {
    const viewer = await openViewer(browser, pages.url, unit.createViewer('viewer'));
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

    // The presenter's own view of its uplink: what its bandwidth estimate says the path carries,
    // and the rate it gives its video encoder. (The bytes it sends stay lower: the fake camera's
    // picture is simple enough for VP8 to need far less than its target; docs/benchmarks.md.)
    const start = await rtpStats(presenter.page);
    let last: RtpStats = start;
    await expect
      .poll(
        async () => {
          last = await rtpStats(presenter.page);
          return Math.min(last.availableOutgoingBitrate, last.targetBitrate);
        },
        { timeout: RAMP_MS, interval: 250 },
      )
      .toBeGreaterThan(TARGET_BPS);
    const sent = ((last.videoBytesSent - start.videoBytesSent) * 8 * 1000) / Math.max(1, last.at - start.at);
    console.info(
      `presenter after ${((last.at - start.at) / 1000).toFixed(1)} s: availableOutgoingBitrate ${mbps(last.availableOutgoingBitrate)}, encoder target ${mbps(last.targetBitrate)}, video sent ${mbps(sent)} on average`,
    );

    // The stream reaches the viewer whole at that rate: it keeps decoding.
    const decoded = (await rtpStats(viewer.page)).framesDecoded;
    await expect
      .poll(async () => (await rtpStats(viewer.page)).framesDecoded, { timeout: 10_000, interval: 250 })
      .toBeGreaterThan(decoded + 30);
  }, 60_000);
});
