import type { Member } from '@realtime/protocol';
import { describe, expect, it } from 'vitest';
import { type FakePage, once, stateOf, useFakeService } from '../test/fake-service.js';
import { type JoinedInfo, RealtimeSocketError, type RoomEventMeta, type TruncatedInfo } from './index.js';

const { service, open } = useFakeService();

/** Answers the next join on `page` with `joined`, returning the join frame. */
async function answerJoin(page: FakePage, extra: Record<string, unknown> = {}) {
  const join = await page.next('join');
  page.send({ t: 'joined', ref: join.ref, room: join.room, replay: 0, ...extra });
  return join;
}

function event(room: string, id: string, data: unknown, name = 'chat') {
  return { t: 'event', room, id, event: name, data } as const;
}

describe('joining', () => {
  it('joins once connected, with `last` on the first join, and resolves `joined`', async () => {
    const client = open();
    const room = client.join('lobby', { token: 'room-token', history: 20 });
    expect(room.status).toBe('joining');
    const page = await service().acceptWelcomed();
    const join = await page.next('join');
    expect(join).toEqual({ t: 'join', ref: join.ref, room: 'lobby', token: 'room-token', last: 20 });
    page.send({ t: 'joined', ref: join.ref, room: 'lobby', replay: 2 });
    page.send(event('lobby', '100-0', 'a'));
    expect(await room.joined).toEqual({ room: 'lobby', replay: 2, truncated: false, resumed: false, members: [] });
    expect(room.status).toBe('joined');
    expect(client.room('lobby')).toBe(room);
  });

  it('joins at once when already connected, without `last` unless history is asked', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    await stateOf(client, 'connected');
    client.join('lobby', { token: 't' });
    expect(await page.next('join')).toMatchObject({ room: 'lobby', token: 't' });
    expect(page.received.at(-1)).not.toHaveProperty('last');
    expect(page.received.at(-1)).not.toHaveProperty('since');
  });

  it('calls a token function on every (re)join', async () => {
    let calls = 0;
    const client = open();
    client.join('lobby', { token: async () => `token-${++calls}` });
    const first = await service().acceptWelcomed();
    expect((await answerJoin(first)).token).toBe('token-1');
    first.close(4100);
    const second = await service().acceptWelcomed();
    expect((await answerJoin(second)).token).toBe('token-2');
    await stateOf(client, 'connected');
  });

  it('rejects `joined` with the error code of a refused join, and tells $error', async () => {
    const client = open();
    const room = client.join('vip', { token: 'bad' });
    const told = once<RealtimeSocketError>((resolve) => room.on('$error', resolve));
    const page = await service().acceptWelcomed();
    const join = await page.next('join');
    page.send({ t: 'error', ref: join.ref, room: 'vip', code: 'wrong_room', message: 'issued for another room' });
    await expect(room.joined).rejects.toMatchObject({ code: 'wrong_room', room: 'vip' });
    expect((await told).code).toBe('wrong_room');
    expect(room.status).toBe('failed');
    await expect(room.send('chat', 1)).rejects.toMatchObject({ code: 'wrong_room' });
  });

  it('reports a failing token function as token_failed', async () => {
    const client = open();
    const room = client.join('lobby', {
      token: () => {
        throw new Error('no session');
      },
    });
    await service().acceptWelcomed();
    await expect(room.joined).rejects.toMatchObject({ code: 'token_failed' });
  });

  it('throws at once for a room name or options the service would refuse', () => {
    const client = open();
    expect(() => client.join('', { token: 't' })).toThrow(TypeError);
    expect(() => client.join('$system', { token: 't' })).toThrow(TypeError);
    expect(() => client.join('lobby', { token: '' })).toThrow(TypeError);
    expect(() => client.join('lobby', { token: 't', history: 0 })).toThrow(TypeError);
    expect(() => client.join('lobby', { token: 't', history: 1001 })).toThrow(TypeError);
  });

  it('joining a joined room again sends the new token and gives the same room', async () => {
    const client = open();
    const room = client.join('lobby', { token: 'old' });
    const page = await service().acceptWelcomed();
    await answerJoin(page);
    await room.joined;
    const again = once<JoinedInfo>((resolve) => room.on('$joined', resolve));
    expect(client.join('lobby', { token: 'new' })).toBe(room);
    expect((await answerJoin(page)).token).toBe('new');
    expect(await again).toMatchObject({ resumed: true });
  });
});

