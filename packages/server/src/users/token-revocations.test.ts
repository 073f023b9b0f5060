import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryRevocationStore } from '../engines/memory/revocations.js';
import type { AppRevocations, RevocationStore } from '../engines/types.js';
import { covers, issuedAt, REVOCATIONS_STALE_MS, revocationEnd, TokenRevocations } from './token-revocations.js';

const log = pino({ level: 'silent' });
const T = 1_800_000_000; // seconds
const DAY_AND_LEEWAY = 86_400 + 300;

describe('issuedAt', () => {
  it('is iat in ms for a token living at most a day', () => {
    expect(issuedAt({ iat: T, exp: T + 3600 })).toBe(T * 1000);
    expect(issuedAt({ iat: T, exp: T + DAY_AND_LEEWAY })).toBe(T * 1000);
  });

  it('is a day and the leeway before exp without iat, or for a token that claims a longer life', () => {
    expect(issuedAt({ exp: T })).toBe((T - DAY_AND_LEEWAY) * 1000);
    expect(issuedAt({ iat: 'yesterday', exp: T })).toBe((T - DAY_AND_LEEWAY) * 1000);
    expect(issuedAt({ iat: 0, exp: T + 2 * 86_400 })).toBe((T + 2 * 86_400 - DAY_AND_LEEWAY) * 1000);
  });

  it("takes an iat after the token's own exp (milliseconds, or far ahead) as absent, so a revocation covers it", () => {
    expect(issuedAt({ iat: T * 1000, exp: T + 3600 })).toBe((T + 3600 - DAY_AND_LEEWAY) * 1000);
    expect(issuedAt({ iat: T + 365 * 86_400, exp: T + 3600 })).toBe((T + 3600 - DAY_AND_LEEWAY) * 1000);
    // Revoked at T: the token above (exp an hour on) counts as issued before it.
    expect(covers({ app: T * 1000, users: new Map() }, undefined, issuedAt({ iat: T * 1000, exp: T + 3600 }))).toBe(
      true,
    );
  });

  it('a revocation kept until revocationEnd covers every token issued before it that is still valid', () => {
    const before = T * 1000;
    const end = revocationEnd(before);
    // The latest-expiring token that counts as issued before `before` is expired (with leeway) at `end`.
    const exp = (before - 1000) / 1000 + DAY_AND_LEEWAY;
    expect(issuedAt({ exp })).toBeLessThan(before);
    expect(exp * 1000 + 300_000).toBeLessThanOrEqual(end);
  });
});

describe('covers', () => {
  const revocations: AppRevocations = { app: 1000, users: new Map([['ann', 5000]]) };
  it('refuses what was issued strictly before the app-wide or the user time', () => {
    expect(covers(revocations, undefined, 999)).toBe(true);
    expect(covers(revocations, undefined, 1000)).toBe(false);
    expect(covers(revocations, 'ann', 4999)).toBe(true);
    expect(covers(revocations, 'ann', 5000)).toBe(false);
    expect(covers(revocations, 'bob', 4999)).toBe(false);
    expect(covers({ app: undefined, users: new Map() }, 'ann', 0)).toBe(false);
  });
});

/** A store that counts its reads and can hold them until released. */
function countingStore(inner: RevocationStore): RevocationStore & { reads: number } {
  const store = {
    reads: 0,
    revoke: inner.revoke.bind(inner),
    read(app: string, nowMs: number) {
      store.reads++;
      return inner.read(app, nowMs);
    },
  };
  return store;
}

