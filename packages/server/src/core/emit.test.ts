import { FEATURES, LIMITS } from '@realtime/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import type { App, Outgoing, Report } from '../engines/types.js';
import { diagnostics, type EventSent } from './diagnostics.js';
import { Emitter, type PageSend, SendRefused } from './emit.js';
import type { SendEvent } from './events.js';

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