describe('events and resume', () => {
  it('delivers room events with their meta, to named and * listeners', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't' });
    const named: [unknown, RoomEventMeta][] = [];
    const all: string[] = [];
    room.on('chat', (data, meta) => named.push([data, meta]));
    room.on('*', (_data, meta) => all.push(meta.event));
    const errors: unknown[] = [];
    room.on('$error', (error) => errors.push(error));
    const page = await service().acceptWelcomed({ user: 'alice' });
    await answerJoin(page);
    page.send({ t: 'event', room: 'lobby', id: '5-0', event: 'chat', data: { text: 'hi' }, from: 'bob' });
    page.send({ t: 'event', room: 'lobby', event: '$error', data: 'spoof' }); // only $member.* pass
    page.send(event('lobby', '5-1', 1, 'other'));
    page.send(event('elsewhere', '5-2', 1)); // a room the page is not in
    await once((resolve) => room.on('other', resolve));
    expect(named).toEqual([[{ text: 'hi' }, { room: 'lobby', event: 'chat', id: '5-0', from: 'bob' }]]);
    expect(all).toEqual(['chat', 'other']);
    expect(errors).toEqual([]);
    expect(room.lastId).toBe('5-1');
  });

  it('re-joins with since = the last id seen, drops replayed events it has, and keeps order', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't', history: 10 });
    const got: string[] = [];
    room.on('chat', (data) => got.push(String(data)));
    const first = await service().acceptWelcomed();
    expect((await answerJoin(first, { replay: 2 })).last).toBe(10);
    first.send(event('lobby', '1000-0', 'a'));
    first.send(event('lobby', '1000-1', 'b'));
    first.send(event('lobby', '1001-0', 'c'));
    await once((resolve) => room.on('chat', (data) => data === 'c' && resolve(data)));
    first.close(4100);

    const second = await service().acceptWelcomed();
    const rejoin = await second.next('join');
    expect(rejoin.since).toBe('1001-0');
    expect(rejoin).not.toHaveProperty('last');
    second.send({ t: 'joined', ref: rejoin.ref, room: 'lobby', replay: 4 });
    // A replay that overlaps what the page saw: only ids after 1001-0 are new.
    second.send(event('lobby', '1000-1', 'b'));
    second.send(event('lobby', '1001-0', 'c'));
    second.send(event('lobby', '1001-1', 'd'));
    second.send(event('lobby', '999-9', 'old'));
    second.send(event('lobby', '1002-0', 'e'));
    second.send(event('lobby', '1002-0', 'e'));
    second.send(event('lobby', '10000-0', 'f')); // more digits: numerically later
    await once((resolve) => room.on('chat', (data) => data === 'f' && resolve(data)));
    expect(got).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(room.lastId).toBe('10000-0');
  });

  it('surfaces truncated: true as $truncated with the id it resumed from', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't' });
    const first = await service().acceptWelcomed();
    await answerJoin(first);
    first.send(event('lobby', '7-0', 'x'));
    await once((resolve) => room.on('chat', resolve));
    first.terminate();
    const truncated = once<TruncatedInfo>((resolve) => room.on('$truncated', resolve));
    const joined = once<JoinedInfo>((resolve) => room.on('$joined', resolve));
    const second = await service().acceptWelcomed();
    expect((await answerJoin(second, { truncated: true, replay: 3 })).since).toBe('7-0');
    expect(await truncated).toEqual({ room: 'lobby', since: '7-0' });
    expect(await joined).toMatchObject({ truncated: true, resumed: true, replay: 3 });
  });

  it('starts from since and epoch given to join (a first view the server rendered), reporting truncated', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't', history: 5, since: '40-0', epoch: 'E1' });
    const truncations: TruncatedInfo[] = [];
    room.on('$truncated', (info) => truncations.push(info));
    const page = await service().acceptWelcomed();
    const join = await answerJoin(page, { epoch: 'E1', replay: 1, resumed: true });
    expect(join).toEqual({ t: 'join', ref: join.ref, room: 'lobby', token: 't', since: '40-0', epoch: 'E1' });
    page.send(event('lobby', '41-0', 'after'));
    expect(await once((resolve) => room.on('chat', resolve))).toBe('after');
    expect(room.lastId).toBe('41-0');
    expect(truncations).toEqual([]);

    // A history that started over since the first view: the service says truncated; the page hears it.
    const other = client.join('hall', { token: 't', since: '7-0', epoch: 'E1' });
    const lost = once<TruncatedInfo>((resolve) => other.on('$truncated', resolve));
    const hall = await answerJoin(page, { epoch: 'E2', truncated: true });
    expect(hall).toMatchObject({ room: 'hall', since: '7-0', epoch: 'E1' });
    expect(await lost).toEqual({ room: 'hall', since: '7-0' });
    expect(other.epoch).toBe('E2');
  });

  it("remembers the room's epoch from joined and resumes with it next to since", async () => {
    const client = open();
    const room = client.join('lobby', { token: 't', history: 5 });
    const truncations: TruncatedInfo[] = [];
    room.on('$truncated', (info) => truncations.push(info));
    const first = await service().acceptWelcomed();
    const firstJoin = await answerJoin(first, { epoch: 'E1' });
    // A first join has no id to resume from: the epoch only goes with `since`.
    expect(firstJoin).not.toHaveProperty('epoch');
    await room.joined;
    expect(room.epoch).toBe('E1');
    first.close(4100);
    const second = await service().acceptWelcomed();
    const noEvents = await answerJoin(second, { epoch: 'E1' });
    expect(noEvents).toMatchObject({ last: 5 });
    expect(noEvents).not.toHaveProperty('epoch');
    second.send(event('lobby', '5-0', 'x'));
    await once((resolve) => room.on('chat', resolve));
    second.close(4100);

    const third = await service().acceptWelcomed();
    const resume = await answerJoin(third, { epoch: 'E1', replay: 1 });
    expect(resume).toEqual({ t: 'join', ref: resume.ref, room: 'lobby', token: 't', since: '5-0', epoch: 'E1' });
    third.send(event('lobby', '6-0', 'y'));
    await once((resolve) => room.on('chat', (data) => data === 'y' && resolve(data)));
    expect(truncations).toEqual([]);
    // A joined without an epoch (a plan without history) leaves nothing to send with the next `since`.
    const refreshed = once<JoinedInfo>((resolve) => room.on('$joined', resolve));
    client.join('lobby', { token: 't2' });
    const refresh = await answerJoin(third);
    expect(refresh).toMatchObject({ token: 't2', since: '6-0', epoch: 'E1' });
    await refreshed;
    expect(room.epoch).toBeUndefined();
    third.close(4100);
    const fourth = await service().acceptWelcomed();
    const plain = await answerJoin(fourth);
    expect(plain.since).toBe('6-0');
    expect(plain).not.toHaveProperty('epoch');
  });

  it('takes a new epoch as lost history: $truncated, and the new stream is delivered though its ids are lower', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't' });
    const got: string[] = [];
    room.on('chat', (data) => got.push(String(data)));
    const truncations: TruncatedInfo[] = [];
    room.on('$truncated', (info) => truncations.push(info));
    const first = await service().acceptWelcomed();
    await answerJoin(first, { epoch: 'E1' });
    first.send(event('lobby', '9000-0', 'a'));
    first.send(event('lobby', '9000-1', 'b'));
    await once((resolve) => room.on('chat', (data) => data === 'b' && resolve(data)));
    first.terminate();

    const joined = once<JoinedInfo>((resolve) => room.on('$joined', resolve));
    const second = await service().acceptWelcomed();
    // Even from a service that does not say truncated itself, a new epoch is a gap.
    const resume = await answerJoin(second, { epoch: 'E2', replay: 2 });
    expect(resume).toMatchObject({ since: '9000-1', epoch: 'E1' });
    expect(await joined).toMatchObject({ truncated: true, resumed: true, replay: 2 });
    second.send(event('lobby', '5000-0', 'c'));
    second.send(event('lobby', '5000-1', 'd'));
    second.send(event('lobby', '5000-1', 'd'));
    await once((resolve) => room.on('chat', (data) => data === 'd' && resolve(data)));
    expect(got).toEqual(['a', 'b', 'c', 'd']);
    expect(truncations).toEqual([{ room: 'lobby', since: '9000-1' }]);
    expect(room.epoch).toBe('E2');
    expect(room.lastId).toBe('5000-1');
    second.close(4100);

    // The service's own truncated flag with a new epoch: told once.
    const third = await service().acceptWelcomed();
    expect(await answerJoin(third, { epoch: 'E3', truncated: true })).toMatchObject({ since: '5000-1', epoch: 'E2' });
    third.send(event('lobby', '100-0', 'e'));
    await once((resolve) => room.on('chat', (data) => data === 'e' && resolve(data)));
    expect(truncations).toEqual([
      { room: 'lobby', since: '9000-1' },
      { room: 'lobby', since: '5000-1' },
    ]);
    expect(got).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('when the plan has no history (not_included), joins again without since and reports the gap', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't' });
    const first = await service().acceptWelcomed();
    await answerJoin(first);
    first.send(event('lobby', '7-0', 'x'));
    await once((resolve) => room.on('chat', resolve));
    first.close(4100);
    const truncated = once<TruncatedInfo>((resolve) => room.on('$truncated', resolve));
    const second = await service().acceptWelcomed();
    const withSince = await second.next('join');
    expect(withSince.since).toBe('7-0');
    second.send({ t: 'error', ref: withSince.ref, room: 'lobby', code: 'not_included', message: 'no history' });
    const plain = await answerJoin(second);
    expect(plain).not.toHaveProperty('since');
    expect(await truncated).toEqual({ room: 'lobby', since: '7-0' });
    expect(room.status).toBe('joined');
  });

  it('leave() sends leave, stops events and re-joins, and ends the room', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't' });
    const page = await service().acceptWelcomed();
    await answerJoin(page);
    await room.joined;
    const left = room.leave();
    const leave = await page.next('leave');
    expect(leave).toEqual({ t: 'leave', ref: leave.ref, room: 'lobby' });
    page.send({ t: 'left', ref: leave.ref, room: 'lobby' });
    await left;
    expect(room.status).toBe('left');
    expect(client.room('lobby')).toBeUndefined();
    await expect(room.send('chat', 1)).rejects.toMatchObject({ code: 'left' });
    page.close(4100);
    await service().acceptWelcomed();
    await stateOf(client, 'connected');
    const next = client.join('other', { token: 't' });
    // The left room is not re-joined: the next join is the other room's.
    const pageAfter = service().pages.at(-1) as FakePage;
    expect((await pageAfter.next('join')).room).toBe('other');
    expect(next).not.toBe(room);
  });
});

