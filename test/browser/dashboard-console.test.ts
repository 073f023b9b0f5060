import { Realtime } from '@realtime/node';
import { newApp } from '@realtime/server';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, post } from '../../packages/server/test/helpers.js';
import { helloPage } from '../../packages/server/test/pages.js';
import { type DashboardRig, scrollsSideways, shoot, signedInPage, startDashboard } from './dashboard-harness.js';

/**
 * The dashboard's live console in Chromium: the app's Console tab opens an EventSource on the
 * service; emits through the API appear newest first; a room filter opens the stream again and
 * hides another room's emit; Pause holds new entries back (counted) until Resume; Clear empties the
 * list; the screen fits a phone.
 */
describe('dashboard live console (Chromium)', () => {
  let rig: DashboardRig;

  beforeAll(async () => {
    rig = await startDashboard();
  });
  afterAll(async () => {
    await rig?.close();
  });

  const emit = async (room: string, event: string, data: unknown) => {
    const answer = await post(rig.server, `${API}/emit`, { rooms: [room], event, data });
    expect(answer.status, answer.text).toBe(200);
  };

  /** The Event cells of the list, top (newest) first. */
  const events = (table: Locator) => table.locator('tbody td[data-label="Event"]').allInnerTexts();

  /** Emits `event` until the list shows it: the stream may still be opening when the first goes. */
  async function emitUntilShown(page: Page, table: Locator, room: string, event: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (let n = 0; ; n++) {
      await emit(room, event, { n });
      try {
        await table.locator('tbody td[data-label="Event"]', { hasText: event }).first().waitFor({ timeout: 500 });
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
      }
      await page.waitForTimeout(50);
    }
  }

  it('shows emits as they happen, filters by room, pauses and resumes, and clears', async () => {
    const page = await signedInPage(rig, `#/apps/${encodeURIComponent(rig.server.app.key)}/console`);
    const tab = page.getByRole('link', { name: 'Console' });
    await tab.waitFor();
    expect(await tab.getAttribute('aria-current')).toBe('page');
    await page.getByRole('status').getByText('Live').waitFor();
    const table = page.getByRole('table', { name: /^Traffic/ });

    await emitUntilShown(page, table, 'lobby', 'first');
    await emit('lobby', 'second', { text: 'hello from the API' });
    await table.locator('td[data-label="Event"]', { hasText: 'second' }).waitFor();
    // Newest first: the last emit is on top; its row shows the kind, room and data.
    expect((await events(table))[0]).toBe('second');
    const top = table.locator('tbody tr').first();
    expect((await top.locator('td[data-label="Kind"]').innerText()).trim()).toBe('emit');
    expect((await top.locator('td[data-label="Room"]').innerText()).trim()).toBe('lobby');
    expect((await top.locator('td[data-label="Data"]').innerText()).trim()).toBe('{"text":"hello from the API"}');

    // A page of ann joins and sends, and an ask finds nobody: the kinds side by side, for the pictures.
    const sdk = new Realtime({ url: rig.server.url, key: rig.server.app.key, secret: rig.server.app.secret });
    const ann = await helloPage(rig.server.url, rig.server.app.key, await sdk.identityToken('ann'));
    ann.send({ t: 'join', ref: 1, room: 'lobby', token: await sdk.roomToken('lobby', { send: ['*'] }) });
    await ann.next((f) => f.t === 'joined', 'joined');
    ann.send({ t: 'send', ref: 2, room: 'lobby', event: 'say', data: { text: 'hi all' } });
    await ann.next((f) => f.t === 'sent', 'sent');
    await post(rig.server, `${API}/users/nobody/ask`, { event: 'confirm', data: { order: 7 } });
    await table.locator('td[data-label="Kind"]', { hasText: 'ask' }).waitFor();
    expect((await table.locator('tbody td[data-label="Kind"]').allInnerTexts()).slice(0, 3)).toEqual([
      'ask',
      'send',
      'join',
    ]);
    expect((await table.locator('tbody tr').nth(1).locator('td[data-label="User"]').innerText()).trim()).toBe('ann');
    await shoot(page, 'dashboard-console', () => table.locator('tbody tr').first().waitFor());

    // Filter by room: the stream opens again with ?room=kitchen; the lobby's emit does not show.
    await page.getByLabel('Room').fill('kitchen');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await emitUntilShown(page, table, 'kitchen', 'in-kitchen');
    await emit('lobby', 'in-lobby', 1);
    await emit('kitchen', 'after-lobby', 2);
    await table.locator('td[data-label="Event"]', { hasText: 'after-lobby' }).waitFor();
    const filtered = await events(table);
    expect(filtered).not.toContain('in-lobby');
    expect(filtered).not.toContain('second');
    expect(new Set(filtered)).toEqual(new Set(['in-kitchen', 'after-lobby']));

    // Paused: new entries are counted, not shown, until Resume.
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    await emit('kitchen', 'while-paused', 3);
    await page.getByRole('status').getByText('Paused: 1 new').waitFor();
    expect(await events(table)).not.toContain('while-paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await table.locator('td[data-label="Event"]', { hasText: 'while-paused' }).waitFor();
    expect((await events(table))[0]).toBe('while-paused');

    await ann.close();
    await sdk.close();
    await page.getByRole('button', { name: 'Clear', exact: true }).click();
    await page.getByText('Nothing yet: traffic shows here as it happens.').waitFor();

    await emit('kitchen', 'on-a-phone', { text: 'x'.repeat(300) });
    await page.setViewportSize({ width: 390, height: 844 });
    await table.locator('td[data-label="Event"]', { hasText: 'on-a-phone' }).waitFor();
    expect(await scrollsSideways(page)).toBe(false);
    await page.close();
  });
  it('ends with the app: a deletion in the dashboard says so on the open console at once', async () => {
    const doomed = newApp({ key: 'doomed-console', name: 'Doomed' });
    await rig.server.apps.upsert(doomed);
    const page = await signedInPage(rig, `#/apps/${doomed.key}/console`);
    await page.getByText('Live', { exact: true }).waitFor();
    // Deleted as the Settings tab does it: the session's CSRF token on a DELETE.
    const { csrf } = (await (await page.request.get(`${rig.url}api/session`)).json()) as { csrf: string };
    const gone = await page.request.delete(`${rig.url}api/apps/${doomed.key}`, { headers: { 'X-CSRF-Token': csrf } });
    expect(gone.status()).toBe(200);
    // Said at once, from the stream's last event (not after a reconnect refused with no_app).
    await page.getByText('This app was deleted: its console ended.').waitFor({ timeout: 2500 });
    await page.close();
  });
});
