/**
 * Links of limited capacity for the browser tests (as root): each link is a network namespace joined
 * to this one by a veth pair, with a `tc` token bucket on the outer end (what goes into the namespace:
 * the downlink of a page there), and a Chromium started inside it. Only 10.231.0.0/16 addresses are
 * used, and no interface but the pairs made here is touched.
 *
 * Link K has 10.231.K.1/24 outside and 10.231.K.2/24 inside, with a default route via 10.231.K.1.
 * Every outer address is an address of this machine, so from any namespace the first link's outer
 * address (`address`) reaches a service bound on it; a page outside reaches it over loopback.
 *
 * What the bucket does to WebRTC (measured with Chromium 156, defaults below): a 300 kbit/s link
 * shows about 275 kbit/s in the receiver's candidate-pair `bytesReceived` (which leaves out IP and
 * UDP headers); a stream of about 245 kbit/s (video and audio) plays through it without a freeze,
 * keyframes and all, with 160-190 ms of round trip; one of about 300 kbit/s or more loses packets,
 * and keyframes larger than the bucket and queue hold never arrive whole.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { chromiumPath, closeChromium, launchChromium } from './chromium.js';

/** Every `ip` or `tc` call is killed after this long. */
const COMMAND_TIMEOUT_MS = 5_000;
/**
 * Namespaces are `rtshape-<pid>-<n>`, their veth ends `vnic<pid>-<n>` outside and `rtsh<pid>-<n>`
 * inside. Chromium's WebRTC leaves out interfaces named `vnic*` (as it does VMware's), so a Chromium
 * outside the links, in this test file or any other running at once, never gathers a 10.231 address
 * nor sends media from one; the inner end must be named otherwise, or the Chromium inside would have
 * no address at all.
 */
const NAMESPACE = /^rtshape-(\d+)-(\d+)$/;
const VETH = /^(?:vnic|rtsh)(\d+)-(\d+)$/;
/** Links one call may ask for; each process starts looking for free subnets at its own block of this many. */
const MAX_LINKS = 8;

type Tool = 'ip' | 'tc';

/** Runs `ip` or `tc`, bounded; rejects with its stderr when it fails. */
function run(tool: Tool, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(tool, args, { timeout: COMMAND_TIMEOUT_MS, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${tool} ${args.join(' ')}: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
  });
}

/** The same, synchronous and never throwing: for cleanup on the way out of the process. */
function runQuietly(tool: Tool, args: readonly string[]): void {
  try {
    execFileSync(tool, args, { timeout: COMMAND_TIMEOUT_MS, killSignal: 'SIGKILL', stdio: 'ignore' });
  } catch {
    // Already gone, or nothing more to do on the way out.
  }
}

/** Whether this machine can make links: root, with `ip` (and network namespaces) and `tc`. */
export function canShape(): { ok: true } | { ok: false; reason: string } {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'shaping a link needs root (network namespaces and tc)' };
  for (const [tool, args] of [
    ['ip', ['netns', 'list']],
    ['tc', ['-V']],
  ] as const) {
    try {
      execFileSync(tool, args, { timeout: COMMAND_TIMEOUT_MS, killSignal: 'SIGKILL', stdio: 'ignore' });
    } catch (error) {
      return { ok: false, reason: `\`${tool} ${args.join(' ')}\` failed: ${(error as Error).message}` };
    }
  }
  return { ok: true };
}

/** Whether a process of that id runs (on this machine, whose pid namespace vitest's workers share). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** This process's namespaces and veth ends that still exist (none once its links are closed). */
export async function ownLeftovers(): Promise<string[]> {
  const ours = (pattern: RegExp) => (name: string) => pattern.exec(name)?.[1] === String(process.pid);
  return [...(await namespaces()).filter(ours(NAMESPACE)), ...(await vethEnds()).filter(ours(VETH))];
}

/** The names of this namespace's veth ends (`N: name@peer: <FLAGS> ...`). */
async function vethEnds(): Promise<string[]> {
  return (await run('ip', ['-o', 'link', 'show', 'type', 'veth']))
    .split('\n')
    .flatMap((line) => line.split(':')[1]?.trim().split('@')[0] || []);
}

async function namespaces(): Promise<string[]> {
  // `ip netns list` prints `name` or `name (id: N)`.
  return (await run('ip', ['netns', 'list'])).split('\n').flatMap((line) => line.split(' ')[0] || []);
}

/** Namespaces and veth ends made here: removed on the way out even when a test never got to close. */
const made = new Set<string>();
let exitHook = false;
function removeOnExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const name of made) {
      if (NAMESPACE.test(name)) runQuietly('ip', ['netns', 'del', name]);
      else runQuietly('ip', ['link', 'del', name]);
    }
  });
}

/**
 * Removes what runs of dead processes left (and what an earlier process with this pid left): their
 * namespaces, and veth pairs not yet moved into one. A living process's links are left alone.
 */
