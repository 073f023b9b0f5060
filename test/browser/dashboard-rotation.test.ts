import { newApp } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, send } from '../../packages/server/test/helpers.js';
import { type DashboardRig, scrollsSideways, signedInPage, startDashboard } from './dashboard-harness.js';

/**
 * A rotation with an overlap on an app's page in Chromium: the overlap chosen before "Rotate secret",
 * the rotation's state in a status line (until when the old secret works, which one signs webhooks),
 * and "Retire old secret" after a confirmation; the API takes what the page says.
 */
describe('dashboard secret rotation (Chromium)', () => {
  let rig: DashboardRig;
  beforeAll(async () => {
    rig = await startDashboard();
  });
  afterAll(async () => {
    await rig?.close();
  });

  const apiAs = (key: string, secret: string) =>
    send({ url: rig.server.url, app: newApp({ key, secret }) }, { path: `${API}/online?ids=alice` });

  it('rotates with a 24-hour overlap, shows it, and retires the old secret', async () => {
    const app = newApp({ key: 'rotate-ui', name: 'Rotate UI' });
    await rig.server.apps.upsert(app);
    const page = await signedInPage(rig, `#/apps/${app.key}`);
    await page.getByRole('heading', { name: 'Rotate UI' }).waitFor();
    expect(await page.locator('[data-rotation]').count()).toBe(0);

    await page.getByLabel('Old secret keeps working').selectOption({ label: '24 hours' });
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const confirm = page.getByRole('group', { name: 'Confirm the rotation' });
    await confirm.getByText('keeps working for the time chosen').waitFor();
    await confirm.getByRole('button', { name: 'Rotate now' }).click();
    await page.getByRole('status').filter({ hasText: 'the old one still works until' }).waitFor();
    const line = page.locator('[data-rotation]');
    await line.waitFor();
    expect(await line.textContent()).toMatch(
      /Rotation under way: the old secret works until .+; webhooks are signed with the new secret, and carry/,
    );

    const stored = await rig.server.apps.get(app.key);
    const secret = stored?.secret ?? '';
    expect(stored?.rotation).toMatchObject({ oldSecret: app.secret, signer: 'new' });
    expect((stored?.rotation?.retiresAt ?? 0) - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect((await apiAs(app.key, app.secret)).status).toBe(200);
    expect((await apiAs(app.key, secret)).status).toBe(200);
    expect(await page.getByRole('textbox', { name: 'Secret', exact: true }).inputValue()).toBe(secret);
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await scrollsSideways(page)).toBe(false);
    await page.setViewportSize({ width: 1280, height: 800 });

    // The state survives a reload: it is the app's, read from the service.
    await page.reload();
    await page.locator('[data-rotation]').waitFor();

    await page.getByRole('button', { name: 'Retire old secret' }).click();
    await page
      .getByRole('group', { name: 'Confirm the retirement' })
      .getByRole('button', { name: 'Retire now' })
      .click();
    await page.getByRole('status').filter({ hasText: 'The old secret is retired' }).waitFor();
    expect(await page.locator('[data-rotation]').count()).toBe(0);
    expect((await rig.server.apps.get(app.key))?.rotation).toBeUndefined();
    expect((await apiAs(app.key, app.secret)).json.error).toBe('bad_signature');
    expect((await apiAs(app.key, secret)).status).toBe(200);
    await page.close();
  });
});
