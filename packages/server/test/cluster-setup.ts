/**
 * Global setup of the `redis-cluster` vitest project: one real Redis Cluster (3 primaries, 1 replica
 * each, random ports on 127.0.0.1) for every file of the run, which share it by key prefix. Tests that
 * kill or move shards start clusters of their own.
 */
import type { TestProject } from 'vitest/node';
import { startRedisCluster } from './redis-cluster.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await startRedisCluster({ primaries: 3, replicas: 1 });
  project.provide('redisCluster', cluster.urls);
  return () => cluster.close();
}