describe('sending', () => {
  it('resolves with the id of `sent`, and rejects with the code of an error frame with the same ref', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't' });
    const page = await service().acceptWelcomed();
    await answerJoin(page);
    await room.joined;

    const ok = room.send('chat', { text: 'hi' });
    const send = await page.next('send');
    expect(send).toEqual({ t: 'send', ref: send.ref, room: 'lobby', event: 'chat', data: { text: 'hi' } });
    page.send({ t: 'sent', ref: send.ref, id: '42-0' });
    expect(await ok).toBe('42-0');

    const refused = room.send('shout', 'x');
    const second = await page.next('send');
    page.send({ t: 'error', ref: second.ref, room: 'lobby', code: 'not_allowed', message: 'not in send' });
    const error = await refused.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RealtimeSocketError);
    expect(error).toMatchObject({ code: 'not_allowed', message: 'not in send', room: 'lobby' });

    const empty = room.send('poke');
    const third = await page.next('send');
    expect(third).not.toHaveProperty('data');
    page.send({ t: 'sent', ref: third.ref, id: '43-0' });
    expect(await empty).toBe('43-0');
  });

  it('refuses what the service would refuse without sending it', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't' });
    await expect(room.send('$member.joined', {})).rejects.toMatchObject({ code: 'reserved' });
    await expect(room.send('', {})).rejects.toMatchObject({ code: 'bad_frame' });
    await expect(room.send('chat', { n: 1n })).rejects.toMatchObject({ code: 'bad_data' });
    await expect(room.send('chat', 'x'.repeat(1_048_577))).rejects.toMatchObject({ code: 'too_large' });
  });

  it('queues sends until the room is joined, then writes them in order', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't' });
    const sends = [room.send('chat', 1), room.send('chat', 2), room.send('chat', 3)];
    const page = await service().acceptWelcomed();
    const join = await page.next('join');
    expect(page.unread).toEqual([]); // nothing is sent before the room is joined
    page.send({ t: 'joined', ref: join.ref, room: 'lobby', replay: 0 });
    const written = [await page.next('send'), await page.next('send'), await page.next('send')];
    expect(written.map((frame) => frame.data)).toEqual([1, 2, 3]);
    written.forEach((frame, i) => {
      page.send({ t: 'sent', ref: frame.ref, id: `1-${i}` });
    });
    expect(await Promise.all(sends)).toEqual(['1-0', '1-1', '1-2']);
  });

  it('bounds the outbox: a send over the limit rejects with outbox_full, the others still go', async () => {
    const client = open({ outbox: { maxFrames: 2 } });
    const room = client.join('lobby', { token: 't' });
    const first = room.send('chat', 1);
    const second = room.send('chat', 2);
    await expect(room.send('chat', 3)).rejects.toMatchObject({ code: 'outbox_full' });
    const page = await service().acceptWelcomed();
    await answerJoin(page);
    const a = await page.next('send');
    const b = await page.next('send');
    page.send({ t: 'sent', ref: a.ref, id: '1-0' });
    page.send({ t: 'sent', ref: b.ref, id: '1-1' });
    expect(await Promise.all([first, second])).toEqual(['1-0', '1-1']);
    // Written sends leave the outbox: there is room again.
    const third = room.send('chat', 3);
    const c = await page.next('send');
    page.send({ t: 'sent', ref: c.ref, id: '1-2' });
    expect(await third).toBe('1-2');
  });

  it('bounds the outbox in bytes too', async () => {
    const client = open({ outbox: { maxBytes: 10 } });
    const room = client.join('lobby', { token: 't' });
    void room.send('chat', '12345678').catch(() => {}); // 10 bytes of JSON
    await expect(room.send('chat', 1)).rejects.toMatchObject({ code: 'outbox_full' });
  });

  it('rejects a send written to a socket that is then lost with disconnected; later sends wait for the re-join', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't' });
    const first = await service().acceptWelcomed();
    await answerJoin(first);
    await room.joined;
    const lost = room.send('chat', 'in flight');
    await first.next('send');
    first.close(4100);
    await expect(lost).rejects.toMatchObject({ code: 'disconnected' });
    const later = room.send('chat', 'after');
    const second = await service().acceptWelcomed();
    await answerJoin(second);
    const frame = await second.next('send');
    expect(frame.data).toBe('after');
    second.send({ t: 'sent', ref: frame.ref, id: '9-0' });
    expect(await later).toBe('9-0');
  });

  it('close() rejects waiting sends and pending joins with closed', async () => {
    const client = open();
    const room = client.join('lobby', { token: 't' });
    const waiting = room.send('chat', 1);
    await service().accept();
    client.close();
    await expect(waiting).rejects.toMatchObject({ code: 'closed' });
    await expect(room.joined).rejects.toMatchObject({ code: 'closed' });
    expect(room.status).toBe('left');
    expect(client.join('late', { token: 't' }).status).toBe('left');
  });
});

