import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Realtime } from '@realtime/node';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../packages/server/test/helpers.js';
import { closeChromium, launchChromium } from './chromium.js';
import { openSdkPage, startPageServer } from './harness.js';

interface SpeakersWindow {
  RT: typeof import('@realtime/browser');
  client: import('@realtime/browser').RealtimeClient;
  group: import('@realtime/browser').Group | undefined;
  /** Every `speakers` event: [page, level] of each speaker, loudest first. */
  changes: [string, number][][];
}

/** A WAV file of `seconds` of digital silence: 48 kHz, mono, 16-bit PCM. */
function silentWav(seconds: number): Buffer {
  const samples = 48_000 * seconds;
  const wav = Buffer.alloc(44 + samples * 2);
  wav.write('RIFF', 0);
  wav.writeUInt32LE(36 + samples * 2, 4);
  wav.write('WAVEfmt ', 8);
  wav.writeUInt32LE(16, 16); // the fmt chunk's size
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(48_000, 24);
  wav.writeUInt32LE(96_000, 28); // bytes a second
  wav.writeUInt16LE(2, 32); // bytes a frame
  wav.writeUInt16LE(16, 34); // bits a sample
  wav.write('data', 36);
  wav.writeUInt32LE(samples * 2, 40);
  return wav;
}

/**
 * Active speakers in a group of three, as a mesh and through forwarding units (which pass each
 * sender's audio level extension on): one Chromium's fake microphone beeps (its default), the two
 * others play a silent file. Each a Chromium of its own, as the fake microphone is per process.
 */
