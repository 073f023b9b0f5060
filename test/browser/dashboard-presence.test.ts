import { Realtime } from '@realtime/node';
import { type App, newApp } from '@realtime/server';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helloPage, type RawPage } from '../../packages/server/test/pages.js';
import { type DashboardRig, scrollsSideways, shoot, signedInPage, startDashboard } from './dashboard-harness.js';

/**
 * The dashboard's online users and occupied rooms in Chromium: pages of alice and bob open over
 * real WebSockets and join rooms; the app's Online tab lists them with their counts, follows bob
 * leaving on its own refresh, finds a user by the start of the name, and fits a phone.
 */
describe('dashboard online users and rooms (Chromium)', () => {
  let rig: DashboardRig;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  /** An app with more online users than one answer holds. */
  const crowd: App = newApp({ name: 'crowd', rateLimit: { perSecond: 100_000, burst: 100_000 } });

  beforeAll(async () => {
    rig = await startDashboard({ apps: [crowd] });
    const app = rig.server.app;
    sdk = new Realtime({ url: rig.server.url, key: app.key, secret: app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk?.close();
    await rig?.close();
  });

  /** A page of `user` in `rooms`, a presence member of `presence`. */
  async function openPage(
    user: string,
    rooms: string[],
    presence: string[],
    app: App = rig.server.app,
    tokens = sdk,
  ): Promise<RawPage> {
    const page = await helloPage(rig.server.url, app.key, await tokens.identityToken(user));
    pages.push(page);
    for (const [i, room] of rooms.entries()) {
      const token = await tokens.roomToken(room, presence.includes(room) ? { presence: true } : {});
      page.send({ t: 'join', ref: i + 1, room, token });
      const answer = await page.next((f) => f.ref === i + 1 && (f.t === 'joined' || f.t === 'error'), `join ${room}`);
      expect(answer.t).toBe('joined');
    }
    return page;
  }

  /** The rows of a listing's table as text cells, header row left out. */
  async function rowsOf(table: Locator): Promise<string[][]> {
    const rows = await table.locator('tbody tr').all();
    return Promise.all(rows.map(async (row) => (await row.locator('td').allInnerTexts()).map((t) => t.trim())));
  }

  /** Waits (through the screen's own refreshes) until the table shows exactly these rows. */
  async function expectRows(page: Page, table: Locator, expected: string[][]): Promise<void> {
    const deadline = Date.now() + 15_000;
    let last: string[][] = [];
    while (Date.now() < deadline) {
      last = (await table.count()) > 0 ? await rowsOf(table) : [];
      if (JSON.stringify(last) === JSON.stringify(expected)) return;
      await page.waitForTimeout(100);
    }
    expect(last).toEqual(expected);
  }

  it('lists alice and bob with their pages and the rooms with pages and members, and follows bob leaving', async () => {
    await openPage('alice', ['lobby', 'alice-notes'], ['lobby']);
    await openPage('alice', ['lobby'], ['lobby']);
    const bob = await openPage('bob', ['lobby', 'bob-desk'], ['lobby']);

    const page = await signedInPage(rig, `#/apps/${encodeURIComponent(rig.server.app.key)}/online`);
    await page.getByRole('link', { name: 'Online' }).waitFor();
    expect(await page.getByRole('link', { name: 'Online' }).getAttribute('aria-current')).toBe('page');
    const users = page.getByRole('table', { name: /^Online users/ });
    const rooms = page.getByRole('table', { name: /^Occupied rooms/ });
    await expectRows(page, users, [
      ['alice', '2'],
      ['bob', '1'],
    ]);
    await expectRows(page, rooms, [
      ['alice-notes', '1', '0'],
      ['bob-desk', '1', '0'],
      ['lobby', '3', '2'],
    ]);
    expect(await page.getByRole('columnheader').allInnerTexts()).toEqual([
      'User',
      'Pages open',
      'Room',
      'Pages',
      'Presence members',
    ]);
    await shoot(page, 'dashboard-presence', () => users.getByRole('row', { name: /bob/ }).waitFor());

    await bob.close();
    await expectRows(page, users, [['alice', '2']]);
    await expectRows(page, rooms, [
      ['alice-notes', '1', '0'],
      ['lobby', '2', '1'],
    ]);

    // Searching by the start of a name: rooms starting with "lob", then none.
    const findRoom = page.getByLabel('Find a room by the start of its name');
    await findRoom.fill('lob');
    await expectRows(page, rooms, [['lobby', '2', '1']]);
    await findRoom.fill('zzz');
    await page.getByText('No room starts with “zzz”.').waitFor();
    await findRoom.fill('');
    await expectRows(page, rooms, [
      ['alice-notes', '1', '0'],
      ['lobby', '2', '1'],
    ]);

    await page.setViewportSize({ width: 390, height: 844 });
    await users.getByRole('row', { name: /alice/ }).waitFor();
    expect(await scrollsSideways(page)).toBe(false);
    await page.close();
  });

  it('pages through more users than one answer holds', async () => {
    const tokens = new Realtime({ url: rig.server.url, key: crowd.key, secret: crowd.secret });
    const names = Array.from({ length: 201 }, (_, i) => `u-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 20) {
      await Promise.all(names.slice(i, i + 20).map((user) => openPage(user, [], [], crowd, tokens)));
    }
    await tokens.close();

    const page = await signedInPage(rig, `#/apps/${encodeURIComponent(crowd.key)}/online`);
    const users = page.getByRole('table', { name: /^Online users/ });
    const firstRow = users.locator('tbody tr').first();
    await firstRow.waitFor();
    expect(await users.locator('tbody tr').count()).toBe(200);
    expect(await page.getByRole('heading', { name: /^Online users/ }).innerText()).toMatch(/200 shown/);
    const next = page.getByRole('button', { name: 'Next users' });
    const previous = page.getByRole('button', { name: 'Previous users' });
    expect(await previous.isDisabled()).toBe(true);
    await next.click();
    await expectRows(page, users, [['u-200', '1']]);
    expect(await next.isDisabled()).toBe(true);
    await previous.click();
    await users.locator('tbody tr').nth(199).waitFor();
    expect(await firstRow.innerText()).toMatch(/u-000/);
    await page.close();
  });
});
