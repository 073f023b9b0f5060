import { FEATURES, LIMITS } from '@realtime/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { PublishIncomplete } from '../engines/publish-incomplete.js';
import { StoreError } from '../engines/store-error.js';
import type { App, Outgoing, Report } from '../engines/types.js';
import { diagnostics, type EventSent } from './diagnostics.js';
import { EmitIncomplete, Emitter, type PageSend, SendRefused } from './emit.js';
import type { SendEvent } from './events.js';
import type { ValidEvent } from './validate.js';

const app: App = {
  key: 'app1',
  secret: 'secret',
  name: 'app one',
  webhook: 'https://example.test/hook',
  features: [...FEATURES],
  rateLimit: { perSecond: 100, burst: 100 },
};

/** Listeners of the diagnostics channels a test added: removed after it. */
const listening: (() => void)[] = [];
afterEach(() => {
  for (const stop of listening.splice(0)) stop();
});

/**
 * An emitter over a broker that records what it is given and answers ids (later, when `later`);
 * `told` keeps the sends told on the diagnostics channel, when `listening`.
 */
function scene(options: { later?: boolean; listening?: boolean } = {}) {
  const published: Outgoing[][] = [];
  const told: EventSent[] = [];
  const reportsAsked: SendEvent[] = [];
  const reported: unknown[] = [];
  const report: Report = { before: '{"id":"ev_1","event_id":"', after: '"}' };
  if (options.listening) {
    const listener = (message: EventSent) => told.push(message);
    diagnostics.sent.subscribe(listener);
    listening.push(() => diagnostics.sent.unsubscribe(listener));
  }
  const emitter = new Emitter({
    node: 'n1',
    broker: {
      publish: (events) => {
        published.push([...events]);
        const ids = events.map((event, i) => (event.kind !== 'room' ? undefined : `1700000000000-${i + 1}`));
        return options.later ? Promise.resolve(ids) : ids;
      },
      subscribe: () => () => {},
      close: () => {},
    },
    now: () => 1_700_000_000_000,
    events: {
      reportOf: (_app, event) => {
        reportsAsked.push(event);
        return report;
      },
      reported: (_app, event) => reported.push(event),
    },
  });
  return { emitter, published, told, reportsAsked, reported, report };
}

const send = (more: Partial<PageSend> = {}): PageSend => ({
  app,
  room: 'r',
  event: 'said',
  data: { a: 1 },
  from: 'ann',
  origin: 'node.1',
  report: false,
  ...more,
});

describe('Emitter.send: a page send goes the emit path', () => {
  it('publishes one room event from the page, not to it, with the data encoded once; answers its id', () => {
    const { emitter, published, told, reported } = scene();
    expect(emitter.send(send({ keep: [10, 1] }))).toBe('1700000000000-1');
    expect(published).toEqual([
      [
        {
          kind: 'room',
          app: 'app1',
          room: 'r',
          event: 'said',
          data: '{"a":1}',
          origin: 'node.1',
          from: 'ann',
          keep: [10, 1],
        },
      ],
    ]);
    // Nobody listens: nothing is told; no `w` rule matched: nothing is reported.
    expect(told).toEqual([]);
    expect(reported).toEqual([]);
  });

  it('stores the webhook event in the same publish when the token reports the send, and counts it after', async () => {
    const { emitter, published, reportsAsked, reported, report } = scene({ later: true });
    const answer = emitter.send(send({ data: undefined, from: undefined, report: true }));
    expect(answer).toBeInstanceOf(Promise);
    expect(await answer).toBe('1700000000000-1');
    expect(reportsAsked).toEqual([{ type: 'emit', room: 'r', event: 'said', data: null }]);
    expect(published[0]?.[0]).toEqual({
      kind: 'room',
      app: 'app1',
      room: 'r',
      event: 'said',
      data: 'null',
      origin: 'node.1',
      report,
    });
    expect(reported).toEqual([{ type: 'emit', room: 'r', event: 'said', data: null, event_id: '1700000000000-1' }]);
  });

  it('tells a send on the diagnostics channel with its node, app and user, once it went out', async () => {
    const { emitter, told } = scene({ listening: true, later: true });
    const answer = emitter.send(send());
    // Told once the publish answered, not before.
    expect(told).toEqual([]);
    await answer;
    await emitter.send(send({ from: undefined }));
    expect(told).toEqual([
      { node: 'n1', app: 'app1', room: 'r', event: 'said', data: '{"a":1}', from: 'ann' },
      { node: 'n1', app: 'app1', room: 'r', event: 'said', data: '{"a":1}', from: undefined },
    ]);
  });

  it('refuses data nested too deep, data over the limit and a kept send the plan lacks, before publishing', () => {
    const { emitter, published } = scene();
    let nested: unknown = 1;
    for (let i = 0; i < 1_000_000; i++) nested = [nested];
    const refusal = (more: Partial<PageSend>) => {
      try {
        emitter.send(send(more));
      } catch (error) {
        return error instanceof SendRefused ? error.problem : error;
      }
      return undefined;
    };
    expect(refusal({ data: nested })).toBe('nested');
    expect(refusal({ data: 'x'.repeat(LIMITS.dataBytes) })).toBe('too_large');
    // Measured in bytes of UTF-8, as encoded.
    expect(refusal({ data: 'é'.repeat(LIMITS.dataBytes / 2) })).toBe('too_large');
    expect(refusal({ keep: [1, 1], app: { ...app, features: ['presence'] } })).toBe('not_included');
    expect(refusal({ app: { ...app, features: ['presence'] } })).toBeUndefined();
    expect(published).toHaveLength(1);
  });
});

