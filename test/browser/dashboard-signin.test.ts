import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DASHBOARD_PASSWORD,
  type DashboardRig,
  scrollsSideways,
  shoot,
  signedInPage,
  startDashboard,
} from './dashboard-harness.js';

/**
 * The dashboard's page in Chromium: it is served by the service with its own files only, signs in
 * with the operator password, says why a password is refused, locks after five wrong ones, and
 * signs out.
 */
describe('dashboard sign-in (Chromium)', () => {
  let rig: DashboardRig;
  beforeAll(async () => {
    rig = await startDashboard();
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('serves its page, bundle, style and icon from the service, under a strict CSP', async () => {
    const page = await rig.browser.newPage();
    const requests: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    const answer = await page.goto(rig.url);
    expect(answer?.status()).toBe(200);
    expect(answer?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.getByLabel('Operator password').waitFor();
    expect(await page.title()).toBe('Realtime dashboard');
    const origin = new URL(rig.url).origin;
    expect(requests.length).toBeGreaterThanOrEqual(4);
    expect(requests.filter((url) => !url.startsWith(origin))).toEqual([]);
    const icon = await page.request.get(`${rig.url}favicon.svg`);
    expect(icon.status()).toBe(200);
    expect(icon.headers()['content-type']).toBe('image/svg+xml');
    await page.close();
  });

  it('signs in with the operator password, keeps the session across a reload, and signs out', async () => {
    const page = await signedInPage(rig);
    const cookies = await page.context().cookies();
    const session = cookies.find((cookie) => cookie.name === 'rt_dashboard');
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe('Strict');
    expect(session?.path).toBe('/dashboard');
    // The page's script cannot read the cookie.
    expect(await page.evaluate(() => document.cookie)).toBe('');

    await page.reload();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();

    // The known-browser cookie, beside it: as private, and kept after signing out.
    const device = cookies.find((cookie) => cookie.name === 'rt_dashboard_device');
    expect(device?.httpOnly).toBe(true);
    expect(device?.sameSite).toBe('Strict');
    expect(device?.path).toBe('/dashboard');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Operator password').waitFor();
    const after = await page.context().cookies();
    expect(after.find((cookie) => cookie.name === 'rt_dashboard')).toBeUndefined();
    expect(after.find((cookie) => cookie.name === 'rt_dashboard_device')?.value).toBe(device?.value);
    await page.reload();
    await page.getByLabel('Operator password').waitFor();
    await page.close();
  });

  it('waits its turn through sign-ins refused busy (a flood from other addresses), then signs in', async () => {
    const page = await rig.browser.newPage({ viewport: { width: 1280, height: 800 } });
    let refused = 0;
    // The service answers busy twice, as it does while other addresses' checks fill its queue.
    await page.route('**/dashboard/api/session', async (route) => {
      if (route.request().method() === 'POST' && refused < 2) {
        refused++;
        await route.fulfill({
          status: 503,
          headers: { 'Retry-After': '1', 'Content-Type': 'application/json' },
          body: JSON.stringify({ ok: false, error: 'busy', message: 'this node is checking many sign-ins' }),
        });
        return;
      }
      await route.fallback();
    });
    await page.goto(rig.url);
    await page.getByLabel('Operator password').fill(DASHBOARD_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 10_000 });
    expect(refused).toBe(2);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Operator password').waitFor();
    await page.close();
  });

  it('a 429 locked, whatever its message, is shown at once and not sent again', async () => {
    const page = await rig.browser.newPage({ viewport: { width: 1280, height: 800 } });
    let posted = 0;
    await page.route('**/dashboard/api/session', async (route) => {
      if (route.request().method() !== 'POST') return route.fallback();
      posted++;
      await route.fulfill({
        status: 429,
        headers: { 'Retry-After': '1', 'Content-Type': 'application/json' },
        body: JSON.stringify({
          ok: false,
          error: 'locked',
          message: 'another sign-in from this address is being checked',
        }),
      });
    });
    await page.goto(rig.url);
    await page.getByLabel('Operator password').fill(DASHBOARD_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'Locked after too many wrong passwords' })
      .waitFor({ timeout: 5000 });
    expect(posted).toBe(1);
    await page.close();
  });

  it('says a wrong password is wrong, then locks after five, refusing even the right one', async () => {
    const page = await rig.browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(rig.url);
    const password = page.getByLabel('Operator password');
    const signIn = page.getByRole('button', { name: 'Sign in' });
    const alert = page.getByRole('alert');
    await shoot(page, 'dashboard-sign-in', () => password.waitFor());
    for (let i = 0; i < 5; i++) {
      await password.fill(`wrong ${i}`);
      await signIn.click();
      await expect.poll(() => alert.textContent()).toBe('Wrong password.');
      // The next try starts from a fresh alert, so each refusal is seen.
      await page.evaluate(() => document.querySelector('[role="alert"]')?.remove());
    }
    await password.fill(DASHBOARD_PASSWORD);
    await signIn.click();
    await expect
      .poll(() => alert.textContent())
      .toMatch(/^Locked after too many wrong passwords: try again in \d+ (s|min)\.$/);
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);

    await page.setViewportSize({ width: 390, height: 844 });
    expect(await scrollsSideways(page)).toBe(false);
    expect(await password.isVisible()).toBe(true);
    expect(await signIn.isVisible()).toBe(true);
    await page.close();
  });
});
