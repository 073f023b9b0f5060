/**
 * The Broker contract as one test suite, run by every implementation's runner file.
 *
 * Written for brokers that deliver later (Redis: from a subscriber loop) as well as inline ones:
 * - a subscription may take effect some time after `subscribe` returns, so `listen` publishes
 *   probe publications until one comes back before a test relies on the subscription;
 * - deliveries are awaited with `waitFor`, which polls with a bounded deadline; no test sleeps
 *   and then asserts;
 * - "nothing arrived" is checked after a later publication on the same path did arrive.
 *
 * @example
 * ```ts
 * brokerContract('MemoryBroker', async () => {
 *   const broker = new MemoryBroker();
 *   return { broker, cleanup: async () => broker.close() };
 * });
 * ```
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Broker, type Publication, type PublicationHandler, topicOf } from '../types.js';

export interface BrokerHarness {
  broker: Broker;
  /**
   * A second broker on the same backend, as in another process. Publications through either reach
   * subscribers of both. Brokers that are one process only (memory) leave it out; the tests then
   * use `broker` for both sides.
   */
  peer?: Broker;
  /** Closes both brokers and whatever they opened. */
  cleanup(): Promise<void>;
}

/** Event name of the probes `listen` sends; `$` names are never emitted by apps. */
const PROBE = '$contract.probe';
const DEADLINE_MS = 5000;

