import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { MediaApps } from './media-apps.js';

const log = pino({ level: 'silent' });
const streams = { features: ['rooms', 'streams'] };
const groups = { features: ['groups'] };
const rooms = { features: ['rooms', 'webhooks'] };

describe('whether several apps may use a node’s forwarding units', () => {
  it('counts only apps whose plan has streams or group calls, and reads the store once per 30 s', async () => {
    let now = 0;
    let reads = 0;
    let apps = [streams, rooms, rooms];
    const media = new MediaApps({
      list: async () => {
        reads++;
        return apps;
      },
      now: () => now,
      log,
    });
    expect(await media.several()).toBe(false);
    apps = [streams, groups];
    now = 29_999;
    expect(await media.several()).toBe(false); // the last read still answers
    now = 30_000;
    expect(await Promise.all([media.several(), media.several()])).toEqual([true, true]);
    expect(reads).toBe(2);
  });

  it('a store that does not answer keeps the reserve (or the last answer) and is asked again after the wait', async () => {
    let now = 0;
    let fail = true;
    let reads = 0;
    const media = new MediaApps({
      list: async () => {
        reads++;
        if (fail) throw new Error('store away');
        return [streams];
      },
      now: () => now,
      log,
    });
    expect(await media.several()).toBe(true);
    expect(await media.several()).toBe(true);
    expect(reads).toBe(1);
    fail = false;
    now = 30_000;
    expect(await media.several()).toBe(false);
    fail = true;
    now = 60_000;
    expect(await media.several()).toBe(false);
  });
});
