/**
 * The AppStore contract as one test suite, run by every implementation's runner file.
 *
 * @example
 * ```ts
 * appStoreContract('SqliteAppStore', async () => {
 *   const dir = mkdtempSync(join(tmpdir(), 'apps-'));
 *   const db = openDb(dir);
 *   return { store: new SqliteAppStore(db), cleanup: async () => { db.close(); rmSync(dir, { recursive: true }); } };
 * });
 * ```
 */
import { FEATURES } from '@realtime/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { App, AppStore } from '../types.js';

export interface AppStoreHarness {
  /** A store with no apps in it. */
  store: AppStore;
  /**
   * Opens a second store on the same data, as the CLI does from another process while the server
   * runs. Stores with nothing to share leave it out; the test then uses the same store.
   */
  other?: () => Promise<AppStore>;
  /** Closes whatever is open (including stores from `other`) and removes the data. */
  cleanup(): Promise<void>;
}

function app(key: string, overrides: Partial<App> = {}): App {
  return {
    key,
    secret: `secret-of-${key}`,
    name: `App ${key}`,
    webhook: '',
    features: ['history', 'presence'],
    rateLimit: { perSecond: 100, burst: 200 },
    ...overrides,
  };
}

const byKey = (a: App, b: App): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

export function appStoreContract(name: string, makeStore: () => Promise<AppStoreHarness>): void {
  describe(`AppStore contract: ${name}`, () => {
    let harness: AppStoreHarness;
    let store: AppStore;

    beforeEach(async () => {
      harness = await makeStore();
      store = harness.store;
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    it('knows no app at first', async () => {
      expect(await store.get('app1')).toBeUndefined();
      expect(await store.list()).toEqual([]);
    });

    it('gives back an upserted app, every field as written', async () => {
      const written = app('app1', {
        secret: 'a secret with ünïcode and "quotes" \\ and 🚀',
        name: 'Ünïcode Näme — 漢字',
        webhook: 'https://hooks.example.com/realtime?x=1&y=%20',
        features: ['history', 'ask', 'webhooks'],
        rateLimit: { perSecond: 12.5, burst: 40 },
      });
      await store.upsert(written);
      expect(await store.get('app1')).toEqual(written);
      expect(await store.get('app2')).toBeUndefined();
      expect(await store.get('APP1')).toBeUndefined();
    });

    it('round-trips every feature set and rate limit', async () => {
      const variants: App[] = [
        app('none', { features: [], rateLimit: { perSecond: 0, burst: 0 } }),
        app('all', { features: [...FEATURES], rateLimit: { perSecond: 1_000_000, burst: 2_000_000 } }),
        app('reversed', { features: [...FEATURES].reverse(), rateLimit: { perSecond: 0.25, burst: 1.5 } }),
        app('one', { features: ['streams'], rateLimit: { perSecond: 1, burst: 1 } }),
      ];
      for (const variant of variants) await store.upsert(variant);
      for (const variant of variants) {
        const got = await store.get(variant.key);
        expect(got?.features).toEqual(variant.features);
        expect(got?.rateLimit).toEqual(variant.rateLimit);
      }
    });

    it('replaces every field on a second upsert of the same key', async () => {
      await store.upsert(
        app('app1', {
          webhook: 'https://a.example/hook',
          features: [...FEATURES],
          rateLimit: { perSecond: 5, burst: 9 },
        }),
      );
      const replacement = app('app1', {
        secret: 'new secret',
        name: 'New name',
        webhook: '',
        features: ['ask'],
        rateLimit: { perSecond: 1, burst: 2 },
      });
      await store.upsert(replacement);
      expect(await store.get('app1')).toEqual(replacement);
      expect(await store.list()).toEqual([replacement]);
    });

    it('lists every app once', async () => {
      const apps = ['b', 'a', 'c', 'a-2', 'Z'].map((key) => app(key));
      for (const one of apps) await store.upsert(one);
      await store.upsert(app('a', { name: 'again' }));
      const listed = [...(await store.list())].sort(byKey);
      const expected = apps.map((one) => (one.key === 'a' ? app('a', { name: 'again' }) : one)).sort(byKey);
      expect(listed).toEqual(expected);
    });

    it('replaces the secret of one app and nothing else', async () => {
      await store.upsert(app('app1', { webhook: 'https://a.example/hook' }));
      await store.upsert(app('app2'));
      expect(await store.setSecret('app1', 'rotated')).toBe(true);
      expect(await store.get('app1')).toEqual(app('app1', { webhook: 'https://a.example/hook', secret: 'rotated' }));
      expect(await store.get('app2')).toEqual(app('app2'));
      // Setting the same value again still names an existing app.
      expect(await store.setSecret('app1', 'rotated')).toBe(true);
    });

    it('holds a rotation: both secrets, when the old one retires and which signs; a plain setSecret ends it', async () => {
      await store.upsert(app('app1', { webhook: 'https://a.example/hook' }));
      await store.upsert(app('app2'));
      const rotation = { oldSecret: 'secret-of-app1', retiresAt: 1_800_000_000_123, signer: 'old' as const };
      expect(await store.setSecret('app1', 'the new one', rotation)).toBe(true);
      const rotating = app('app1', { webhook: 'https://a.example/hook', secret: 'the new one', rotation });
      expect(await store.get('app1')).toEqual(rotating);
      expect((await store.list()).find((a) => a.key === 'app1')).toEqual(rotating);
      expect(await store.get('app2')).toEqual(app('app2'));
      expect((await store.get('app2'))?.rotation).toBeUndefined();
      // Another webhook leaves the rotation as it is.
      expect(await store.setWebhook('app1', '')).toBe(true);
      expect((await store.get('app1'))?.rotation).toEqual(rotation);
      // The signer changed (the same secret written again with the rotation's new fields).
      const byNew = { ...rotation, signer: 'new' as const };
      expect(await store.setSecret('app1', 'the new one', byNew)).toBe(true);
      expect((await store.get('app1'))?.rotation).toEqual(byNew);
      // Retired: the same secret without a rotation.
      expect(await store.setSecret('app1', 'the new one')).toBe(true);
      const retired = await store.get('app1');
      expect(retired).toEqual(app('app1', { secret: 'the new one' }));
      expect(retired).not.toHaveProperty('rotation');
      expect(await store.setSecret('ghost', 'x', rotation)).toBe(false);
      expect(await store.get('ghost')).toBeUndefined();
    });

    it('writes a secret only while the app still has the one given as ifSecret', async () => {
      await store.upsert(app('app1'));
      const rotation = { oldSecret: 'secret-of-app1', retiresAt: 5, signer: 'new' as const };
      // A read that another write overtook: nothing changes.
      expect(await store.setSecret('app1', 'second', rotation, 'not the secret')).toBe(false);
      expect(await store.get('app1')).toEqual(app('app1'));
      expect(await store.setSecret('app1', 'second', rotation, 'secret-of-app1')).toBe(true);
      expect(await store.get('app1')).toEqual(app('app1', { secret: 'second', rotation }));
      expect(await store.setSecret('app1', 'third', undefined, 'secret-of-app1')).toBe(false);
      expect(await store.setSecret('app1', 'second', undefined, 'second')).toBe(true);
      expect(await store.get('app1')).toEqual(app('app1', { secret: 'second' }));
      expect(await store.setSecret('ghost', 'x', undefined, 'x')).toBe(false);
    });

    it('writes a rotation with the whole app, and an upsert without one ends it', async () => {
      const rotation = { oldSecret: 'before ünïcode 🚀', retiresAt: 1, signer: 'new' as const };
      await store.upsert(app('app1', { rotation }));
      expect(await store.get('app1')).toEqual(app('app1', { rotation }));
      await store.upsert(app('app1'));
      expect(await store.get('app1')).not.toHaveProperty('rotation');
    });

    it('sets and clears the webhook of one app and nothing else', async () => {
      await store.upsert(app('app1'));
      await store.upsert(app('app2', { webhook: 'https://b.example/hook' }));
      expect(await store.setWebhook('app1', 'https://a.example/hook?x=1')).toBe(true);
      expect(await store.get('app1')).toEqual(app('app1', { webhook: 'https://a.example/hook?x=1' }));
      expect(await store.setWebhook('app1', '')).toBe(true);
      expect(await store.get('app1')).toEqual(app('app1'));
      expect((await store.get('app2'))?.webhook).toBe('https://b.example/hook');
    });

    it('answers false for an unknown key and creates nothing', async () => {
      await store.upsert(app('app1'));
      expect(await store.setSecret('ghost', 'x')).toBe(false);
      expect(await store.setWebhook('ghost', 'https://a.example/')).toBe(false);
      expect(await store.setWebhook('ghost', '')).toBe(false);
      expect(await store.get('ghost')).toBeUndefined();
      expect(await store.list()).toEqual([app('app1')]);
    });

    it('removes one app and nothing else; false for a key it does not have', async () => {
      await store.upsert(app('app1', { webhook: 'https://a.example/hook' }));
      await store.upsert(app('app2'));
      expect(await store.remove('app1')).toBe(true);
      expect(await store.get('app1')).toBeUndefined();
      expect(await store.list()).toEqual([app('app2')]);
      expect(await store.remove('app1')).toBe(false);
      expect(await store.remove('ghost')).toBe(false);
      expect(await store.setSecret('app1', 'x')).toBe(false);
      expect(await store.setWebhook('app1', '')).toBe(false);
      expect(await store.list()).toEqual([app('app2')]);
      // The key is free again: an app made with it has only its new fields.
      await store.upsert(app('app1', { name: 'Second life' }));
      expect(await store.get('app1')).toEqual(app('app1', { name: 'Second life' }));
    });

    it('keeps its own copy: changing an object given or returned does not change the store', async () => {
      const written = app('app1');
      await store.upsert(written);
      written.secret = 'changed outside';
      written.features.push('calls');
      written.rateLimit.burst = 1;
      const got = await store.get('app1');
      expect(got).toEqual(app('app1'));
      if (got) {
        got.name = 'changed again';
        got.features.length = 0;
        got.rateLimit.perSecond = 0;
      }
      expect(await store.get('app1')).toEqual(app('app1'));
      const listed = await store.list();
      listed.pop();
      expect(await store.list()).toEqual([app('app1')]);
    });

    it('shows a write through one store to another on the same data at once', async () => {
      const other = harness.other ? await harness.other() : store;
      await store.upsert(app('app1'));
      expect(await other.get('app1')).toEqual(app('app1'));
      expect(await other.setSecret('app1', 'from the CLI')).toBe(true);
      expect((await store.get('app1'))?.secret).toBe('from the CLI');
      const rotation = { oldSecret: 'from the CLI', retiresAt: 1_800_000_000_000, signer: 'new' as const };
      expect(await other.setSecret('app1', 'rotated by the CLI', rotation)).toBe(true);
      expect(await store.get('app1')).toMatchObject({ secret: 'rotated by the CLI', rotation });
      expect(await other.setSecret('app1', 'rotated by the CLI')).toBe(true);
      expect(await store.get('app1')).not.toHaveProperty('rotation');
      expect(await other.setWebhook('app1', 'https://cli.example/hook')).toBe(true);
      expect((await store.get('app1'))?.webhook).toBe('https://cli.example/hook');
      await other.upsert(app('app2', { features: ['ask'] }));
      expect(await store.get('app2')).toEqual(app('app2', { features: ['ask'] }));
      expect([...(await store.list())].sort(byKey).map((a) => a.key)).toEqual(['app1', 'app2']);
      expect(await other.remove('app1')).toBe(true);
      expect(await store.get('app1')).toBeUndefined();
      expect((await store.list()).map((a) => a.key)).toEqual(['app2']);
    });
  });
}
