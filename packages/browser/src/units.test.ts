import { describe, expect, it } from 'vitest';
import { compareEventIds, isNewerEventId } from './event-id.js';
import { Members } from './members.js';
import { Outbox } from './outbox.js';
import { socketUrl } from './url.js';

describe('event ids', () => {
  it('compare as <ms>-<seq> numbers, whatever their length', () => {
    expect(compareEventIds('1-0', '1-1')).toBeLessThan(0);
    expect(compareEventIds('2-0', '1-99')).toBeGreaterThan(0);
    expect(compareEventIds('10-0', '9-0')).toBeGreaterThan(0);
    expect(compareEventIds('010-0', '10-0')).toBe(0);
    expect(compareEventIds('99999999999999999999-1', '99999999999999999999-0')).toBeGreaterThan(0);
    expect(compareEventIds('x', '1-0')).toBeUndefined();
  });

  it('a new id is one after the last seen; an unknown shape is new unless equal', () => {
    expect(isNewerEventId('1-0', undefined)).toBe(true);
    expect(isNewerEventId('1-1', '1-0')).toBe(true);
    expect(isNewerEventId('1-0', '1-0')).toBe(false);
    expect(isNewerEventId('0-9', '1-0')).toBe(false);
    expect(isNewerEventId('abc', '1-0')).toBe(true);
    expect(isNewerEventId('abc', 'abc')).toBe(false);
  });
});

describe('socket URL', () => {
  it('maps http(s) to ws(s), keeps a base path and encodes the site key', () => {
    expect(socketUrl('https://rt.example.com', 'app1')).toBe('wss://rt.example.com/service/realtime/socket?site=app1');
    expect(socketUrl('http://localhost:8080/', 'a b&c')).toBe(
      'ws://localhost:8080/service/realtime/socket?site=a%20b%26c',
    );
    expect(socketUrl('wss://x.test/prefix/?q=1#h', 'k')).toBe('wss://x.test/prefix/service/realtime/socket?site=k');
    expect(() => socketUrl('mailto:a@b', 'k')).toThrow(TypeError);
    expect(() => socketUrl('not a url', 'k')).toThrow(TypeError);
  });
});

describe('outbox', () => {
  it('takes one room’s entries in order and frees their room', () => {
    const outbox = new Outbox<{ room: string; bytes: number; n: number }>({ maxFrames: 3, maxBytes: 100 });
    expect(outbox.push({ room: 'a', bytes: 10, n: 1 })).toBe(true);
    expect(outbox.push({ room: 'b', bytes: 10, n: 2 })).toBe(true);
    expect(outbox.push({ room: 'a', bytes: 10, n: 3 })).toBe(true);
    expect(outbox.push({ room: 'a', bytes: 10, n: 4 })).toBe(false);
    expect(outbox.take('a').map((e) => e.n)).toEqual([1, 3]);
    expect([outbox.size, outbox.bytes]).toEqual([1, 10]);
    expect(outbox.push({ room: 'c', bytes: 91, n: 5 })).toBe(false);
    expect(outbox.push({ room: 'c', bytes: 90, n: 6 })).toBe(true);
  });
});

describe('members', () => {
  it('replace() reports who came and who went', () => {
    const members = new Members();
    members.replace([{ user: 'a' }, { user: 'b' }]);
    const change = members.replace([{ user: 'b', info: { x: 1 } }, { user: 'c' }, { bad: true }]);
    expect(change).toEqual({ joined: [{ user: 'c' }], left: [{ user: 'a' }] });
    expect(members.list()).toEqual([{ user: 'b', info: { x: 1 } }, { user: 'c' }]);
  });
});
