import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import { Realtime, type RoomTokenOptions } from '@realtime/node';
import { CLOSE, type HistoryRule } from '@realtime/protocol';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_FEATURES } from '../src/apps/defaults.js';
import { Departures } from '../src/core/departures.js';
import { Emitter } from '../src/core/emit.js';
import { MemoryEventSink } from '../src/core/events.js';
import { Hub } from '../src/core/hub.js';
import { openEmbeddedEngine } from '../src/engines/embedded.js';
import type { HistoryStore } from '../src/engines/types.js';
import type { Connection } from '../src/gateway/connection.js';
import type { GatewayDeps } from '../src/gateway/context.js';
import { join as joinRoom } from '../src/rooms/room-module.js';
import { answerPings, compareIds, type Frame, roomEvents, waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, isEvent, type RawPage } from './pages.js';

/**
 * Resume: a page that lost its socket joins again with `since` and gets what it missed, once each,
 * in order, before live events. Short heartbeats let the service itself cut off a page that stops
 * answering (4101), which is how a dropped network looks from the service's side.
 */
describe('page gateway: history replay and resume', () => {
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  let ref = 0;

  /** A page with an identity; it answers the service's pings unless `answering` is false. */
  const open = async (user: string, answering = true) => {
    const p = await helloPage(server.url, server.app.key, await sdk.identityToken(user));
    if (answering) answerPings(p);
    pages.push(p);
    return p;
  };

  /** Sends a join now; the answer (joined or error) is awaited by the caller. */
  const sendJoin = async (p: RawPage, room: string, extra: Frame = {}, rules: RoomTokenOptions = {}) => {
    const r = ++ref;
    p.send({ t: 'join', ref: r, room, token: await sdk.roomToken(room, rules), ...extra });
    return () => p.next((f) => f.ref === r && (f.t === 'joined' || f.t === 'error'), `joined ${room}`);
  };
  const join = async (p: RawPage, room: string, extra: Frame = {}, rules: RoomTokenOptions = {}) =>
    (await sendJoin(p, room, extra, rules))();

  /** Emits `count` kept events in one batch; resolves with their ids, in order. */
  const emitKept = async (room: string, event: string, count: number, rule: HistoryRule, from = 0) => {
    const answers = await sdk.emitBatch(
      Array.from({ length: count }, (_, i) => ({ rooms: [room], event, data: from + i, history: { [room]: rule } })),
    );
    return answers.map((ids) => ids[room] as string);
  };

  /** Waits until the page is gone on the service's side too. */
  const gone = async (before: number) => waitFor(() => server.pages() === before - 1, 'the service to drop the page');

  beforeAll(async () => {
    server = await startTestServer({ gateway: { heartbeatMs: 100, silenceMs: 400 } });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
  });

  it('a page cut off by the service (4101) resumes with since: the 50 missed events once each, in order, then live', async () => {
    const room = 'resume-cut';
    const rule: HistoryRule = [200, 1];
    const first = await open('ann', false);
    expect(await join(first, room)).toMatchObject({ t: 'joined', replay: 0 });
    const seen = await emitKept(room, 'before', 3, rule);
    const third = await first.next((f) => isEvent('before', room)(f) && f.data === 2, 'the third event');
    expect(third.id).toBe(seen[2]);
    const lastSeen = third.id as string;

    // The page stops answering pings: the service closes it.
    const open0 = server.pages();
    expect((await first.closed).code).toBe(CLOSE.heartbeatTimeout);
    await gone(open0);

    const missed = await emitKept(room, 'missed', 50, rule);
    expect(new Set(missed).size).toBe(50);

    const second = await open('ann');
    const answer = await sendJoin(second, room, { since: lastSeen });
    // A live event emitted right after the join was sent, kept too: it must come after the 50 either way
    // (replayed if the service took it before the join, live if after).
    const live = await sdk.emit({ rooms: [room], event: 'live', data: 'after-join', history: { [room]: rule } });
    const joined = await answer();
    expect(joined).toMatchObject({ t: 'joined', room });
    expect(joined).not.toHaveProperty('truncated');
    expect([50, 51]).toContain(joined.replay);
    await second.next(isEvent('live', room), 'the live event');
    // One more, not kept, once the join is done: it comes last.
    await sdk.emit({ rooms: [room], event: 'live2', data: 'later' });
    await second.next(isEvent('live2', room), 'the second live event');

    const got = roomEvents(second, room);
    expect(got.map((f) => f.id)).toEqual([...missed, live[room], got.at(-1)?.id]);
    expect(got.slice(0, 50).map((f) => f.data)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(got.slice(0, 50).every((f) => f.event === 'missed')).toBe(true);
    expect(got.slice(50).map((f) => f.event)).toEqual(['live', 'live2']);
    // joined came before every event of the room.
    const joinedAt = second.frames.indexOf(joined);
    expect(second.frames.findIndex((f) => f.t === 'event' && f.room === room)).toBeGreaterThan(joinedAt);
    // Nothing it had seen before the cut came again.
    expect(got.some((f) => seen.includes(f.id as string))).toBe(false);
  });

  it('beyond the kept window: joined.truncated is true and what is kept arrives, in order', async () => {
    const room = 'resume-truncated';
    const rule: HistoryRule = [20, 1];
    const first = await open('ben');
    await join(first, room);
    const [seenId] = await emitKept(room, 'before', 1, rule);
    expect((await first.next(isEvent('before', room))).id).toBe(seenId);

    // A dropped network this time: the client side goes away without a close handshake.
    const open0 = server.pages();
    first.ws.terminate();
    await gone(open0);

    const missed = await emitKept(room, 'missed', 50, rule);
    const second = await open('ben');
    const joined = await join(second, room, { since: seenId });
    expect(joined).toMatchObject({ t: 'joined', room, truncated: true, replay: 20 });
    await waitFor(() => roomEvents(second, room).length >= 20, 'the 20 kept events');
    await sdk.emit({ rooms: [room], event: 'live', data: 1 });
    await second.next(isEvent('live', room));
    const got = roomEvents(second, room);
    expect(got.map((f) => f.id)).toEqual([...missed.slice(30), got.at(-1)?.id]);
    expect(got.slice(0, 20).map((f) => f.data)).toEqual(Array.from({ length: 20 }, (_, i) => 30 + i));
  });

  it('last: N on a first join gives the last N kept events, oldest first, then live ones', async () => {
    const room = 'resume-last';
    const ids = await emitKept(room, 'kept', 30, [100, 1]);
    const p = await open('cora');
    expect(await join(p, room, { last: 10 })).toMatchObject({ t: 'joined', replay: 10 });
    expect(await join(p, `${room}-none`, { last: 10 })).toMatchObject({ t: 'joined', replay: 0 });
    await sdk.emit({ rooms: [room], event: 'live', data: 'x' });
    await p.next(isEvent('live', room));
    const got = roomEvents(p, room);
    expect(got.map((f) => f.id)).toEqual([...ids.slice(20), got.at(-1)?.id]);
    expect(got.slice(0, 10).map((f) => f.data)).toEqual([20, 21, 22, 23, 24, 25, 26, 27, 28, 29]);
    expect(roomEvents(p, `${room}-none`)).toEqual([]);

    // More than is kept: everything kept (the live one was not), not truncated.
    const q = await open('cora');
    const all = await join(q, room, { last: 1000 });
    expect(all).toMatchObject({ replay: 30 });
    expect(all).not.toHaveProperty('truncated');
    await waitFor(() => roomEvents(q, room).length === 30, 'the 30 kept events');
    expect(roomEvents(q, room).map((f) => f.id)).toEqual(ids);
  });

  it('since: an id newer than everything gives nothing and is not truncated; an old id gives all that is kept', async () => {
    const room = 'resume-edges';
    const ids = await emitKept(room, 'kept', 5, [100, 1]);
    const p = await open('dora');
    const future = `${Date.now() + 3_600_000}-0`;
    const joined = await join(p, room, { since: future });
    expect(joined).toMatchObject({ t: 'joined', replay: 0 });
    expect(joined).not.toHaveProperty('truncated');
    // Still seated: live events come.
    await sdk.emit({ rooms: [room], event: 'live', data: 1 });
    await p.next(isEvent('live', room));
    expect(roomEvents(p, room).map((f) => f.event)).toEqual(['live']);

    // An id older than the room: every kept event; truncated, since the 'live' event after it was
    // never kept and cannot be replayed.
    const q = await open('dora');
    const fromStart = await join(q, room, { since: '0-0' });
    expect(fromStart).toMatchObject({ replay: 5, truncated: true });
    await waitFor(() => roomEvents(q, room).length === 5, 'the 5 kept events');
    expect(roomEvents(q, room).map((f) => f.id)).toEqual(ids);

    // A room that never kept anything: a page resumes from the id of the last (unkept) event it saw
    // there, with or without the epoch, and missed nothing.
    const never = 'resume-never-kept';
    const seen = await join(q, never);
    expect(seen).toMatchObject({ replay: 0 });
    await sdk.emit({ rooms: [never], event: 'live', data: 'unkept' });
    const last = (await q.next(isEvent('live', never))).id;
    expect(seen.epoch).toEqual(expect.any(String));
    for (const extra of [{ since: last }, { since: last, epoch: seen.epoch }]) {
      const empty = await join(q, never, extra);
      expect(empty).toMatchObject({ replay: 0 });
      expect(empty).not.toHaveProperty('truncated');
    }
  });

  it('live events arriving while pages resume are neither lost nor duplicated', async () => {
    const room = 'resume-flood';
    const rule: HistoryRule = [1000, 1];
    const initial = await emitKept(room, 'initial', 10, rule);
    const since = initial[4] as string;

    const sender = await open('sender');
    await join(sender, room, {}, { send: ['msg'], history: rule });
    const readers = await Promise.all([1, 2, 3, 4].map(() => open('reader')));

    // 80 emits and 40 page sends, all kept, while four pages join at different moments of the flood.
    const emits: Promise<string>[] = [];
    const answers: (() => Promise<Frame>)[] = [];
    answers.push(await sendJoin(readers[0] as RawPage, room, { since }));
    for (let i = 0; i < 40; i++) sender.send({ t: 'send', ref: 10_000 + i, room, event: 'msg', data: i });
    for (let i = 0; i < 80; i++) {
      emits.push(
        sdk.emit({ rooms: [room], event: 'flood', data: i, history: { [room]: rule } }).then((ids) => ids[room] ?? ''),
      );
      if (i === 10 || i === 40 || i === 70) {
        await emits[i];
        answers.push(await sendJoin(readers[answers.length] as RawPage, room, { since }));
      }
    }
    const emitted = await Promise.all(emits);
    await waitFor(() => sender.frames.filter((f) => f.t === 'sent').length === 40, 'the 40 sent answers');
    const sent = sender.frames.filter((f) => f.t === 'sent').map((f) => f.id as string);
    const expected = [...initial.slice(5), ...emitted, ...sent].sort(compareIds);
    expect(new Set(expected).size).toBe(5 + 80 + 40);

    for (const [i, reader] of readers.entries()) {
      const joined = await (answers[i] as () => Promise<Frame>)();
      expect(joined).toMatchObject({ t: 'joined' });
      await waitFor(() => roomEvents(reader, room).length >= expected.length, `reader ${i} to get every event`);
      const got = roomEvents(reader, room).map((f) => f.id as string);
      // Exactly once each, in id order: the replayed ones, then the live ones, with no gap and no repeat.
      expect(got).toEqual(expected);
      expect(joined.replay).toBeGreaterThanOrEqual(5);
    }
    // The sender never gets its own sends back.
    expect(sender.frames.some((f) => f.t === 'event' && f.event === 'msg')).toBe(false);
  });
});

/** The payload of a text frame as the service frames it (FIN, opcode 1, unmasked). */
function unframe(frame: Buffer): Frame {
  const length = frame[1] ?? 0;
  const header = length < 126 ? 2 : length === 126 ? 4 : 10;
  return JSON.parse(frame.subarray(header).toString()) as Frame;
}

/**
 * The window between taking a seat and reading history. With the embedded engines nothing can happen
 * in it (the history read is synchronous), so no test over a socket reaches it; with an engine whose
 * reads wait (a network store), live events do arrive there. Here the history read waits for the test.
 */
describe('join: live events that arrive while history is read', () => {
  const dataDir = mkdtempSync(joinPath(tmpdir(), 'realtime-replay-'));
  const engine = openEmbeddedEngine({ dataDir, log: pino({ level: 'silent' }) });
  const store = engine.history;
  const broker = engine.broker;
  const hub = new Hub<Connection>(broker);
  const emitter = new Emitter({ node: engine.node, broker, now: Date.now });
  const app = { key: 'app_replay', secret: 'replay-secret', name: 'replay', webhook: '', features: [...ALL_FEATURES] };
  const sdk = new Realtime({ url: 'http://127.0.0.1:9', key: app.key, secret: app.secret });
  const rule: HistoryRule = [1000, 1];

  /** A history store whose `since` and `last` wait until `release` is called, after telling `entered`. */
  function pausingHistory() {
    let release = () => {};
    let entered = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const history: HistoryStore = {
      append: (...args) => store.append(...args),
      nextId: (...args) => store.nextId(...args),
      since: async (...args) => {
        entered();
        await gate;
        return store.since(...args);
      },
      last: async (...args) => {
        entered();
        await gate;
        return store.last(...args);
      },
      count: (...args) => store.count(...args),
      prune: (...args) => store.prune(...args),
      removeApp: (...args) => store.removeApp(...args),
      close: () => {},
    };
    return { history, inside, release };
  }

  function fakePage(id: string) {
    const frames: Frame[] = [];
    const page = {
      id,
      app,
      user: 'reader',
      info: undefined,
      state: 'open',
      rooms: new Map(),
      asks: new Set(),
      deliver: (frame: Buffer) => frames.push(unframe(frame)),
      paced: async () => {},
      replayLimit: 4 * 1_048_576,
      slow: () => {},
      close: () => {},
      send: (value: object) => frames.push(JSON.parse(JSON.stringify(value)) as Frame),
    };
    return { conn: page as unknown as Connection, frames };
  }

  // A join reads neither the emitter nor user presence: the deps leave them out.
  const deps = (history: HistoryStore): GatewayDeps =>
    ({
      node: engine.node,
      apps: { get: () => app } as unknown as GatewayDeps['apps'],
      hub,
      broker,
      history,
      presence: engine.presence,
      departures: new Departures({
        node: engine.node,
        presence: engine.presence,
        broker,
        events: new MemoryEventSink(),
        log: pino({ level: 'silent' }),
        now: Date.now,
        holds: () => true,
      }),
      log: pino({ level: 'silent' }),
      now: Date.now,
      traffic: { deliveries: 0, bytesOut: 0, slowConsumerCloses: 0, framesRateLimited: 0 },
    }) as unknown as GatewayDeps;
  const emit = async (room: string, event: string, data: unknown, keep = true) =>
    (
      await emitter.emit(app.key, {
        rooms: [room],
        users: [],
        event,
        data: JSON.stringify(data),
        history: new Map(keep ? [[room, rule]] : []),
      })
    )[room] as string;

  afterAll(async () => {
    await sdk.close();
    await engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('since: kept events that came during the read arrive once, in order, after joined; later ones live', async () => {
    const room = 'window-since';
    const before: string[] = [];
    for (let i = 0; i < 5; i++) before.push(await emit(room, 'before', i));
    const { history, inside, release } = pausingHistory();
    const { conn, frames } = fakePage('window-1');
    const joining = joinRoom(deps(history), conn, {
      t: 'join',
      ref: 1,
      room,
      token: await sdk.roomToken(room),
      since: before[1] as string,
    });
    await inside;
    // Seated and reading history: these are both kept (so replayed) and published to the seat.
    const during: string[] = [];
    for (let i = 0; i < 5; i++) during.push(await emit(room, 'during', i));
    // And one the room does not keep, after the kept ones: only the seat has it.
    await emit(room, 'unkept', 0, false);
    expect(frames).toEqual([]);
    release();
    await joining;
    const after = await emit(room, 'after', 0);

    expect(frames[0]).toMatchObject({ t: 'joined', ref: 1, room, replay: 8 });
    expect(frames.slice(1).map((f) => f.event)).toEqual([
      ...Array(3).fill('before'),
      ...Array(5).fill('during'),
      'unkept',
      'after',
    ]);
    const ids = frames.slice(1).map((f) => f.id as string);
    expect(ids.filter((_, i) => i !== 8)).toEqual([...before.slice(2), ...during, after]);
    expect([...ids].sort(compareIds)).toEqual(ids);
  });

  it('last: the same for a first join with last', async () => {
    const room = 'window-last';
    for (let i = 0; i < 5; i++) await emit(room, 'before', i);
    const { history, inside, release } = pausingHistory();
    const { conn, frames } = fakePage('window-2');
    const joining = joinRoom(deps(history), conn, {
      t: 'join',
      ref: 2,
      room,
      token: await sdk.roomToken(room),
      last: 3,
    });
    await inside;
    const during = [await emit(room, 'during', 0), await emit(room, 'during', 1)];
    release();
    await joining;
    expect(frames[0]).toMatchObject({ t: 'joined', replay: 3 });
    // The last 3 kept when history was read are the newest: one from before and the two that came.
    expect(frames.slice(1).map((f) => f.event)).toEqual(['before', 'during', 'during']);
    expect(frames.slice(2).map((f) => f.id)).toEqual(during);
  });
});
