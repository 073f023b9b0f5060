import { CLOSE, FEATURES, type Feature, type RoomClaims } from '@realtime/protocol';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { SendRefused } from '../core/emit.js';
import type { AppEvent } from '../core/events.js';
import { encodeEvent } from '../core/frame-encoder.js';
import type { Seat } from '../core/hub.js';
import { MEMBER_SCALE } from '../core/member-windows.js';
import type { Frame } from '../core/ws-frame.js';
import { MemoryPresenceStore } from '../engines/memory/presence.js';
import { StoreError } from '../engines/store-error.js';
import type { App, HistoryPage, KeptEvent, Outgoing, ResumeResult } from '../engines/types.js';
import { REPLAY_PAGE } from './history-read.js';
import type { RoomServiceDeps } from './room-deps.js';
import type { RoomPage } from './room-page.js';
import { RoomRefusal } from './room-refusal.js';
import { RoomService } from './room-service.js';

const NOW = 1_700_000_000_000;

/** The JSON of a frame as the service framed it (FIN, opcode 1, unmasked). */
function unframe(frame: Frame): Record<string, unknown> {
  const bytes = Buffer.isBuffer(frame) ? frame : Buffer.concat(frame);
  const length = bytes[1] ?? 0;
  const header = length < 126 ? 2 : length === 126 ? 4 : 10;
  return JSON.parse(bytes.subarray(header).toString()) as Record<string, unknown>;
}

interface FakePage extends RoomPage {
  state: RoomPage['state'];
  /** Frames sent as objects (joined, left, sent, listed). */
  sent: Record<string, unknown>[];
  /** Frames delivered framed (events), as JSON. */
  delivered: Record<string, unknown>[];
  closes: number[];
}

function fakePage(app: App, id = 'node.1', user: string | null = 'ann'): FakePage {
  const page: FakePage = {
    id,
    app,
    user,
    info: undefined,
    state: 'open',
    rooms: new Map(),
    replayLimit: 1_048_576,
    sent: [],
    delivered: [],
    closes: [],
    deliver: (frame) => page.delivered.push(unframe(frame)),
    slow: () => page.close(CLOSE.slowConsumer, 'slow consumer'),
    send: (frame) => page.sent.push(JSON.parse(JSON.stringify(frame)) as Record<string, unknown>),
    paced: async () => {},
    close: (code) => {
      page.state = 'closed';
      page.closes.push(code);
    },
  };
  return page;
}

/** A room token as the fake check reads it: its claims as JSON. */
function token(claims: Partial<RoomClaims> & { room: string }): string {
  return JSON.stringify({ exp: NOW / 1000 + 3600, ...claims });
}

function kept(id: string, event = 'said', data = '1'): KeptEvent {
  return { id, event, data };
}

