/**
 * The Broker contract as one test suite, run by every engine's runner file.
 *
 * Written for brokers that deliver later (Redis: from a subscriber connection) as well as inline ones:
 * - `subscribe` answers once the subscription is in effect, so a test publishes right after it;
 * - deliveries are awaited with `waitFor`, which polls with a bounded deadline; no test sleeps
 *   and then asserts;
 * - "nothing arrived" is checked after a later publication on the same path did arrive.
 *
 * Times are given by hand (`nowMs` from a fixed T0), so ids' milliseconds are known.
 *
 * @example
 * ```ts
 * brokerContract('embedded engine', async () => {
 *   const engine = openEmbeddedEngine({ dataDir, log });
 *   return { broker: engine.broker, history: engine.history, webhooks: engine.webhooks, cleanup: () => engine.close() };
 * });
 * ```
 */
import type { HistoryRule } from '@realtime/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compareEventIds, type EventId, parseEventId } from '../event-id.js';
import {
  BROADCAST_TOPIC,
  type Broker,
  type HistoryStore,
  nodeTopic,
  type Outgoing,
  type Publication,
  type PublicationHandler,
  type RoomEvent,
  roomTopic,
  topicOf,
  type Unsubscribe,
  type UserEvent,
  userTopic,
  type WebhookStore,
} from '../types.js';

export interface BrokerHarness {
  /** A broker on an empty backend. */
  broker: Broker;
  /**
   * A second broker on the same backend, as in another node. Publications through either reach
   * subscribers of both, and both order the same rooms. Engines of one process leave it out; the
   * tests then use `broker` for both sides.
   */
  peer?: Broker;
  /** The history of the same engine: what the brokers keep is read here. */
  history: HistoryStore;
  /** The webhook queue of the same engine, where reports go; left out, reports are not checked. */
  webhooks?: WebhookStore;
  /** Closes both brokers and whatever they opened, and removes the data. */
  cleanup(): Promise<void>;
}

const DEADLINE_MS = 5000;
/** An arbitrary fixed "now"; ids issued at it start with it. */
const T0 = 1_700_000_000_000;
/** A rule that keeps everything the tests publish. */
const KEEP_ALL: HistoryRule = [1000, 168];

