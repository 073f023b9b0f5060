import { describe, expect, it } from 'vitest';
import { type Component, startAll } from './component.js';

/** Fake components that write what happens to them into one shared record. */
function fakes(record: string[], names: string[], fail: { start?: string; stop?: string[] } = {}): Component[] {
  return names.map((name) => ({
    name,
    start: async () => {
      record.push(`start ${name}`);
      if (fail.start === name) throw new Error(`${name} could not start`);
    },
    stop: async () => {
      record.push(`stop ${name}`);
      if (fail.stop?.includes(name)) throw new Error(`${name} could not stop`);
    },
  }));
}

describe('startAll', () => {
  it('starts the components in order and stops them in reverse, once however often stop is called', async () => {
    const record: string[] = [];
    const started = await startAll(fakes(record, ['a', 'b', 'c']));
    expect(record).toEqual(['start a', 'start b', 'start c']);
    await Promise.all([started.stop(), started.stop()]);
    await started.stop();
    expect(record).toEqual(['start a', 'start b', 'start c', 'stop c', 'stop b', 'stop a']);
  });

  it('waits for each start and stop before the next one', async () => {
    const record: string[] = [];
    const slow = (name: string): Component => ({
      name,
      start: async () => {
        await new Promise((resolve) => setImmediate(resolve));
        record.push(`started ${name}`);
      },
      stop: async () => {
        await new Promise((resolve) => setImmediate(resolve));
        record.push(`stopped ${name}`);
      },
    });
    const started = await startAll([slow('a'), slow('b')]);
    await started.stop();
    expect(record).toEqual(['started a', 'started b', 'stopped b', 'stopped a']);
  });

  it('takes components whose start and stop answer at once', async () => {
    const record: string[] = [];
    const started = await startAll([
      { name: 'a', start: () => void record.push('start a'), stop: () => void record.push('stop a') },
    ]);
    await started.stop();
    expect(record).toEqual(['start a', 'stop a']);
  });

  it('when a start fails, stops those started in reverse (not the failed one, nor later ones) and rethrows its error', async () => {
    const record: string[] = [];
    const failed = startAll(fakes(record, ['a', 'b', 'c', 'd'], { start: 'c' }));
    await expect(failed).rejects.toThrow('c could not start');
    expect(record).toEqual(['start a', 'start b', 'start c', 'stop b', 'stop a']);
  });

  it('rethrows the start error itself, not a copy', async () => {
    const error = new Error('port taken');
    const failing: Component = {
      name: 'listen',
      start: () => {
        throw error;
      },
      stop: () => {},
    };
    const caught = await startAll([failing]).catch((thrown: unknown) => thrown);
    expect(caught).toBe(error);
  });

  it('a stop that fails while unwinding neither hides the start error nor stops the unwinding', async () => {
    const record: string[] = [];
    const reported: [string, string][] = [];
    const failed = startAll(fakes(record, ['a', 'b', 'c'], { start: 'c', stop: ['b'] }), (name, error) =>
      reported.push([name, (error as Error).message]),
    );
    await expect(failed).rejects.toThrow('c could not start');
    expect(record).toEqual(['start a', 'start b', 'start c', 'stop b', 'stop a']);
    expect(reported).toEqual([['b', 'b could not stop']]);
  });

  it('a stop that fails on close is reported, the others still stop, and stop rejects with the first failure', async () => {
    const record: string[] = [];
    const reported: string[] = [];
    const started = await startAll(fakes(record, ['a', 'b', 'c'], { stop: ['c', 'b'] }), (name) => reported.push(name));
    await expect(started.stop()).rejects.toThrow('c could not stop');
    expect(record.slice(3)).toEqual(['stop c', 'stop b', 'stop a']);
    expect(reported).toEqual(['c', 'b']);
  });

  it('with nothing to start, starts and stops nothing', async () => {
    const started = await startAll([]);
    await expect(started.stop()).resolves.toBeUndefined();
  });
});
