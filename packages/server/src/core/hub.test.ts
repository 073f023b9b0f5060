import { afterEach, describe, expect, it, vi } from 'vitest';
import { roomTopic, userTopic } from '../engines/broker.js';
import type { AskQuestion, Broker, Publication, PublicationHandler, RoomEvent, UserEvent } from '../engines/types.js';
import type { FrameEncoder } from './frame-encoder.js';
import { Hub, type Page, type Seat } from './hub.js';
import { memberChangeData } from './member-windows.js';
import type { Frame } from './ws-frame.js';

/** A broker in memory: who subscribed to which topic, and a way to publish to them at once. */
function fakeBroker() {
  const handlers = new Map<string, Set<PublicationHandler>>();
  let subscribes = 0;
  const broker: Broker = {
    publish: () => [],
    subscribe(topic, handler) {
      subscribes++;
      let set = handlers.get(topic);
      if (!set) {
        set = new Set();
        handlers.set(topic, set);
      }
      set.add(handler);
      return () => {
        set.delete(handler);
        if (set.size === 0) handlers.delete(topic);
      };
    },
    close: () => {},
  };
  return {
    broker,
    topics: () => [...handlers.keys()],
    subscribes: () => subscribes,
    deliver(topic: string, publication: Publication) {
      for (const handler of handlers.get(topic) ?? []) handler(publication);
    },
  };
}

/** An encoder that writes what it was asked to encode, one fresh buffer per call, and counts its calls. */
function fakeEncoder() {
  const calls = { event: [] as (RoomEvent | UserEvent)[], text: [] as string[], length: 0 };
  const encoder: FrameEncoder = {
    event(publication) {
      calls.event.push(publication);
      return Buffer.from(`event:${publication.event}:${publication.data}`);
    },
    text(json) {
      calls.text.push(json);
      return Buffer.from(`text:${json}`);
    },
    length(frame) {
      calls.length++;
      return (frame as Buffer).length;
    },
  };
  return { encoder, calls };
}

class FakePage implements Page {
  readonly frames: Frame[] = [];
  slowed = 0;
  constructor(
    readonly id: string,
    readonly replayLimit = 1_000_000,
  ) {}
  deliver(frame: Frame): void {
    this.frames.push(frame);
  }
  slow(): void {
    this.slowed++;
  }
}

function seatOf(page: Page): Seat {
  return { page, replay: undefined, replayBytes: 0 };
}

const APP = 'app1';
const ROOM_TOPIC = roomTopic(APP, 'lobby');
const USER_TOPIC = userTopic(APP, 'ann');

function roomEvent(id: string, extra: Partial<RoomEvent> = {}): RoomEvent {
  return { kind: 'room', app: APP, room: 'lobby', id, event: 'chat', data: `"${id}"`, ...extra };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Hub: room fan-out', () => {
  it('encodes a publication once and hands that one frame to every page but its origin', async () => {
    const { broker, deliver } = fakeBroker();
    const { encoder, calls } = fakeEncoder();
    const hub = new Hub(broker, encoder);
    const pages = ['p1', 'p2', 'p3'].map((id) => new FakePage(id));
    for (const page of pages) await hub.addSeat(APP, 'lobby', seatOf(page));

    deliver(ROOM_TOPIC, roomEvent('1', { origin: 'p2' }));

    expect(calls.event).toHaveLength(1);
    const [first, second, third] = pages;
    expect(first?.frames).toEqual([Buffer.from('event:chat:"1"')]);
    expect(second?.frames).toEqual([]);
    // The same frame object, not a copy per page.
    expect(third?.frames[0]).toBe(first?.frames[0]);
  });

  it('subscribes once per room, however many pages, and lets go with the last one', async () => {
    const fake = fakeBroker();
    const hub = new Hub(fake.broker, fakeEncoder().encoder);
    const seats = [seatOf(new FakePage('p1')), seatOf(new FakePage('p2'))];
    for (const seat of seats) await hub.addSeat(APP, 'lobby', seat);
    expect(fake.subscribes()).toBe(1);
    expect(hub.roomCount).toBe(1);

    await hub.removeSeat(APP, 'lobby', seats[0] as Seat);
    expect(fake.topics()).toEqual([ROOM_TOPIC]);
    await hub.removeSeat(APP, 'lobby', seats[1] as Seat);
    expect(fake.topics()).toEqual([]);
    expect(hub.roomCount).toBe(0);
  });

  it('holds frames for a seat catching up on history, measuring each frame once', async () => {
    const { broker, deliver } = fakeBroker();
    const { encoder, calls } = fakeEncoder();
    const hub = new Hub(broker, encoder);
    const live = new FakePage('live');
    const catching = [seatOf(new FakePage('c1')), seatOf(new FakePage('c2'))];
    await hub.addSeat(APP, 'lobby', seatOf(live));
    for (const seat of catching) {
      seat.replay = [];
      await hub.addSeat(APP, 'lobby', seat);
    }

    deliver(ROOM_TOPIC, roomEvent('1'));

    const frame = live.frames[0] as Buffer;
    expect(calls.length).toBe(1);
    for (const seat of catching) {
      expect(seat.page).toMatchObject({ frames: [] });
      expect(seat.replay).toEqual([{ id: '1', frame }]);
      expect(seat.replayBytes).toBe(frame.length);
    }
  });

  it('closes a catching-up page as slow once its held frames pass its limit, and holds no more', async () => {
    const { broker, deliver } = fakeBroker();
    const hub = new Hub(broker, fakeEncoder().encoder);
    const page = new FakePage('p1', 20);
    const seat = seatOf(page);
    seat.replay = [];
    await hub.addSeat(APP, 'lobby', seat);

    deliver(ROOM_TOPIC, roomEvent('1')); // 14 bytes held: under the limit
    expect(page.slowed).toBe(0);
    deliver(ROOM_TOPIC, roomEvent('2')); // 28: over
    deliver(ROOM_TOPIC, roomEvent('3'));

    expect(page.slowed).toBe(1);
    expect(seat.replay?.map((held) => held.id)).toEqual(['1', '2']);
  });

  it('drops a live frame the replay carried already', async () => {
    const { broker, deliver } = fakeBroker();
    const hub = new Hub(broker, fakeEncoder().encoder);
    const page = new FakePage('p1');
    const seat = seatOf(page);
    seat.replayed = { ids: new Set(['1700000000000-0']), newest: '1700000000000-0' };
    await hub.addSeat(APP, 'lobby', seat);

    deliver(ROOM_TOPIC, roomEvent('1700000000000-0'));
    deliver(ROOM_TOPIC, roomEvent('1700000000001-0'));

    expect(page.frames).toEqual([Buffer.from('event:chat:"1700000000001-0"')]);
    expect(seat.replayed).toBeUndefined();
  });
});