/**
 * An emitter over a sharded broker (a Redis Cluster: a step per room) whose steps to the rooms in
 * `down` fail as many times as given (Infinity: always); every other step takes its events.
 */
function shards(down: Map<string, number>) {
  const published: string[][] = [];
  let next = 0;
  const emitter = new Emitter({
    node: 'n1',
    broker: {
      publish: async (events) => {
        published.push(events.map((event) => (event.kind === 'room' ? event.room : `@${event.kind}`)));
        const failed: number[] = [];
        const ids = events.map((event, i) => {
          const left = event.kind === 'room' ? (down.get(event.room) ?? 0) : 0;
          if (left > 0) {
            failed.push(i);
            return undefined;
          }
          return event.kind === 'room' ? `1700000000000-${next++}` : undefined;
        });
        for (const [room, left] of down) down.set(room, left - 1);
        if (failed.length === 0) return ids;
        if (failed.length === events.length) throw new StoreError('unavailable');
        throw new PublishIncomplete('unavailable', ids, failed);
      },
      subscribe: () => () => {},
      close: () => {},
    },
    now: () => 1_700_000_000_000,
  });
  return { emitter, published };
}

const valid = (rooms: string[], users: string[] = []): ValidEvent => ({
  rooms,
  users,
  event: 'e',
  data: '1',
  history: new Map(rooms.map((room) => [room, [10, 1] as const])),
});

describe('Emitter.emitAll on a sharded store: rooms taken one by one', () => {
  it("publishes the rooms whose shard failed once more, and answers every room's id when that works", async () => {
    const { emitter, published } = shards(new Map([['b', 1]]));
    const answer = await emitter.emitAll('app1', [valid(['a', 'b', 'c'])]);
    expect(published).toEqual([['a', 'b', 'c'], ['b']]);
    expect(answer).toEqual([{ a: '1700000000000-0', b: '1700000000000-2', c: '1700000000000-1' }]);
  });

  it('answers 503 unavailable naming the rooms and users still not reached, after one more try of those only', async () => {
    const { emitter, published } = shards(
      new Map([
        ['b', Number.POSITIVE_INFINITY],
        ['d', Number.POSITIVE_INFINITY],
      ]),
    );
    const failure = await Promise.resolve(emitter.emitAll('app1', [valid(['a', 'b']), valid(['c', 'd'])])).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(EmitIncomplete);
    const error = failure as EmitIncomplete;
    expect(error.code).toBe('unavailable');
    expect(error.message).toBe(
      'the service could not store part of this: not delivered to events[0] room "b", events[1] room "d"; the other rooms and users have it',
    );
    // Rooms a and c took it once; b and d were tried twice, the second time alone.
    expect(published).toEqual([
      ['a', 'b', 'c', 'd'],
      ['b', 'd'],
    ]);
  });

  it('names the rooms of a single emit without an index, and answers as is when no room took it', async () => {
    const one = shards(new Map([['b', Number.POSITIVE_INFINITY]]));
    const partly = await Promise.resolve(one.emitter.emit('app1', valid(['a', 'b'], ['ann']))).catch(
      (error: unknown) => error,
    );
    expect((partly as Error).message).toBe(
      'the service could not store part of this: not delivered to room "b"; the other rooms and users have it',
    );
    const none = shards(new Map([['a', Number.POSITIVE_INFINITY]]));
    const failure = await Promise.resolve(none.emitter.emit('app1', valid(['a']))).catch((error: unknown) => error);
    // Nothing was stored: the plain answer, no second try.
    expect(failure).toBeInstanceOf(StoreError);
    expect(failure).not.toBeInstanceOf(EmitIncomplete);
    expect(none.published).toEqual([['a']]);
  });
});
