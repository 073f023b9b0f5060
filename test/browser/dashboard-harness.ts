/**
 * What the dashboard's Chromium tests share: a service with the dashboard on (a known operator
 * password), Chromium, a signed-in page, and screenshots of a screen at 1280 and 390 px, written
 * only when DASHBOARD_SCREENSHOTS names a folder (`DASHBOARD_SCREENSHOTS=docs/images` re-takes the ones
 * the README and docs/dashboard.md show): a test run leaves the checkout as it found it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { hashDashboardPassword, type ServerOptions } from '@realtime/server';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../../packages/server/test/helpers.js';
import { closeChromium, launchChromium } from './chromium.js';

export const DASHBOARD_PASSWORD = 'a dashboard password for tests';

export interface DashboardRig {
  server: TestServer;
  browser: Browser;
  /** http://127.0.0.1:<port>/dashboard/ */
  url: string;
  close(): Promise<void>;
}

/** A service with the dashboard on, and Chromium. `options` go to the service (e.g. allowPrivateWebhooks). */
export async function startDashboard(options: Partial<ServerOptions> = {}): Promise<DashboardRig> {
  const passwordHash = await hashDashboardPassword(DASHBOARD_PASSWORD);
  // The dashboard's other settings (e.g. statsIntervalMs) come from `options`; the password is the rig's.
  const server = await startTestServer({ ...options, dashboard: { ...options.dashboard, passwordHash } });
  const browser = await launchChromium();
  return {
    server,
    browser,
    url: `${server.url}/dashboard/`,
    close: async () => {
      await closeChromium(browser);
      await server.close();
    },
  };
}

/** A new page of the dashboard, signed in with the operator password, at `hash` (e.g. `#/apps`). */
export async function signedInPage(rig: DashboardRig, hash = ''): Promise<Page> {
  const page = await rig.browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(rig.url + hash);
  await page.getByLabel('Operator password').fill(DASHBOARD_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return page;
}

/**
 * Shoots the page as it is at 1280 px and at 390 px (a phone), whole length, checked as a PNG that
 * wide, and saved as <name>-1280.png and -390.png under DASHBOARD_SCREENSHOTS when set; then puts the
 * page back to 1280 px. `ready` waits for what the shot must show.
 */
export async function shoot(page: Page, name: string, ready?: () => Promise<unknown>): Promise<void> {
  const folder = process.env.DASHBOARD_SCREENSHOTS;
  if (folder) mkdirSync(resolve(folder), { recursive: true });
  for (const [width, height] of [
    [1280, 800],
    [390, 844],
  ] as const) {
    await page.setViewportSize({ width, height });
    await ready?.();
    const png = await page.screenshot({ fullPage: true, animations: 'disabled' });
    // The IHDR chunk's width: the shot is of the width asked.
    if (png.subarray(1, 4).toString('latin1') !== 'PNG' || png.readUInt32BE(16) !== width) {
      throw new Error(`the screenshot ${name} at ${width} px is not a PNG that wide`);
    }
    if (folder) writeFileSync(resolve(folder, `${name}-${width}.png`), png);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

/** Whether the page is wider than its window (a phone would scroll sideways). */
export function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
}
