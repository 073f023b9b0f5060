import { describe, expect, it } from 'vitest';
import { CheckQueue, type QueueRefusal, type Turn } from './check-queue.js';

/** Lets every settled promise run its callbacks. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** The end of a turn that came; fails the test for a refusal or a place given up. */
async function ended(turn: Promise<Turn> | QueueRefusal): Promise<() => void> {
  if (typeof turn === 'string') throw new Error(`refused ${turn}`);
  const end = await turn;
  if (end === 'full') throw new Error('its place was given up');
  return end;
}

/** Enters every address; records the order turns come in and what ends each. */
function enterAll(queue: CheckQueue, addresses: string[]) {
  const started: string[] = [];
  const given: string[] = [];
  const ends = new Map<string, () => void>();
  for (const address of addresses) {
    const turn = queue.enter(address);
    if (typeof turn === 'string') throw new Error(`${address} refused ${turn}`);
    void turn.then((end) => {
      if (end === 'full') given.push(address);
      else {
        started.push(address);
        ends.set(address, end);
      }
    });
  }
  return { started, given, ends };
}

describe('CheckQueue', () => {
  it('runs at most `running` at once; the others start in arrival order as turns end', async () => {
    const queue = new CheckQueue({ running: 2, waiting: 10 });
    const { started, ends } = enterAll(queue, ['a', 'b', 'c', 'd']);
    await settle();
    expect(started).toEqual(['a', 'b']);
    expect(queue.size).toEqual({ running: 2, waiting: 2 });
    ends.get('b')?.();
    // Ending twice frees one turn only.
    ends.get('b')?.();
    await settle();
    expect(started).toEqual(['a', 'b', 'c']);
    ends.get('a')?.();
    await settle();
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    ends.get('c')?.();
    ends.get('d')?.();
    expect(queue.size).toEqual({ running: 0, waiting: 0 });
  });

  it('holds one place per address: a second is refused `queued` until the first ends', async () => {
    const queue = new CheckQueue({ running: 1, waiting: 10 });
    const first = queue.enter('a');
    expect(queue.enter('a')).toBe('queued');
    const waiting = queue.enter('b');
    expect(typeof waiting).toBe('object');
    expect(queue.enter('b')).toBe('queued');
    (await ended(first))();
    expect(typeof queue.enter('a')).toBe('object');
  });

  it('refuses `full` once every place waits for addresses checked as little, taking nothing', async () => {
    const queue = new CheckQueue({ running: 1, waiting: 2 });
    const first = queue.enter('a');
    enterAll(queue, ['b', 'c']);
    expect(queue.enter('d')).toBe('full');
    expect(queue.enter('e')).toBe('full');
    expect(queue.size).toEqual({ running: 1, waiting: 2 });
    (await ended(first))();
    await settle();
    // b started, a place freed: a newcomer takes it.
    expect(typeof queue.enter('d')).toBe('object');
    expect(queue.enter('e')).toBe('full');
  });

  it('a flood of many addresses delays another by their turns, in order, and never refuses one that found a place', async () => {
    const queue = new CheckQueue({ running: 2, waiting: 64 });
    const order: string[] = [];
    const all: Promise<void>[] = [];
    const take = (address: string) => {
      all.push(
        ended(queue.enter(address)).then(async (end) => {
          order.push(address);
          await settle();
          end();
        }),
      );
    };
    for (let i = 0; i < 30; i++) take(`flood-${i}`);
    take('operator');
    for (let i = 30; i < 60; i++) take(`flood-${i}`);
    await Promise.all(all);
    expect(order.indexOf('operator')).toBe(30);
    expect(order).toHaveLength(61);
  });

  it('an address not checked lately goes before those checked, and takes the place of the one checked most when full', async () => {
    let clock = 0;
    const queue = new CheckQueue({ running: 1, waiting: 3, now: () => clock, memoryMs: 60_000 });
    // Each flooder had checks a moment ago: f1 one, f2 and f3 two.
    for (const [address, times] of [
      ['f1', 1],
      ['f2', 2],
      ['f3', 2],
    ] as const) {
      for (let i = 0; i < times; i++) (await ended(queue.enter(address)))();
    }
    const runner = await ended(queue.enter('r'));
    const flood = enterAll(queue, ['f3', 'f2', 'f1']);
    // Full; the operator, never checked, takes the place of the latest of those checked most (f2).
    const mine = enterAll(queue, ['operator']);
    await settle();
    expect(flood.given).toEqual(['f2']);
    // An address checked as much as the last waiting finds no place.
    expect(queue.enter('f2')).toBe('full');
    runner();
    await settle();
    expect(mine.started).toEqual(['operator']);
    mine.ends.get('operator')?.();
    await settle();
    expect(flood.started).toEqual(['f1']);
    flood.ends.get('f1')?.();
    await settle();
    expect(flood.started).toEqual(['f1', 'f3']);
    flood.ends.get('f3')?.();
    // A minute later their checks no longer count: f2 no longer waits behind a newcomer.
    clock += 60_001;
    const later = await ended(queue.enter('x'));
    const again = enterAll(queue, ['f2', 'z']);
    later();
    await settle();
    expect(again.started).toEqual(['f2']);
  });

  it('a known browser goes ahead of every address not known, and takes the place of the last of them when full', async () => {
    const queue = new CheckQueue({ running: 2, waiting: 64 });
    const order: string[] = [];
    const all: Promise<void>[] = [];
    const refused: string[] = [];
    const take = (address: string, known = false) => {
      const turn = queue.enter(address, known);
      if (typeof turn === 'string') {
        refused.push(address);
        return;
      }
      all.push(
        turn.then(async (end) => {
          if (end === 'full') {
            refused.push(address);
            return;
          }
          order.push(address);
          await settle();
          end();
        }),
      );
    };
    // 600 addresses never seen before, as many as the flood of issue 17: 66 find a place, then a
    // known browser comes from an address never seen either (a new IPv6 address, say).
    for (let i = 0; i < 600; i++) take(`flood-${i}`);
    take('operator', true);
    for (let i = 600; i < 700; i++) take(`flood-${i}`);
    await Promise.all(all);
    expect(order).toContain('operator');
    // Behind the two checks running when it came, no more.
    expect(order.indexOf('operator')).toBe(2);
    expect(refused).not.toContain('operator');
    // 66 places (2 running, 64 waiting): the operator took the last flooder's, which was refused.
    expect(order).toHaveLength(66);
    expect(refused).toHaveLength(700 - 65);
  });

  it('among known browsers, the order is as among the rest: least checked, then arrival', async () => {
    const queue = new CheckQueue({ running: 1, waiting: 4 });
    (await ended(queue.enter('k1', true)))();
    const runner = await ended(queue.enter('r'));
    const { started, ends } = enterAll(queue, ['n1']);
    const known = [queue.enter('k1', true), queue.enter('k2', true)];
    const later: string[] = [];
    for (const [i, turn] of known.entries()) {
      if (typeof turn === 'string') throw new Error(`refused ${turn}`);
      void turn.then((end) => {
        later.push(i === 0 ? 'k1' : 'k2');
        if (end !== 'full') end();
      });
    }
    runner();
    await settle();
    // k2 (never checked) before k1 (checked once), both before n1.
    expect(later).toEqual(['k2', 'k1']);
    expect(started).toEqual(['n1']);
    ends.get('n1')?.();
    expect(queue.size).toEqual({ running: 0, waiting: 0 });
  });

  it('forgets the oldest addresses beyond its bound', async () => {
    const queue = new CheckQueue({ running: 1, waiting: 1, remember: 3 });
    for (const address of ['a', 'b', 'c']) (await ended(queue.enter(address)))();
    const runner = await ended(queue.enter('x'));
    // Four remembered past the bound of three: a, the oldest, is forgotten (counts 0), b is
    // remembered (1): a waiting b gives its place up to a.
    const { given } = enterAll(queue, ['b']);
    enterAll(queue, ['a']);
    await settle();
    expect(given).toEqual(['b']);
    runner();
  });
});
