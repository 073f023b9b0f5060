import { randomBytes } from 'node:crypto';

/**
 * A random id for this process among the nodes of a cluster (page ids and leases carry it). Not the
 * pid: every container's service is pid 1.
 */
export function newNodeId(): string {
  return randomBytes(6).toString('base64url');
}
