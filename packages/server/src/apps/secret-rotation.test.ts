import { describe, expect, it } from 'vitest';
import type { App, AppStore, SecretRotation } from '../engines/types.js';
import { newApp } from './generate.js';
import {
  acceptedSecrets,
  activeRotation,
  MAX_OVERLAP_MS,
  parseOverlap,
  retireSecret,
  rotateSecret,
  rotationView,
  setWebhookSigner,
  webhookSecrets,
} from './secret-rotation.js';

/** Apps in a map, each write recorded. */
function fakeStore(apps: App[]) {
  const byKey = new Map(apps.map((app) => [app.key, structuredClone(app)]));
  const writes: { key: string; secret: string; rotation: SecretRotation | undefined }[] = [];
  const store: AppStore = {
    get: async (key) => structuredClone(byKey.get(key)),
    list: async () => [...byKey.values()],
    upsert: async (app) => {
      byKey.set(app.key, app);
    },
    setSecret: async (key, secret, rotation, ifSecret) => {
      const app = byKey.get(key);
      if (!app || (ifSecret !== undefined && app.secret !== ifSecret)) return false;
      writes.push({ key, secret, rotation });
      const { rotation: _gone, ...rest } = app;
      byKey.set(key, rotation ? { ...rest, secret, rotation } : { ...rest, secret });
      return true;
    },
    setWebhook: async () => true,
    remove: async () => true,
    close: () => {},
  };
  return { store, writes, app: (key: string) => byKey.get(key) };
}

describe('parseOverlap', () => {
  it('reads 0 and whole numbers of s, m, h, d up to 30 days', () => {
    expect(parseOverlap('0')).toBe(0);
    expect(parseOverlap('90s')).toBe(90_000);
    expect(parseOverlap('30m')).toBe(1_800_000);
    expect(parseOverlap('24h')).toBe(86_400_000);
    expect(parseOverlap('30d')).toBe(MAX_OVERLAP_MS);
  });

  it('refuses anything else', () => {
    for (const text of ['', '31d', '721h', '1.5h', '-1h', '24', 'h', '01h', '24H', '1w', ' 1h', '0s']) {
      expect(parseOverlap(text), text).toBeUndefined();
    }
  });
});

describe('an app during and after a rotation', () => {
  const rotating: App = {
    ...newApp({ name: 'shop' }),
    secret: 'new-secret',
    rotation: { oldSecret: 'old-secret', retiresAt: 10_000, signer: 'new' },
  };

  it('accepts both secrets, the current first, until retiresAt; then only the current', () => {
    expect(acceptedSecrets(rotating, 9_999)).toEqual(['new-secret', 'old-secret']);
    expect(acceptedSecrets(rotating, 10_000)).toBe('new-secret');
    expect(activeRotation(rotating, 10_000)).toBeUndefined();
    const plain = newApp({ name: 'plain' });
    expect(acceptedSecrets(plain, 0)).toBe(plain.secret);
  });

  it('signs webhooks with the chosen secret and the other in the second header, one after the window', () => {
    expect(webhookSecrets(rotating, 0)).toEqual({ signing: 'new-secret', other: 'old-secret' });
    const byOld: App = { ...rotating, rotation: { oldSecret: 'old-secret', retiresAt: 10_000, signer: 'old' } };
    expect(webhookSecrets(byOld, 0)).toEqual({ signing: 'old-secret', other: 'new-secret' });
    expect(webhookSecrets(byOld, 10_000)).toEqual({ signing: 'new-secret', other: undefined });
  });

  it('shows the state without a secret', () => {
    expect(rotationView(rotating, 0)).toEqual({ retiresAt: 10_000, signer: 'new' });
    expect(JSON.stringify(rotationView(rotating, 0))).not.toContain('secret');
    expect(rotationView(rotating, 10_000)).toBeUndefined();
  });
});

