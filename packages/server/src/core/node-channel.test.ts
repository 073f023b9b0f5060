import pino from 'pino';
import { describe, expect, it } from 'vitest';
import {
  BROADCAST_TOPIC,
  type Broker,
  type NodeMessage,
  nodeTopic,
  type Publication,
  type PublicationHandler,
} from '../engines/types.js';
import { NodeChannel } from './node-channel.js';

/** A broker that records subscriptions and lets the test deliver to them. */
function fakeBroker() {
  const subscriptions = new Map<string, PublicationHandler[]>();
  const stopped: string[] = [];
  const broker: Broker = {
    publish: (events) => events.map(() => undefined),
    subscribe(topic, handler) {
      subscriptions.set(topic, [...(subscriptions.get(topic) ?? []), handler]);
      return () => {
        stopped.push(topic);
        subscriptions.set(
          topic,
          (subscriptions.get(topic) ?? []).filter((h) => h !== handler),
        );
      };
    },
    close() {},
  };
  const deliver = (topic: string, publication: Publication) => {
    for (const handler of subscriptions.get(topic) ?? []) handler(publication);
  };
  return { broker, subscriptions, stopped, deliver };
}

function recordingLog() {
  const errors: unknown[] = [];
  const log = pino({ level: 'error' }, { write: (line: string) => errors.push(JSON.parse(line)) });
  return { log, errors };
}

const node = (message: NodeMessage): Publication => ({ kind: 'node', node: 'n1', app: 'app1', message });