describe('presence', () => {
  it('keeps members from joined and $member events, each user once', async () => {
    const client = open();
    const room = client.join('team', { token: 't' });
    const events: string[] = [];
    room.on('$member.joined', (member, meta) => events.push(`+${member.user} ${String(meta.id)}`));
    room.on('$member.left', (member) => events.push(`-${member.user}`));
    const page = await service().acceptWelcomed({ user: 'alice' });
    await answerJoin(page, { members: [{ user: 'alice', info: { name: 'Alice' } }, { user: 'bob' }] });
    const info = await room.joined;
    expect(info.members).toEqual([{ user: 'alice', info: { name: 'Alice' } }, { user: 'bob' }]);

    page.send({ t: 'event', room: 'team', event: '$member.joined', data: { user: 'carol' } });
    page.send({ t: 'event', room: 'team', event: '$member.joined', data: { user: 'alice' } }); // already there
    page.send({ t: 'event', room: 'team', event: '$member.left', data: { user: 'bob' } });
    page.send({ t: 'event', room: 'team', event: '$member.left', data: { user: 'bob' } }); // already gone
    page.send({ t: 'event', room: 'team', event: '$member.left', data: { nope: 1 } }); // not a member
    page.send(event('team', '1-0', 'done', 'mark'));
    await once((resolve) => room.on('mark', resolve));
    expect(events).toEqual(['+carol undefined', '-bob']);
    expect(room.members().map((m: Member) => m.user)).toEqual(['alice', 'carol']);
  });

  it('after a reconnect, replaces the members and tells who came and went meanwhile', async () => {
    const client = open();
    const room = client.join('team', { token: 't' });
    const first = await service().acceptWelcomed({ user: 'alice' });
    await answerJoin(first, { members: [{ user: 'alice' }, { user: 'bob' }] });
    await room.joined;
    first.close(4100);
    const events: string[] = [];
    room.on('$member.joined', (member) => events.push(`+${member.user}`));
    room.on('$member.left', (member) => events.push(`-${member.user}`));
    const rejoined = once<JoinedInfo>((resolve) => room.on('$joined', resolve));
    const second = await service().acceptWelcomed({ user: 'alice' });
    await answerJoin(second, { members: [{ user: 'alice' }, { user: 'dave' }] });
    expect((await rejoined).members.map((m) => m.user)).toEqual(['alice', 'dave']);
    expect(events).toEqual(['-bob', '+dave']);
    expect(room.members().map((m) => m.user)).toEqual(['alice', 'dave']);
  });
});
