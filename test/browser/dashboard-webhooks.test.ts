import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helloPage, type RawPage } from '../../packages/server/test/pages.js';
import { type Receiver, startReceiver } from '../../packages/server/test/receiver.js';
import { type DashboardRig, scrollsSideways, shoot, signedInPage, startDashboard } from './dashboard-harness.js';

/**
 * An app's Webhooks tab in Chromium: the address saved (a wrong one refused inline), a test send
 * with what a local receiver answered, a page's user.online that the receiver refuses (500) seen in
 * the delivery log, its events opened, resent once the receiver takes it again, and the tries chart
 * counting both outcomes. The service allows private addresses: the receiver is on 127.0.0.1.
 */
describe('dashboard webhooks (Chromium)', () => {
  let rig: DashboardRig;
  let sdk: Realtime;
  let receiver: Receiver;
  let alice: RawPage | undefined;

  beforeAll(async () => {
    rig = await startDashboard({
      allowPrivateWebhooks: true,
      // A failed batch waits a minute for its retry: the resend below is the try that takes it.
      webhooks: { windowMs: 150, retryDelaysMs: [60_000], answerMs: 2000 },
    });
    const app = rig.server.app;
    sdk = new Realtime({ url: rig.server.url, key: app.key, secret: app.secret });
    receiver = await startReceiver(app);
  });
  afterAll(async () => {
    await alice?.close();
    await sdk?.close();
    await rig?.close();
    await receiver?.close();
  });

  it('saves the address, sends a test, shows a refused delivery, its events, a resend taking it, and the tries', async () => {
    const page = await signedInPage(rig, `#/apps/${encodeURIComponent(rig.server.app.key)}/webhooks`);
    await page.getByRole('link', { name: 'Webhooks' }).waitFor();
    expect(await page.getByRole('link', { name: 'Webhooks' }).getAttribute('aria-current')).toBe('page');
    // No address yet: said in the log, and nothing to test.
    await page.getByText('the app has no webhook address set').waitFor();
    expect(await page.getByRole('button', { name: 'Send test' }).isDisabled()).toBe(true);

    // A wrong address is refused inline, on the field.
    const field = page.getByLabel('Webhook address');
    await field.fill('ftp://hooks.example.com/realtime');
    await page.getByRole('button', { name: 'Save address' }).click();
    const refusal = page.getByRole('alert').filter({ hasText: 'webhook' });
    await refusal.waitFor();
    expect(await field.getAttribute('aria-invalid')).toBe('true');

    await field.fill(receiver.url);
    await page.getByRole('button', { name: 'Save address' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect(await refusal.count()).toBe(0);
    const stored = await page.request.get(`${rig.url}api/apps/${rig.server.app.key}`);
    expect(((await stored.json()) as { app: { webhook: string } }).app.webhook).toBe(receiver.url);

    // A test send, and what the receiver answered.
    await page.getByRole('button', { name: 'Send test' }).click();
    const answer = page.getByRole('status', { name: 'Test answer' });
    await expect.poll(() => answer.textContent()).toContain('Delivered: your server answered 204.');
    expect(receiver.events('webhook.test')).toHaveLength(1);

    // The receiver fails; a page comes online: its user.online batch is refused with 500.
    receiver.mode = 'fail';
    alice = await helloPage(rig.server.url, rig.server.app.key, await sdk.identityToken('alice'));
    const refused = page.locator('tr[data-batch]').filter({ hasText: 'retrying' });
    await refused.waitFor({ timeout: 15_000 });
    const id = (await refused.getAttribute('data-batch')) as string;
    expect(await refused.locator('td[data-label="Status"]').textContent()).toBe('500');
    expect(await refused.locator('td[data-label="Attempts"]').textContent()).toBe('1');
    // Newest first: the refused batch above the test.
    expect(await page.locator('tr[data-batch]').first().getAttribute('data-batch')).toBe(id);
    expect(await page.locator('tr[data-batch]').nth(1).locator('td[data-label="State"]').textContent()).toBe('taken');

    // Its events, readable.
    await page.getByRole('button', { name: `Events of batch ${id}` }).click();
    const events = page.getByRole('region', { name: `Events of ${id}` });
    await events.waitFor();
    const shown = JSON.parse((await events.textContent()) ?? '') as Record<string, unknown>[];
    expect(shown).toEqual([{ id: expect.any(String), at: expect.any(Number), type: 'user.online', user: 'alice' }]);
    expect(await page.getByRole('button', { name: `Events of batch ${id}` }).getAttribute('aria-expanded')).toBe(
      'true',
    );

    // The receiver takes batches again: Resend, and the batch is taken.
    receiver.mode = 'ok';
    await page.getByRole('button', { name: `Resend batch ${id}` }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Resent ${id}. Delivered: your server answered 204.` })
      .waitFor();
    const row = page.locator(`tr[data-batch="${id}"]`);
    await expect.poll(() => row.locator('td[data-label="State"]').textContent()).toBe('taken');
    expect(await row.getByRole('button', { name: `Resend batch ${id}` }).count()).toBe(0);
    expect(receiver.events('user.online')).toEqual([shown[0]]);

    // The chart counts every try: the test and the resend answered 2xx, the first try 5xx.
    const chart = page.getByRole('img', { name: /^Tries in the last 60 minutes/ });
    await expect
      .poll(() => chart.getAttribute('aria-label'))
      .toBe('Tries in the last 60 minutes: 2xx 2, 3xx 0, 4xx 0, 5xx 1, timeout 0, unreachable 0, not public 0');
    expect(await page.locator('.chart rect.bar.ok').count()).toBeGreaterThan(0);
    expect(await page.locator('.chart rect.bar.bad').count()).toBeGreaterThan(0);

    await shoot(page, 'dashboard-webhooks', () => row.waitFor());
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await scrollsSideways(page)).toBe(false);
    // Stacked at 390 px: each cell names itself.
    expect(await page.locator('table.deliveries thead').isVisible()).toBe(false);
    expect(await row.locator('td[data-label="Status"]').isVisible()).toBe(true);
    await page.close();
  });
});