describe('Hub: presence', () => {
  it('sends a small room one event per change, its data the member', async () => {
    const { broker, deliver } = fakeBroker();
    const { encoder, calls } = fakeEncoder();
    const hub = new Hub(broker, encoder);
    const page = new FakePage('p1');
    await hub.addSeat(APP, 'lobby', seatOf(page));

    const data = memberChangeData({ user: 'ann' }, { count: 2, seq: 1 });
    deliver(ROOM_TOPIC, { kind: 'room', app: APP, room: 'lobby', event: '$member.joined', data });

    expect(calls.event.map((p) => p.data)).toEqual(['{"user":"ann"}']);
    expect(page.frames).toEqual([Buffer.from('event:$member.joined:{"user":"ann"}')]);
  });

  it('sends a large room its changes as one members frame per window, encoded once', async () => {
    vi.useFakeTimers();
    const { broker, deliver } = fakeBroker();
    const { encoder, calls } = fakeEncoder();
    const hub = new Hub(broker, encoder);
    hub.configureMembers({ threshold: 2, minWindowMs: 100, maxWindowMs: 100 });
    const pages = [new FakePage('p1'), new FakePage('p2')];
    for (const page of pages) await hub.addSeat(APP, 'lobby', seatOf(page));

    deliver(ROOM_TOPIC, {
      kind: 'room',
      app: APP,
      room: 'lobby',
      event: '$member.joined',
      data: memberChangeData({ user: 'ann' }, { count: 3, seq: 1 }),
    });
    deliver(ROOM_TOPIC, {
      kind: 'room',
      app: APP,
      room: 'lobby',
      event: '$member.left',
      data: memberChangeData({ user: 'bob' }, { count: 2, seq: 2 }),
    });
    expect(pages[0]?.frames).toEqual([]);

    vi.advanceTimersByTime(100);

    const json = '{"t":"members","room":"lobby","count":2,"joined":[{"user":"ann"}],"left":["bob"]}';
    expect(calls.text).toEqual([json]);
    expect(calls.event).toEqual([]);
    expect(pages[0]?.frames).toEqual([Buffer.from(`text:${json}`)]);
    expect(pages[1]?.frames[0]).toBe(pages[0]?.frames[0]);
  });
});

describe('Hub: user pages', () => {
  it('encodes a user event once for all of the user’s pages', async () => {
    const { broker, deliver } = fakeBroker();
    const { encoder, calls } = fakeEncoder();
    const hub = new Hub<FakePage>(broker, encoder);
    const pages = [new FakePage('p1'), new FakePage('p2')];
    for (const page of pages) await hub.addUserPage(APP, 'ann', page);

    deliver(USER_TOPIC, { kind: 'user', app: APP, user: 'ann', event: 'note', data: '1' });

    expect(calls.event).toHaveLength(1);
    expect(pages[0]?.frames).toEqual([Buffer.from('event:note:1')]);
    expect(pages[1]?.frames[0]).toBe(pages[0]?.frames[0]);
    expect(hub.pagesOf(APP, 'ann')).toEqual(pages);
  });

  it('hands a feature’s page frame over as written, to every page but the one it came from', async () => {
    const { broker, deliver } = fakeBroker();
    const { encoder, calls } = fakeEncoder();
    const hub = new Hub<FakePage>(broker, encoder);
    const pages = [new FakePage('p1'), new FakePage('p2')];
    for (const page of pages) await hub.addUserPage(APP, 'ann', page);

    deliver(USER_TOPIC, { kind: 'user.frame', app: APP, user: 'ann', frame: '{"t":"ring"}', except: 'p1' });

    expect(calls.text).toEqual(['{"t":"ring"}']);
    expect(pages[0]?.frames).toEqual([]);
    expect(pages[1]?.frames).toEqual([Buffer.from('text:{"t":"ring"}')]);
  });

  it('passes the question of an ask to the ask handler with the user’s pages, encoding nothing', async () => {
    const { broker, deliver } = fakeBroker();
    const { encoder, calls } = fakeEncoder();
    const asked: [AskQuestion, readonly FakePage[]][] = [];
    const hub = new Hub<FakePage>(broker, encoder, (question, pages) => asked.push([question, pages]));
    const page = new FakePage('p1');
    await hub.addUserPage(APP, 'ann', page);

    const question: AskQuestion = {
      kind: 'ask',
      app: APP,
      user: 'ann',
      ask: 'a1',
      replyTo: 'n1',
      event: 'q',
      data: '1',
    };
    deliver(USER_TOPIC, question);

    expect(asked).toEqual([[question, [page]]]);
    expect(calls.event).toEqual([]);
    expect(page.frames).toEqual([]);
  });
});