/** Polls until `done` holds; fails naming `what` after the deadline. Never an assertion on time. */
export async function waitFor(what: string, done: () => boolean, deadlineMs = DEADLINE_MS): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (!done()) {
    if (Date.now() > until) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

type Target = { room: string; user?: undefined } | { user: string; room?: undefined };

/** The topic of a room or a user. */
const topicFor = (app: string, target: Target): string =>
  target.room !== undefined ? roomTopic(app, target.room) : userTopic(app, target.user);

/** An event to a room or a user, by its target. */
const eventTo = (app: string, target: Target, event: string, data: string): Outgoing =>
  target.room !== undefined
    ? { kind: 'room', app, room: target.room, event, data }
    : { kind: 'user', app, user: target.user, event, data };

/** A publication every test but those of the service's own messages expects: a room or user event. */
function asEvent(publication: Publication): RoomEvent | UserEvent {
  if (publication.kind !== 'room' && publication.kind !== 'user') throw new Error(`not an event: ${publication.kind}`);
  return publication;
}

/** A room event's id (undefined for every other publication). */
const idOf = (publication: Publication): string | undefined =>
  publication.kind === 'room' ? publication.id : undefined;

function parsed(id: string | undefined): EventId {
  const value = parseEventId(id ?? '');
  if (!value) throw new Error(`not an event id: ${JSON.stringify(id)}`);
  return value;
}

/** Fails unless each id is strictly greater than the one before it. */
function expectRising(ids: readonly (string | undefined)[], where: string): void {
  for (let i = 1; i < ids.length; i++) {
    if (compareEventIds(parsed(ids[i - 1]), parsed(ids[i])) >= 0) {
      throw new Error(`ids do not rise ${where} at ${i}: ${ids[i - 1]} then ${ids[i]}`);
    }
  }
}

/** What one subscription received. */
class Inbox {
  readonly received: Publication[] = [];
  readonly handler: PublicationHandler = (publication) => {
    this.received.push(publication);
  };

  get events(): string[] {
    return this.received.map((p) => asEvent(p).event);
  }

  get data(): string[] {
    return this.received.map((p) => asEvent(p).data);
  }

  get ids(): (string | undefined)[] {
    return this.received.map(idOf);
  }

  /** The first publication received; fails when none arrived. */
  get first(): Publication {
    const [first] = this.received;
    if (!first) throw new Error('nothing arrived');
    return first;
  }

  async waitForCount(count: number, what = 'publications'): Promise<void> {
    await waitFor(`${count} ${what} (have ${this.received.length})`, () => this.received.length >= count);
  }
}

/** Data that says who sent it and its place in that sender's sequence. */
const tagged = (sender: string, n: number) => JSON.stringify({ sender, n });
const tagOf = (publication: Publication) => JSON.parse(asEvent(publication).data) as { sender: string; n: number };

export function brokerContract(name: string, makeBroker: () => Promise<BrokerHarness>): void {
  describe(`Broker contract: ${name}`, () => {
    let harness: BrokerHarness;
    /** Where the tests subscribe. */
    let broker: Broker;
    /** Where the tests publish: the peer when there is one, so publications cross nodes. */
    let publisher: Broker;

    beforeEach(async () => {
      harness = await makeBroker();
      broker = harness.broker;
      publisher = harness.peer ?? harness.broker;
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    /** Subscribes an inbox to the target's topic on `on`; in effect once this answers. */
    async function listen(
      app: string,
      target: Target,
      options: { on?: Broker; inbox?: Inbox } = {},
    ): Promise<{ inbox: Inbox; stop: Unsubscribe }> {
      const inbox = options.inbox ?? new Inbox();
      const stop = await (options.on ?? broker).subscribe(topicFor(app, target), inbox.handler);
      return { inbox, stop };
    }

    /** Publishes the events at T0 (or `nowMs`) and answers their ids. */
    async function publish(via: Broker, events: Outgoing[], nowMs = T0): Promise<(string | undefined)[]> {
      const ids = await via.publish(events, nowMs);
      expect(ids).toHaveLength(events.length);
      return ids;
    }

    describe('publications', () => {
      it('delivers a room event with every field intact and the id the broker gave it', async () => {
        const { inbox } = await listen('app1', { room: 'lobby' });
        const sent: RoomEvent = {
          kind: 'room',
          app: 'app1',
          room: 'lobby',
          event: 'chat.message',
          data: '{ "text" : "héllo 😀 \\u00e9 \u2028",\n "n": [1, 2.50, null] }',
          from: 'user ü',
          origin: 'page-7:node ü',
        };
        const [id] = await publish(publisher, [sent]);
        // A fresh room's first id is issued at the given time.
        expect(parsed(id).ms).toBe(T0);
        await inbox.waitForCount(1);
        expect(inbox.received).toEqual([{ ...sent, id }]);
        const [got] = inbox.received;
        expect(Object.keys(got ?? {}).sort()).toEqual(['app', 'data', 'event', 'from', 'id', 'kind', 'origin', 'room']);
        expect(got && asEvent(got).data === sent.data).toBe(true);
      });

      it('delivers a user event without an id, leaving out what was not set', async () => {
        const { inbox } = await listen('app1', { user: 'u-42' });
        expect(
          await publish(publisher, [{ kind: 'user', app: 'app1', user: 'u-42', event: 'notice', data: '"hi"' }]),
        ).toEqual([undefined]);
        await inbox.waitForCount(1);
        expect(inbox.received).toEqual([{ kind: 'user', app: 'app1', user: 'u-42', event: 'notice', data: '"hi"' }]);
        expect(Object.keys(inbox.received[0] ?? {}).sort()).toEqual(['app', 'data', 'event', 'kind', 'user']);
      });

      it('delivers a presence change without an id, keeping nothing', async () => {
        const { inbox } = await listen('app1', { room: 'lobby' });
        const change: Outgoing = {
          kind: 'room',
          app: 'app1',
          room: 'lobby',
          event: '$member.joined',
          data: '{"user":"ann"}',
          presence: true,
        };
        expect(await publish(publisher, [change])).toEqual([undefined]);
        await inbox.waitForCount(1);
        expect(inbox.received).toEqual([
          { kind: 'room', app: 'app1', room: 'lobby', event: '$member.joined', data: '{"user":"ann"}' },
        ]);
        expect(Object.keys(inbox.received[0] ?? {}).sort()).toEqual(['app', 'data', 'event', 'kind', 'room']);
        expect((await harness.history.last('app1', 'lobby', 10, T0)).events).toEqual([]);
      });

      it('delivers the data of an event given as bytes too', async () => {
        const { inbox } = await listen('app1', { room: 'lobby' });
        const data = JSON.stringify({ big: 'ü'.repeat(5000) });
        await publish(publisher, [
          {
            kind: 'room',
            app: 'app1',
            room: 'lobby',
            event: 'big',
            data,
            dataBytes: Buffer.from(data, 'utf8'),
            keep: KEEP_ALL,
          },
        ]);
        await inbox.waitForCount(1);
        const got = asEvent(inbox.first);
        expect(got.data).toBe(data);
        // The bytes may travel or be left to the receiver; when they arrive they are the data's.
        if (got.dataBytes !== undefined) expect(got.dataBytes.equals(Buffer.from(data, 'utf8'))).toBe(true);
        expect((await harness.history.last('app1', 'lobby', 1, T0)).events.map((e) => e.data)).toEqual([data]);
      });

      it("delivers to the publishing broker's own subscribers", async () => {
        const { inbox } = await listen('app1', { room: 'lobby' }, { on: broker });
        await publish(broker, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'local', data: '1' }]);
        const user = await listen('app1', { user: 'ann' }, { on: broker });
        await publish(broker, [{ kind: 'user', app: 'app1', user: 'ann', event: 'local', data: '2' }]);
        await inbox.waitForCount(1);
        await user.inbox.waitForCount(1);
        expect(inbox.events).toEqual(['local']);
        expect(user.inbox.data).toEqual(['2']);
      });

      it('keeps topics apart across apps, rooms and users', async () => {
        const targets: Array<[string, Target]> = [
          ['app1', { room: 'lobby' }],
          ['app1', { room: 'Lobby' }],
          ['app1', { room: 'lobby2' }],
          ['app1', { room: 'lob' }],
          ['app1', { room: 'x:y' }],
          ['app1', { room: 'x' }],
          ['app1', { room: 'ünï 🚀' }],
          ['app1', { room: 'a b\n{}*?[]' }],
          ['app2', { room: 'lobby' }],
          ['app1', { user: 'lobby' }],
          ['app2', { user: 'lobby' }],
          ['app1', { user: 'x:y' }],
          ['app1', { user: 'y' }],
        ];
        const inboxes: Inbox[] = [];
        for (const [app, target] of targets) inboxes.push((await listen(app, target)).inbox);
        // Also to topics nobody listens to.
        await publish(publisher, [{ kind: 'room', app: 'app3', room: 'lobby', event: 'unheard', data: '0' }]);
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'x:y:z', event: 'unheard', data: '0' }]);
        await publish(publisher, [{ kind: 'user', app: 'app1', user: 'x', event: 'unheard', data: '0' }]);
        for (const [i, [app, target]] of targets.entries()) {
          await publish(publisher, [eventTo(app, target, `own-${i}`, String(i))]);
        }
        // A second round: each inbox has its two once every publication on its own path arrived.
        for (const [i, [app, target]] of targets.entries()) {
          await publish(publisher, [eventTo(app, target, `end-${i}`, String(i))]);
        }
        for (const inbox of inboxes) await inbox.waitForCount(2);
        for (const [i, [app, target]] of targets.entries()) {
          const inbox = inboxes[i];
          expect(inbox?.events).toEqual([`own-${i}`, `end-${i}`]);
          for (const got of inbox?.received ?? []) {
            const event = asEvent(got);
            expect(event.app).toBe(app);
            expect(event.kind === 'room' ? event.room : undefined).toBe(target.room);
            expect(event.kind === 'user' ? event.user : undefined).toBe(target.user);
          }
        }
      });

      it('carries each kind of publication to its topic intact, with only the fields that were set', async () => {
        const user = await listen('app1', { user: 'ann ü' });
        const node = new Inbox();
        await broker.subscribe(nodeTopic('node ü:1'), node.handler);
        // Bodies as the service sends them: JSON text with newlines and characters to escape.
        const json = '{ "text" : "héllo 😀 \\u00e9 \u2028",\n "n": [1, 2.50, null] }';
        const toUser: Publication[] = [
          { kind: 'user', app: 'app1', user: 'ann ü', event: 'notice', data: json },
          { kind: 'user.frame', app: 'app1', user: 'ann ü', frame: '{"t":"call.ring","call":"c\\n1"}' },
          { kind: 'user.frame', app: 'app1', user: 'ann ü', frame: '{"t":"x"}', except: 'page-1:node ü' },
          {
            kind: 'ask',
            app: 'app1',
            user: 'ann ü',
            ask: 'node ü:1.a',
            replyTo: 'node ü:1',
            event: 'pick',
            data: json,
          },
        ];
        const app = 'app1';
        const toNode: Publication[] = [
          { kind: 'node', node: 'node ü:1', app, message: { type: 'page.frame', page: 'p-1', frame: '{"t":"x"}' } },
          { kind: 'node', node: 'node ü:1', app, message: { type: 'service', service: 'streams', data: json } },
          { kind: 'node', node: 'node ü:1', app, message: { type: 'ask.reply', ask: 'node ü:1.a', data: json } },
          { kind: 'node', node: 'node ü:1', app, message: { type: 'ask.reply', ask: 'b', data: 'null' } },
          { kind: 'node', node: 'node ü:1', app, message: { type: 'ask.decline', ask: 'node ü:1.a' } },
          { kind: 'node', node: 'node ü:1', app, message: { type: 'console.entry', entry: json } },
        ];
        expect(await publish(publisher, [...toUser, ...toNode])).toEqual([...toUser, ...toNode].map(() => undefined));
        await user.inbox.waitForCount(toUser.length);
        await node.waitForCount(toNode.length);
        // toEqual leaves out undefined fields: the keys show nothing more came than was sent.
        expect(user.inbox.received).toEqual(toUser);
        expect(user.inbox.received.map((p) => Object.keys(p).sort())).toEqual(toUser.map((p) => Object.keys(p).sort()));
        expect(node.received).toEqual(toNode);
        expect(node.received.map((p) => p.kind === 'node' && Object.keys(p.message).sort())).toEqual(
          toNode.map((p) => p.kind === 'node' && Object.keys(p.message).sort()),
        );
      });

      it('delivers a broadcast to its subscribers on every broker, apart from rooms, users and nodes', async () => {
        const subscribe = async (on: Broker, topic: string) => {
          const inbox = new Inbox();
          await on.subscribe(topic, inbox.handler);
          return inbox;
        };
        const here = await subscribe(broker, BROADCAST_TOPIC);
        const there = await subscribe(publisher, BROADCAST_TOPIC);
        const others = [
          await subscribe(broker, roomTopic('app1', BROADCAST_TOPIC)),
          await subscribe(broker, userTopic('app1', BROADCAST_TOPIC)),
          await subscribe(broker, nodeTopic(BROADCAST_TOPIC)),
        ];
        const sent: Publication[] = [
          { kind: 'broadcast', message: { type: 'console.watch', announcement: '{"node":"n1",\n"apps":{}}' } },
          { kind: 'broadcast', message: { type: 'console.app_gone', app: 'app ü' } },
        ];
        expect(await publish(publisher, sent)).toEqual([undefined, undefined]);
        await here.waitForCount(2);
        await there.waitForCount(2);
        expect(here.received).toEqual(sent);
        expect(there.received).toEqual(sent);
        // Nothing reached the other topics once a later publication on each of their paths did.
        const ends: Outgoing[] = [
          { kind: 'room', app: 'app1', room: BROADCAST_TOPIC, event: 'end', data: '0' },
          { kind: 'user', app: 'app1', user: BROADCAST_TOPIC, event: 'end', data: '0' },
          { kind: 'node', node: BROADCAST_TOPIC, app: 'app1', message: { type: 'ask.decline', ask: 'end' } },
        ];
        await publish(publisher, ends);
        for (const inbox of others) await inbox.waitForCount(1);
        expect(others.map((inbox) => inbox.received.map((p) => p.kind))).toEqual([['room'], ['user'], ['node']]);
        expect(here.received).toHaveLength(2);
      });

      it('gives each publication the topic of its kind', () => {
        const cases: Array<[Outgoing, string]> = [
          [{ kind: 'room', app: 'a', room: 'r', event: 'e', data: '1', presence: true }, roomTopic('a', 'r')],
          [{ kind: 'user', app: 'a', user: 'u', event: 'e', data: '1' }, userTopic('a', 'u')],
          [{ kind: 'user.frame', app: 'a', user: 'u', frame: '{}' }, userTopic('a', 'u')],
          [{ kind: 'ask', app: 'a', user: 'u', ask: 'q', replyTo: 'n', event: 'e', data: '1' }, userTopic('a', 'u')],
          [{ kind: 'node', node: 'n', app: 'a', message: { type: 'ask.decline', ask: 'q' } }, nodeTopic('n')],
          [{ kind: 'broadcast', message: { type: 'console.app_gone', app: 'a' } }, BROADCAST_TOPIC],
        ];
        for (const [publication, topic] of cases) expect(topicOf(publication)).toBe(topic);
        expect(new Set([roomTopic('a', 'x'), userTopic('a', 'x'), nodeTopic('x'), BROADCAST_TOPIC]).size).toBe(4);
      });

      it('keeps rooms apart in their ids: each room counts from the given time', async () => {
        const [a1] = await publish(publisher, [{ kind: 'room', app: 'app1', room: 'a', event: 'e', data: '1' }], T0);
        const [a2] = await publish(publisher, [{ kind: 'room', app: 'app1', room: 'a', event: 'e', data: '2' }], T0);
        const [b1] = await publish(
          publisher,
          [{ kind: 'room', app: 'app1', room: 'b', event: 'e', data: '3' }],
          T0 + 5,
        );
        const [c1] = await publish(publisher, [{ kind: 'room', app: 'app2', room: 'a', event: 'e', data: '4' }], T0);
        expectRising([a1, a2], 'in room a');
        expect(parsed(a1).ms).toBe(T0);
        expect(parsed(a2).ms).toBe(T0);
        expect(parsed(b1).ms).toBe(T0 + 5);
        expect(parsed(c1).ms).toBe(T0);
        // A later time is a later id; a clock that steps back never makes one smaller.
        const [a3] = await publish(
          publisher,
          [{ kind: 'room', app: 'app1', room: 'a', event: 'e', data: '5' }],
          T0 + 1000,
        );
        const [a4] = await publish(
          publisher,
          [{ kind: 'room', app: 'app1', room: 'a', event: 'e', data: '6' }],
          T0 - 1000,
        );
        expect(parsed(a3).ms).toBe(T0 + 1000);
        expectRising([a1, a2, a3, a4], 'in room a');
      });

      it('answers once the subscription is in effect: a publication right after it arrives', async () => {
        for (let i = 0; i < 20; i++) {
          const on = i % 2 === 0 ? broker : publisher;
          const via = i % 3 === 0 ? broker : publisher;
          const room = await listen('app1', { room: `fresh-${i}` }, { on });
          await publish(via, [{ kind: 'room', app: 'app1', room: `fresh-${i}`, event: 'first', data: String(i) }]);
          const user = await listen('app1', { user: `fresh-${i}` }, { on });
          await publish(via, [{ kind: 'user', app: 'app1', user: `fresh-${i}`, event: 'first', data: String(i) }]);
          await room.inbox.waitForCount(1);
          await user.inbox.waitForCount(1);
          expect(room.inbox.data).toEqual([String(i)]);
          expect(user.inbox.data).toEqual([String(i)]);
        }
        // Many at once, each in effect when its call answers.
        const many = await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            listen('app1', { room: `many-${i}` }, { on: i % 2 ? broker : publisher }),
          ),
        );
        await publish(
          publisher,
          many.map((_, i) => ({ kind: 'room', app: 'app1', room: `many-${i}`, event: 'first', data: String(i) })),
        );
        for (const [i, { inbox }] of many.entries()) {
          await inbox.waitForCount(1);
          expect(inbox.data).toEqual([String(i)]);
        }
      });

      it('does not replay publications sent before a subscription', async () => {
        await publish(publisher, [
          { kind: 'room', app: 'app1', room: 'lobby', event: 'too early', data: '0', keep: KEEP_ALL },
        ]);
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'too early', data: '1' }]);
        await publish(publisher, [{ kind: 'user', app: 'app1', user: 'ann', event: 'too early', data: '2' }]);
        const room = await listen('app1', { room: 'lobby' });
        const user = await listen('app1', { user: 'ann' });
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'in time', data: '3' }]);
        await publish(publisher, [{ kind: 'user', app: 'app1', user: 'ann', event: 'in time', data: '4' }]);
        await room.inbox.waitForCount(1);
        await user.inbox.waitForCount(1);
        expect(room.inbox.events).toEqual(['in time']);
        expect(user.inbox.events).toEqual(['in time']);
      });
    });

    describe('order', () => {
      it('keeps the order of one publisher, per room and per user, with ids rising in the room', async () => {
        const room = await listen('app1', { room: 'lobby' });
        const user = await listen('app1', { user: 'ann' });
        const count = 300;
        const answered: (string | undefined)[] = [];
        for (let i = 0; i < count; i++) {
          // Kept, unkept and presence changes (no id) in one stream.
          const kind = i % 5 === 2 ? { presence: true as const } : i % 4 === 0 ? { keep: KEEP_ALL } : {};
          answered.push(
            ...(await publish(publisher, [
              { kind: 'room', app: 'app1', room: 'lobby', event: 'n', data: String(i), ...kind },
            ])),
          );
          if (i % 3 === 0)
            await publish(publisher, [{ kind: 'user', app: 'app1', user: 'ann', event: 'n', data: String(i) }]);
        }
        await room.inbox.waitForCount(count);
        await user.inbox.waitForCount(count / 3);
        expect(room.inbox.data).toEqual(Array.from({ length: count }, (_, i) => String(i)));
        expect(room.inbox.ids).toEqual(answered);
        expect(answered.map((id, i) => (id === undefined) === (i % 5 === 2))).not.toContain(false);
        expectRising(
          room.inbox.ids.filter((id) => id !== undefined),
          'in the room',
        );
        expect(user.inbox.data).toEqual(Array.from({ length: count / 3 }, (_, i) => String(i * 3)));
        expect(user.inbox.ids.every((id) => id === undefined)).toBe(true);
      });

      it('keeps the order of publications sent without waiting for each other', async () => {
        const { inbox } = await listen('app1', { room: 'lobby' });
        const user = await listen('app1', { user: 'ann' });
        const count = 200;
        const sent: Array<Promise<(string | undefined)[]>> = [];
        for (let i = 0; i < count; i++) {
          const keep = i % 3 === 1 ? { keep: KEEP_ALL } : {};
          sent.push(
            Promise.resolve(
              publisher.publish(
                [{ kind: 'room', app: 'app1', room: 'lobby', event: 'n', data: String(i), ...keep }],
                T0,
              ),
            ),
          );
          sent.push(
            Promise.resolve(
              publisher.publish([{ kind: 'user', app: 'app1', user: 'ann', event: 'n', data: String(i) }], T0),
            ),
          );
        }
        const answered = (await Promise.all(sent)).filter((_, i) => i % 2 === 0).map(([id]) => id);
        await inbox.waitForCount(count);
        await user.inbox.waitForCount(count);
        expect(inbox.data).toEqual(Array.from({ length: count }, (_, i) => String(i)));
        expect(inbox.ids).toEqual(answered);
        expectRising(inbox.ids, 'in the room');
        expect(user.inbox.data).toEqual(Array.from({ length: count }, (_, i) => String(i)));
      });

      for (const mode of ['none kept', 'all kept', 'kept and unkept mixed'] as const) {
        const keepOf = (n: number): { keep?: HistoryRule } =>
          mode === 'all kept' || (mode === 'kept and unkept mixed' && n % 3 !== 0) ? { keep: KEEP_ALL } : {};

        it(`gives ids rising at every subscriber while two publishers publish to one room (${mode})`, async () => {
          const subscribers = [
            await listen('app1', { room: 'lobby' }, { on: broker }),
            await listen('app1', { room: 'lobby' }, { on: publisher }),
          ];
          const count = 150;
          const answered = new Map<string, string | undefined>();
          // Two publishers, each awaiting its own publications, running at once.
          const run = async (via: Broker, sender: string) => {
            for (let n = 0; n < count; n++) {
              const [id] = await publish(via, [
                { kind: 'room', app: 'app1', room: 'lobby', event: sender, data: tagged(sender, n), ...keepOf(n) },
              ]);
              answered.set(tagged(sender, n), id);
            }
          };
          await Promise.all([run(broker, 'a'), run(publisher, 'b')]);
          for (const { inbox } of subscribers) {
            await inbox.waitForCount(2 * count);
            expect(inbox.received).toHaveLength(2 * count);
            expectRising(inbox.ids, 'at a subscriber');
            for (const sender of ['a', 'b']) {
              const own = inbox.received.filter((p) => tagOf(p).sender === sender).map((p) => tagOf(p).n);
              expect(own).toEqual(Array.from({ length: count }, (_, n) => n));
            }
            for (const p of inbox.received) expect(idOf(p)).toBe(answered.get(asEvent(p).data));
          }
          // The room's history holds exactly the kept ones, in the same id order.
          const kept = subscribers[0]?.inbox.received.filter((p) => keepOf(tagOf(p).n).keep !== undefined) ?? [];
          const history = await harness.history.last('app1', 'lobby', 1000, T0);
          expect(history.events.map((e) => e.id)).toEqual(kept.map(idOf));
          expect(history.events.map((e) => e.data)).toEqual(kept.map((p) => asEvent(p).data));
        });

        it(`gives ids rising at every subscriber under many concurrent publish calls (${mode})`, async () => {
          const subscribers = [
            await listen('app1', { room: 'lobby' }, { on: broker }),
            await listen('app1', { room: 'lobby' }, { on: publisher }),
            await listen('app1', { room: 'lobby' }, { on: publisher }),
          ];
          const count = 100;
          const calls: Array<Promise<(string | undefined)[]>> = [];
          for (let n = 0; n < count; n++) {
            for (const [sender, via] of [
              ['a', broker],
              ['b', publisher],
            ] as const) {
              const event: Outgoing = {
                kind: 'room',
                app: 'app1',
                room: 'lobby',
                event: sender,
                data: tagged(sender, n),
                ...keepOf(n),
              };
              calls.push(Promise.resolve(via.publish([event], T0 + Math.floor(n / 10))));
            }
          }
          const answered = (await Promise.all(calls)).map(([id]) => id);
          expect(new Set(answered).size).toBe(2 * count);
          for (const { inbox } of subscribers) {
            await inbox.waitForCount(2 * count);
            expect(inbox.received).toHaveLength(2 * count);
            expectRising(inbox.ids, 'at a subscriber');
            expect(new Set(inbox.data).size).toBe(2 * count);
            expect(new Set(inbox.ids)).toEqual(new Set(answered));
          }
          const ids = subscribers[0]?.inbox.ids ?? [];
          for (const { inbox } of subscribers) expect(inbox.ids).toEqual(ids);
          const kept = subscribers[0]?.inbox.received.filter((p) => keepOf(tagOf(p).n).keep !== undefined) ?? [];
          const history = await harness.history.last('app1', 'lobby', 1000, T0 + count);
          expect(history.events.map((e) => e.id)).toEqual(kept.map(idOf));
        });
      }

      it('gives each of several subscribers every publication once', async () => {
        const subscribers = [
          await listen('app1', { room: 'lobby' }, { on: broker }),
          await listen('app1', { room: 'lobby' }, { on: broker }),
          await listen('app1', { room: 'lobby' }, { on: publisher }),
          await listen('app1', { room: 'lobby' }, { on: publisher }),
        ];
        for (let i = 0; i < 5; i++)
          await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: `e${i}`, data: '{}' }]);
        await publish(broker, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'e5', data: '{}', keep: KEEP_ALL }]);
        for (const { inbox } of subscribers) await inbox.waitForCount(6);
        const ids = subscribers[0]?.inbox.ids;
        for (const { inbox } of subscribers) {
          expect(inbox.events).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5']);
          expect(inbox.ids).toEqual(ids);
        }
        // One more through each: still once each, nothing doubled behind.
        await publish(broker, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'e6', data: '{}' }]);
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'e7', data: '{}' }]);
        for (const { inbox } of subscribers) await inbox.waitForCount(8);
        for (const { inbox } of subscribers)
          expect(inbox.events).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7']);
      });
    });

    describe('stored before published', () => {
      it('has a kept event in the history as soon as it arrives', async () => {
        const reads: Array<Promise<{ id: string; since: string[]; last: string[] }>> = [];
        let previous: string | undefined;
        const stop = await broker.subscribe(roomTopic('app1', 'lobby'), (publication) => {
          const after = previous;
          if (publication.kind !== 'room') return;
          previous = publication.id;
          if (publication.event !== 'kept' || after === undefined || publication.id === undefined) return;
          const id = publication.id;
          // Read at once, from inside the handler.
          const since = harness.history.since('app1', 'lobby', after, T0);
          const last = harness.history.last('app1', 'lobby', 1000, T0);
          reads.push(
            (async () => ({
              id,
              since: (await since).events.map((e) => e.id),
              last: (await last).events.map((e) => e.id),
            }))(),
          );
        });
        const witness = await listen('app1', { room: 'lobby' });
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'start', data: '0' }]);
        // One at a time, then many at once, kept and unkept mixed.
        for (let i = 0; i < 10; i++) {
          await publish(publisher, [
            { kind: 'room', app: 'app1', room: 'lobby', event: 'kept', data: String(i), keep: KEEP_ALL },
          ]);
          await publish(broker, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'unkept', data: String(i) }]);
        }
        const calls: Array<Promise<(string | undefined)[]> | (string | undefined)[]> = [];
        for (let i = 0; i < 40; i++) {
          const via = i % 2 ? broker : publisher;
          calls.push(
            via.publish(
              [{ kind: 'room', app: 'app1', room: 'lobby', event: 'kept', data: `k${i}`, keep: KEEP_ALL }],
              T0,
            ),
          );
          if (i % 3 === 0)
            calls.push(via.publish([{ kind: 'room', app: 'app1', room: 'lobby', event: 'unkept', data: `u${i}` }], T0));
        }
        await Promise.all(calls);
        const total = 1 + 20 + 40 + 14;
        await witness.inbox.waitForCount(total);
        await waitFor(`${50} reads started`, () => reads.length >= 50);
        await stop();
        const done = await Promise.all(reads);
        expect(done).toHaveLength(50);
        for (const read of done) {
          expect(read.since).toContain(read.id);
          expect(read.last).toContain(read.id);
        }
      });

      it('publishes a batch in order: ids answered in order, the kept ones readable', async () => {
        const a = await listen('app1', { room: 'a' });
        const b = await listen('app1', { room: 'b' });
        const ann = await listen('app1', { user: 'ann' });
        const events: Outgoing[] = [
          { kind: 'room', app: 'app1', room: 'a', event: 'a1', data: '1', keep: KEEP_ALL, from: 'ann' },
          { kind: 'room', app: 'app1', room: 'a', event: 'a2', data: '2' },
          { kind: 'user', app: 'app1', user: 'ann', event: 'u1', data: '3' },
          { kind: 'room', app: 'app1', room: 'b', event: 'b1', data: '4', keep: KEEP_ALL },
          { kind: 'room', app: 'app1', room: 'a', event: '$member.joined', data: '5', presence: true },
          { kind: 'room', app: 'app1', room: 'a', event: 'a3', data: '6', keep: KEEP_ALL },
          { kind: 'user', app: 'app1', user: 'ann', event: 'u2', data: '7' },
          { kind: 'room', app: 'app1', room: 'b', event: 'b2', data: '8' },
        ];
        const ids = await publish(publisher, events);
        const [a1, a2, u1, b1, presence, a3, u2, b2] = ids;
        expect([u1, presence, u2]).toEqual([undefined, undefined, undefined]);
        expectRising([a1, a2, a3], 'in room a');
        expectRising([b1, b2], 'in room b');
        // Answered: stored. Readable at once.
        const keptA = await harness.history.last('app1', 'a', 10, T0);
        expect(keptA.events).toEqual([
          { id: a1, event: 'a1', data: '1', from: 'ann' },
          { id: a3, event: 'a3', data: '6' },
        ]);
        expect((await harness.history.last('app1', 'b', 10, T0)).events).toEqual([{ id: b1, event: 'b1', data: '4' }]);
        await a.inbox.waitForCount(4);
        await b.inbox.waitForCount(2);
        await ann.inbox.waitForCount(2);
        expect(a.inbox.events).toEqual(['a1', 'a2', '$member.joined', 'a3']);
        expect(a.inbox.ids).toEqual([a1, a2, undefined, a3]);
        expect(b.inbox.ids).toEqual([b1, b2]);
        expect(ann.inbox.events).toEqual(['u1', 'u2']);
        // An empty batch answers no ids.
        expect(await publisher.publish([], T0)).toEqual([]);
      });
    });

    describe('reports', () => {
      const before = '{"type":"emit","room":"lobby","event":"hit","event_id":"';
      const after = '","at":1700000000000}';

      it('stores the webhook event of a report with the id put in, before the event arrives', async () => {
        const webhooks = harness.webhooks;
        const { inbox } = await listen('app1', { room: 'lobby' });
        const waitingAtArrival: Array<Promise<Map<string, number>> | Map<string, number>> = [];
        const stop = await broker.subscribe(roomTopic('app1', 'lobby'), (publication) => {
          if (asEvent(publication).event === 'hit' && webhooks) waitingAtArrival.push(webhooks.waiting());
        });
        const [kept] = await publish(publisher, [
          {
            kind: 'room',
            app: 'app1',
            room: 'lobby',
            event: 'hit',
            data: '1',
            keep: KEEP_ALL,
            report: { before, after },
          },
        ]);
        const [plain] = await publish(publisher, [
          { kind: 'room', app: 'app1', room: 'lobby', event: 'quiet', data: '2' },
        ]);
        const [unkept, user] = await publish(publisher, [
          { kind: 'room', app: 'app1', room: 'lobby', event: 'hit', data: '3', report: { before, after } },
          { kind: 'user', app: 'app1', user: 'ann', event: 'note', data: '4' },
        ]);
        expect(user).toBeUndefined();
        expectRising([kept, plain, unkept], 'in the room');
        await inbox.waitForCount(3);
        // A report changes nothing of what pages get.
        expect(inbox.received).toEqual([
          { kind: 'room', app: 'app1', room: 'lobby', event: 'hit', data: '1', id: kept },
          { kind: 'room', app: 'app1', room: 'lobby', event: 'quiet', data: '2', id: plain },
          { kind: 'room', app: 'app1', room: 'lobby', event: 'hit', data: '3', id: unkept },
        ]);
        await stop();
        // Engines run without their webhook queue in the harness check the rest elsewhere.
        if (!webhooks) return;
        await waitFor('two deliveries of reported events', () => waitingAtArrival.length >= 2);
        // Each report was stored by the time its event arrived.
        const counts = await Promise.all(waitingAtArrival);
        expect(counts[0]?.get('app1') ?? 0).toBeGreaterThanOrEqual(1);
        expect(counts[1]?.get('app1') ?? 0).toBeGreaterThanOrEqual(2);
        expect((await webhooks.waiting()).get('app1')).toBe(2);
        const batch = await webhooks.formBatch('app1', 'batch-1', 100, T0);
        expect(batch?.events).toBe(2);
        expect(JSON.parse(batch?.body ?? '{}')).toEqual({
          events: [
            { type: 'emit', room: 'lobby', event: 'hit', event_id: kept, at: 1_700_000_000_000 },
            { type: 'emit', room: 'lobby', event: 'hit', event_id: unkept, at: 1_700_000_000_000 },
          ],
        });
        expect(batch?.body).toBe(`{"events":[${before}${kept}${after},${before}${unkept}${after}]}`);
      });

      it('keeps reports of apps apart', async () => {
        const [one, two] = await publish(publisher, [
          { kind: 'room', app: 'app1', room: 'r', event: 'hit', data: '1', report: { before: '{"n":"', after: '"}' } },
          { kind: 'room', app: 'app2', room: 'r', event: 'hit', data: '2', report: { before: '{"m":"', after: '"}' } },
        ]);
        expect(parsed(one).ms).toBe(T0);
        expect(parsed(two).ms).toBe(T0);
        const webhooks = harness.webhooks;
        if (!webhooks) return;
        const waiting = await webhooks.waiting();
        expect(waiting.get('app1')).toBe(1);
        expect(waiting.get('app2')).toBe(1);
        expect((await webhooks.formBatch('app2', 'b2', 100, T0))?.body).toBe(`{"events":[{"m":"${two}"}]}`);
        expect((await webhooks.formBatch('app1', 'b1', 100, T0))?.body).toBe(`{"events":[{"n":"${one}"}]}`);
      });
    });

    describe('unsubscribing', () => {
      it('stops delivering to a subscription once it is stopped', async () => {
        const first = await listen('app1', { room: 'lobby' });
        const second = await listen('app1', { room: 'lobby' });
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'both', data: '1' }]);
        await first.inbox.waitForCount(1);
        await second.inbox.waitForCount(1);
        await first.stop();
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'second only', data: '2' }]);
        await second.inbox.waitForCount(2);
        expect(first.inbox.events).toEqual(['both']);
        expect(second.inbox.events).toEqual(['both', 'second only']);
        // With the last subscription stopped, a new one on the same topic still works.
        await second.stop();
        const third = await listen('app1', { room: 'lobby' });
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'third only', data: '3' }]);
        await third.inbox.waitForCount(1);
        expect(third.inbox.events).toEqual(['third only']);
        expect(first.inbox.events).toEqual(['both']);
        expect(second.inbox.events).toEqual(['both', 'second only']);
      });

      it('ends only its own subscription, even for the same handler, and may be called twice', async () => {
        const shared = new Inbox();
        const first = await listen('app1', { room: 'lobby' }, { inbox: shared });
        const second = await listen('app1', { room: 'lobby' }, { inbox: shared });
        const witness = await listen('app1', { room: 'lobby' });
        // Two subscriptions: the handler hears each publication twice.
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'a', data: '1' }]);
        await witness.inbox.waitForCount(1);
        await shared.waitForCount(2);
        await first.stop();
        await first.stop();
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'b', data: '2' }]);
        await witness.inbox.waitForCount(2);
        await shared.waitForCount(3);
        // A stale stop, called after the same handler subscribed again, leaves the new subscription be.
        await second.stop();
        const third = await listen('app1', { room: 'lobby' }, { inbox: shared });
        await first.stop();
        await second.stop();
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'c', data: '3' }]);
        await witness.inbox.waitForCount(3);
        await shared.waitForCount(4);
        expect(shared.events).toEqual(['a', 'a', 'b', 'c']);
        // Both stops at once, as two closing pages would.
        await Promise.all([third.stop(), third.stop()]);
        await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event: 'd', data: '4' }]);
        await witness.inbox.waitForCount(4);
        expect(shared.events).toEqual(['a', 'a', 'b', 'c']);
        expect(witness.inbox.events).toEqual(['a', 'b', 'c', 'd']);
      });

      it('ends a user subscription alone, leaving the same user on the other broker', async () => {
        const here = await listen('app1', { user: 'ann' }, { on: broker });
        const there = await listen('app1', { user: 'ann' }, { on: publisher });
        await here.stop();
        await publish(broker, [{ kind: 'user', app: 'app1', user: 'ann', event: 'after', data: '1' }]);
        await publish(publisher, [{ kind: 'user', app: 'app1', user: 'ann', event: 'after', data: '2' }]);
        await there.inbox.waitForCount(2);
        expect(there.inbox.data).toEqual(['1', '2']);
        expect(here.inbox.received).toEqual([]);
      });

      it('lets a handler stop its own subscription while handling', async () => {
        const witness = await listen('app1', { room: 'lobby' });
        const once: Publication[] = [];
        let stop: Unsubscribe | undefined;
        stop = await broker.subscribe(roomTopic('app1', 'lobby'), (publication) => {
          once.push(publication);
          void stop?.();
        });
        for (const event of ['x', 'y', 'z'])
          await publish(publisher, [{ kind: 'room', app: 'app1', room: 'lobby', event, data: '0' }]);
        // Published together, as a burst a subscriber connection reads in one go.
        await publish(publisher, [
          { kind: 'room', app: 'app1', room: 'lobby', event: 'p', data: '1' },
          { kind: 'room', app: 'app1', room: 'lobby', event: 'q', data: '2' },
        ]);
        await witness.inbox.waitForCount(5);
        expect(witness.inbox.events).toEqual(['x', 'y', 'z', 'p', 'q']);
        expect(once.map((p) => asEvent(p).event)).toEqual(['x']);
      });

      it('stops a handler in the middle of a batch', async () => {
        const witness = await listen('app1', { room: 'lobby' });
        const once: Publication[] = [];
        let stop: Unsubscribe | undefined;
        stop = await broker.subscribe(roomTopic('app1', 'lobby'), (publication) => {
          once.push(publication);
          void stop?.();
        });
        await publish(publisher, [
          { kind: 'room', app: 'app1', room: 'lobby', event: 'p', data: '1' },
          { kind: 'room', app: 'app1', room: 'lobby', event: 'q', data: '2', keep: KEEP_ALL },
          { kind: 'room', app: 'app1', room: 'lobby', event: 'r', data: '3' },
        ]);
        await witness.inbox.waitForCount(3);
        expect(once.map((p) => asEvent(p).event)).toEqual(['p']);
      });
    });
  });
}
