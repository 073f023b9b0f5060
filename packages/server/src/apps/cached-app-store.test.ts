import { describe, expect, it } from 'vitest';
import { StoreError } from '../engines/store-error.js';
import type { App, AppStore } from '../engines/types.js';
import { CachedAppStore } from './cached-app-store.js';
import { newApp } from './generate.js';

/** An app store answering later, failing with `failure` while set. */
function backing(apps: App[]) {
  const state: { failure: StoreError | undefined; reads: number } = { failure: undefined, reads: 0 };
  const store: AppStore = {
    get: async (key) => {
      state.reads++;
      if (state.failure) throw state.failure;
      return apps.find((app) => app.key === key);
    },
    list: async () => apps,
    upsert: async () => {},
    setSecret: async () => true,
    setWebhook: async () => true,
    remove: async () => true,
    close: () => {},
  };
  return { store, state };
}

describe('CachedAppStore', () => {
  const app = newApp({ name: 'shop' });

  it('reads the store again once an entry is older than its time, not before', async () => {
    let now = 0;
    const { store, state } = backing([app]);
    const cached = new CachedAppStore(store, { ttlMs: 1000, now: () => now, staleMs: 60_000 });
    expect(await cached.get(app.key)).toEqual(app);
    now = 999;
    expect(await cached.get(app.key)).toEqual(app);
    expect(state.reads).toBe(1);
    now = 1000;
    await cached.get(app.key);
    expect(state.reads).toBe(2);
  });

  it('answers an app read before while the store is unavailable, for at most a minute', async () => {
    let now = 0;
    const { store, state } = backing([app]);
    const cached = new CachedAppStore(store, { ttlMs: 1000, now: () => now, staleMs: 60_000 });
    await cached.get(app.key);
    state.failure = new StoreError('unavailable');
    now = 5000;
    expect(await cached.get(app.key)).toEqual(app);
    now = 60_000;
    await expect(cached.get(app.key)).rejects.toThrow(StoreError);
  });

  it('fails at once without staleMs (one Redis, embedded)', async () => {
    let now = 0;
    const { store, state } = backing([app]);
    const cached = new CachedAppStore(store, { ttlMs: 1000, now: () => now });
    await cached.get(app.key);
    state.failure = new StoreError('unavailable');
    now = 1000;
    await expect(cached.get(app.key)).rejects.toThrow(StoreError);
  });

  it('fails a key it never read, and any read when the store fails otherwise than unavailable', async () => {
    let now = 0;
    const { store, state } = backing([app]);
    const cached = new CachedAppStore(store, { ttlMs: 1000, now: () => now, staleMs: 60_000 });
    await cached.get(app.key);
    state.failure = new StoreError('unavailable');
    await expect(cached.get('other')).rejects.toThrow(StoreError);
    state.failure = new StoreError('full');
    now = 2000;
    await expect(cached.get(app.key)).rejects.toThrow(StoreError);
  });

  it('sees a rotation and a retirement written elsewhere within ttlMs; its own writes at once, the rotation passed on', async () => {
    let now = 0;
    const apps = [app];
    const { store } = backing(apps);
    const written: unknown[] = [];
    store.setSecret = async (_key, secret, rotation) => {
      written.push(rotation);
      apps[0] = rotation ? { ...app, secret, rotation } : { ...app, secret };
      return true;
    };
    const cached = new CachedAppStore(store, { ttlMs: 1000, now: () => now });
    expect((await cached.get(app.key))?.rotation).toBeUndefined();
    // Another process (the CLI, another node) rotates with an overlap.
    const rotation = { oldSecret: app.secret, retiresAt: 3_600_000, signer: 'new' as const };
    await store.setSecret(app.key, 'rotated-elsewhere', rotation);
    now = 999;
    expect((await cached.get(app.key))?.rotation).toBeUndefined();
    now = 1000;
    expect(await cached.get(app.key)).toMatchObject({ secret: 'rotated-elsewhere', rotation });
    // Retired through this store: at once, and the store was told no rotation.
    expect(await cached.setSecret(app.key, 'rotated-elsewhere')).toBe(true);
    expect((await cached.get(app.key))?.rotation).toBeUndefined();
    expect(written).toEqual([rotation, undefined]);
  });
});
