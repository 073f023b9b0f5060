import { FEATURES } from '@realtime/protocol';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryPresenceStore } from '../engines/memory/presence.js';
import type { App, Broker } from '../engines/types.js';
import { diagnostics, type EventsEmitted } from './diagnostics.js';
import { Emitter } from './emit.js';
import { UserPresence } from './user-presence.js';
import type { ValidEvent } from './validate.js';

const app: App = {
  key: 'app1',
  secret: 'secret',
  name: 'app one',
  webhook: '',
  features: [...FEATURES],
  rateLimit: { perSecond: 100, burst: 100 },
};
const channels = Object.values(diagnostics);

/** A broker that answers an id for each room event, at once or (`later`) on a later turn. */
function broker(later = false): Broker {
  return {
    publish: (events) => {
      const ids = events.map((event, i) => (event.kind === 'room' ? `1700000000000-${i + 1}` : undefined));
      return later ? Promise.resolve(ids) : ids;
    },
    subscribe: () => () => {},
    close: () => {},
  };
}

const event = (more: Partial<ValidEvent> = {}): ValidEvent => ({
  rooms: ['r1', 'r2'],
  users: ['ann'],
  event: 'e',
  data: '{"n":1}',
  history: new Map(),
  ...more,
});

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('the diagnostics channels', () => {
  it('are not published on, and no message is built, while nobody listens', async () => {
    vi.useFakeTimers();
    expect(channels.filter((c) => c.hasSubscribers)).toEqual([]);
    const publishes = channels.map((c) => vi.spyOn(c, 'publish'));
    const emitter = new Emitter({ node: 'n1', broker: broker(), now: Date.now });
    emitter.emitAll('app1', [event(), event({ event: 'f' })]);
    await new Emitter({ node: 'n1', broker: broker(true), now: Date.now }).emit('app1', event());
    emitter.send({ app, room: 'r', event: 's', data: 1, origin: 'n1.1', report: false });
    const users = new UserPresence({
      node: 'n1',
      presence: new MemoryPresenceStore({ offlineDelayMs: 100 }),
      events: { record: async () => {} },
      log: pino({ level: 'silent' }),
      now: Date.now,
      offlineDelayMs: 100,
    });
    users.start();
    await users.opened('app1', 'ann', 'p1');
    await users.closed('app1', 'ann', 'p1');
    await vi.advanceTimersByTimeAsync(200);
    users.close();
    // publish is where a message is built (its argument): never called, nothing built.
    for (const publish of publishes) expect(publish).not.toHaveBeenCalled();
  });

  it('hand a listener the typed message of each emit as its node, once the publish answered', async () => {
    const told: EventsEmitted[] = [];
    const listener = (message: EventsEmitted) => told.push(message);
    diagnostics.emitted.subscribe(listener);
    try {
      const events = [event(), event({ rooms: [], event: 'f' })];
      new Emitter({ node: 'n1', broker: broker(), now: Date.now }).emitAll('app1', events);
      expect(told).toEqual([{ node: 'n1', app: 'app1', events }]);
      // The same events objects: the listener builds what it shows, only when it shows it.
      expect(told[0]?.events).toBe(events);
      const later = new Emitter({ node: 'n2', broker: broker(true), now: Date.now }).emit('app2', event());
      expect(told).toHaveLength(1);
      await later;
      expect(told[1]).toEqual({ node: 'n2', app: 'app2', events: [event()] });
    } finally {
      diagnostics.emitted.unsubscribe(listener);
    }
    expect(diagnostics.emitted.hasSubscribers).toBe(false);
  });
});
