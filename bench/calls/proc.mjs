// CPU time of process trees read from /proc (Linux): a Chromium browser is many processes (browser,
// GPU, network, one renderer per page), so its cost is the sum over the tree under its root.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux (getconf CLK_TCK)

/** pid -> { ppid, comm, ticks (utime + stime) } of every process now. */
function processes() {
  const all = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'latin1');
    } catch {
      continue; // gone since the listing
    }
    // comm is in parentheses and may hold spaces: the fields after the last ')' are fixed.
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    all.set(Number(name), { ppid: Number(fields[1]), comm, ticks: Number(fields[11]) + Number(fields[12]) });
  }
  return all;
}

/** The direct children of `pid` now. */
export function childrenOf(pid) {
  const out = [];
  for (const [child, p] of processes()) if (p.ppid === pid) out.push(child);
  return out;
}

/** CPU seconds (user + system) used so far by `root` and every process under it that still lives. */
export function treeCpuSeconds(root) {
  const all = processes();
  const under = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, p] of all) {
      if (!under.has(pid) && under.has(p.ppid)) {
        under.add(pid);
        grew = true;
      }
    }
  }
  let ticks = 0;
  for (const pid of under) ticks += all.get(pid)?.ticks ?? 0;
  return ticks / TICKS_PER_SECOND;
}
