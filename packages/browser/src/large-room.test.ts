import { describe, expect, it } from 'vitest';
import { type FakePage, once, useFakeService } from '../test/fake-service.js';
import type { JoinedInfo, MembersChange, Room } from './index.js';

const { service, open } = useFakeService();

async function answerJoin(page: FakePage, extra: Record<string, unknown> = {}) {
  const join = await page.next('join');
  page.send({ t: 'joined', ref: join.ref, room: join.room, replay: 0, ...extra });
  return join;
}

/** Waits until the page has handled everything the fake service sent before. */
async function settled(page: FakePage, room: Room) {
  page.send({
    t: 'event',
    room: 'stadium',
    id: `${Date.now()}-${Math.random().toString().slice(2, 6)}`,
    event: 'mark',
    data: 1,
  });
  await once((resolve) => room.on('mark', resolve));
}

const users = (list: { user: string }[]) => list.map((m) => m.user);

describe('large presence rooms', () => {
  it('keeps the first page, the count and the changes of members frames', async () => {
    const client = open();
    const room = client.join('stadium', { token: 't' });
    const events: string[] = [];
    const changes: MembersChange[] = [];
    room.on('$member.joined', (member) => events.push(`+${member.user}`));
    room.on('$member.left', (member) => events.push(`-${member.user}`));
    room.on('$members', (change) => changes.push(change));
    const page = await service().acceptWelcomed({ user: 'a' });
    await answerJoin(page, { members: [{ user: 'a' }, { user: 'b' }, { user: 'c' }], count: 250, cursor: '3' });
    const info = await room.joined;
    expect(info).toMatchObject({ count: 250 });
    expect(users(info.members)).toEqual(['a', 'b', 'c']);
    expect(room.memberCount).toBe(250);
    expect(room.hasMoreMembers).toBe(true);

    page.send({
      t: 'members',
      room: 'stadium',
      count: 250,
      joined: [{ user: 'd', info: { n: 1 } }],
      left: ['b', 'zz'],
    });
    await settled(page, room);
    // zz was never fetched: no list changed, but the count says where the room is.
    expect(events).toEqual(['-b', '+d']);
    expect(users(room.members())).toEqual(['a', 'c', 'd']);
    expect(room.memberCount).toBe(250);
    expect(changes).toEqual([
      { room: 'stadium', joined: [{ user: 'd', info: { n: 1 } }], left: ['b', 'zz'], count: 250 },
    ]);
  });

  it('fetches the next pages by cursor, never bringing back who left meanwhile', async () => {
    const client = open();
    const room = client.join('stadium', { token: 't' });
    const page = await service().acceptWelcomed({ user: 'a' });
    await answerJoin(page, { members: [{ user: 'a' }], count: 5, cursor: '1' });
    await room.joined;

    const more = room.moreMembers();
    expect(room.moreMembers()).toBe(more); // one page at a time
    const list = await page.next('list');
    expect(list).toEqual({ t: 'list', ref: list.ref, room: 'stadium', cursor: '1' });
    // e leaves while the page is on its way: the page, read before, still has e.
    page.send({ t: 'members', room: 'stadium', count: 4, joined: [], left: ['e'] });
    page.send({
      t: 'listed',
      ref: list.ref,
      room: 'stadium',
      members: [{ user: 'b' }, { user: 'e' }],
      count: 5,
      cursor: '3',
    });
    expect(users(await more)).toEqual(['b']);
    expect(room.hasMoreMembers).toBe(true);

    const last = room.moreMembers();
    const list2 = await page.next('list');
    expect(list2.cursor).toBe('3');
    page.send({ t: 'listed', ref: list2.ref, room: 'stadium', members: [{ user: 'f' }, { user: 'g' }], count: 4 });
    expect(users(await last)).toEqual(['f', 'g']);
    expect(room.hasMoreMembers).toBe(false);
    expect(users(room.members())).toEqual(['a', 'b', 'f', 'g']);
    expect(room.memberCount).toBe(4);
    expect(await room.moreMembers()).toEqual([]);
  });

  it('starts over from the first page after a reconnect, and counts the list again in a small room', async () => {
    const client = open();
    const room = client.join('stadium', { token: 't' });
    const first = await service().acceptWelcomed({ user: 'a' });
    await answerJoin(first, { members: [{ user: 'a' }, { user: 'b' }], count: 300, cursor: '2' });
    await room.joined;
    first.close(4100);
    const rejoined = once<JoinedInfo>((resolve) => room.on('$joined', resolve));
    const second = await service().acceptWelcomed({ user: 'a' });
    await answerJoin(second, { members: [{ user: 'x' }, { user: 'a' }], count: 280, cursor: '9' });
    expect(await rejoined).toMatchObject({ resumed: true, count: 280 });
    expect(users(room.members())).toEqual(['x', 'a']);
    expect(room.memberCount).toBe(280);
    second.close(4100);
    const third = await service().acceptWelcomed({ user: 'a' });
    const small = once<JoinedInfo>((resolve) => room.on('$joined', resolve));
    await answerJoin(third, { members: [{ user: 'a' }] });
    expect((await small).count).toBeUndefined();
    expect(room.memberCount).toBe(1);
    expect(room.hasMoreMembers).toBe(false);
  });
});