async function removeLeftovers(): Promise<void> {
  const stale = (pid: string | undefined, name: string) =>
    pid !== undefined && !made.has(name) && (Number(pid) === process.pid || !alive(Number(pid)));
  for (const name of await namespaces()) {
    if (stale(NAMESPACE.exec(name)?.[1], name)) await run('ip', ['netns', 'del', name]).catch(() => {});
  }
  for (const name of await vethEnds()) {
    if (stale(VETH.exec(name)?.[1], name)) await run('ip', ['link', 'del', name]).catch(() => {});
  }
}

/** The third octets of 10.231.x.y addresses on this namespace's interfaces. */
async function subnetsInUse(): Promise<Set<number>> {
  const used = new Set<number>();
  for (const match of (await run('ip', ['-o', '-4', 'addr', 'show'])).matchAll(/inet 10\.231\.(\d+)\./g)) {
    used.add(Number(match[1]));
  }
  return used;
}

/** How the token bucket on a link is set. */
export interface RateOptions {
  /** Bytes that may pass at line rate after an idle spell (the bucket); default 4,000 (a few packets). */
  burstBytes?: number;
  /** The longest a packet waits in the queue before it is dropped (ms); default 200. */
  queueMs?: number;
}

const DEFAULT_BURST_BYTES = 4_000;
const DEFAULT_QUEUE_MS = 200;

export interface ShapedLink {
  /** The network namespace. */
  namespace: string;
  /** The veth end outside (its egress is the namespace's downlink), 10.231.K.1 on it. */
  device: string;
  /** 10.231.K.1: this machine's end of the link. */
  outer: string;
  /** 10.231.K.2: the address pages in the namespace have (their ICE host candidate). */
  inner: string;
  /**
   * Limits what goes into the namespace to `kbit` kbit/s (a tbf: `tc qdisc replace`, so it sets or
   * changes), or lifts the limit with undefined. The way out of the namespace is never limited.
   */
  rate(kbit: number | undefined, options?: RateOptions): Promise<void>;
  /**
   * A Chromium (see ./chromium.ts's launchChromium) running inside the namespace. `secureOrigins`
   * (e.g. `http://10.231.1.1:8080`) are treated as secure contexts, as pages there need.
   */
  launchChromium(options?: {
    media?: boolean;
    videoFile?: string;
    nice?: number;
    secureOrigins?: readonly string[];
  }): Promise<Browser>;
}

export interface ShapedLinks {
  links: ShapedLink[];
  /** The first link's outer address: a service bound here is reachable from every namespace and from this one. */
  address: string;
  /** Closes the Chromiums launched in the links, then removes the namespaces (and so the veth pairs) and temp files. Safe twice. */
  close(): Promise<void>;
}

/** Chromium's flag making `origins` secure contexts (so a page served from a 10.231 address may use the camera). */
export function secureOriginsFlag(origins: readonly string[]): string {
  return `--unsafely-treat-insecure-origin-as-secure=${origins.join(',')}`;
}

let created = 0;

/**
 * Makes `count` links (see the module comment). Needs root: check {@link canShape} first. Leftovers
 * of dead runs are removed first; each process starts at its own block of subnets, and a subnet any
 * interface here already uses is skipped.
 */
