import { describe, expect, it } from 'vitest';
import { type Publication, type RoomEvent, roomTopic, userTopic } from '../types.js';
import { MemoryFanout } from './fanout.js';

const LOBBY = roomTopic('app1', 'lobby');

// The embedded broker delivers through MemoryFanout; the broker contract covers it through the engine
// (embedded-broker.test.ts). These are the fan-out's own promises: inline, in subscription order.
/** The data of a room or user event. */
const dataOf = (p: Publication): string => (p.kind === 'room' || p.kind === 'user' ? p.data : p.kind);

describe('MemoryFanout', () => {
  const lobby: RoomEvent = { kind: 'room', app: 'app1', room: 'lobby', event: 'e', data: '1', id: '1-0' };

  it('calls the topic handlers inline, in subscription order, with the publication as given', () => {
    const fanout = new MemoryFanout();
    const calls: string[] = [];
    const got: Publication[] = [];
    fanout.subscribe(roomTopic('app1', 'lobby'), (p) => {
      calls.push('first');
      got.push(p);
    });
    fanout.subscribe(roomTopic('app1', 'lobby'), () => calls.push('second'));
    fanout.subscribe(userTopic('app1', 'lobby'), () => calls.push('user'));
    fanout.publish(lobby);
    expect(calls).toEqual(['first', 'second']);
    expect(got[0]).toBe(lobby);
    fanout.publish({ kind: 'user', app: 'app1', user: 'lobby', event: 'e', data: '2' });
    expect(calls).toEqual(['first', 'second', 'user']);
  });

  it('counts the same handler twice as two subscriptions, each ended by its own stop, any number of times', () => {
    const fanout = new MemoryFanout();
    const seen: string[] = [];
    const handler = (p: Publication) => seen.push(dataOf(p));
    const first = fanout.subscribe(LOBBY, handler);
    const second = fanout.subscribe(LOBBY, handler);
    fanout.publish({ ...lobby, data: 'a' });
    first();
    first();
    fanout.publish({ ...lobby, data: 'b' });
    second();
    const third = fanout.subscribe(LOBBY, handler);
    second();
    first();
    fanout.publish({ ...lobby, data: 'c' });
    third();
    fanout.publish({ ...lobby, data: 'd' });
    expect(seen).toEqual(['a', 'a', 'b', 'c']);
  });

  it('lets a handler stop itself, or a later subscription, while handling', () => {
    const fanout = new MemoryFanout();
    const seen: string[] = [];
    let stopSelf = () => {};
    let stopLater = () => {};
    stopSelf = fanout.subscribe(LOBBY, (p) => {
      seen.push(`self ${dataOf(p)}`);
      stopSelf();
      stopLater();
    });
    stopLater = fanout.subscribe(LOBBY, (p) => seen.push(`later ${dataOf(p)}`));
    const witness = fanout.subscribe(LOBBY, (p) => seen.push(`witness ${dataOf(p)}`));
    fanout.publish({ ...lobby, data: '1' });
    fanout.publish({ ...lobby, data: '2' });
    witness();
    expect(seen).toEqual(['self 1', 'witness 1', 'witness 2']);
  });

  it('delivers nothing once closed, and takes new subscriptions after', () => {
    const fanout = new MemoryFanout();
    const seen: string[] = [];
    const stop = fanout.subscribe(LOBBY, (p) => seen.push(dataOf(p)));
    fanout.close();
    fanout.publish({ ...lobby, data: 'gone' });
    stop();
    fanout.subscribe(LOBBY, (p) => seen.push(dataOf(p)));
    fanout.publish({ ...lobby, data: 'new' });
    expect(seen).toEqual(['new']);
  });
});
