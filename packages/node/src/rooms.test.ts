import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newApp, type RunningServer, startServer } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Realtime, RealtimeError, roomLabel } from './index.js';
import type { ApiAnswer, HttpMethod, Transport } from './request.js';
import { listRooms, readHistory, readMembers, readRoom } from './rooms.js';

/** A transport that records each request and answers what the test set. */
function fakeTransport(answer: Record<string, unknown>): Transport & { sent: [HttpMethod, string][] } {
  const sent: [HttpMethod, string][] = [];
  return {
    sent,
    signedRequest: async (method, path) => {
      sent.push([method, path]);
      return { ok: true, ...answer } as ApiAnswer;
    },
    close: async () => {},
  };
}

describe('room reads: requests and answers', () => {
  it('builds each path and query, every value percent-encoded, left out when not given', async () => {
    const rooms = fakeTransport({ rooms: [] });
    await listRooms(rooms);
    await listRooms(rooms, { prefix: 'game:/é&x', limit: 5, cursor: 'Z2Ft' });
    expect(rooms.sent).toEqual([
      ['GET', '/service/realtime/rooms'],
      ['GET', '/service/realtime/rooms?prefix=game%3A%2F%C3%A9%26x&cursor=Z2Ft&limit=5'],
    ]);
    const room = fakeTransport({ room: 'a/b', pages: 1, users: 0, kept: 2, epoch: 'e' });
    await readRoom(room, 'a/b');
    await readRoom(room, '..');
    expect(room.sent.map(([, path]) => path)).toEqual([
      '/service/realtime/rooms/a%2Fb',
      '/service/realtime/rooms/%2E%2E',
    ]);
    const members = fakeTransport({ room: 'r', count: 0, members: [] });
    await readMembers(members, 'r', { cursor: '17', limit: 2 });
    expect(members.sent[0]?.[1]).toBe('/service/realtime/rooms/r/members?cursor=17&limit=2');
    const history = fakeTransport({ room: 'r', epoch: 'e', truncated: false, events: [] });
    await readHistory(history, 'r', { since: '1-0', epoch: 'e+/', limit: 10 });
    await readHistory(history, 'r', { last: 5 });
    expect(history.sent.map(([, path]) => path)).toEqual([
      '/service/realtime/rooms/r/history?since=1-0&epoch=e%2B%2F&limit=10',
      '/service/realtime/rooms/r/history?last=5',
    ]);
  });

  it('gives the answer fields typed, the cursor only when there is one', async () => {
    const page = await listRooms(fakeTransport({ rooms: [{ room: 'a', pages: 2, users: 1 }], cursor: 'YQ' }));
    expect(page).toEqual({ rooms: [{ room: 'a', pages: 2, users: 1 }], cursor: 'YQ' });
    const events = [{ id: '1-0', event: 'e', from: 'ann', data: null }];
    expect(await readHistory(fakeTransport({ room: 'r', epoch: 'e', truncated: true, events }), 'r')).toEqual({
      room: 'r',
      epoch: 'e',
      truncated: true,
      events,
    });
  });

  it('fails with bad_answer when an answer is not of the shape the API gives', async () => {
    const cases: [(t: Transport) => Promise<unknown>, Record<string, unknown>][] = [
      [(t) => listRooms(t), { rooms: [{ room: 'a', pages: '2', users: 0 }] }],
      [(t) => listRooms(t), { rooms: [], cursor: 5 }],
      [(t) => readRoom(t, 'a'), { room: 'a', pages: 1, users: 0, kept: 0 }],
      [(t) => readMembers(t, 'a'), { room: 'a', count: 1, members: [{ user: 1 }] }],
      [(t) => readHistory(t, 'a'), { room: 'a', epoch: 'e', truncated: false, events: [{ id: '1-0', event: 'e' }] }],
      [(t) => readHistory(t, 'a'), { room: 'a', epoch: 'e', truncated: 'no', events: [] }],
    ];
    for (const [read, answer] of cases) {
      await expect(read(fakeTransport(answer)), JSON.stringify(answer)).rejects.toMatchObject({
        code: 'bad_answer',
      });
    }
  });

  it('refuses options that are not an object, and room names with a lone surrogate, before sending', async () => {
    const transport = fakeTransport({ rooms: [] });
    await expect(listRooms(transport, 'game' as never)).rejects.toBeInstanceOf(TypeError);
    await expect(readRoom(transport, '\ud800')).rejects.toBeInstanceOf(TypeError);
    await expect(readHistory(transport, 'r', { since: '\udc00' })).rejects.toBeInstanceOf(TypeError);
    expect(transport.sent).toEqual([]);
  });
});

describe('room reads against the real server', () => {
  let server: RunningServer;
  let dataDir: string;
  let realtime: Realtime;
  let bare: Realtime;
  const app = newApp({ name: 'sdk-rooms' });
  const noFeatures = newApp({ name: 'sdk-bare', features: [] });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'realtime-sdk-rooms-'));
    server = await startServer({ host: '127.0.0.1', port: 0, dataDir, apps: [app, noFeatures], logLevel: 'silent' });
    realtime = new Realtime({
      url: server.url,
      key: app.key,
      secret: app.secret,
      localKey: new Uint8Array(32).fill(3),
    });
    bare = new Realtime({ url: server.url, key: noFeatures.key, secret: noFeatures.secret });
  });
  afterAll(async () => {
    await realtime.close();
    await bare.close();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reads kept events page by page, sealed data as sealed, and the room they are in', async () => {
    const room = 'sdk room/é';
    const sealed = realtime.seal(roomLabel(room), { secret: 1 });
    const ids: string[] = [];
    for (const data of [1, 2, sealed]) {
      const kept = await realtime.emit({ rooms: [room], event: 'e', data, history: { [room]: [10, 1] } });
      ids.push(kept[room] as string);
    }
    const first = await realtime.history(room, { last: 3, limit: 2 });
    expect(first.events.map((e) => e.data)).toEqual([1, 2]);
    expect(first.truncated).toBe(false);
    const rest = await realtime.history(room, { cursor: first.cursor });
    expect(rest.cursor).toBeUndefined();
    expect(rest.events).toEqual([{ id: ids[2], event: 'e', data: sealed }]);
    expect(realtime.open(rest.events[0]?.data, roomLabel(room))).toEqual({ secret: 1 });
    expect((await realtime.history(room, { since: ids[0], epoch: first.epoch })).events.map((e) => e.id)).toEqual(
      ids.slice(1),
    );
    expect(await realtime.room(room)).toEqual({ room, pages: 0, users: 0, kept: 3, epoch: first.epoch });
    expect(await realtime.rooms({ prefix: 'sdk' })).toEqual({ rooms: [] });
    expect(await realtime.members(room, { limit: 10 })).toEqual({ room, count: 0, members: [] });
  });

  it("turns the service's refusals into RealtimeError", async () => {
    await expect(bare.members('r')).rejects.toMatchObject({ code: 'not_included', status: 403 });
    await expect(bare.history('r', { last: 5 })).rejects.toMatchObject({ code: 'not_included', status: 403 });
    const refused = await realtime.history('r', { since: '1-0', last: 5 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RealtimeError);
    expect(refused).toMatchObject({ code: 'bad_request', status: 400 });
    await expect(realtime.rooms({ limit: 0 })).rejects.toMatchObject({ code: 'bad_request' });
    await expect(realtime.room('$kept')).rejects.toMatchObject({ code: 'bad_room' });
  });
});