/** A room service over fakes: a hub that records seats, the memory presence store, scripted history. */
function scene(options: { features?: Feature[]; app?: App | undefined } = {}) {
  const app: App = {
    key: 'app1',
    secret: 'secret',
    name: 'app one',
    webhook: '',
    features: options.features ?? [...FEATURES],
    rateLimit: { perSecond: 100, burst: 100 },
  };
  const seats = new Map<string, Set<Seat>>();
  const large: string[] = [];
  /** What happened, in order: frames to pages aside, every publish and webhook event. */
  const log: string[] = [];
  const published: Outgoing[] = [];
  const recorded: AppEvent[] = [];
  const history = {
    last: (_app: string, _room: string, _count: number): HistoryPage | Promise<HistoryPage> => ({
      events: [],
      remaining: 0,
      epoch: 'ep1',
    }),
    since: (..._args: unknown[]): ResumeResult | Promise<ResumeResult> => ({
      events: [],
      remaining: 0,
      epoch: 'ep1',
      truncated: false,
      dropped: false,
    }),
  };
  const presence = new MemoryPresenceStore();
  const hub = {
    memberScale: { ...MEMBER_SCALE, threshold: 2, pageSize: 2 },
    addSeat: async (_app: string, room: string, seat: Seat) => {
      const here = seats.get(room) ?? new Set();
      here.add(seat);
      seats.set(room, here);
    },
    removeSeat: async (_app: string, room: string, seat: Seat) => {
      seats.get(room)?.delete(seat);
    },
    largeRoom: (_app: string, room: string) => {
      large.push(room);
    },
  };
  const sends: Parameters<RoomServiceDeps['emitter']['send']>[0][] = [];
  const emitter = {
    send: (send: (typeof sends)[number]): string | Promise<string> => {
      sends.push(send);
      return '1700000000000-1';
    },
  };
  const deps: RoomServiceDeps = {
    node: 'n1',
    apps: { get: () => ('app' in options ? options.app : app) },
    hub,
    broker: {
      publish: (events) => {
        for (const event of events) log.push(`publish ${event.kind === 'room' ? event.event : event.kind}`);
        published.push(...events);
        return events.map(() => undefined);
      },
    },
    history: {
      last: (...args) => history.last(args[0], args[1], args[2]),
      since: (...args) => history.since(...args),
    },
    presence,
    emitter,
    departures: {
      record: async (_app, event) => {
        log.push(`record ${event.type}`);
        recorded.push(event);
      },
    },
    verifyToken: async (text) => JSON.parse(text) as RoomClaims,
    log: pino({ level: 'silent' }),
    now: () => NOW,
  };
  return {
    app,
    deps,
    rooms: new RoomService(deps),
    seats,
    large,
    log,
    published,
    recorded,
    history,
    presence,
    emitter,
    sends,
  };
}

describe('join: admission', () => {
  it('refuses a bad room name, a token for another room or user, and presence the plan lacks, seating nothing', async () => {
    const { app, rooms, seats } = scene({ features: ['history'] });
    const page = fakePage(app);
    const join = (room: string, claims: Partial<RoomClaims> & { room: string }) =>
      rooms.join(page, { t: 'join', ref: 1, room, token: token(claims) });
    await expect(join('$kept', { room: '$kept' })).rejects.toEqual(
      new RoomRefusal('bad_room', 'room names starting with $ are kept for the service'),
    );
    await expect(join('r', { room: 'other' })).rejects.toEqual(
      new RoomRefusal('wrong_room', 'the room token was issued for another room'),
    );
    await expect(join('r', { room: 'r', sub: 'bob' })).rejects.toEqual(
      new RoomRefusal('wrong_user', 'the room token was issued to another user'),
    );
    await expect(join('r', { room: 'r', presence: true })).rejects.toEqual(
      new RoomRefusal('not_included', "the app's plan does not include presence"),
    );
    expect(seats.size).toBe(0);
    expect(page.rooms.size).toBe(0);
    expect(page.sent).toEqual([]);
  });

  it('closes the page of an app that is gone, and joins nothing', async () => {
    const { rooms, seats, app } = scene({ app: undefined });
    const page = fakePage(app);
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r' }) });
    expect(page.closes).toEqual([CLOSE.unknownSite]);
    expect(seats.size).toBe(0);
    expect(page.sent).toEqual([]);
  });
});

