// Part 3 of bench:calls: a group call as a mesh of k pages in one Chromium, each page sending its
// fake camera and microphone to each of the k - 1 others over a connection of its own (what a
// mesh group call does), the bench carrying each offer and answer.
import { assertLocal, launchBrowser, openPage, rtpStats, until } from './chromium.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function mesh({ url, sizes, seconds, warmupSeconds, log }) {
  const rows = [];
  for (const k of sizes) {
    // A fresh browser per size: nothing of the last mesh is left running in it.
    const { browser, cpuSeconds } = await launchBrowser();
    try {
      const pages = [];
      for (let i = 0; i < k; i++) pages.push(await openPage(browser, url));
      for (let i = 0; i < k; i++) {
        for (let j = i + 1; j < k; j++) {
          const offer = await pages[i].evaluate((id) => window.meshOffer(id), `p${j}`);
          const answer = await pages[j].evaluate(([id, sdp]) => window.meshAnswer(id, sdp), [`p${i}`, offer]);
          await pages[i].evaluate(([id, sdp]) => window.meshAccept(id, sdp), [`p${j}`, answer]);
        }
      }
      await until(async () => {
        const all = await Promise.all(pages.map(rtpStats));
        return all.every((s) => s.connected === k - 1 && s.videoIn === k - 1 && s.framesDecoded > 0);
      }, `a mesh of ${k} decoding`);
      for (const [i, page] of pages.entries()) await assertLocal(page, `mesh page ${i + 1}`, 'machine');
      await sleep(warmupSeconds * 1000);
      const take = async () => ({
        at: performance.now(),
        cpu: cpuSeconds(),
        pages: await Promise.all(pages.map(rtpStats)),
      });
      const a = await take();
      await sleep(seconds * 1000);
      const b = await take();
      const wall = (b.at - a.at) / 1000;
      const per = (field) => b.pages.map((s, i) => (s[field] - (a.pages[i]?.[field] ?? 0)) / wall);
      const mean = (xs) => xs.reduce((x, y) => x + y, 0) / xs.length;
      const uplink = per('bytesSent').map((bytes) => (bytes * 8) / 1000);
      const row = {
        pages: k,
        cpuTotal: ((b.cpu - a.cpu) / wall) * 100,
        cpuPerPage: ((b.cpu - a.cpu) / wall / k) * 100,
        uplinkKbit: mean(uplink),
        downlinkKbit: (mean(per('bytesReceived')) * 8) / 1000,
        // Frames decoded per second of each incoming video (k - 1 of them per page).
        fpsPerStream: mean(per('framesDecoded')) / (k - 1),
        encodedPerStream: mean(per('framesEncoded')) / (k - 1),
      };
      rows.push(row);
      log(row);
    } finally {
      await browser.close();
    }
  }
  return rows;
}
