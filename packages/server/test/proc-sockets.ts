/**
 * What this process holds open, read from /proc (Linux): its sockets and the ports of its UDP ones.
 * Tests run the service in-process, so these are the node's own: a media session that was not
 * released shows here as a socket and a bound UDP port that never go away.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** The inodes of this process's sockets (`socket:[inode]` links in /proc/self/fd). */
export function socketInodes(): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    let link: string;
    try {
      link = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed between the listing and the read (the listing's own descriptor, for one)
    }
    const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
    if (inode !== undefined) inodes.add(inode);
  }
  return inodes;
}

/** The local ports of this process's bound UDP sockets, IPv4 and IPv6 (/proc/net/udp and udp6). */
export function boundUdpPorts(): number[] {
  const mine = socketInodes();
  const ports: number[] = [];
  for (const table of ['/proc/net/udp', '/proc/net/udp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue; // no IPv6 in this kernel
    }
    for (const row of text.split('\n').slice(1)) {
      const fields = row.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode ...
      const local = fields[1];
      const inode = fields[9];
      if (local === undefined || inode === undefined || !mine.has(inode)) continue;
      ports.push(Number.parseInt(local.split(':')[1] ?? '', 16));
    }
  }
  return ports.sort((a, b) => a - b);
}

/** The sockets and UDP ports held now, for comparing before and after. */
export interface Held {
  sockets: Set<string>;
  udpPorts: number[];
}

export function heldNow(): Held {
  return { sockets: socketInodes(), udpPorts: boundUdpPorts() };
}

/**
 * What is held now that was not at `start`: sockets by inode and UDP ports by number. Sets, not
 * counts: an unrelated socket closing meanwhile cannot hide one left open.
 */
export function openedSince(start: Held): { sockets: string[]; udpPorts: number[] } {
  const now = heldNow();
  const before = new Set(start.udpPorts);
  return {
    sockets: [...now.sockets].filter((inode) => !start.sockets.has(inode)),
    udpPorts: now.udpPorts.filter((port) => !before.has(port)),
  };
}