describe('rotateSecret, retireSecret, setWebhookSigner', () => {
  const app = newApp({ name: 'shop' });

  it('with no overlap replaces the secret at once (and ends any rotation)', async () => {
    const { store, writes } = fakeStore([app]);
    const outcome = await rotateSecret(store, app.key, { overlapMs: 0, signer: 'new', nowMs: 5 });
    if (!outcome.ok) throw new Error(outcome.error);
    expect(outcome.secret).not.toBe(app.secret);
    expect(outcome.rotation).toBeUndefined();
    expect(writes).toEqual([{ key: app.key, secret: outcome.secret, rotation: undefined }]);
  });

  it('with an overlap keeps the old secret until now + overlap; a second one is refused while it holds', async () => {
    const { store, app: stored } = fakeStore([app]);
    const first = await rotateSecret(store, app.key, { overlapMs: 60_000, signer: 'old', nowMs: 1_000 });
    if (!first.ok) throw new Error(first.error);
    expect(first.rotation).toEqual({ retiresAt: 61_000, signer: 'old' });
    expect(stored(app.key)?.rotation).toEqual({ oldSecret: app.secret, retiresAt: 61_000, signer: 'old' });
    expect(stored(app.key)?.secret).toBe(first.secret);

    expect(await rotateSecret(store, app.key, { overlapMs: 60_000, signer: 'new', nowMs: 60_999 })).toEqual({
      ok: false,
      error: 'rotating',
      retiresAt: 61_000,
    });
    expect(stored(app.key)?.secret).toBe(first.secret);
    // Once the window is over, the next rotation keeps the then current secret as its old one.
    const second = await rotateSecret(store, app.key, { overlapMs: 1_000, signer: 'new', nowMs: 61_000 });
    if (!second.ok) throw new Error(second.error);
    expect(stored(app.key)?.rotation).toEqual({ oldSecret: first.secret, retiresAt: 62_000, signer: 'new' });
  });

  it('answers no_app for an unknown key', async () => {
    const { store, writes } = fakeStore([app]);
    expect(await rotateSecret(store, 'ghost', { overlapMs: 0, signer: 'new', nowMs: 0 })).toEqual({
      ok: false,
      error: 'no_app',
    });
    expect(await rotateSecret(store, 'ghost', { overlapMs: 1000, signer: 'new', nowMs: 0 })).toMatchObject({
      error: 'no_app',
    });
    expect(await retireSecret(store, 'ghost', 0)).toEqual({ ok: false, error: 'no_app' });
    expect(await setWebhookSigner(store, 'ghost', 'old', 0)).toEqual({ ok: false, error: 'no_app' });
    expect(writes).toEqual([]);
  });

  it('retires the old secret: the current one stays, the rotation goes; nothing under way is said', async () => {
    const { store, app: stored, writes } = fakeStore([app]);
    expect(await retireSecret(store, app.key, 0)).toEqual({ ok: true, retired: false });
    expect(writes).toEqual([]);
    const rotated = await rotateSecret(store, app.key, { overlapMs: 60_000, signer: 'new', nowMs: 0 });
    if (!rotated.ok) throw new Error(rotated.error);
    expect(await retireSecret(store, app.key, 1)).toEqual({ ok: true, retired: true });
    expect(stored(app.key)).toEqual({ ...app, secret: rotated.secret });
    // A lapsed rotation's record is cleared, and said to be nothing under way.
    await rotateSecret(store, app.key, { overlapMs: 10, signer: 'new', nowMs: 100 });
    expect(await retireSecret(store, app.key, 110)).toEqual({ ok: true, retired: false });
    expect(stored(app.key)?.rotation).toBeUndefined();
  });

  it('switches the webhook signer during a rotation only, keeping both secrets and the window', async () => {
    const { store, app: stored } = fakeStore([app]);
    expect(await setWebhookSigner(store, app.key, 'old', 0)).toEqual({ ok: false, error: 'not_rotating' });
    const rotated = await rotateSecret(store, app.key, { overlapMs: 60_000, signer: 'new', nowMs: 0 });
    if (!rotated.ok) throw new Error(rotated.error);
    expect(await setWebhookSigner(store, app.key, 'old', 10)).toEqual({
      ok: true,
      rotation: { retiresAt: 60_000, signer: 'old' },
    });
    expect(stored(app.key)).toMatchObject({
      secret: rotated.secret,
      rotation: { oldSecret: app.secret, retiresAt: 60_000, signer: 'old' },
    });
    expect(await setWebhookSigner(store, app.key, 'new', 60_000)).toEqual({ ok: false, error: 'not_rotating' });
  });

  it('never undoes a write that overtook its read: it reads again and decides again', async () => {
    const { store, app: stored } = fakeStore([app]);
    const rotated = await rotateSecret(store, app.key, { overlapMs: 60_000, signer: 'new', nowMs: 0 });
    if (!rotated.ok) throw new Error(rotated.error);
    // An emergency rotation (no overlap) lands between the retirement's read and its write.
    const read = store.get.bind(store);
    let reads = 0;
    store.get = async (key) => {
      const found = await read(key);
      if (++reads === 1) await store.setSecret(key, 'emergency-secret');
      return found;
    };
    expect(await retireSecret(store, app.key, 1)).toEqual({ ok: true, retired: false });
    expect(stored(app.key)).toEqual({ ...app, secret: 'emergency-secret' });
    expect(reads).toBe(2);
  });

  it('answers changed when every round is overtaken, having changed nothing itself', async () => {
    const { store, app: stored } = fakeStore([app]);
    const read = store.get.bind(store);
    let n = 0;
    store.get = async (key) => {
      const found = await read(key);
      await store.setSecret(key, `another-${++n}`);
      return found;
    };
    expect(await rotateSecret(store, app.key, { overlapMs: 60_000, signer: 'new', nowMs: 0 })).toEqual({
      ok: false,
      error: 'changed',
    });
    expect(n).toBe(3);
    expect(stored(app.key)).toEqual({ ...app, secret: 'another-3' });
  });
});