describe('join: seat, occupancy, history and replay', () => {
  it("seats the page, reports the room's first page once, answers joined, then replays the kept events in order", async () => {
    const { app, rooms, seats, recorded, history } = scene();
    const counts: number[] = [];
    history.last = (_app, _room, count) => {
      counts.push(count);
      return { events: [kept('1-1'), kept('1-2', 'other', '{"a":2}')], remaining: 0, epoch: 'ep1' };
    };
    const first = fakePage(app, 'node.1');
    await rooms.join(first, { t: 'join', ref: 7, room: 'r', token: token({ room: 'r' }), last: 2 });
    expect(first.sent).toEqual([{ t: 'joined', ref: 7, room: 'r', replay: 2, epoch: 'ep1' }]);
    expect(first.delivered).toEqual([
      { t: 'event', room: 'r', id: '1-1', event: 'said', data: 1 },
      { t: 'event', room: 'r', id: '1-2', event: 'other', data: { a: 2 } },
    ]);
    expect(seats.get('r')?.size).toBe(1);
    const seat = first.rooms.get('r')?.seat;
    expect(seat?.replay).toBeUndefined();
    expect(seat?.replayed?.newest).toBe('1-2');

    await rooms.join(fakePage(app, 'node.2'), { t: 'join', ref: 1, room: 'r', token: token({ room: 'r' }) });
    expect(seats.get('r')?.size).toBe(2);
    expect(recorded).toEqual([{ type: 'room.occupied', room: 'r' }]);
    // A join without `last` replays nothing, but still learns the room's epoch.
    expect(counts).toEqual([2, 0]);
  });

  it('re-joining keeps the seat and replays nothing from last', async () => {
    const { app, rooms, seats, history } = scene();
    const counts: number[] = [];
    history.last = (_app, _room, count) => {
      counts.push(count);
      return { events: [], remaining: 0, epoch: 'ep1' };
    };
    const page = fakePage(app);
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r' }), last: 5 });
    const seat = page.rooms.get('r')?.seat;
    await rooms.join(page, { t: 'join', ref: 2, room: 'r', token: token({ room: 'r' }), last: 5 });
    expect(page.rooms.get('r')?.seat).toBe(seat);
    expect(seats.get('r')?.size).toBe(1);
    expect(counts).toEqual([5, 0]);
  });

  it('delivers the live frames that came during the replay after it, in order, without the ones it carried', async () => {
    const { app, rooms, history } = scene();
    const page = fakePage(app);
    const live = (id: string | undefined, event: string) => ({
      id,
      frame: encodeEvent({
        kind: 'room',
        app: app.key,
        room: 'r',
        event,
        data: '0',
        ...(id === undefined ? {} : { id }),
      }),
    });
    history.since = () => {
      // Seated already: live frames wait in the seat while history is read.
      page.rooms.get('r')?.seat.replay?.push(live('1-2', 'kept-too'), live('1-3', 'live'), live(undefined, 'presence'));
      return { events: [kept('1-2')], remaining: 0, epoch: 'ep1', truncated: false, dropped: false };
    };
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r' }), since: '1-1', epoch: 'ep1' });
    expect(page.sent).toEqual([{ t: 'joined', ref: 1, room: 'r', replay: 1, epoch: 'ep1' }]);
    expect(page.delivered.map((frame) => frame.id ?? frame.event)).toEqual(['1-2', '1-3', 'presence']);
  });

  it('reads a replay longer than a page on from the last id sent, no more than announced', async () => {
    const { app, rooms, history } = scene();
    const reads: unknown[][] = [];
    history.since = (...args) => {
      reads.push(args);
      return reads.length === 1
        ? { events: [kept('1-2')], remaining: 2, epoch: 'ep1', truncated: false, dropped: false }
        : { events: [kept('1-3'), kept('1-4')], remaining: 5, epoch: 'ep1', truncated: false, dropped: false };
    };
    const page = fakePage(app);
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r' }), since: '1-1' });
    expect(page.sent[0]).toMatchObject({ replay: 3 });
    expect(page.delivered.map((frame) => frame.id)).toEqual(['1-2', '1-3', '1-4']);
    expect(reads[1]).toEqual(['app1', 'r', '1-2', NOW, { ...REPLAY_PAGE, events: 2 }, 'ep1']);
    expect(reads).toHaveLength(2);
  });

  it('closes as slow a page the room overtook during its replay', async () => {
    const { app, rooms, history } = scene();
    let reads = 0;
    history.since = () =>
      ++reads === 1
        ? { events: [kept('1-2')], remaining: 1, epoch: 'ep1', truncated: false, dropped: false }
        : { events: [kept('1-9')], remaining: 0, epoch: 'ep1', truncated: true, dropped: true };
    const page = fakePage(app);
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r' }), since: '1-1' });
    expect(page.delivered.map((frame) => frame.id)).toEqual(['1-2']);
    expect(page.closes).toEqual([CLOSE.slowConsumer]);
  });

  it('leaves no half-joined seat when the history read fails', async () => {
    const { app, rooms, seats, recorded, history } = scene();
    history.last = () => Promise.reject(new StoreError('unavailable'));
    const page = fakePage(app);
    await expect(
      rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r' }) }),
    ).rejects.toBeInstanceOf(StoreError);
    expect(page.rooms.size).toBe(0);
    expect(seats.get('r')?.size).toBe(0);
    expect(recorded).toEqual([
      { type: 'room.occupied', room: 'r' },
      { type: 'room.vacated', room: 'r' },
    ]);
    expect(page.sent).toEqual([]);
  });

  it('on a plan without history, a resume is truncated and nothing is read', async () => {
    const { app, rooms, history } = scene({ features: ['presence'] });
    history.since = () => {
      throw new Error('no history is read on this plan');
    };
    const page = fakePage(app);
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r' }), since: '1-1' });
    expect(page.sent).toEqual([{ t: 'joined', ref: 1, room: 'r', replay: 0, truncated: true }]);
  });
});

