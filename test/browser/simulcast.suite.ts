import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ForwardingUnit } from '../../packages/server/src/units/forwarding-unit.js';
import { closeChromium, launchChromium } from './chromium.js';
import { writeGrainVideo } from './fake-video.js';
import { openPresenter, openViewer, rtpStats, startMediaPageServer } from './streams-harness.js';

const LOOPBACK = '127.0.0.1';

/** Waits until the page decodes video `width` pixels wide, and answers its stats then. */
async function decodesAt(page: Page, width: number, timeout: number) {
  await expect.poll(async () => (await rtpStats(page)).frameWidth, { timeout, interval: 250 }).toBe(width);
  return rtpStats(page);
}

/** Waits until the page has decoded `frames` more frames than it had. */
async function keepsDecoding(page: Page, frames = 15) {
  const before = (await rtpStats(page)).framesDecoded;
  await expect
    .poll(async () => (await rtpStats(page)).framesDecoded, { timeout: 10_000, interval: 200 })
    .toBeGreaterThan(before + frames);
}

describe('simulcast: the unit takes three layers and forwards one to each viewer', () => {
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };
  let unit: ForwardingUnit;
  let video: ReturnType<typeof writeGrainVideo> | undefined;
  const viewerPages = new Map<string, Page>();

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

  it('a viewer asking for a small size gets the lowest layer, then the middle one; a free viewer climbs to the top', async () => {
    const presenter = await openPresenter(
      browser,
      pages.url,
      unit.createPresenter('host'),
      { width: 1280, height: 720, frameRate: 30 },
      true,
    );
    // The unit's answer takes the three layers by rid.
    expect(presenter.unitSdp).toMatch(/^a=simulcast:recv q;h;f *\r?$/m);

    const small = await openViewer(browser, pages.url, unit.createViewer('small'));
    viewerPages.set('small', small.page);
    expect(unit.setViewerVideo('small', { maxWidth: 320, maxHeight: 180 })).toBe(true);
    const free = await openViewer(browser, pages.url, unit.createViewer('free'));
    // The viewer's browser tells the unit its downlink (REMB).
    expect(free.unitSdp).toMatch(/^a=rtcp-fb:\d+ goog-remb\r?$/m);

    const q = await decodesAt(small.page, 320, 20_000);
    expect(q.frameHeight).toBe(180);
    await keepsDecoding(small.page);

    // Larger asked: the middle layer, switched on its keyframe with no loss and no freeze.
    const before = await rtpStats(small.page);
    unit.setViewerVideo('small', { maxWidth: 640, maxHeight: 360 });
    const h = await decodesAt(small.page, 640, 20_000);
    expect(h.frameHeight).toBe(360);
    await keepsDecoding(small.page);
    const after = await rtpStats(small.page);
    expect(after.videoPacketsLost).toBe(before.videoPacketsLost);

    // Nothing asked: as high as its link carries; on loopback, the whole picture once the
    // presenter sends it.
    await decodesAt(free.page, 1280, 40_000);
    await keepsDecoding(free.page);
    console.info(`unit layers: ${JSON.stringify(Object.fromEntries(unit.videoLayers()))}`);
  }, 90_000);

  it('a paused viewer gets no video, and the video comes back when it resumes', async () => {
    const page = viewerPages.get('small');
    if (!page) throw new Error('the first test opens the viewer');
    unit.setViewerVideo('small', { maxWidth: 640, maxHeight: 360, paused: true });
    // Stopped: two samples a poll apart with no new video packet between them.
    let last = -1;
    await expect
      .poll(
        async () => {
          const packets = (await rtpStats(page)).videoPackets;
          const still = packets === last;
          last = packets;
          return still;
        },
        { timeout: 10_000, interval: 500 },
      )
      .toBe(true);
    expect(unit.videoLayers().get('small')).toMatchObject({ current: undefined, target: undefined });

    unit.setViewerVideo('small', { maxWidth: 640, maxHeight: 360 });
    await keepsDecoding(page);
    expect((await rtpStats(page)).frameWidth).toBe(640);
  }, 30_000);
});
