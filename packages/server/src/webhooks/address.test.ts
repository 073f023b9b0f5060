import { describe, expect, it } from 'vitest';
import { addressProblem, hostProblem } from './address.js';

/** [address, expected reason]; undefined means public, so a webhook may go there. */
const TABLE: [string, string | undefined][] = [
  // Public IPv4.
  ['8.8.8.8', undefined],
  ['1.1.1.1', undefined],
  ['9.9.9.9', undefined],
  ['93.184.216.34', undefined],
  // 0.0.0.0/8
  ['0.0.0.0', 'unspecified'],
  ['0.255.255.255', 'unspecified'],
  ['1.0.0.0', undefined],
  // 10.0.0.0/8
  ['9.255.255.255', undefined],
  ['10.0.0.0', 'private'],
  ['10.255.255.255', 'private'],
  ['11.0.0.0', undefined],
  // 100.64.0.0/10
  ['100.63.255.255', undefined],
  ['100.64.0.0', 'carrier-grade NAT'],
  ['100.127.255.255', 'carrier-grade NAT'],
  ['100.128.0.0', undefined],
  // 127.0.0.0/8
  ['126.255.255.255', undefined],
  ['127.0.0.0', 'loopback'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.255', 'loopback'],
  ['128.0.0.0', undefined],
  // 169.254.0.0/16, cloud metadata included
  ['169.253.255.255', undefined],
  ['169.254.0.0', 'link-local'],
  ['169.254.169.254', 'link-local'],
  ['169.254.255.255', 'link-local'],
  ['169.255.0.0', undefined],
  // 172.16.0.0/12
  ['172.15.255.255', undefined],
  ['172.16.0.0', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.0', undefined],
  // 192.0.0.0/24 (IETF protocol assignments) and 192.0.2.0/24 (TEST-NET-1)
  ['191.255.255.255', undefined],
  ['192.0.0.0', 'reserved'],
  ['192.0.0.255', 'reserved'],
  ['192.0.1.0', undefined],
  ['192.0.2.0', 'reserved'],
  ['192.0.2.255', 'reserved'],
  ['192.0.3.0', undefined],
  // 192.168.0.0/16
  ['192.167.255.255', undefined],
  ['192.168.0.0', 'private'],
  ['192.168.255.255', 'private'],
  ['192.169.0.0', undefined],
  // 198.18.0.0/15 (benchmarking)
  ['198.17.255.255', undefined],
  ['198.18.0.0', 'reserved'],
  ['198.19.255.255', 'reserved'],
  ['198.20.0.0', undefined],
  // 198.51.100.0/24 (TEST-NET-2) and 203.0.113.0/24 (TEST-NET-3)
  ['198.51.99.255', undefined],
  ['198.51.100.1', 'reserved'],
  ['198.51.101.0', undefined],
  ['203.0.112.255', undefined],
  ['203.0.113.1', 'reserved'],
  ['203.0.114.0', undefined],
  // 224.0.0.0/4, 240.0.0.0/4, broadcast
  ['223.255.255.255', undefined],
  ['224.0.0.0', 'multicast'],
  ['239.255.255.255', 'multicast'],
  ['240.0.0.0', 'reserved'],
  ['255.255.255.254', 'reserved'],
  ['255.255.255.255', 'broadcast'],

  // Public IPv6 (2000::/3).
  ['2606:4700::1111', undefined],
  ['2001:4860:4860::8888', undefined],
  ['2000::', undefined],
  ['3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', undefined],
  ['1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'not global unicast (outside 2000::/3)'],
  ['4000::', 'not global unicast (outside 2000::/3)'],
  // ::, ::1, IPv4-compatible ::a.b.c.d (refused even around a public address)
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::2', 'IPv4-compatible'],
  ['::7f00:1', 'IPv4-compatible'],
  ['::8.8.8.8', 'IPv4-compatible'],
  ['::127.0.0.1', 'IPv4-compatible'],
  ['0:0:0:0:0:0:10.0.0.1', 'IPv4-compatible'],
  // IPv4-mapped ::ffff:a.b.c.d: judged as the IPv4 address
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:10.1.2.3', 'private'],
  ['::ffff:169.254.169.254', 'link-local'],
  ['::ffff:0.0.0.0', 'unspecified'],
  ['::ffff:8.8.8.8', undefined],
  ['::ffff:808:808', undefined],
  ['0:0:0:0:0:ffff:127.0.0.1', 'loopback'],
  // IPv4-translated ::ffff:0:a.b.c.d (RFC 6145)
  ['::ffff:0:808:808', 'IPv4-translated'],
  // NAT64 well-known prefix: judged by the embedded IPv4; local-use prefix: refused
  ['64:ff9b::7f00:1', 'loopback (in NAT64 64:ff9b::/96)'],
  ['64:ff9b::10.0.0.1', 'private (in NAT64 64:ff9b::/96)'],
  ['64:ff9b::a9fe:a9fe', 'link-local (in NAT64 64:ff9b::/96)'],
  ['64:ff9b::808:808', undefined],
  ['64:ff9b::1:0:0', 'not global unicast (outside 2000::/3)'],
  ['64:ff9b:1::808:808', 'NAT64 local-use'],
  ['64:ff9b:1:ffff:ffff:ffff:ffff:ffff', 'NAT64 local-use'],
  // 6to4 2002::/16: judged by the embedded IPv4
  ['2002:a00:1::1', 'private (in 6to4 2002::/16)'],
  ['2002:7f00:1::', 'loopback (in 6to4 2002::/16)'],
  ['2002:a9fe:a9fe::1', 'link-local (in 6to4 2002::/16)'],
  ['2002:808:808::1', undefined],
  // Teredo 2001::/32, and the rest of 2001::/23; documentation 2001:db8::/32, 3fff::/20; benchmarking
  ['2001::1', 'Teredo'],
  ['2001:0:ffff:ffff:ffff:ffff:ffff:ffff', 'Teredo'],
  ['2001:1::1', 'reserved'],
  ['2001:2::1', 'benchmarking'],
  ['2001:db8::1', 'reserved'],
  ['2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', undefined],
  ['2001:db9::', undefined],
  ['3fff::1', 'reserved'],
  ['3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
  ['3fff:1000::', undefined],
  // ULA fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8
  ['fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'not global unicast (outside 2000::/3)'],
  ['fc00::', 'unique local'],
  ['fd00::1', 'unique local'],
  ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique local'],
  ['fe80::', 'link-local'],
  ['fe80::1', 'link-local'],
  ['febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'link-local'],
  ['fec0::1', 'site-local'],
  ['feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'site-local'],
  ['ff02::1', 'multicast'],
  ['ff0e::1', 'multicast'],
  // Discard-only 100::/64
  ['100::', 'discard-only'],
  ['100::ffff:ffff:ffff:ffff', 'discard-only'],
  ['100:0:0:1::', 'not global unicast (outside 2000::/3)'],
  // Zones: never a public address
  ['fe80::1%eth0', 'scoped address (has a zone)'],
  ['2606:4700::1111%eth0', 'scoped address (has a zone)'],
  // Not plain IP addresses: loose IPv4 forms, names, junk
  ['127.1', 'not an IP address'],
  ['0x7f.0.0.1', 'not an IP address'],
  ['0177.0.0.1', 'not an IP address'],
  ['2130706433', 'not an IP address'],
  ['::ffff:0x7f.0.0.1', 'not an IP address'],
  ['localhost', 'not an IP address'],
  ['1.2.3.4.5', 'not an IP address'],
  [' 8.8.8.8', 'not an IP address'],
  ['[::1]', 'not an IP address'],
  ['', 'not an IP address'],
];

describe('addressProblem', () => {
  it.each(TABLE)('%s -> %s', (ip, reason) => {
    expect(addressProblem(ip)).toBe(reason);
  });

  it('covers every range in both directions', () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(40);
    expect(TABLE.filter(([, reason]) => reason === undefined).length).toBeGreaterThanOrEqual(20);
  });

  it('judges an IPv4 address and its IPv4-mapped form alike', () => {
    for (const [ip] of TABLE) {
      if (!/^\d+\.\d+\.\d+\.\d+$/.test(ip)) continue;
      expect(addressProblem(`::ffff:${ip}`), ip).toBe(addressProblem(ip));
    }
  });
});

describe('hostProblem', () => {
  const problem = (url: string, allowPrivate = false) => hostProblem(new URL(url), allowPrivate);

  it('allows https to a host name or a public IP address', () => {
    expect(problem('https://hooks.example.com/in?x=1')).toBeUndefined();
    expect(problem('https://8.8.8.8/')).toBeUndefined();
    expect(problem('https://[2606:4700::1111]:8443/')).toBeUndefined();
  });

  it('refuses http:// unless allowPrivate, and other schemes always', () => {
    expect(problem('http://hooks.example.com/')).toBe('not an https address');
    expect(problem('http://hooks.example.com/', true)).toBeUndefined();
    expect(problem('ftp://hooks.example.com/')).toBe('not an https address');
    expect(problem('ftp://hooks.example.com/', true)).toBe('not an http(s) address');
    expect(problem('file:///etc/passwd', true)).toBe('not an http(s) address');
  });

  it('refuses credentials, with or without allowPrivate', () => {
    expect(problem('https://user:secret@hooks.example.com/')).toBe('has credentials');
    expect(problem('https://user@hooks.example.com/')).toBe('has credentials');
    expect(problem('http://user:secret@127.0.0.1/', true)).toBe('has credentials');
  });

  it.each([
    ['https://2130706433/', '127.0.0.1'],
    ['https://0x7f000001/', '127.0.0.1'],
    ['https://0177.0.0.1/', '127.0.0.1'],
    ['https://0x7f.1/', '127.0.0.1'],
    ['https://127.1/', '127.0.0.1'],
    ['https://017700000001/', '127.0.0.1'],
    ['https://127.0.0.1./', '127.0.0.1'],
  ])('sees through the loose IPv4 form %s', (url, normalised) => {
    // WHATWG URL parsing normalises these forms, so the check judges the real address.
    expect(new URL(url).hostname).toBe(normalised);
    expect(problem(url)).toBe('loopback');
  });

  it('judges IP hosts directly, in brackets too', () => {
    expect(problem('https://10.0.0.1/')).toBe('private');
    expect(problem('https://169.254.169.254/latest/meta-data/')).toBe('link-local');
    expect(problem('https://0/')).toBe('unspecified');
    expect(problem('https://[::1]:8443/')).toBe('loopback');
    expect(problem('https://[::ffff:127.0.0.1]/')).toBe('loopback');
    expect(problem('https://[fd12:3456::1]/')).toBe('unique local');
    expect(problem('https://[64:ff9b::a9fe:a9fe]/')).toBe('link-local (in NAT64 64:ff9b::/96)');
  });

  it('leaves host names to the check after DNS', () => {
    expect(problem('https://localhost/')).toBeUndefined();
    expect(problem('https://127.0.0.1.nip.io/')).toBeUndefined();
  });

  it('allows loopback and private hosts with allowPrivate', () => {
    expect(problem('http://127.0.0.1:3000/hooks', true)).toBeUndefined();
    expect(problem('https://[::1]/', true)).toBeUndefined();
    expect(problem('http://10.0.0.1/', true)).toBeUndefined();
  });
});
