import { describe, expect, it } from 'vitest';
import { MemoryFanout } from '../engines/memory/fanout.js';
import type { Broker } from '../engines/types.js';
import { Hub, type Page } from './hub.js';

/** A broker over one memory fan-out, publishing at once. */
function memoryBroker(): Broker {
  const fanout = new MemoryFanout();
  return {
    publish: (events) => {
      for (const event of events) if (event.kind !== 'room') fanout.publish(event);
      return events.map(() => undefined);
    },
    subscribe: (topic, handler) => fanout.subscribe(topic, handler),
    close: () => {},
  };
}

function page(id: string, closes?: [number, string][]): Page {
  return {
    id,
    replayLimit: 1024,
    deliver: () => {},
    slow: () => {},
    ...(closes === undefined ? {} : { close: (code: number, reason: string) => closes.push([code, reason]) }),
  };
}

describe('a user close through the hub', () => {
  it("closes every page of the user here with the close's code and reason; other users' pages stay", async () => {
    const broker = memoryBroker();
    const hub = new Hub(broker);
    const [ann1, ann2, bob]: [number, string][][] = [[], [], []];
    await hub.addUserPage('app', 'ann', page('p1', ann1));
    await hub.addUserPage('app', 'ann', page('p2', ann2));
    // A page that cannot be closed (no close) is left as it is.
    await hub.addUserPage('app', 'ann', page('p3'));
    await hub.addUserPage('app', 'bob', page('p4', bob));
    await broker.publish([{ kind: 'user.close', app: 'app', user: 'ann', code: 4004, reason: 'bye' }], 0);
    expect([ann1, ann2, bob]).toEqual([[[4004, 'bye']], [[4004, 'bye']], []]);
  });
});
