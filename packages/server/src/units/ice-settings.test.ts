import { describe, expect, it } from 'vitest';
import { filterSdpCandidates, iceConfig, remoteAddressRule } from './ice-settings.js';

describe('the forwarding unit ICE settings', () => {
  it('announce only the given addresses, bind there, and use no STUN server', () => {
    const config = iceConfig({ hostAddresses: ['127.0.0.1'], portRange: [40000, 40100] });
    expect(config).toMatchObject({
      iceServers: [],
      iceUseIpv4: false,
      iceUseIpv6: false,
      iceAdditionalHostAddresses: ['127.0.0.1'],
      iceInterfaceAddresses: { udp4: '127.0.0.1' },
      icePortRange: [40000, 40100],
    });
    // Two addresses of one family: each socket binds the wildcard (werift binds one per family).
    expect(iceConfig({ hostAddresses: ['10.0.0.1', '10.0.0.2', '::1'] }).iceInterfaceAddresses).toEqual({
      udp6: '::1',
    });
    // An address not on this machine (a public one behind 1:1 NAT) cannot be bound: the wildcard is,
    // and only the given address is announced.
    const nat = iceConfig({ hostAddresses: ['203.0.113.7'] });
    expect(nat.iceInterfaceAddresses).toEqual({});
    expect(nat.iceAdditionalHostAddresses).toEqual(['203.0.113.7']);
  });

  it('refuse host names and an empty list', () => {
    expect(() => iceConfig({ hostAddresses: [] })).toThrow(TypeError);
    expect(() => iceConfig({ hostAddresses: ['localhost'] })).toThrow(TypeError);
  });

  it('refuse a port range of one port, upside down, or out of the port numbers', () => {
    const hostAddresses = ['127.0.0.1'];
    for (const portRange of [
      [40000, 40000],
      [40001, 40000],
      [0, 10],
      [65000, 70000],
      [1.5, 10],
    ] as const) {
      expect(() => iceConfig({ hostAddresses, portRange })).toThrow(
        'portRange must be two ports from 1 to 65535, the first below the second',
      );
    }
    expect(iceConfig({ hostAddresses, portRange: [40000, 40001] }).icePortRange).toEqual([40000, 40001]);
  });

  it('drop mDNS names always, and addresses outside the caller rule', () => {
    const any = remoteAddressRule({ hostAddresses: ['127.0.0.1'] });
    expect(any('203.0.113.7')).toBe(true);
    expect(any('a1b2c3.local')).toBe(false);
    const loopback = remoteAddressRule({ hostAddresses: ['127.0.0.1'], allowRemoteAddress: (a) => a === '127.0.0.1' });
    const sdp = [
      'v=0',
      'a=candidate:1 1 udp 2122260223 127.0.0.1 5000 typ host',
      'a=candidate:2 1 udp 2122260223 192.168.1.5 5001 typ host',
      'a=candidate:3 1 udp 2122260223 f00d.local 5002 typ host',
      'a=end-of-candidates',
      '',
    ].join('\r\n');
    expect(filterSdpCandidates(sdp, loopback)).toBe(
      ['v=0', 'a=candidate:1 1 udp 2122260223 127.0.0.1 5000 typ host', 'a=end-of-candidates', ''].join('\r\n'),
    );
  });
});
