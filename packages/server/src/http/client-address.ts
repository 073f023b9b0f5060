import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Address, number];

/**
 * Reads an address as a socket or a proxy writes it. node:net's isIP is the gate (ipaddr.js alone
 * would also take forms like `0x7f.1`); an IPv4-mapped IPv6 address is its IPv4 address, as a
 * dual-stack socket reports IPv4 peers that way.
 */
export function parseAddress(text: string): Address | undefined {
  if (isIP(text) === 0) return undefined;
  try {
    return ipaddr.process(text);
  } catch {
    return undefined;
  }
}

/** An `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:5678`, `[2001:db8::1]:443`). */
function parseHop(text: string): Address | undefined {
  const hop = text.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(hop);
  if (bracketed) return parseAddress(bracketed[1] as string);
  const withPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(hop);
  return parseAddress(withPort ? (withPort[1] as string) : hop);
}

/** Reads `10.0.0.0/8`, `2001:db8::/32` or a single address; undefined when it is neither. */
function parseRange(text: string): Range | undefined {
  const slash = text.indexOf('/');
  const address = parseAddress(slash < 0 ? text : text.slice(0, slash));
  if (!address) return undefined;
  const full = address.kind() === 'ipv4' ? 32 : 128;
  if (slash < 0) return [address, full];
  const bitsText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText)) return undefined;
  let bits = Number(bitsText);
  // A range of IPv4-mapped addresses (`::ffff:10.0.0.0/104`) became an IPv4 address above.
  if (address.kind() === 'ipv4' && text.slice(0, slash).includes(':')) bits -= 96;
  if (bits < 0 || bits > full) return undefined;
  return [address, bits];
}

/** Proxies whose `X-Forwarded-For` is believed: addresses and CIDR ranges from the config. */
export class TrustedProxies {
  readonly #ranges: Range[];

  /** Throws a one-line Error naming the first entry that is not an address or a range. */
  constructor(entries: readonly string[]) {
    this.#ranges = entries.map((entry) => {
      const range = parseRange(entry);
      if (!range) throw new Error(`${JSON.stringify(entry)} is not an IP address or CIDR range`);
      return range;
    });
  }

  has(address: Address): boolean {
    return this.#ranges.some(([base, bits]) => base.kind() === address.kind() && address.match(base, bits));
  }

  /** `has` for an address as text; false for text that is no address. */
  hasText(text: string | undefined): boolean {
    const address = parseAddress(text ?? '');
    return address !== undefined && this.has(address);
  }
}

/**
 * The client a connection stands for: the socket's peer, or, when that peer is a trusted proxy,
 * the right-most address of `X-Forwarded-For` that is not a trusted proxy (entries left of it were
 * written by the client and could say anything). An entry that is not an address stops the walk at
 * the last trusted hop, so garbage groups clients under their proxy instead of splitting them.
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: TrustedProxies,
): string {
  const own = parseAddress(peer ?? '');
  if (!own) return peer ?? 'unknown';
  let client = own;
  if (forwardedFor !== undefined && trusted.has(own)) {
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = parseHop(hops[i] as string);
      if (!hop) break;
      client = hop;
      if (!trusted.has(hop)) break;
    }
  }
  return addressKey(client);
}

/**
 * The key a per-address cap counts under: an IPv4 address, or the /64 of an IPv6 address (one
 * subscriber is usually handed a whole /64, so single IPv6 addresses would be free to take).
 */
export function addressKey(address: Address): string {
  if (address.kind() === 'ipv4') return address.toString();
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}
