import { describe, expect, it } from 'vitest';
import { Lanes } from './lanes.js';

/** A step the test ends by hand, recording when it starts. */
function gate(log: string[], name: string): { step: () => Promise<string>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    step: async () => {
      log.push(`start ${name}`);
      await opened;
      log.push(`end ${name}`);
      return name;
    },
    open: () => open(),
  };
}

describe('lanes', () => {
  it('runs the steps of one key one after another, and of other keys alongside', async () => {
    const lanes = new Lanes();
    const log: string[] = [];
    const a1 = gate(log, 'a1');
    const a2 = gate(log, 'a2');
    const b1 = gate(log, 'b1');
    const first = lanes.run('a', a1.step);
    const second = lanes.run('a', a2.step);
    const other = lanes.run('b', b1.step);
    await Promise.resolve();
    await Promise.resolve();
    expect(log).toEqual(['start a1', 'start b1']);
    a2.open(); // a2 may not start before a1 ends, opened or not
    await Promise.resolve();
    expect(log).toEqual(['start a1', 'start b1']);
    a1.open();
    b1.open();
    expect(await Promise.all([first, second, other])).toEqual(['a1', 'a2', 'b1']);
    expect(log.indexOf('end a1')).toBeLessThan(log.indexOf('start a2'));
    expect(lanes.size).toBe(0);
  });

  it('a burst of steps of one kind runs twice: the one running and one for all that waited', async () => {
    const lanes = new Lanes();
    const log: string[] = [];
    const running = gate(log, 'r0');
    const runs: Promise<string | undefined>[] = [lanes.run('page', running.step, 'restart')];
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['start r0']);
    let made = 0;
    const next = async () => {
      made++;
      return `r${made}`;
    };
    for (let i = 0; i < 30; i++) runs.push(lanes.run('page', next, 'restart'));
    running.open();
    const results = await Promise.all(runs);
    expect(made).toBe(1);
    expect(results.filter((r) => r !== undefined)).toEqual(['r0', 'r1']);
    expect(lanes.size).toBe(0);
  });

  it('a step asked for before the waiting one started joins it', async () => {
    const lanes = new Lanes();
    let made = 0;
    const step = async () => ++made;
    const runs = [lanes.run('page', step, 'restart'), lanes.run('page', step, 'restart')];
    expect(await Promise.all(runs)).toEqual([1, undefined]);
  });

  it('a step of another kind between two bursts keeps them apart; a failed step does not stop the lane', async () => {
    const lanes = new Lanes();
    const order: string[] = [];
    const step =
      (name: string, fail = false) =>
      async () => {
        order.push(name);
        if (fail) throw new Error(name);
        return name;
      };
    const runs = [
      lanes.run('page', step('open', true), 'open').catch((error: Error) => `failed ${error.message}`),
      lanes.run('page', step('restart 1'), 'restart'),
      lanes.run('page', step('close')),
      lanes.run('page', step('restart 2'), 'restart'),
      lanes.run('page', step('restart 3'), 'restart'),
    ];
    expect(await Promise.all(runs)).toEqual(['failed open', 'restart 1', 'close', 'restart 2', undefined]);
    expect(order).toEqual(['open', 'restart 1', 'close', 'restart 2']);
  });

  it('idle settles once every lane is empty, steps queued meanwhile included', async () => {
    const lanes = new Lanes();
    const log: string[] = [];
    const a = gate(log, 'a');
    const b = gate(log, 'b');
    void lanes.run('x', a.step);
    let idle = false;
    const waiting = lanes.idle().then(() => {
      idle = true;
    });
    // A step on another lane, asked for while idle() waits.
    void lanes.run('y', b.step);
    a.open();
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['start a', 'start b', 'end a']);
    expect(idle).toBe(false);
    b.open();
    await waiting;
    expect(lanes.size).toBe(0);
    expect(await lanes.idle()).toBeUndefined();
  });
});
