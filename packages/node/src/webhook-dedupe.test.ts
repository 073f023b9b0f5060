import { describe, expect, it } from 'vitest';
import { DEFAULT_DEDUPE_TTL_MS, MemoryDeduplicator } from './webhook-dedupe.js';

const DAY = 24 * 3_600_000;

describe('MemoryDeduplicator', () => {
  it('tells a new id from a repeat', () => {
    const dedupe = new MemoryDeduplicator();
    expect(dedupe.seen('w1')).toBe(false);
    expect(dedupe.seen('w1')).toBe(true);
    expect(dedupe.seen('w1')).toBe(true);
    expect(dedupe.seen('w2')).toBe(false);
    expect(dedupe.size).toBe(2);
  });

  it('keeps ids for 4 days by default: the 3-day resend window plus the 24 hours of retries', () => {
    expect(DEFAULT_DEDUPE_TTL_MS).toBe(4 * DAY);
    let now = 1_700_000_000_000;
    const dedupe = new MemoryDeduplicator({ now: () => now });
    expect(dedupe.seen('w1')).toBe(false);
    now += 4 * DAY - 1;
    expect(dedupe.seen('w1')).toBe(true);
    now += 1;
    expect(dedupe.seen('w1')).toBe(false);
  });

  it('counts the time from when an id was first seen; a repeat does not extend it', () => {
    let now = 0;
    const dedupe = new MemoryDeduplicator({ ttlMs: 1000, now: () => now });
    dedupe.seen('w1');
    now = 900;
    expect(dedupe.seen('w1')).toBe(true);
    now = 1000;
    expect(dedupe.seen('w1')).toBe(false);
    // Seen anew at 1000: kept until 2000.
    now = 1999;
    expect(dedupe.seen('w1')).toBe(true);
  });

  it('drops expired ids as new ones come, without timers', () => {
    let now = 0;
    const dedupe = new MemoryDeduplicator({ ttlMs: 1000, now: () => now });
    for (let i = 0; i < 50; i++) dedupe.seen(`old-${i}`);
    now = 500;
    for (let i = 0; i < 10; i++) dedupe.seen(`mid-${i}`);
    expect(dedupe.size).toBe(60);
    now = 1200;
    dedupe.seen('new');
    expect(dedupe.size).toBe(11); // the 50 old ones are gone, the 10 from t=500 stay
    expect(dedupe.seen('mid-3')).toBe(true);
    expect(dedupe.seen('old-3')).toBe(false);
  });

  it('keeps at most maxIds, dropping the oldest first', () => {
    const dedupe = new MemoryDeduplicator({ maxIds: 3 });
    for (const id of ['a', 'b', 'c', 'd']) expect(dedupe.seen(id)).toBe(false);
    expect(dedupe.size).toBe(3);
    expect(dedupe.seen('d')).toBe(true);
    expect(dedupe.seen('b')).toBe(true);
    expect(dedupe.seen('a')).toBe(false); // dropped when 'd' came
  });

  it('forget makes an id new again', () => {
    const dedupe = new MemoryDeduplicator();
    dedupe.seen('w1');
    dedupe.forget('w1');
    dedupe.forget('never-seen');
    expect(dedupe.seen('w1')).toBe(false);
    expect(dedupe.seen('w1')).toBe(true);
  });

  it('refuses bad options', () => {
    expect(() => new MemoryDeduplicator({ ttlMs: 0 })).toThrow(TypeError);
    expect(() => new MemoryDeduplicator({ ttlMs: Number.NaN })).toThrow(TypeError);
    expect(() => new MemoryDeduplicator({ maxIds: 0 })).toThrow(TypeError);
    expect(() => new MemoryDeduplicator({ maxIds: 1.5 })).toThrow(TypeError);
    expect(() => new MemoryDeduplicator({ now: 5 as never })).toThrow(TypeError);
  });
});
