import { describe, expect, it } from 'vitest';
import { clientAddress, TrustedProxies } from '../src/http/client-address.js';

describe('the client address behind proxies', () => {
  const proxies = new TrustedProxies(['10.0.0.0/8', '127.0.0.1', '2001:db8:ffff::/48', '::ffff:192.168.0.0/112']);

  it('is the peer itself when the peer is no trusted proxy, whatever X-Forwarded-For says', () => {
    expect(clientAddress('203.0.113.5', '198.51.100.1', proxies)).toBe('203.0.113.5');
    expect(clientAddress('::ffff:203.0.113.5', undefined, proxies)).toBe('203.0.113.5');
  });

  it('is the right-most untrusted hop of X-Forwarded-For from a trusted proxy', () => {
    expect(clientAddress('10.1.2.3', '198.51.100.1', proxies)).toBe('198.51.100.1');
    expect(clientAddress('::ffff:10.1.2.3', '6.6.6.6, 198.51.100.1, 10.9.9.9', proxies)).toBe('198.51.100.1');
    expect(clientAddress('127.0.0.1', ['6.6.6.6', '198.51.100.1:4431'], proxies)).toBe('198.51.100.1');
    // A range written as IPv4-mapped IPv6 trusts the IPv4 addresses.
    expect(clientAddress('192.168.3.4', '198.51.100.1', proxies)).toBe('198.51.100.1');
  });

  it('stops at the last trusted hop when an entry is no address, and uses it when all hops are trusted', () => {
    expect(clientAddress('10.1.2.3', 'unknown, 10.2.2.2', proxies)).toBe('10.2.2.2');
    expect(clientAddress('10.1.2.3', '10.4.4.4, 10.2.2.2', proxies)).toBe('10.4.4.4');
    expect(clientAddress('10.1.2.3', '', proxies)).toBe('10.1.2.3');
  });

  it('counts an IPv6 client by its /64', () => {
    expect(clientAddress('2001:db8:1:2:aaaa::1', undefined, proxies)).toBe('2001:db8:1:2::/64');
    expect(clientAddress('2001:db8:ffff::7', '[2001:db8:1:2::99]:443', proxies)).toBe('2001:db8:1:2::/64');
  });

  it('refuses entries that are neither an address nor a CIDR range', () => {
    for (const bad of ['10.0.0.0/33', '0x7f.1', 'localhost', '10.0.0.0/', '::/129', '::ffff:10.0.0.0/8']) {
      expect(() => new TrustedProxies([bad]), bad).toThrow(/is not an IP address or CIDR range/);
    }
  });
});