describe('join: presence', () => {
  it("announces the user's first page after joined, and its leave when it re-joins without presence", async () => {
    const { app, rooms, log, published } = scene();
    const page = fakePage(app);
    const send = page.send;
    page.send = (frame) => {
      log.push(`send ${(frame as { t: string }).t}`);
      send(frame);
    };
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r', presence: true }) });
    expect(page.sent[0]).toEqual({
      t: 'joined',
      ref: 1,
      room: 'r',
      replay: 0,
      epoch: 'ep1',
      members: [{ user: 'ann' }],
    });
    // Announced after joined: the page's own member.joined never comes before its joined.
    expect(log).toEqual(['record room.occupied', 'send joined', 'record member.joined', 'publish $member.joined']);
    expect(published[0]).toMatchObject({
      kind: 'room',
      app: 'app1',
      room: 'r',
      event: '$member.joined',
      presence: true,
    });
    const [change] = published;
    expect(JSON.parse(change?.kind === 'room' ? change.data : '')).toMatchObject({ member: { user: 'ann' }, count: 1 });

    await rooms.join(page, { t: 'join', ref: 2, room: 'r', token: token({ room: 'r' }) });
    expect(log.slice(4)).toEqual(['record member.left', 'publish $member.left', 'send joined']);
    expect(page.rooms.get('r')?.member).toBe(false);
    expect(page.sent[1]).toEqual({ t: 'joined', ref: 2, room: 'r', replay: 0, epoch: 'ep1' });
  });

  it('gives a page joining a room beyond the threshold its first page of members, the count and a cursor', async () => {
    const { app, rooms, large, presence } = scene();
    for (const user of ['bob', 'cat', 'dan']) await presence.joinRoom('app1', 'r', { user }, `node.${user}`);
    const page = fakePage(app);
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r', presence: true }) });
    const joined = page.sent[0];
    expect(joined).toMatchObject({ t: 'joined', count: 4, cursor: expect.any(String) });
    expect(joined?.members).toHaveLength(2);
    expect(large).toEqual(['r']);
  });
});

