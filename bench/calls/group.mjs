// Part 4 of bench:calls: a group call of k pages through forwarding units, as the service runs one
// in unit mode (packages/server/src/groups/group-units.ts): each page sends its camera and microphone
// once (send-only) to a unit of its own, and receives each other page's media from that page's unit
// (one receive-only connection per other page). The k pages are in one Chromium, as in the mesh
// part; the k units in one node process (unit.mjs); the bench carries offers, answers and candidates.
import { assertLocal, launchBrowser, openPage, rtpStats, until } from './chromium.mjs';
import { forkRpc } from './rpc.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const mean = (xs) => xs.reduce((x, y) => x + y, 0) / xs.length;

// Page i is `p<i>`; its unit has the same name. On a page, its uplink is 'up' and the downlink from
// page j's unit is 'from-p<j>'; on page j's unit, page i's downlink session has page i's name.
const UPLINK = 'up';
const FROM = 'from-';

export async function group({ url, sizes, seconds, warmupSeconds, log }) {
  const rows = [];
  for (const k of sizes) {
    // Fresh units and a fresh browser per size: nothing of the last call is left running.
    const units = await forkRpc(new URL('./unit.mjs', import.meta.url));
    const { browser, cpuSeconds } = await launchBrowser();
    try {
      const names = Array.from({ length: k }, (_, i) => `p${i}`);
      const pages = [];
      for (const name of names) {
        // A page's candidate goes to its own unit (uplink) or to the sending page's (a downlink).
        const toUnit = (candidate, id) =>
          id === UPLINK
            ? units.call('candidate', name, name, candidate)
            : units.call('candidate', id.slice(FROM.length), name, candidate);
        pages.push(await openPage(browser, url, toUnit));
      }
      // Each page's media to its unit first (the service offers a page's media to the others once
      // its unit has it).
      for (const [i, page] of pages.entries()) {
        const name = names[i];
        await units.call('presenter', name, name);
        const offer = await page.evaluate((id) => window.present(id), UPLINK);
        const answer = await units.call('answer', name, name, offer);
        await page.evaluate(([sdp, id]) => window.presented(sdp, id), [answer, UPLINK]);
      }
      await until(
        async () => (await units.call('sample')).live === k,
        `the media of ${k} pages at their units`,
        60_000,
      );
      // Then each unit offers the page's media to every other page.
      for (const [j, sender] of names.entries()) {
        for (const [i, page] of pages.entries()) {
          if (i === j) continue;
          await units.call('viewer', sender, names[i]);
          const offer = await units.call('offer', sender, names[i]);
          const answer = await page.evaluate(([sdp, id]) => window.view(sdp, id), [offer, `${FROM}${sender}`]);
          await units.call('accept', sender, names[i], answer);
        }
      }
      // On a loaded machine some downlinks may not decode in time: the row says how many did.
      await until(
        async () =>
          (await Promise.all(pages.map(rtpStats))).every(
            (s) => s.connected === k && s.videoIn === k - 1 && Object.values(s.decoded).every((n) => n > 0),
          ),
        `a group of ${k} through units decoding`,
        60_000,
      ).catch((error) => log({ pages: k, warning: error.message }));
      for (const [i, page] of pages.entries()) await assertLocal(page, `group page ${i + 1}`, 'loopback');
      await sleep(warmupSeconds * 1000);

      const take = async () => ({
        at: performance.now(),
        cpu: cpuSeconds(),
        units: await units.call('sample'),
        pages: await Promise.all(pages.map(rtpStats)),
      });
      const a = await take();
      await sleep(seconds * 1000);
      const b = await take();
      const wall = (b.at - a.at) / 1000;
      const unitWall = (b.units.wall - a.units.wall) / 1000;
      const per = (field) => b.pages.map((s, i) => (s[field] - (a.pages[i]?.[field] ?? 0)) / wall);
      // Frames decoded per second of each incoming video: k - 1 per page, k (k - 1) in all.
      const fps = b.pages.flatMap((s, i) =>
        names
          .filter((_, j) => j !== i)
          .map((sender) => {
            const id = `${FROM}${sender}`;
            return ((s.decoded[id] ?? 0) - (a.pages[i]?.decoded[id] ?? 0)) / wall;
          }),
      );
      const packets = b.units.packets - a.units.packets;
      const row = {
        pages: k,
        cpuTotal: ((b.cpu - a.cpu) / wall) * 100,
        cpuPerPage: ((b.cpu - a.cpu) / wall / k) * 100,
        uplinkKbit: (mean(per('bytesSent')) * 8) / 1000,
        downlinkKbit: (mean(per('bytesReceived')) * 8) / 1000,
        encodedFps: mean(per('framesEncoded')),
        fpsMean: mean(fps),
        fpsMin: Math.min(...fps),
        decoding: fps.filter((x) => x > 0).length,
        videos: fps.length,
        unitCpu: ((b.units.cpu - a.units.cpu) / 1e6 / unitWall) * 100,
        cpuPerPacket: (b.units.cpu - a.units.cpu) / Math.max(1, packets),
        packetsPerSecond: packets / unitWall,
        mbitOut: ((b.units.bytes - a.units.bytes) * 8) / unitWall / 1e6,
      };
      rows.push(row);
      log(row);
    } finally {
      await units.stop();
      await browser.close();
    }
  }
  return rows;
}