/** Polls until `done` holds; fails naming `what` after the deadline. Never an assertion on time. */
export async function waitFor(what: string, done: () => boolean, deadlineMs = DEADLINE_MS): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (!done()) {
    if (Date.now() > until) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

type Target = { room: string; user?: undefined } | { user: string; room?: undefined };

let probeNumber = 0;

/** What a handler received, probes counted apart. */
class Inbox {
  readonly received: Publication[] = [];
  /** How many times each probe (by its data) came back. */
  readonly probes = new Map<string, number>();
  readonly handler: PublicationHandler = (publication) => {
    if (publication.event === PROBE) this.probes.set(publication.data, (this.probes.get(publication.data) ?? 0) + 1);
    else this.received.push(publication);
  };

  get events(): string[] {
    return this.received.map((p) => p.event);
  }

  async waitForCount(count: number, what = 'publications'): Promise<void> {
    await waitFor(`${count} ${what} (have ${this.received.length})`, () => this.received.length >= count);
  }
}

export function brokerContract(name: string, makeBroker: () => Promise<BrokerHarness>): void {
  describe(`Broker contract: ${name}`, () => {
    let harness: BrokerHarness;
    /** Where the tests subscribe. */
    let broker: Broker;
    /** Where the tests publish: the peer when there is one, so publications cross processes. */
    let publisher: Broker;

    beforeEach(async () => {
      harness = await makeBroker();
      broker = harness.broker;
      publisher = harness.peer ?? harness.broker;
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    /**
     * Returns once the inbox's handler is known to be live on the target's topic: a probe published
     * through `via` came back `copies` times (once per subscription of that handler).
     */
    async function bringLive(app: string, target: Target, inbox: Inbox, copies = 1, via = publisher): Promise<void> {
      const sent: string[] = [];
      const live = () => sent.some((data) => (inbox.probes.get(data) ?? 0) >= copies);
      const until = Date.now() + DEADLINE_MS;
      while (!live()) {
        if (Date.now() > until) throw new Error(`the subscription to ${topicOf(app, target)} never came live`);
        const data = JSON.stringify(`probe-${++probeNumber}`);
        sent.push(data);
        await via.publish({ app, ...target, event: PROBE, data });
        // Give an asynchronous broker up to ~50 ms to bring the probe back before sending another.
        for (let i = 0; i < 25 && !live(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
      }
    }

    /** Subscribes an inbox to the target's topic on `on` and returns once the subscription is live. */
    async function listen(
      app: string,
      target: Target,
      options: { on?: Broker; via?: Broker; inbox?: Inbox; copies?: number } = {},
    ): Promise<{ inbox: Inbox; stop: () => void }> {
      const inbox = options.inbox ?? new Inbox();
      const stop = (options.on ?? broker).subscribe(topicOf(app, target), inbox.handler);
      await bringLive(app, target, inbox, options.copies, options.via);
      return { inbox, stop };
    }

    it('delivers a room publication with every field intact', async () => {
      const { inbox } = await listen('app1', { room: 'lobby' });
      const publication: Publication = {
        app: 'app1',
        room: 'lobby',
        event: 'chat.message',
        data: '{ "text" : "héllo 😀 \\u00e9 \u2028",\n "n": [1, 2.50, null] }',
        id: '1700000000000-3',
        from: 'user ü',
      };
      await publisher.publish(publication);
      await inbox.waitForCount(1);
      expect(inbox.received).toEqual([publication]);
      const [got] = inbox.received;
      expect(got?.data === publication.data).toBe(true);
    });

    it('delivers a user publication, leaving out what was not set', async () => {
      const { inbox } = await listen('app1', { user: 'u-42' });
      await publisher.publish({ app: 'app1', user: 'u-42', event: 'notice', data: '"hi"' });
      await inbox.waitForCount(1);
      expect(inbox.received).toEqual([{ app: 'app1', user: 'u-42', event: 'notice', data: '"hi"' }]);
      const [got] = inbox.received;
      expect(got?.room).toBeUndefined();
      expect(got?.id).toBeUndefined();
      expect(got?.from).toBeUndefined();
    });

    it("delivers to the publishing broker's own subscribers", async () => {
      const { inbox } = await listen('app1', { room: 'lobby' }, { on: broker, via: broker });
      await broker.publish({ app: 'app1', room: 'lobby', event: 'local', data: '1' });
      await inbox.waitForCount(1);
      expect(inbox.events).toEqual(['local']);
    });

    it('keeps topics apart across apps, rooms and users', async () => {
      const targets: Array<[string, Target]> = [
        ['app1', { room: 'lobby' }],
        ['app1', { room: 'Lobby' }],
        ['app1', { room: 'lobby2' }],
        ['app1', { room: 'lob' }],
        ['app1', { room: 'x:y' }],
        ['app1', { room: 'ünï 🚀' }],
        ['app2', { room: 'lobby' }],
        ['app1', { user: 'lobby' }],
        ['app2', { user: 'lobby' }],
        ['app1', { user: 'x:y' }],
      ];
      const inboxes: Inbox[] = [];
      for (const [app, target] of targets) inboxes.push((await listen(app, target)).inbox);
      // Also to topics nobody listens to.
      await publisher.publish({ app: 'app3', room: 'lobby', event: 'unheard', data: '0' });
      await publisher.publish({ app: 'app1', room: 'x', event: 'unheard', data: '0' });
      for (const [i, [app, target]] of targets.entries()) {
        await publisher.publish({ app, ...target, event: `own-${i}`, data: String(i) });
      }
      // A second round: each inbox has its two once every publication on its own path arrived.
      for (const [i, [app, target]] of targets.entries()) {
        await publisher.publish({ app, ...target, event: `end-${i}`, data: String(i) });
      }
      for (const inbox of inboxes) await inbox.waitForCount(2);
      for (const [i, [app, target]] of targets.entries()) {
        const inbox = inboxes[i];
        expect(inbox?.events).toEqual([`own-${i}`, `end-${i}`]);
        for (const got of inbox?.received ?? []) {
          expect(got.app).toBe(app);
          expect(got.room).toBe(target.room);
          expect(got.user).toBe(target.user);
        }
      }
    });

    it('keeps the order of one publisher, per room and per user', async () => {
      const room = await listen('app1', { room: 'lobby' });
      const user = await listen('app1', { user: 'ann' });
      const count = 300;
      for (let i = 0; i < count; i++) {
        await publisher.publish({ app: 'app1', room: 'lobby', event: 'n', data: String(i) });
        if (i % 3 === 0) await publisher.publish({ app: 'app1', user: 'ann', event: 'n', data: String(i) });
      }
      await room.inbox.waitForCount(count);
      await user.inbox.waitForCount(count / 3);
      expect(room.inbox.received.map((p) => p.data)).toEqual(Array.from({ length: count }, (_, i) => String(i)));
      expect(user.inbox.received.map((p) => p.data)).toEqual(
        Array.from({ length: count / 3 }, (_, i) => String(i * 3)),
      );
    });

    it('keeps the order of publications sent without waiting for each other', async () => {
      const { inbox } = await listen('app1', { room: 'lobby' });
      const count = 200;
      const sent: Array<Promise<void> | void> = [];
      for (let i = 0; i < count; i++)
        sent.push(publisher.publish({ app: 'app1', room: 'lobby', event: 'n', data: String(i) }));
      await Promise.all(sent);
      await inbox.waitForCount(count);
      expect(inbox.received.map((p) => p.data)).toEqual(Array.from({ length: count }, (_, i) => String(i)));
    });

    it('gives each of several subscribers every publication once', async () => {
      const subscribers = [
        await listen('app1', { room: 'lobby' }, { on: broker }),
        await listen('app1', { room: 'lobby' }, { on: broker }),
        await listen('app1', { room: 'lobby' }, { on: publisher }),
        await listen('app1', { room: 'lobby' }, { on: publisher }),
      ];
      for (let i = 0; i < 5; i++) await publisher.publish({ app: 'app1', room: 'lobby', event: `e${i}`, data: '{}' });
      await broker.publish({ app: 'app1', room: 'lobby', event: 'e5', data: '{}' });
      for (const { inbox } of subscribers) await inbox.waitForCount(6);
      for (const { inbox } of subscribers) expect(inbox.events).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5']);
    });

    it('stops delivering to a subscription once it is stopped', async () => {
      const first = await listen('app1', { room: 'lobby' });
      const second = await listen('app1', { room: 'lobby' });
      await publisher.publish({ app: 'app1', room: 'lobby', event: 'both', data: '1' });
      await first.inbox.waitForCount(1);
      await second.inbox.waitForCount(1);
      first.stop();
      await publisher.publish({ app: 'app1', room: 'lobby', event: 'second only', data: '2' });
      await second.inbox.waitForCount(2);
      expect(first.inbox.events).toEqual(['both']);
      expect(second.inbox.events).toEqual(['both', 'second only']);
      // With the last subscription stopped, a new one on the same topic still works.
      second.stop();
      const third = await listen('app1', { room: 'lobby' });
      await publisher.publish({ app: 'app1', room: 'lobby', event: 'third only', data: '3' });
      await third.inbox.waitForCount(1);
      expect(third.inbox.events).toEqual(['third only']);
      expect(first.inbox.events).toEqual(['both']);
      expect(second.inbox.events).toEqual(['both', 'second only']);
    });

    it('ends only its own subscription, even for the same handler, and may be called twice', async () => {
      const shared = new Inbox();
      const first = await listen('app1', { room: 'lobby' }, { inbox: shared });
      const second = await listen('app1', { room: 'lobby' }, { inbox: shared, copies: 2 });
      const witness = await listen('app1', { room: 'lobby' });
      // Two subscriptions: the handler hears each publication twice.
      await publisher.publish({ app: 'app1', room: 'lobby', event: 'a', data: '1' });
      await witness.inbox.waitForCount(1);
      await shared.waitForCount(2);
      first.stop();
      first.stop();
      await publisher.publish({ app: 'app1', room: 'lobby', event: 'b', data: '2' });
      await witness.inbox.waitForCount(2);
      await shared.waitForCount(3);
      // A stale stop, called after the same handler subscribed again, leaves the new subscription be.
      second.stop();
      const third = await listen('app1', { room: 'lobby' }, { inbox: shared, copies: 1 });
      first.stop();
      second.stop();
      await publisher.publish({ app: 'app1', room: 'lobby', event: 'c', data: '3' });
      await witness.inbox.waitForCount(3);
      await shared.waitForCount(4);
      expect(shared.events).toEqual(['a', 'a', 'b', 'c']);
      third.stop();
      await publisher.publish({ app: 'app1', room: 'lobby', event: 'd', data: '4' });
      await witness.inbox.waitForCount(4);
      expect(shared.events).toEqual(['a', 'a', 'b', 'c']);
    });

    it('lets a handler stop its own subscription while handling', async () => {
      const witness = await listen('app1', { room: 'lobby' });
      const probes = new Inbox();
      const once: Publication[] = [];
      let stop: () => void = () => {};
      stop = broker.subscribe(topicOf('app1', { room: 'lobby' }), (publication) => {
        if (publication.event === PROBE) return probes.handler(publication);
        once.push(publication);
        stop();
      });
      await bringLive('app1', { room: 'lobby' }, probes);
      for (const event of ['x', 'y', 'z']) await publisher.publish({ app: 'app1', room: 'lobby', event, data: '0' });
      await witness.inbox.waitForCount(3);
      expect(witness.inbox.events).toEqual(['x', 'y', 'z']);
      expect(once.map((p) => p.event)).toEqual(['x']);
    });

    it('does not replay publications sent before a subscription', async () => {
      await publisher.publish({ app: 'app1', room: 'lobby', event: 'too early', data: '0' });
      const { inbox } = await listen('app1', { room: 'lobby' });
      await publisher.publish({ app: 'app1', room: 'lobby', event: 'in time', data: '1' });
      await inbox.waitForCount(1);
      expect(inbox.events).toEqual(['in time']);
    });
  });
}
