import { Realtime } from '@realtime/node';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helloPage, isEvent, type RawPage } from '../../packages/server/test/pages.js';
import { type DashboardRig, scrollsSideways, shoot, signedInPage, startDashboard } from './dashboard-harness.js';

/**
 * The dashboard's stats in Chromium: its charts draw the service's samples (taken every 200 ms here,
 * not 5 s, through the server's statsIntervalMs), say which count this node and which all nodes,
 * and show messages rise when traffic is emitted to an open page.
 */
const CHARTS = [
  'Pages open, this node',
  'Messages in, this node',
  'Frames out to pages, this node',
  'Webhook tries, this node',
  'Webhook backlog (batches), all nodes',
];

const chartPattern = (label: string) => new RegExp(`^${label.replace(/[()]/g, '\\$&')}:`);

describe('dashboard stats (Chromium)', () => {
  let rig: DashboardRig;
  let sdk: Realtime;
  const pages: RawPage[] = [];

  beforeAll(async () => {
    rig = await startDashboard({ dashboard: { passwordHash: '', statsIntervalMs: 200 } });
    const app = rig.server.app;
    sdk = new Realtime({ url: rig.server.url, key: app.key, secret: app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk?.close();
    await rig?.close();
  });

  /** A chart's accessible name: `<label>: <latest> now, at most <max>`. */
  const chartName = (page: Page, label: string) =>
    page.getByRole('img', { name: chartPattern(label) }).getAttribute('aria-label');

  /** The highest value a chart shows, read from its name. */
  async function chartMax(page: Page, label: string): Promise<number> {
    const name = (await chartName(page, label)) ?? '';
    const max = /at most ([\d.]+)(k|M)?/.exec(name);
    expect(max, name).not.toBeNull();
    const scale = max?.[2] === 'M' ? 1e6 : max?.[2] === 'k' ? 1e3 : 1;
    return Number(max?.[1]) * scale;
  }

  /** Waits (through the screen's own refreshes) until a chart's latest value is `value`. */
  async function waitForNow(page: Page, label: string, value: string): Promise<string> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const now = /: (\S+) now/.exec((await chartName(page, label)) ?? '')?.[1] ?? '';
      if (now === value || Date.now() > deadline) return now;
      await page.waitForTimeout(100);
    }
  }

  /** Waits (through the screen's own refreshes) until a chart's highest value passes `min`. */
  async function waitForMax(page: Page, label: string, min: number): Promise<number> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const max = await chartMax(page, label);
      if (max > min || Date.now() > deadline) return max;
      await page.waitForTimeout(100);
    }
  }

  it('draws the sampled pages, messages and webhooks, and shows messages rise with traffic', async () => {
    const page = await signedInPage(rig, '#/stats');
    await page.getByRole('heading', { name: 'Stats' }).waitFor();
    expect(await page.getByRole('link', { name: 'Stats' }).getAttribute('aria-current')).toBe('page');
    for (const label of CHARTS) await page.getByRole('img', { name: chartPattern(label) }).waitFor();
    await page.getByText(/a sample every 0\.2 s/).waitFor();
    // A line is drawn once two samples are in.
    await page.locator('.chart polyline').first().waitFor({ state: 'attached' });
    expect(await chartMax(page, 'Messages in, this node')).toBe(1);

    const user = await helloPage(rig.server.url, rig.server.app.key, await sdk.identityToken('alice'));
    pages.push(user);
    user.send({ t: 'join', ref: 1, room: 'ticker', token: await sdk.roomToken('ticker') });
    await user.next((f) => f.ref === 1 && f.t === 'joined', 'joined ticker');
    expect(await waitForNow(page, 'Pages open, this node', '1')).toBe('1');

    // Messages rise: emits to the room, each handed to the page.
    for (let n = 0; n < 60; n++) await sdk.emit({ rooms: ['ticker'], event: 'tick', data: n });
    await user.next((f) => isEvent('tick', 'ticker')(f) && f.data === 59, 'the last tick');
    expect(await waitForMax(page, 'Messages in, this node', 1)).toBeGreaterThan(1);
    expect(await waitForMax(page, 'Frames out to pages, this node', 1)).toBeGreaterThan(1);
    const caption = page.getByRole('figure').filter({ hasText: 'Messages in, this node' });
    expect(await caption.locator('figcaption strong').innerText()).toMatch(/^[\d.]+(k|M)?\/s$/);

    await shoot(page, 'dashboard-stats', () => page.locator('.chart polyline').first().waitFor({ state: 'attached' }));
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await scrollsSideways(page)).toBe(false);
    await page.close();
  });
});
