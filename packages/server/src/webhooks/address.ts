import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Whether the service may send a webhook to an address. The service never calls into a private
 * network (spec 4.8): a webhook goes only to public unicast addresses, judged here one IP at a time.
 *
 * The rule is an allow-list: an IPv4 address must be one that ipaddr.js calls `unicast` (that is, in
 * none of its special ranges: unspecified, broadcast, multicast, link-local, loopback, CGNAT, RFC 1918,
 * reserved, benchmarking, documentation, AS112, AMT); an IPv6 address must be `unicast` too and also
 * inside 2000::/3, the only block IANA hands out as global unicast. Addresses that carry an IPv4
 * address inside are judged by that IPv4 address:
 * - IPv4-mapped `::ffff:a.b.c.d`: the socket talks to the IPv4 address itself.
 * - NAT64 well-known prefix `64:ff9b::/96` (RFC 6052): a translator forwards to the IPv4 address in
 *   the last 32 bits, so `64:ff9b::8.8.8.8` is public and `64:ff9b::127.0.0.1` is not. The local-use
 *   prefix `64:ff9b:1::/48` (RFC 8215) is refused outright: it belongs to one operator's network, and
 *   where the IPv4 address sits in it depends on a prefix length this side cannot know.
 * - 6to4 `2002:a.b.c.d::/48`: the relay forwards to the embedded IPv4 address.
 * Refused outright, whatever they embed: IPv4-compatible `::a.b.c.d` (deprecated, outside 2000::/3),
 * IPv4-translated `::ffff:0:a.b.c.d`, Teredo `2001::/32`, and any address with a zone (`%eth0`).
 *
 * @returns undefined when the address is public; otherwise a short reason, such as `loopback` or
 * `private (in 6to4 2002::/16)`. Anything that is not a plain IP address (including the loose IPv4
 * forms `127.1` or `0x7f.0.0.1`, which URL parsing has already normalised by the time they get here)
 * is refused as `not an IP address`.
 * @example
 * addressProblem('8.8.8.8'); // undefined
 * addressProblem('::ffff:10.0.0.1'); // 'private'
 */
export function addressProblem(ip: string): string | undefined {
  // node:net's isIP is the gate: strict dotted decimal for IPv4 (ipaddr.js alone would also take
  // `0x7f.1`), and the IPv6 forms a socket takes. ipaddr.js then names the range.
  const family = isIP(ip);
  try {
    if (family === 4) return ipv4Problem(ipaddr.IPv4.parse(ip));
    if (family === 6) {
      if (ip.includes('%')) return 'scoped address (has a zone)';
      return ipv6Problem(ipaddr.IPv6.parse(dottedTailToHex(ip)));
    }
  } catch {
    // A form node:net takes but ipaddr.js does not: refused below like any other non-address.
  }
  return 'not an IP address';
}

function ipv4Problem(address: ipaddr.IPv4): string | undefined {
  const range = address.range();
  return range === 'unicast' ? undefined : (REASONS[range] ?? range);
}

/**
 * Writes an IPv6 address's trailing dotted IPv4 part in hex (`::8.8.8.8` becomes `::808:808`).
 * ipaddr.js reads `::a.b.c.d` as the IPv4-mapped `::ffff:a.b.c.d`, but a socket takes it as the
 * IPv4-compatible `::a.b.c.d`, a different address. Written in hex, ipaddr.js and the socket agree.
 * The input already passed node:net's isIP, so the dotted part is four decimal octets.
 */
function dottedTailToHex(ip: string): string {
  return ip.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_, a: string, b: string, c: string, d: string) => {
    const hex = (high: string, low: string) => ((Number(high) << 8) | Number(low)).toString(16);
    return `${hex(a, b)}:${hex(c, d)}`;
  });
}

const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96');

function ipv6Problem(address: ipaddr.IPv6): string | undefined {
  if (address.isIPv4MappedAddress()) return ipv4Problem(address.toIPv4Address());
  if (address.match(NAT64_WELL_KNOWN)) return embedded(address, 6, 'NAT64 64:ff9b::/96');
  const range = address.range();
  if (range === '6to4') return embedded(address, 1, '6to4 2002::/16');
  if (range !== 'unicast') return REASONS[range] ?? range;
  // :: and ::1 are named ranges; the rest of ::/96 is the deprecated IPv4-compatible form.
  if (address.match(IPV4_COMPATIBLE)) return 'IPv4-compatible';
  if (!address.match(GLOBAL_UNICAST)) return 'not global unicast (outside 2000::/3)';
  return undefined;
}

/** Judges the IPv4 address held in two 16-bit parts of an IPv6 address, starting at `part`. */
function embedded(address: ipaddr.IPv6, part: number, where: string): string | undefined {
  const high = address.parts[part] ?? 0;
  const low = address.parts[part + 1] ?? 0;
  const inner = new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  const problem = ipv4Problem(inner);
  return problem === undefined ? undefined : `${problem} (in ${where})`;
}

/** Readable names for ipaddr.js ranges; a range missing here is reported by its ipaddr.js name. */
const REASONS: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT',
  private: 'private',
  reserved: 'reserved',
  benchmarking: 'benchmarking',
  uniqueLocal: 'unique local',
  deprecatedSiteLocal: 'site-local',
  discard: 'discard-only',
  rfc6145: 'IPv4-translated',
  rfc6052: 'NAT64 local-use',
  teredo: 'Teredo',
};

/**
 * Checks a webhook address before any connection: the scheme must be `https:` (`http:` only with
 * `allowPrivate`, the development switch), there must be no credentials, and a host written as an IP
 * address must be public. Host names are left to the connect-time check, after DNS. WHATWG URL
 * parsing has already turned the loose IPv4 forms (`2130706433`, `0x7f000001`, `0177.0.0.1`,
 * `127.1`) into dotted decimal, so they are judged like any other IP.
 *
 * With `allowPrivate` the address check is off (loopback and private networks are allowed), but the
 * scheme must still be http(s) and credentials are still refused.
 *
 * @returns undefined when the address may be tried; otherwise a short reason.
 * @example
 * hostProblem(new URL('https://hooks.example.com/in'), false); // undefined
 * hostProblem(new URL('https://127.1/'), false); // 'loopback'
 */
export function hostProblem(url: URL, allowPrivate: boolean): string | undefined {
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return allowPrivate ? 'not an http(s) address' : 'not an https address';
  }
  if (url.username !== '' || url.password !== '') return 'has credentials';
  if (url.hostname === '') return 'no host';
  if (allowPrivate) return undefined;
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? undefined : addressProblem(host);
}