describe('leave, list and close', () => {
  it('leave: answers left; a room the page is not in is refused', async () => {
    const { app, rooms, recorded } = scene();
    const page = fakePage(app);
    await expect(rooms.leave(page, { t: 'leave', ref: 1, room: 'r' })).rejects.toMatchObject({ code: 'not_joined' });
    await rooms.join(page, { t: 'join', ref: 2, room: 'r', token: token({ room: 'r' }) });
    await rooms.leave(page, { t: 'leave', ref: 3, room: 'r' });
    expect(page.sent.at(-1)).toEqual({ t: 'left', ref: 3, room: 'r' });
    expect(recorded.map((event) => event.type)).toEqual(['room.occupied', 'room.vacated']);
  });

  it('list: a page of members after the cursor', async () => {
    const { app, rooms, presence } = scene();
    for (const user of ['bob', 'cat', 'dan']) await presence.joinRoom('app1', 'r', { user }, `node.${user}`);
    const page = fakePage(app);
    await expect(rooms.list(page, { t: 'list', ref: 1, room: 'r' })).rejects.toMatchObject({ code: 'not_joined' });
    await rooms.join(page, { t: 'join', ref: 2, room: 'r', token: token({ room: 'r' }) });
    await rooms.list(page, { t: 'list', ref: 3, room: 'r' });
    const listed = page.sent.at(-1);
    expect(listed).toMatchObject({
      t: 'listed',
      ref: 3,
      room: 'r',
      count: 3,
      members: [{ user: 'bob' }, { user: 'cat' }],
    });
    await rooms.list(page, { t: 'list', ref: 4, room: 'r', cursor: listed?.cursor as string });
    expect(page.sent.at(-1)).toEqual({ t: 'listed', ref: 4, room: 'r', count: 3, members: [{ user: 'dan' }] });
  });

  it('leaveAll: leaves every room though one fails, then rejects with that failure', async () => {
    const { app, rooms, deps, recorded } = scene();
    const page = fakePage(app);
    for (const room of ['a', 'b']) await rooms.join(page, { t: 'join', ref: 1, room, token: token({ room }) });
    const removeSeat = deps.hub.removeSeat;
    const failure = new StoreError('unavailable');
    deps.hub.removeSeat = (app, room, seat) => (room === 'a' ? Promise.reject(failure) : removeSeat(app, room, seat));
    await expect(rooms.leaveAll(page)).rejects.toBe(failure);
    expect(page.rooms.size).toBe(0);
    expect(recorded.filter((event) => event.type === 'room.vacated')).toEqual([{ type: 'room.vacated', room: 'b' }]);
  });
});

describe('send', () => {
  it('refuses what the room token does not allow before the emitter sees it', async () => {
    const { app, rooms, sends } = scene();
    const page = fakePage(app);
    const send = (event: string, data?: unknown) => rooms.send(page, { t: 'send', ref: 9, room: 'r', event, data });
    await expect(send('said')).rejects.toEqual(new RoomRefusal('not_joined', 'join the room before sending to it'));
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r', send: ['said'], sealed: true }) });
    await expect(send('$member.joined')).rejects.toMatchObject({ code: 'reserved' });
    await expect(send('other')).rejects.toEqual(
      new RoomRefusal('not_allowed', 'the room token does not allow sending "other"'),
    );
    await expect(send('said', 1)).rejects.toMatchObject({ code: 'not_sealed' });
    expect(sends).toEqual([]);
  });

  it('hands the send to the emitter with what the token keeps and reports, and answers sent with its id', async () => {
    const { app, rooms, sends } = scene();
    const page = fakePage(app);
    const claims = { room: 'r', send: ['*'], history: [10, 1] as [number, number], w: ['said'] };
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token(claims) });
    await rooms.send(page, { t: 'send', ref: 2, room: 'r', event: 'said', data: { a: 1 } });
    expect(sends).toEqual([
      { app, room: 'r', event: 'said', data: { a: 1 }, from: 'ann', origin: 'node.1', keep: [10, 1], report: true },
    ]);
    expect(page.sent.at(-1)).toEqual({ t: 'sent', ref: 2, id: '1700000000000-1' });
  });

  it("answers the emitter's refusals in the page's words", async () => {
    const { app, rooms, emitter } = scene();
    const page = fakePage(app);
    await rooms.join(page, { t: 'join', ref: 1, room: 'r', token: token({ room: 'r', send: ['*'] }) });
    const refusedWith = async (problem: SendRefused['problem']) => {
      emitter.send = () => {
        throw new SendRefused(problem);
      };
      return rooms.send(page, { t: 'send', ref: 2, room: 'r', event: 'said' }).catch((error: unknown) => error);
    };
    expect(await refusedWith('nested')).toEqual(new RoomRefusal('bad_frame', 'data is nested too deeply'));
    expect(await refusedWith('too_large')).toEqual(new RoomRefusal('too_large', 'data is over 1 MB'));
    expect(await refusedWith('not_included')).toEqual(
      new RoomRefusal('not_included', "the app's plan does not include history"),
    );
  });
});
