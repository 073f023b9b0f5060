import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardRig, signedInPage, startDashboard } from './dashboard-harness.js';

/**
 * The dashboard at 390 px (a phone) in Chromium: the header keeps one row whichever top item is
 * active, an app's four tabs share one row, "Save address" and "Send test" stay apart, `localKey`
 * never breaks inside the word, and an address typed before the Webhooks tab loaded is kept.
 */
const PHONE = { width: 390, height: 844 };
/** The least room between two buttons: they must not touch. */
const MIN_GAP = 8;

type Box = { x: number; y: number; width: number; height: number };

async function box(locator: Locator): Promise<Box> {
  const found = await locator.boundingBox();
  if (found === null) throw new Error(`${locator} is not shown`);
  return found;
}

/** The room between two boxes, sideways or up and down (negative: they overlap). */
function gap(a: Box, b: Box): number {
  return Math.max(b.x - (a.x + a.width), a.x - (b.x + b.width), b.y - (a.y + a.height), a.y - (b.y + b.height));
}

/** Goes to `hash` inside the page (the session stays) and waits for the link it makes current. */
async function visit(page: Page, hash: string, current: Locator): Promise<void> {
  await page.evaluate((h) => {
    location.hash = h;
  }, hash);
  await expect.poll(() => current.getAttribute('aria-current')).toBe('page');
}

describe('dashboard at 390 px (Chromium)', () => {
  let rig: DashboardRig;
  let key: string;
  beforeAll(async () => {
    rig = await startDashboard();
    key = rig.server.app.key;
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('keeps the header one row high whichever top item is active', async () => {
    const page = await signedInPage(rig, '#/apps');
    await page.setViewportSize(PHONE);
    const header = page.locator('header.top');
    const nav = page.getByRole('navigation', { name: 'Dashboard' });
    const heights: number[] = [];
    for (const [hash, link] of [
      ['#/apps', 'Apps'],
      ['#/stats', 'Stats'],
      [`#/apps/${encodeURIComponent(key)}/settings`, 'Apps'],
    ] as const) {
      await visit(page, hash, nav.getByRole('link', { name: link }));
      heights.push((await box(header)).height);
      // Every item of the header on one line.
      const tops = await Promise.all(
        [nav.getByRole('link', { name: 'Apps' }), nav.getByRole('link', { name: 'Stats' })].map(
          async (l) => (await box(l)).y,
        ),
      );
      expect(Math.abs((tops[0] ?? 0) - (tops[1] ?? 0)), hash).toBeLessThan(1);
    }
    expect(
      heights.every((h) => h === heights[0]),
      JSON.stringify(heights),
    ).toBe(true);
    // The bold-width filler is no part of a link's name.
    expect(await nav.getByRole('link', { name: 'Stats', exact: true }).count()).toBe(1);
    expect(
      await page.getByRole('navigation', { name: 'App' }).getByRole('link', { name: 'Settings', exact: true }).count(),
    ).toBe(1);
    // One row: no taller than the sign-out button and the header's padding.
    expect(heights[0]).toBeLessThanOrEqual((await box(page.getByRole('button', { name: 'Sign out' }))).height + 24);
    await page.close();
  });

  it("puts an app's four tabs on one row whichever is active", async () => {
    const page = await signedInPage(rig, `#/apps/${encodeURIComponent(key)}/settings`);
    await page.setViewportSize(PHONE);
    const tabs = page.getByRole('navigation', { name: 'App' }).getByRole('link');
    expect(await tabs.allTextContents()).toEqual(['Settings', 'Webhooks', 'Online', 'Console']);
    for (const tab of ['settings', 'webhooks', 'online', 'console']) {
      const link = tabs.nth(['settings', 'webhooks', 'online', 'console'].indexOf(tab));
      await visit(page, `#/apps/${encodeURIComponent(key)}/${tab}`, link);
      const boxes = await Promise.all([0, 1, 2, 3].map((n) => box(tabs.nth(n))));
      const rows = new Set(boxes.map((b) => Math.round(b.y)));
      expect([...rows], `${tab}: ${JSON.stringify(boxes)}`).toHaveLength(1);
      // All four in sight, none cut off at the edge.
      for (const b of boxes) expect(b.x + b.width).toBeLessThanOrEqual(PHONE.width);
    }
    await page.close();
  });

  it('never breaks localKey inside the word', async () => {
    const page = await signedInPage(rig, `#/apps/${encodeURIComponent(key)}/settings`);
    await page.setViewportSize(PHONE);
    const code = page.locator('code', { hasText: /^localKey$/ });
    await code.waitFor();
    // An inline element has one box per line it is on.
    expect(await code.evaluate((el) => el.getClientRects().length)).toBe(1);
    await page.close();
  });

  it('keeps "Save address" and "Send test" apart at 390 and 1280 px', async () => {
    await rig.server.apps.setWebhook(key, 'https://hooks.example.com/stored');
    const page = await signedInPage(rig, `#/apps/${encodeURIComponent(key)}/webhooks`);
    const save = page.getByRole('button', { name: 'Save address' });
    const test = page.getByRole('button', { name: 'Send test' });
    await expect.poll(() => test.isEnabled()).toBe(true);
    for (const size of [PHONE, { width: 1280, height: 800 }]) {
      await page.setViewportSize(size);
      const between = gap(await box(save), await box(test));
      expect(between, `at ${size.width} px`).toBeGreaterThanOrEqual(MIN_GAP);
    }
    await page.close();
  });

  it('keeps an address typed before the Webhooks tab loaded', async () => {
    await rig.server.apps.setWebhook(key, 'https://hooks.example.com/stored');
    const page = await signedInPage(rig, '#/apps');
    await page.setViewportSize(PHONE);
    // The app's read is held until the address is typed.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let asked = () => {};
    const requested = new Promise<void>((resolve) => (asked = resolve));
    await page.route(
      (url) => url.pathname === `/dashboard/api/apps/${encodeURIComponent(key)}`,
      async (route) => {
        asked();
        await held;
        await route.continue();
      },
    );
    await page.evaluate(
      (h) => {
        location.hash = h;
      },
      `#/apps/${encodeURIComponent(key)}/webhooks`,
    );
    await requested;
    const field = page.getByLabel('Webhook address');
    await field.fill('https://hooks.example.com/typed');
    release();
    // Loaded: the stored address is known (Send test works on it), and the typed one is still there to save.
    await expect.poll(() => page.getByRole('button', { name: 'Send test' }).isEnabled()).toBe(true);
    expect(await field.inputValue()).toBe('https://hooks.example.com/typed');
    expect(await page.getByRole('button', { name: 'Save address' }).isEnabled()).toBe(true);
    await page.getByRole('button', { name: 'Save address' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect((await rig.server.apps.get(key))?.webhook).toBe('https://hooks.example.com/typed');
    await page.close();
  });
});