describe.each([
  { mode: 'mesh' as const, server: {} },
  {
    mode: 'unit' as const,
    // Units from the first page; they exchange media with 127.0.0.1 only.
    server: { calls: { groupUnitFrom: 1 }, streams: { remoteAddresses: ['127.0.0.1'] } },
  },
])(
  'group call speakers in headless Chromium (three pages, $mode)',
  { timeout: 90_000 },
  ({ mode, server: options }) => {
    let server: Awaited<ReturnType<typeof startTestServer>>;
    let sdk: Realtime;
    let pages: { url: string; close(): Promise<void> };
    let dir: string;
    const browsers: Browser[] = [];

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'realtime-speakers-'));
      const silent = join(dir, 'silent.wav');
      writeFileSync(silent, silentWav(1));
      server = await startTestServer(options);
      sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
      pages = await startPageServer();
      browsers.push(
        ...(await Promise.all([
          launchChromium({ media: true }),
          launchChromium({ media: true, audioFile: silent }),
          launchChromium({ media: true, audioFile: silent }),
        ])),
      );
    }, 60_000);
    afterAll(async () => {
      await Promise.all(browsers.map((browser) => closeChromium(browser)));
      await pages?.close();
      await sdk?.close();
      await server?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /**
     * `user`'s page in `browser` joins `group` sending audio only; it plays each peer's stream (as an
     * app does: Chromium decodes received audio only for a page that plays it) and logs `speakers`.
     */
    async function member(browser: Browser, user: string, group: string): Promise<Page> {
      const page = await openSdkPage(browser, pages.url);
      const identity = await sdk.identityToken(user);
      const token = await sdk.callToken(user, { group, media: ['audio'] });
      await page.evaluate(
        ({ url, site, identity, group, token }) => {
          const w = window as unknown as SpeakersWindow;
          w.changes = [];
          const loopback = (c: RTCIceCandidateInit) => (c.candidate ?? '').split(' ')[4] === '127.0.0.1';
          w.client = w.RT.connect({ url, site, identity, rtc: { candidateFilter: loopback } });
          const g = w.client.group(group, { token, media: { audio: true } });
          w.group = g;
          g.on('peer-joined', (peer) => {
            const audio = new Audio();
            audio.srcObject = peer.stream;
            void audio.play();
          });
          g.on('speakers', ({ speakers }) => w.changes.push(speakers.map((s) => [s.page, s.level])));
        },
        { url: server.url, site: server.app.key, identity, group, token },
      );
      return page;
    }

    const pageId = async (page: Page) => {
      const handle = await page.waitForFunction(() => (window as unknown as SpeakersWindow).group?.page);
      return (await handle.jsonValue()) as string;
    };

    /** Seconds of each peer's audio the page decoded, by page id. */
    const decodedSeconds = (page: Page) =>
      page.evaluate(async () => {
        const out: Record<string, number> = {};
        for (const peer of (window as unknown as SpeakersWindow).group?.peers ?? []) {
          const stats = await peer.peerConnection?.getStats();
          stats?.forEach((report: Record<string, unknown>) => {
            if (report.type === 'inbound-rtp' && report.kind === 'audio') {
              out[peer.page] = Number(report.totalSamplesDuration ?? 0);
            }
          });
        }
        return out;
      });

    it('every page reports the beeping page speaking, and never a silent one; it leaves and they hear silence', async () => {
      const group = 'speakers-3';
      const [beeper, quiet1, quiet2] = await Promise.all([
        member(browsers[0] as Browser, 'bea', group),
        member(browsers[1] as Browser, 'sid', group),
        member(browsers[2] as Browser, 'sol', group),
      ]);
      const all = [beeper, quiet1, quiet2];
      const [beeperId, quiet1Id, quiet2Id] = await Promise.all(all.map(pageId));
      for (const page of all) {
        await page.waitForFunction((mode) => (window as unknown as SpeakersWindow).group?.mode === mode, mode);
      }
      const silentIds = [quiet1Id, quiet2Id];

      // Each page: the beeper speaking (the beeper itself from what it sends), its latest list that and no more.
      for (const page of all) {
        await page.waitForFunction(
          (beeperId) => {
            const last = (window as unknown as SpeakersWindow).changes.at(-1);
            return last?.length === 1 && last[0]?.[0] === beeperId;
          },
          beeperId,
          { timeout: 30_000 },
        );
      }
      // Silence is measured, not missing: each page has decoded over 2 s of each peer's audio, so the
      // 1.5 s the levels are smoothed over is all audio.
      for (const page of all) {
        const deadline = Date.now() + 30_000;
        for (;;) {
          const decoded = await decodedSeconds(page);
          if (Object.keys(decoded).length === 2 && Object.values(decoded).every((seconds) => seconds >= 2)) break;
          if (Date.now() > deadline) throw new Error(`audio not decoded: ${JSON.stringify(decoded)}`);
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      }
      // The audio level header extension reaches each page with the peers' audio (in unit mode, passed
      // on by the units): every receiver has a level for its source.
      for (const page of all) {
        const levels = await page.evaluate(() =>
          ((window as unknown as SpeakersWindow).group?.peers ?? []).map((peer) =>
            (peer.peerConnection?.getReceivers() ?? [])
              .filter((r) => r.track.kind === 'audio')
              .flatMap((r) => r.getSynchronizationSources().map((s) => s.audioLevel)),
          ),
        );
        expect(levels).toHaveLength(2);
        for (const peer of levels) expect(peer.some((level) => typeof level === 'number')).toBe(true);
      }
      for (const page of all) {
        const { changes, speakers } = await page.evaluate(() => {
          const w = window as unknown as SpeakersWindow;
          return { changes: w.changes, speakers: w.group?.speakers ?? [] };
        });
        // Never a silent page, in any list it gave.
        const named = changes.flat().map(([id]) => id);
        for (const id of silentIds) expect(named).not.toContain(id);
        // The beeper still speaking, with its user and a level well above silence.
        expect(speakers).toHaveLength(1);
        expect(speakers[0]).toMatchObject({ page: beeperId, user: 'bea' });
        expect(speakers[0]?.level).toBeGreaterThan(0.05);
        expect(speakers[0]?.level).toBeLessThanOrEqual(1);
        // An event only on change: never the same list twice in a row.
        for (let i = 1; i < changes.length; i++) {
          expect(changes[i]?.map(([id]) => id)).not.toEqual(changes[i - 1]?.map(([id]) => id));
        }
      }

      // The beeper leaves: it stops watching (no more events), and the others report nobody speaking.
      const counted = await beeper.evaluate(async () => {
        const w = window as unknown as SpeakersWindow;
        await w.group?.leave();
        return { events: w.changes.length, speakers: w.group?.speakers.length };
      });
      expect(counted.speakers).toBe(0);
      for (const page of [quiet1, quiet2]) {
        await page.waitForFunction(
          () => (window as unknown as SpeakersWindow).changes.at(-1)?.length === 0,
          undefined,
          {
            timeout: 10_000,
          },
        );
      }
      // A poll of the left page would have come by now (the others saw theirs).
      expect(await beeper.evaluate(() => (window as unknown as SpeakersWindow).changes.length)).toBe(counted.events);
    });
  },
);
