import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { touchedKeys } from '../../../test/touched-keys.js';
import { groupStoreContract } from '../contract/groups.contract.js';
import { DAY, redisKeys, redisNodes, T0, useRedis } from '../contract/harness.js';
import { StoreError } from '../store-error.js';
import type { GroupLimits, GroupMember } from '../types.js';
import { RedisGroupStore } from './groups.js';

const redis = useRedis();

groupStoreContract(
  'RedisGroupStore, two nodes',
  redisNodes(redis, 'groups', (client) => new RedisGroupStore(client)),
);

describe('RedisGroupStore keys', () => {
  const { open, keys, pttl } = redisKeys(redis, 'group-keys', (client) => new RedisGroupStore(client));

  const member = (page: string): GroupMember => ({ page, user: `u-${page}`, media: ['audio'], joinedAt: T0 });
  /** At most `max` pages, unit mode from `unitFrom`. */
  const limits = (max: number, unitFrom = Number.POSITIVE_INFINITY): GroupLimits => ({ max, unitFrom });

  it('leaves no key of a group behind once its last member left, by leave or by the sweep', async () => {
    const { client, store } = await open();
    const before = (await keys(client)).sort();
    await store.join('app1', 'g', member('na.1'), limits(4, 2));
    await store.join('app1', 'g', member('nb.2'), limits(4, 2));
    await store.join('app1', 'g', member('na.3'), limits(4, 2));
    expect(await client.call((r) => r.exists(client.key('group:{app1:g}:u')))).toBe(1);
    await store.leave('app1', 'g', 'na.1');
    await store.leave('app1', 'g', 'nb.2');
    // A node's set keeps each of its pages that is in a group.
    expect(await client.call((r) => r.smembers(client.key('group:n:{na}')))).toEqual(['["app1","g","na.3"]']);
    await store.leave('app1', 'g', 'na.3');
    expect((await keys(client)).sort()).toEqual(before);
    await store.join('app1', 'h', member('nz.1'), limits(4, 1));
    await store.join('app1', 'h', member('nz.2'), limits(4, 1));
    expect(await store.unit('app1', 'h')).toBe(true);
    expect((await store.takeNode('nz', 10)).length).toBe(2);
    expect((await keys(client)).sort()).toEqual(before);
  });

  it("lets a group's keys expire a week after its last join or leave", async () => {
    const { client, store } = await open();
    const names = ['group:{app1:g}:m', 'group:{app1:g}:o', 'group:{app1:g}:u'];
    await store.join('app1', 'g', member('na.1'), limits(4, 2));
    await store.join('app1', 'g', member('na.2'), limits(4, 2));
    await store.join('app1', 'g', member('na.3'), limits(4, 2));
    for (const name of names) {
      // Shorten what is left, as if days passed: the next change sets a week again.
      await client.call((r) => r.pexpire(client.key(name), DAY));
    }
    await store.leave('app1', 'g', 'na.1');
    for (const name of names) {
      const ttl = await pttl(client, name);
      expect(ttl).toBeGreaterThan(7 * DAY - 60_000);
      expect(ttl).toBeLessThanOrEqual(7 * DAY);
    }
  });

  it('answers nothing for the members of a group that expired, and sweeps what it left in its indexes', async () => {
    const { client, store } = await open();
    const before = (await keys(client)).sort();
    await store.join('app1', 'g', member('na.1'), limits(4, 1));
    await store.join('app1', 'h', member('na.2'), limits(4));
    await store.join('app1', 'h', member('nx.1'), limits(4));
    // The safety net fired (as if the groups outlived their keys); g's mode key outlived the others
    // (it never should: all three expire together), and a new group of that name starts in mesh anyway.
    for (const name of ['group:{app1:g}:m', 'group:{app1:g}:o', 'group:{app1:h}:m', 'group:{app1:h}:o']) {
      await client.call((r) => r.del(client.key(name)));
    }
    expect(await store.members('app1', 'g')).toEqual([]);
    expect(await store.join('app1', 'g', member('nb.1'), limits(1))).toEqual({
      before: [],
      unit: false,
      switched: false,
    });
    expect(await store.leave('app1', 'h', 'na.2')).toBeUndefined();
    // The leave found the page out of h: its name went from na's set; na.1 stays there (g expired under it).
    expect(await client.call((r) => r.smembers(client.key('group:n:{na}')))).toEqual(['["app1","g","na.1"]']);
    expect(await store.takeNode('nx', 10)).toEqual([]);
    expect(await client.call((r) => r.exists(client.key('group:n:{nx}')))).toBe(0);
    await store.leave('app1', 'g', 'nb.1');
    // A live node keeps the name of its page in a dead group until the node itself dies.
    expect(await client.call((r) => r.smembers(client.key('group:n:{na}')))).toEqual(['["app1","g","na.1"]']);
    expect(await store.takeNode('na', 10)).toEqual([]);
    expect((await keys(client)).sort()).toEqual(before);
  });

  it("keeps a group's decisions in its slot and a page's record in its node's", async () => {
    const { client, store } = await open();
    const touched = await touchedKeys(client, async () => {
      await store.join('app1', 'g', member('na.1'), limits(4, 2));
      await store.join('app1', 'g', member('nb.1'), limits(4, 2));
      await store.members('app1', 'g');
      await store.unit('app1', 'g');
      await store.leave('app1', 'g', 'na.1');
      await store.takeNode('nb', 10);
    });
    const bySlot = new Map<number, Set<string>>();
    for (const key of touched) {
      const slot = calculateSlot(key);
      bySlot.set(slot, (bySlot.get(slot) ?? new Set()).add(key.slice(client.prefix.length)));
    }
    expect([...bySlot.values()].map((keys) => [...keys].sort()).sort()).toEqual(
      [['group:{app1:g}:m', 'group:{app1:g}:o', 'group:{app1:g}:u'], ['group:n:{na}'], ['group:n:{nb}']].sort(),
    );
  });

  it('leaves what a node that died between steps recorded to its sweep, which drops it', async () => {
    const { client, store } = await open();
    const before = (await keys(client)).sort();
    // Recorded on the node, then the node died before the join script ran.
    await client.call((r) => r.sadd(client.key('group:n:{nx}'), JSON.stringify(['app1', 'x', 'nx.1'])));
    expect(await store.takeNode('nx', 10)).toEqual([]);
    expect((await keys(client)).sort()).toEqual(before);
  });

  it('fails with a StoreError, never hangs, when Redis cannot be reached', async () => {
    const { client, store } = await open();
    await client.close();
    await expect(store.join('app1', 'g', member('na.1'), limits(4))).rejects.toBeInstanceOf(StoreError);
    await expect(store.leave('app1', 'g', 'na.1')).rejects.toBeInstanceOf(StoreError);
    await expect(store.members('app1', 'g')).rejects.toBeInstanceOf(StoreError);
    await expect(store.unit('app1', 'g')).rejects.toBeInstanceOf(StoreError);
    await expect(store.takeNode('na', 10)).rejects.toBeInstanceOf(StoreError);
  });
});
