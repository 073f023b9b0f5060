import { parseSealKey } from '@realtime/browser';
import { parseLocalKey, Realtime } from '@realtime/node';
import { newApp } from '@realtime/server';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, send } from '../../packages/server/test/helpers.js';
import { type DashboardRig, scrollsSideways, shoot, signedInPage, startDashboard } from './dashboard-harness.js';

/**
 * The dashboard's apps screens in Chromium: create an app, rename it, change its plan and rate
 * limit (a refusal shown in place), reveal and rotate its secret (the API takes the new one only),
 * make a sealing key that never leaves the page, delete it; the list and an app's page at 1280 and
 * 390 px, every control named.
 */
describe('dashboard apps (Chromium)', () => {
  let rig: DashboardRig;
  beforeAll(async () => {
    rig = await startDashboard();
  });
  afterAll(async () => {
    await rig?.close();
  });

  /** Everything the page sent: address, headers and body of each request. */
  function recordRequests(page: Page): string[] {
    const sent: string[] = [];
    page.on('request', (request) => {
      sent.push(
        `${request.method()} ${request.url()}\n${JSON.stringify(request.headers())}\n${request.postData() ?? ''}`,
      );
    });
    return sent;
  }

  /** Controls without an accessible name: buttons without text or label, fields without a label. */
  function unnamedControls(page: Page): Promise<string[]> {
    return page.evaluate(() =>
      [...document.querySelectorAll('main button, main input, main select, main textarea, main a')]
        .filter((el) => {
          const aria = el.getAttribute('aria-label') ?? el.getAttribute('aria-labelledby');
          if (aria) return false;
          if (el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement) {
            return (el.labels?.length ?? 0) === 0;
          }
          return (el.textContent ?? '').trim() === '';
        })
        .map((el) => el.outerHTML.slice(0, 120)),
    );
  }

  const apiAs = (key: string, secret: string) =>
    send({ url: rig.server.url, app: newApp({ key, secret }) }, { path: `${API}/online?ids=alice` });

  it('creates, renames, changes the plan and rate limit, reveals and rotates the secret, makes a sealing key, and deletes', async () => {
    const page = await signedInPage(rig, '#/apps');
    const sent = recordRequests(page);
    const { server } = rig;

    // The list holds the service's app; a taken key is refused in place with the service's words.
    await page.getByRole('cell', { name: server.app.key }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Taken');
    await page.getByLabel('Key (leave empty to have one made)').fill(server.app.key);
    await page.getByRole('button', { name: 'Create app' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe(`an app with the key ${JSON.stringify(server.app.key)} exists already`);

    // Created with a key made by the service: the page goes to the app.
    await page.getByLabel('Key (leave empty to have one made)').fill('');
    await page.getByLabel('Name', { exact: true }).fill('Shop');
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('heading', { level: 1, name: 'Shop' }).waitFor();
    const key = decodeURIComponent(new URL(page.url()).hash.split('/')[2] ?? '');
    expect(key).toMatch(/^app_[0-9a-f]{20}$/);
    expect(await page.getByRole('textbox', { name: 'App key' }).inputValue()).toBe(key);
    const stored = await server.apps.get(key);
    expect(stored).toMatchObject({ name: 'Shop', webhook: '' });
    expect(stored?.features).toHaveLength(7);
    // The secret stays hidden until asked for.
    expect(await page.content()).not.toContain(stored?.secret);
    expect(await page.getByRole('textbox', { name: 'Secret', exact: true }).count()).toBe(0);

    // Rename, plan, rate limit: one form, only what changed is sent.
    await page.getByLabel('Name', { exact: true }).fill('Shop (EU)');
    await page.getByRole('checkbox', { name: /^Ask:/ }).uncheck();
    await page.getByRole('checkbox', { name: 'Live streams' }).uncheck();
    await page.getByLabel('Requests per second').fill('5');
    await page.getByLabel('Burst').fill('10');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    await page.getByRole('heading', { level: 1, name: 'Shop (EU)' }).waitFor();
    expect(await server.apps.get(key)).toMatchObject({
      name: 'Shop (EU)',
      features: ['history', 'presence', 'webhooks', 'calls', 'groups'],
      rateLimit: { perSecond: 5, burst: 10 },
    });

    // A value the service refuses: its message, in place; nothing changed.
    await page.getByLabel('Burst').fill('0');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('rateLimit.burst must be a whole number from 1 to 1000000 (got 0)');
    expect((await server.apps.get(key))?.rateLimit).toEqual({ perSecond: 5, burst: 10 });
    await page.getByLabel('Burst').fill('10');

    // Reveal, then rotate after a confirmation: the shown secret changes, the API takes only the new one.
    await page.getByRole('button', { name: 'Reveal secret' }).click();
    const secretField = page.getByRole('textbox', { name: 'Secret', exact: true });
    await expect.poll(() => secretField.inputValue()).toBe(stored?.secret);
    const old = await secretField.inputValue();
    expect((await apiAs(key, old)).status).toBe(200);
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const confirm = page.getByRole('group', { name: 'Confirm the rotation' });
    await confirm.getByRole('button', { name: 'Rotate now' }).click();
    await expect.poll(() => secretField.inputValue()).not.toBe(old);
    const secret = await secretField.inputValue();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await server.apps.get(key))?.secret).toBe(secret);
    expect((await apiAs(key, old)).json.error).toBe('bad_signature');
    expect((await apiAs(key, secret)).status).toBe(200);
    await page.getByRole('status').filter({ hasText: 'A new secret' }).waitFor();

    // The sealing key: made in the page, in the SDKs' form, and in no request the page makes.
    await page.getByRole('button', { name: 'Generate a sealing key' }).click();
    const sealing = await page.getByRole('textbox', { name: 'Sealing key' }).inputValue();
    expect(sealing).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(parseLocalKey(sealing)).toHaveLength(32);
    expect(parseSealKey(sealing)).toHaveLength(32);
    const sdk = new Realtime({ url: server.url, key, secret, localKey: sealing });
    expect(sdk.open(sdk.seal('room:vault', { text: 'hi' }), 'room:vault')).toEqual({ text: 'hi' });
    await sdk.close();
    await page.getByRole('button', { name: 'Generate another' }).click();
    await expect.poll(() => page.getByRole('textbox', { name: 'Sealing key' }).inputValue()).not.toBe(sealing);
    const another = await page.getByRole('textbox', { name: 'Sealing key' }).inputValue();

    expect(await unnamedControls(page)).toEqual([]);
    await shoot(page, 'dashboard-app', () => page.getByRole('textbox', { name: 'Sealing key' }).waitFor());
    expect(await scrollsSideways(page)).toBe(false);
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await scrollsSideways(page)).toBe(false);
    await page.setViewportSize({ width: 1280, height: 800 });

    // Delete, after a confirmation: back to the list, without the app; the API no longer knows it.
    await page.getByRole('button', { name: 'Delete app' }).click();
    await page.getByRole('group', { name: 'Confirm the deletion' }).getByRole('button', { name: 'Cancel' }).click();
    expect(await server.apps.get(key)).toBeDefined();
    await page.getByRole('button', { name: 'Delete app' }).click();
    await page
      .getByRole('group', { name: 'Confirm the deletion' })
      .getByRole('button', { name: 'Delete for good' })
      .click();
    await page.getByRole('heading', { level: 1, name: 'Apps' }).waitFor();
    await page.getByRole('cell', { name: server.app.key }).waitFor();
    expect(await page.getByRole('cell', { name: key }).count()).toBe(0);
    expect(await server.apps.get(key)).toBeUndefined();
    expect((await apiAs(key, secret)).json.error).toBe('unknown_site');

    // Neither sealing key was ever sent, nor kept by the page.
    expect(sent.length).toBeGreaterThan(10);
    for (const made of [sealing, another]) {
      expect(sent.filter((request) => request.includes(made))).toEqual([]);
      expect(
        await page.evaluate(
          (k) => JSON.stringify({ ...localStorage }).includes(k) || JSON.stringify({ ...sessionStorage }).includes(k),
          made,
        ),
      ).toBe(false);
    }
    await page.close();
  });

  it('lists apps as a table, as cards at 390 px; a missing app says so', async () => {
    const { server } = rig;
    await server.apps.upsert(
      newApp({
        key: 'shop-eu',
        name: 'Shop (EU)',
        features: ['history', 'presence', 'webhooks'],
        rateLimit: { perSecond: 500, burst: 1000 },
        webhook: 'https://shop.example.com/realtime/hooks',
      }),
    );
    await server.apps.upsert(newApp({ key: 'support-chat', name: 'Support chat', features: [] }));
    const page = await signedInPage(rig, '#/apps');
    const row = page.getByRole('row').filter({ hasText: 'shop-eu' });
    await row.waitFor();
    expect(await row.getByRole('cell').allTextContents()).toEqual([
      'Shop (EU)',
      'shop-eu',
      'history, presence, webhooks',
      '500/s, burst 1,000',
      'https://shop.example.com/realtime/hooks',
    ]);
    expect(await page.getByRole('row').filter({ hasText: 'support-chat' }).getByRole('cell').nth(2).textContent()).toBe(
      'nothing',
    );
    expect(await unnamedControls(page)).toEqual([]);
    await shoot(page, 'dashboard-apps', () => row.waitFor());
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await scrollsSideways(page)).toBe(false);
    // Cards: the table's head is hidden, each cell says what it is.
    expect(await page.locator('table.apps thead').isVisible()).toBe(false);
    await page.setViewportSize({ width: 1280, height: 800 });

    await row.getByRole('link', { name: 'Shop (EU)' }).click();
    await page.getByRole('heading', { level: 1, name: 'Shop (EU)' }).waitFor();
    expect(await page.getByRole('checkbox', { checked: true }).count()).toBe(3);

    await page.goto(`${rig.url}#/apps/ghost`);
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('no app has the key "ghost"');
    await page.close();
  });
});