describe('NodeChannel', () => {
  it('subscribes once to its node and once to every node, however many handlers', async () => {
    const { broker, subscriptions } = fakeBroker();
    const channel = new NodeChannel({ node: 'n1', broker, log: recordingLog().log });
    channel.on('ask.reply', () => {});
    channel.on('ask.decline', () => {});
    channel.on('page.frame', () => {});
    channel.onBroadcast('console.watch', () => {});
    await channel.start();
    expect([...subscriptions.keys()].sort()).toEqual([BROADCAST_TOPIC, nodeTopic('n1')].sort());
    expect([...subscriptions.values()].map((handlers) => handlers.length)).toEqual([1, 1]);
  });

  it('hands each message to the one handler of its type, with its app', async () => {
    const { broker, deliver } = fakeBroker();
    const channel = new NodeChannel({ node: 'n1', broker, log: recordingLog().log });
    const got: string[] = [];
    channel.on('page.frame', (m, app) => got.push(`frame ${app} ${m.page} ${m.frame}`));
    channel.on('service', (m, app) => got.push(`service ${app} ${m.service} ${m.data}`));
    channel.on('ask.reply', (m, app) => got.push(`reply ${app} ${m.ask} ${m.data}`));
    channel.on('ask.decline', (m, app) => got.push(`decline ${app} ${m.ask}`));
    channel.on('console.entry', (m, app) => got.push(`entry ${app} ${m.entry}`));
    channel.onBroadcast('console.watch', (m) => got.push(`watch ${m.announcement}`));
    channel.onBroadcast('console.app_gone', (m) => got.push(`gone ${m.app}`));
    await channel.start();

    deliver(nodeTopic('n1'), node({ type: 'page.frame', page: 'p1', frame: '{"t":"x"}' }));
    deliver(nodeTopic('n1'), node({ type: 'service', service: 'streams', data: '{}' }));
    deliver(nodeTopic('n1'), node({ type: 'ask.reply', ask: 'a1', data: '"yes"' }));
    deliver(nodeTopic('n1'), node({ type: 'ask.decline', ask: 'a2' }));
    deliver(nodeTopic('n1'), node({ type: 'console.entry', entry: '{"kind":"emit"}' }));
    deliver(BROADCAST_TOPIC, { kind: 'broadcast', message: { type: 'console.watch', announcement: '{}' } });
    deliver(BROADCAST_TOPIC, { kind: 'broadcast', message: { type: 'console.app_gone', app: 'app2' } });

    expect(got).toEqual([
      'frame app1 p1 {"t":"x"}',
      'service app1 streams {}',
      'reply app1 a1 "yes"',
      'decline app1 a2',
      'entry app1 {"kind":"emit"}',
      'watch {}',
      'gone app2',
    ]);
  });

  it('drops messages nobody registered for, and publications of other kinds', async () => {
    const { broker, deliver } = fakeBroker();
    const channel = new NodeChannel({ node: 'n1', broker, log: recordingLog().log });
    const got: string[] = [];
    channel.on('ask.decline', (m) => got.push(m.ask));
    await channel.start();
    deliver(nodeTopic('n1'), node({ type: 'ask.reply', ask: 'a1', data: '1' }));
    deliver(nodeTopic('n1'), { kind: 'user', app: 'app1', user: 'ann', event: 'e', data: '1' });
    deliver(BROADCAST_TOPIC, { kind: 'broadcast', message: { type: 'console.app_gone', app: 'app1' } });
    deliver(nodeTopic('n1'), node({ type: 'ask.decline', ask: 'a3' }));
    expect(got).toEqual(['a3']);
  });

  it('refuses a second handler for one type', () => {
    const channel = new NodeChannel({ node: 'n1', broker: fakeBroker().broker, log: recordingLog().log });
    channel.on('ask.reply', () => {});
    channel.onBroadcast('console.watch', () => {});
    expect(() => channel.on('ask.reply', () => {})).toThrow(/ask.reply/);
    expect(() => channel.onBroadcast('console.watch', () => {})).toThrow(/console.watch/);
  });

  it('logs a failing handler and goes on with the next message', async () => {
    const { broker, deliver } = fakeBroker();
    const { log, errors } = recordingLog();
    const channel = new NodeChannel({ node: 'n1', broker, log });
    const got: string[] = [];
    channel.on('ask.reply', (m) => {
      if (m.ask === 'bad') throw new Error('broken handler');
      got.push(m.ask);
    });
    await channel.start();
    deliver(nodeTopic('n1'), node({ type: 'ask.reply', ask: 'bad', data: '1' }));
    deliver(nodeTopic('n1'), node({ type: 'ask.reply', ask: 'good', data: '1' }));
    expect(got).toEqual(['good']);
    expect(errors).toEqual([expect.objectContaining({ msg: 'a node message handler failed', kind: 'node' })]);
  });

  it('takes a message handed to it directly the same way (a feature sending to its own node)', () => {
    const channel = new NodeChannel({ node: 'n1', broker: fakeBroker().broker, log: recordingLog().log });
    const got: string[] = [];
    channel.on('service', (m, app) => got.push(`${app} ${m.service}`));
    channel.receive(node({ type: 'service', service: 'groups', data: '{}' }));
    expect(got).toEqual(['app1 groups']);
  });

  it('ends both subscriptions on close, and leaves no half start behind when one fails', async () => {
    const { broker, stopped, deliver } = fakeBroker();
    const channel = new NodeChannel({ node: 'n1', broker, log: recordingLog().log });
    const got: string[] = [];
    channel.on('ask.decline', (m) => got.push(m.ask));
    await channel.start();
    await channel.close();
    expect(stopped.sort()).toEqual([BROADCAST_TOPIC, nodeTopic('n1')].sort());
    deliver(nodeTopic('n1'), node({ type: 'ask.decline', ask: 'late' }));
    expect(got).toEqual([]);

    const failing = fakeBroker();
    const refused: Broker = {
      ...failing.broker,
      subscribe: (topic, handler) => {
        if (topic === BROADCAST_TOPIC) throw new Error('refused');
        return failing.broker.subscribe(topic, handler);
      },
    };
    const second = new NodeChannel({ node: 'n1', broker: refused, log: recordingLog().log });
    await expect(second.start()).rejects.toThrow('refused');
    expect(failing.stopped).toEqual([nodeTopic('n1')]);
  });
});
