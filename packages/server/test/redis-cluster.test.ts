/**
 * The Redis Cluster helper works: 3 primaries own every slot, a key goes through a cluster client,
 * a killed primary is replaced by its replica, a reshard moves slots, and close leaves nothing.
 */

import { Socket } from 'node:net';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisCluster, type TestRedisCluster } from './redis-cluster.js';

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(port, '127.0.0.1', () => done(true));
  });
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('a real Redis Cluster for tests', () => {
  let cluster: TestRedisCluster;
  let client: Cluster;

  beforeAll(async () => {
    cluster = await startRedisCluster({ primaries: 3, replicas: 1 });
    const seeds = cluster.ports.map((port) => ({ host: '127.0.0.1', port }));
    client = new Cluster(seeds, { clusterRetryStrategy: () => 100, redisOptions: { maxRetriesPerRequest: 20 } });
  }, 60_000);

  afterAll(async () => {
    client?.disconnect();
    await cluster?.close();
  });

  it('starts 3 primaries that own every slot between them, each with a replica', async () => {
    const nodes = await cluster.nodes();
    const primaries = nodes.filter((node) => node.role === 'primary');
    expect(primaries).toHaveLength(3);
    expect(nodes.filter((node) => node.role === 'replica')).toHaveLength(3);
    const owned = primaries.flatMap((node) => node.slots).reduce((sum, [from, to]) => sum + to - from + 1, 0);
    expect(owned).toBe(16_384);
    for (const primary of primaries) {
      expect(primary.slots.length).toBeGreaterThan(0);
      expect(nodes.some((node) => node.primaryId === primary.id)).toBe(true);
    }
    expect(cluster.urls).toHaveLength(6);
  });

  it('reads back through a cluster client what it wrote, on all three primaries', async () => {
    const owners = new Set<number>();
    for (let i = 0; i < 30; i++) {
      await client.set(`k:{${i}}`, `v${i}`);
      owners.add((await cluster.primaryOf(`k:{${i}}`)).port);
    }
    for (let i = 0; i < 30; i++) expect(await client.get(`k:{${i}}`)).toBe(`v${i}`);
    expect(owners.size).toBe(3);
  });

  it('replaces a killed primary with its replica', async () => {
    const key = 'failover:{a}';
    await client.set(key, 'before');
    // WAIT: the replica has the write before its primary dies.
    const before = await cluster.primaryOf(key);
    await client.wait(1, 2_000);
    const { killed, promoted } = await cluster.killPrimary(key);
    expect(killed.port).toBe(before.port);
    expect(promoted.port).not.toBe(killed.port);
    expect(killed.pid !== undefined && running(killed.pid)).toBe(false);
    expect((await cluster.nodes()).filter((node) => node.role === 'primary')).toHaveLength(3);
    const deadline = Date.now() + 15_000;
    let value: string | null = null;
    while (Date.now() < deadline) {
      value = await client.get(key).catch(() => null);
      if (value === 'before') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(value).toBe('before');
  });

  it('moves slots with a reshard, by count and by slot', async () => {
    const primaries = (await cluster.nodes()).filter((node) => node.role === 'primary');
    const [from, to] = primaries;
    if (!from || !to) throw new Error('two primaries expected');
    const count = (port: number) =>
      cluster
        .nodes()
        .then((nodes) => nodes.find((node) => node.port === port)?.slots ?? [])
        .then((ranges) => ranges.reduce((sum, [a, b]) => sum + b - a + 1, 0));
    const fromBefore = await count(from.port);
    const toBefore = await count(to.port);
    await cluster.reshard(from.port, to.port, 10);
    expect(await count(from.port)).toBe(fromBefore - 10);
    expect(await count(to.port)).toBe(toBefore + 10);

    // One named slot with a key in it: the key follows the slot.
    const key = 'moved:{b}';
    await client.set(key, 'kept');
    const slot = await cluster.slotOf(key);
    const owner = await cluster.primaryOf(slot);
    const target = primaries.find((node) => node.port !== owner.port);
    if (!target) throw new Error('another primary expected');
    await cluster.reshard(owner.port, target.port, [slot]);
    expect((await cluster.primaryOf(slot)).port).toBe(target.port);
    expect(await client.get(key)).toBe('kept');
  });

  it('leaves no process or port after close', async () => {
    const other = await startRedisCluster({ primaries: 3, replicas: 0 });
    const pids = (await other.nodes()).map((node) => node.pid);
    expect(pids.every((pid) => pid !== undefined && running(pid))).toBe(true);
    await other.close();
    for (const pid of pids) expect(running(pid ?? 0)).toBe(false);
    for (const port of other.ports) expect(await answers(port)).toBe(false);
    const { existsSync } = await import('node:fs');
    expect(existsSync(other.dir)).toBe(false);
  }, 60_000);
});
