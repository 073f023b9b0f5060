import { describe, expect, it } from 'vitest';
import { CheckQueue } from './check-queue.js';

/** Lets every settled promise run its callbacks. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('CheckQueue', () => {
  it('runs at most `running` at once; the others start in arrival order as turns end', async () => {
    const queue = new CheckQueue({ running: 2, waiting: 10 });
    const started: string[] = [];
    const ends = new Map<string, () => void>();
    for (const address of ['a', 'b', 'c', 'd']) {
      const turn = queue.enter(address);
      if (typeof turn === 'string') throw new Error(`refused ${turn}`);
      void turn.then((end) => {
        started.push(address);
        ends.set(address, end);
      });
    }
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
    if (typeof first === 'string') throw new Error('refused');
    expect(queue.enter('a')).toBe('queued');
    const waiting = queue.enter('b');
    if (typeof waiting === 'string') throw new Error('refused');
    expect(queue.enter('b')).toBe('queued');
    (await first)();
    expect(typeof queue.enter('a')).toBe('object');
  });

  it('refuses `full` once every place waits, taking nothing; a place that frees takes a newcomer', async () => {
    const queue = new CheckQueue({ running: 1, waiting: 2 });
    const turns = ['a', 'b', 'c'].map((address) => queue.enter(address));
    expect(turns.every((turn) => typeof turn === 'object')).toBe(true);
    expect(queue.enter('d')).toBe('full');
    expect(queue.enter('e')).toBe('full');
    expect(queue.size).toEqual({ running: 1, waiting: 2 });
    (await (turns[0] as Promise<() => void>))();
    const late = queue.enter('d');
    expect(typeof late).toBe('object');
    expect(queue.enter('e')).toBe('full');
  });

  it('a flood of many addresses delays another by their turns, in order, and never refuses one that found a place', async () => {
    const queue = new CheckQueue({ running: 2, waiting: 64 });
    const order: string[] = [];
    const all: Promise<void>[] = [];
    const take = (address: string) => {
      const turn = queue.enter(address);
      if (typeof turn === 'string') throw new Error(`${address} refused ${turn}`);
      all.push(
        turn.then(async (end) => {
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
});
