import { randomBytes } from 'node:crypto';

/**
 * A random id for this process among the nodes of a cluster (page ids and leases carry it). Not the
 * pid: every container's service is pid 1.
 */
export function newNodeId(): string {
  return randomBytes(6).toString('base64url');
}

/** The node a page id belongs to: page ids are `<node>.<counter>` (node ids hold no '.'). */
export function nodeOfPage(page: string): string {
  const dot = page.indexOf('.');
  return dot < 0 ? page : page.slice(0, dot);
}
