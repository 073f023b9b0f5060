// Part 2 of bench:calls: one presenter (a Chromium of its own, fake camera, VP8 + Opus) through the
// forwarding unit (a node process of its own) to N viewers (pages of a second Chromium). Viewers are
// added step by step (1, then up to 5, ...); each step is measured over the same window.
import { assertLocal, launchBrowser, openPage, rtpStats, until } from './chromium.mjs';
import { forkRpc } from './rpc.mjs';

// The stream's unit, by its name in the unit process.
const UNIT = 'stream';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function streams({ url, viewerCounts, seconds, warmupSeconds, log }) {
  const unit = await forkRpc(new URL('./unit.mjs', import.meta.url));
  const presenterBrowser = await launchBrowser();
  const viewerBrowser = await launchBrowser();
  const rows = [];
  try {
    const presenter = await openPage(presenterBrowser.browser, url, (c) => unit.call('candidate', UNIT, 'host', c));
    await unit.call('presenter', UNIT, 'host');
    const offer = await presenter.evaluate(() => window.present());
    const answer = await unit.call('answer', UNIT, 'host', offer);
    await presenter.evaluate((sdp) => window.presented(sdp), answer);
    await until(async () => (await rtpStats(presenter)).connected === 1, 'the presenter connected', 60_000);

    const viewers = [];
    for (const count of viewerCounts) {
      while (viewers.length < count) {
        const id = `viewer-${viewers.length + 1}`;
        await unit.call('viewer', UNIT, id);
        const page = await openPage(viewerBrowser.browser, url, (c) => unit.call('candidate', UNIT, id, c));
        const sdp = await unit.call('offer', UNIT, id);
        await unit.call('accept', UNIT, id, await page.evaluate((s) => window.view(s), sdp));
        viewers.push(page);
      }
      // On a loaded machine some viewers may not decode in time: the row says how many did.
      await until(
        async () => (await Promise.all(viewers.map(rtpStats))).every((s) => s.framesDecoded > 0),
        `${count} viewers decoding`,
        60_000,
      ).catch((error) => log({ viewers: count, warning: error.message }));
      for (const [i, page] of viewers.entries()) {
        if ((await rtpStats(page)).connected > 0) await assertLocal(page, `viewer ${i + 1}`, 'loopback');
      }
      await assertLocal(presenter, 'the presenter', 'loopback');
      await sleep(warmupSeconds * 1000);

      const take = async () => ({
        unit: await unit.call('sample'),
        viewersCpu: viewerBrowser.cpuSeconds(),
        presenterCpu: presenterBrowser.cpuSeconds(),
        presenter: await rtpStats(presenter),
        viewers: await Promise.all(viewers.map(rtpStats)),
      });
      const a = await take();
      await sleep(seconds * 1000);
      const b = await take();
      const wall = (b.unit.wall - a.unit.wall) / 1000;
      const fps = b.viewers.map((s, i) => (s.framesDecoded - (a.viewers[i]?.framesDecoded ?? 0)) / wall);
      const packets = b.unit.packets - a.unit.packets;
      const row = {
        viewers: count,
        unitCpu: ((b.unit.cpu - a.unit.cpu) / 1e6 / wall) * 100,
        cpuPerPacket: (b.unit.cpu - a.unit.cpu) / Math.max(1, packets),
        packetsPerSecond: packets / wall,
        mbitOut: ((b.unit.bytes - a.unit.bytes) * 8) / wall / 1e6,
        fpsMean: fps.reduce((x, y) => x + y, 0) / fps.length,
        fpsMin: Math.min(...fps),
        decoding: fps.filter((x) => x > 0).length,
        viewersCpu: ((b.viewersCpu - a.viewersCpu) / wall) * 100,
        presenterCpu: ((b.presenterCpu - a.presenterCpu) / wall) * 100,
        uplinkKbit: ((b.presenter.bytesSent - a.presenter.bytesSent) * 8) / wall / 1000,
        presenterPackets: (b.presenter.packetsSent - a.presenter.packetsSent) / wall,
        presenterFps: (b.presenter.framesEncoded - a.presenter.framesEncoded) / wall,
      };
      rows.push(row);
      log(row);
    }
  } finally {
    await unit.stop();
    await presenterBrowser.browser.close();
    await viewerBrowser.browser.close();
  }
  return rows;
}
