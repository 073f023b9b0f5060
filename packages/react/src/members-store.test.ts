import { describe, expect, it } from 'vitest';
import { answerJoin, until, withFakeService } from '../test/fake-clients.js';
import { membersStore } from './members-store.js';

const { service, open } = withFakeService();

const users = (members: readonly { user: string }[]) => members.map((member) => member.user).sort();

describe('membersStore', () => {
  it('keeps one array while nobody changed, and tells each join, leave and re-join after a reconnect', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    const room = client.join('lobby', { token: 't' });
    const store = membersStore(room);
    let told = 0;
    const off = store.subscribe(() => told++);
    await answerJoin(page, [{ user: 'ann' }, { user: 'bob' }]);
    const has = (...expected: string[]) =>
      until(store.subscribe, () => users(store.snapshot()).join() === expected.join(), `members ${expected}`);
    await has('ann', 'bob');
    const both = store.snapshot();
    expect(store.snapshot()).toBe(both);
    expect(told).toBeGreaterThan(0);

    page.send({ t: 'event', room: 'lobby', event: '$member.joined', data: { user: 'cat', info: { name: 'Cat' } } });
    await has('ann', 'bob', 'cat');
    expect(store.snapshot().find((member) => member.user === 'cat')).toEqual({ user: 'cat', info: { name: 'Cat' } });
    page.send({ t: 'event', room: 'lobby', event: '$member.left', data: { user: 'bob' } });
    await has('ann', 'cat');

    // While the page was away bob came back and cat went: the re-join's list replaces the old one.
    page.close(4100);
    await answerJoin(await service().acceptWelcomed(), [{ user: 'ann' }, { user: 'bob' }]);
    await has('ann', 'bob');
    off();
  });

  it('gives the same array to reads before any subscription while nothing changed, a new one after a change', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    const room = client.join('lobby', { token: 't' });
    const store = membersStore(room);
    expect(store.snapshot()).toEqual([]);
    expect(store.snapshot()).toBe(store.snapshot());
    await answerJoin(page, [{ user: 'ann' }]);
    await until(
      (onChange) => room.on('$joined', onChange),
      () => room.status === 'joined',
      'joined',
    );
    // Nobody was subscribed when the members came: the next read still sees them.
    const read = store.snapshot();
    expect(users(read)).toEqual(['ann']);
    expect(store.snapshot()).toBe(read);
  });
});