export async function shapedLinks(count: number): Promise<ShapedLinks> {
  if (!Number.isInteger(count) || count < 1 || count > MAX_LINKS)
    throw new RangeError(`count must be 1 to ${MAX_LINKS}`);
  const shaping = canShape();
  if (!shaping.ok) throw new Error(shaping.reason);
  removeOnExit();
  await removeLeftovers();

  const links: ShapedLink[] = [];
  const browsers = new Set<Browser>();
  /** Every namespace and outer veth end begun, made whole or not. */
  const begun: Array<{ namespace: string; device: string }> = [];
  const remove = async ({ namespace, device }: { namespace: string; device: string }) => {
    await run('ip', ['netns', 'del', namespace]).catch(() => {});
    // Gone with the namespace; removed by name in case the pair never got there.
    await run('ip', ['link', 'del', device]).catch(() => {});
    made.delete(namespace);
    made.delete(device);
  };
  const scripts = mkdtempSync(join(tmpdir(), 'rtshape-'));
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      // A namespace outlives `ip netns del` while a process runs in it: its Chromiums end first.
      await Promise.all([...browsers].map((browser) => closeChromium(browser)));
      browsers.clear();
      for (const names of begun) await remove(names);
      rmSync(scripts, { recursive: true, force: true });
    })();
    return closed;
  };

  try {
    // Blocks of MAX_LINKS subnets from 10.231.1 to 10.231.248, this process's block first.
    const blocks = Math.floor(248 / MAX_LINKS);
    const first = 1 + (process.pid % blocks) * MAX_LINKS;
    const candidates = Array.from(
      { length: blocks * MAX_LINKS },
      (_, i) => 1 + ((first - 1 + i) % (blocks * MAX_LINKS)),
    );
    const skipped = new Set<number>();
    for (let attempt = 0; links.length < count; attempt++) {
      if (attempt >= count + MAX_LINKS) throw new Error('no 10.231.K.0/24 subnet stayed free');
      const used = await subnetsInUse();
      const k = candidates.find((c) => !used.has(c) && !skipped.has(c));
      if (k === undefined) throw new Error('no free 10.231.K.0/24 subnet');
      skipped.add(k);
      const link = await makeLink(k, scripts, browsers, begun);
      // Another process may have taken the same subnet at the same moment: then this one moves on.
      const holders = (await run('ip', ['-o', '-4', 'addr', 'show', 'to', `10.231.${k}.0/24`])).trim().split('\n');
      if (holders.length === 1) links.push(link);
      else await remove(link);
    }
    const address = links[0]?.outer ?? '';
    // The first outer address must be local to this namespace (so a service can bind it) and routed
    // from every namespace through its own link.
    const local = await run('ip', ['route', 'get', address]);
    if (!local.startsWith('local ')) throw new Error(`${address} is not local here: ${local.trim()}`);
    for (const link of links) {
      const route = await run('ip', ['-n', link.namespace, 'route', 'get', address]);
      if (!route.includes(`src ${link.inner} `)) {
        throw new Error(`${link.namespace} does not route ${address} through its link: ${route.trim()}`);
      }
    }
    return { links, address, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** One namespace and veth pair for subnet 10.231.k.0/24, its shaping and its Chromium. */
async function makeLink(
  k: number,
  scripts: string,
  browsers: Set<Browser>,
  begun: Array<{ namespace: string; device: string }>,
): Promise<ShapedLink> {
  const n = ++created;
  const namespace = `rtshape-${process.pid}-${n}`;
  // At most 15 characters (IFNAMSIZ): 4 + a pid of up to 7 digits + 1 + up to 3.
  const device = `vnic${process.pid}-${n}`;
  const peer = `rtsh${process.pid}-${n}`;
  const outer = `10.231.${k}.1`;
  const inner = `10.231.${k}.2`;
  begun.push({ namespace, device });
  made.add(namespace);
  made.add(device);
  await run('ip', ['netns', 'add', namespace]);
  await run('ip', ['link', 'add', device, 'type', 'veth', 'peer', 'name', peer]);
  await run('ip', ['link', 'set', peer, 'netns', namespace]);
  await run('ip', ['addr', 'add', `${outer}/24`, 'dev', device]);
  await run('ip', ['link', 'set', device, 'up']);
  await run('ip', ['-n', namespace, 'addr', 'add', `${inner}/24`, 'dev', peer]);
  await run('ip', ['-n', namespace, 'link', 'set', peer, 'up']);
  await run('ip', ['-n', namespace, 'link', 'set', 'lo', 'up']);
  await run('ip', ['-n', namespace, 'route', 'add', 'default', 'via', outer]);

  // playwright-core starts Chromium with --remote-debugging-pipe: the pipe's descriptors pass through
  // `ip netns exec`, which execs Chromium in the namespace (so the pid it knows is Chromium's).
  const wrapper = join(scripts, `chromium-${namespace}`);
  writeFileSync(wrapper, `#!/bin/sh\nexec ip netns exec '${namespace}' '${chromiumPath()}' "$@"\n`);
  chmodSync(wrapper, 0o755);

  let shaped = false;
  return {
    namespace,
    device,
    outer,
    inner,
    async rate(kbit, options = {}) {
      if (kbit === undefined) {
        if (shaped) await run('tc', ['qdisc', 'del', 'dev', device, 'root']);
        shaped = false;
        return;
      }
      if (!(kbit > 0)) throw new RangeError('kbit must be above 0');
      const { burstBytes = DEFAULT_BURST_BYTES, queueMs = DEFAULT_QUEUE_MS } = options;
      if (burstBytes < 1_600) throw new RangeError('burstBytes must hold a whole packet (1,600 bytes or more)');
      // The queue is given as `limit` bytes, not tc's `latency`: tc adds the burst to a latency's
      // queue, which at 300 kbit/s makes 100 ms of latency with a 16 kB burst half a second of queue.
      const limit = Math.max(burstBytes, Math.round((kbit * queueMs) / 8));
      await run('tc', [
        'qdisc',
        'replace',
        'dev',
        device,
        'root',
        'tbf',
        'rate',
        `${Math.round(kbit)}kbit`,
        'burst',
        String(burstBytes),
        'limit',
        String(limit),
      ]);
      shaped = true;
    },
    async launchChromium(options = {}) {
      const { secureOrigins, ...rest } = options;
      const browser = await launchChromium({
        ...rest,
        executablePath: wrapper,
        args: secureOrigins?.length ? [secureOriginsFlag(secureOrigins)] : [],
      });
      browsers.add(browser);
      return browser;
    },
  };
}