describe('TokenRevocations', () => {
  const claims = (iat: number) => ({ iat, exp: iat + 3600 });

  it('reads an app once, then answers from memory until it is stale', async () => {
    let now = T * 1000;
    const store = countingStore(new MemoryRevocationStore());
    await store.revoke('app', 'ann', now, revocationEnd(now), 10, now);
    const cache = new TokenRevocations({ store, log, now: () => now });
    expect(await cache.revoked('app', 'ann', claims(T - 1))).toBe(true);
    expect(cache.revoked('app', 'ann', claims(T))).toBe(false);
    expect(cache.revoked('app', 'bob', claims(T - 1))).toBe(false);
    expect(store.reads).toBe(1);
    now += REVOCATIONS_STALE_MS;
    expect(await cache.revoked('app', 'bob', claims(T - 1))).toBe(false);
    expect(store.reads).toBe(2);
  });

  it('takes a revocation it is told of at once, without a read', async () => {
    const now = T * 1000;
    const store = countingStore(new MemoryRevocationStore());
    const cache = new TokenRevocations({ store, log, now: () => now });
    expect(await cache.revoked('app', 'ann', claims(T - 1))).toBe(false);
    cache.noted('app', 'ann', now);
    expect(cache.revoked('app', 'ann', claims(T - 1))).toBe(true);
    cache.noted('app', undefined, now);
    expect(cache.revoked('app', 'bob', claims(T - 1))).toBe(true);
    expect(store.reads).toBe(1);
  });

  it('a read under way when a revocation is told of is not cached; forget reads everything again', async () => {
    const now = T * 1000;
    const memory = new MemoryRevocationStore();
    const store = countingStore(memory);
    const cache = new TokenRevocations({ store, log, now: () => now });
    const reading = cache.revoked('app', 'ann', claims(T - 1));
    await memory.revoke('app', 'ann', now, revocationEnd(now), 10, now);
    cache.noted('app', 'ann', now);
    // The read began before the store had it (here: it answers what it read).
    await reading;
    expect(await cache.revoked('app', 'ann', claims(T - 1))).toBe(true);
    const reads = store.reads;
    cache.forget();
    expect(await cache.revoked('app', 'ann', claims(T - 1))).toBe(true);
    expect(store.reads).toBe(reads + 1);
  });

  it('a re-read of a stale entry that began before a revocation does not put the old answer back over it', async () => {
    let now = T * 1000;
    const memory = new MemoryRevocationStore();
    // Once held, a read takes the store's state when it is called and answers when the test says.
    let held: { answer?: () => void } | undefined;
    const store: RevocationStore = {
      revoke: memory.revoke.bind(memory),
      read: (app, nowMs) => {
        const state = memory.read(app, nowMs);
        const gate = held;
        if (gate === undefined) return state;
        return new Promise<AppRevocations>((resolve) => {
          gate.answer = () => resolve(state);
        });
      },
    };
    const cache = new TokenRevocations({ store, log, now: () => now });
    expect(await cache.revoked('app', 'ann', claims(T - 1))).toBe(false);
    now += REVOCATIONS_STALE_MS;
    const gate: { answer?: () => void } = {};
    held = gate;
    const rereading = cache.revoked('app', 'ann', claims(T - 1));
    for (let turns = 0; turns < 100 && gate.answer === undefined; turns++) await Promise.resolve();
    expect(gate.answer, 'the re-read reached the store').toBeDefined();
    // The store read ran before the revocation; the broadcast of it comes before the read's reply.
    memory.revoke('app', 'ann', now, revocationEnd(now), 10, now);
    cache.noted('app', 'ann', now);
    gate.answer?.();
    await rereading;
    held = undefined;
    // Not the old answer cached as fresh (that said false for 30 s): read again, or taken as noted.
    const after = cache.revoked('app', 'ann', claims(T - 1));
    expect(after).not.toBe(false);
    expect(await after).toBe(true);
  });

  it("a revocation told of one app leaves another app's read cached", async () => {
    const now = T * 1000;
    const store = countingStore(new MemoryRevocationStore());
    const cache = new TokenRevocations({ store, log, now: () => now });
    const reading = cache.revoked('b', 'ann', claims(T - 1));
    cache.noted('a', 'ann', now);
    expect(await reading).toBe(false);
    expect(cache.revoked('b', 'ann', claims(T - 1))).toBe(false);
    expect(store.reads).toBe(1);
  });

  it('a failing read rejects (the caller answers unavailable) and is tried again next time', async () => {
    const now = T * 1000;
    let fail = true;
    const store: RevocationStore = {
      revoke: () => 'stored',
      read: () => {
        if (fail) return Promise.reject(new Error('down'));
        return { app: now, users: new Map() };
      },
    };
    const cache = new TokenRevocations({ store, log, now: () => now });
    await expect(cache.revoked('app', undefined, claims(T - 1))).rejects.toThrow('down');
    fail = false;
    expect(await cache.revoked('app', undefined, claims(T - 1))).toBe(true);
  });
});
