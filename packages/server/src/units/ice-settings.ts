/**
 * How the forwarding unit's peer connections may use the network: host candidates on the given
 * addresses only, no STUN or TURN, and traffic only to browser addresses the policy allows.
 */
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { RTCPeerConnectionConfig } from 'werift';

export interface IceSettings {
  /**
   * The addresses the unit's UDP sockets bind to and announce as its only (host) candidates.
   * werift's own interface scan is off, so no other address of the machine is ever offered.
   */
  hostAddresses: readonly string[];
  /** UDP ports to bind in, inclusive (min < max); any free port when absent. */
  portRange?: readonly [number, number] | undefined;
  /**
   * Which browser addresses the unit may send to or answer. Default: any IP literal; mDNS names
   * (`*.local`) are always dropped, as resolving one would send multicast queries.
   */
  allowRemoteAddress?: ((address: string) => boolean) | undefined;
}

/** The remote-address rule in force: IP literals only, then the caller's own rule. */
export function remoteAddressRule(settings: IceSettings): (address: string) => boolean {
  const allow = settings.allowRemoteAddress;
  return (address) => isIP(address) !== 0 && (allow === undefined || allow(address));
}

/** The addresses of this machine's interfaces. */
function localAddresses(): Set<string> {
  const local = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const entry of list ?? []) local.add(entry.address);
  return local;
}

/**
 * A socket binds to the one address of its family when there is just one and it is this machine's
 * (so nothing listens on other interfaces). With several of a family werift can bind only one, and
 * an address that is not on an interface (a public address behind 1:1 NAT, as on most cloud
 * machines) cannot be bound at all: those bind the wildcard and still announce only the given ones.
 */
function bindAddresses(hosts: readonly string[]): { udp4?: string; udp6?: string } {
  const local = localAddresses();
  const one = (family: 4 | 6) => {
    const of = hosts.filter((h) => isIP(h) === family);
    return of.length === 1 && of[0] !== undefined && local.has(of[0]) ? of[0] : undefined;
  };
  const udp4 = one(4);
  const udp6 = one(6);
  return { ...(udp4 ? { udp4 } : {}), ...(udp6 ? { udp6 } : {}) };
}

/** The ICE part of a werift peer connection's configuration. */
export function iceConfig(settings: IceSettings): RTCPeerConnectionConfig {
  const hosts = [...settings.hostAddresses];
  if (hosts.length === 0 || hosts.some((h) => isIP(h) === 0)) {
    throw new TypeError('hostAddresses must be one or more IP addresses');
  }
  const range = settings.portRange;
  // werift takes no range of one port (and none upside down): refused at the start, not at the first offer.
  if (
    range &&
    !(
      Number.isInteger(range[0]) &&
      Number.isInteger(range[1]) &&
      range[0] >= 1 &&
      range[0] < range[1] &&
      range[1] <= 65_535
    )
  ) {
    throw new TypeError('portRange must be two ports from 1 to 65535, the first below the second');
  }
  const allowed = remoteAddressRule(settings);
  return {
    // werift's default is a public STUN server: never contacted.
    iceServers: [],
    // Off: werift would otherwise list every non-internal interface of the machine. Only the
    // "additional" host addresses remain, which is exactly the list given.
    iceUseIpv4: false,
    iceUseIpv6: false,
    iceAdditionalHostAddresses: hosts,
    iceInterfaceAddresses: bindAddresses(hosts),
    iceUseTcp: false,
    ...(settings.portRange ? { icePortRange: [settings.portRange[0], settings.portRange[1]] } : {}),
    // A request from an address outside the rule gets no answer, and no pair is formed with one.
    iceFilterStunResponse: (_message, address) => allowed(address[0]),
    iceFilterCandidatePair: (pair) => allowed(pair.remoteCandidate.host),
  };
}

/** The address of an ICE candidate line (`candidate:… <address> <port> typ …`), if it has one. */
export function candidateAddress(candidate: string): string | undefined {
  const fields = candidate.replace(/^a=/, '').trim().split(/\s+/);
  return fields[4];
}

/** The SDP without candidate lines whose address the rule refuses. */
export function filterSdpCandidates(sdp: string, allowed: (address: string) => boolean): string {
  return sdp
    .split(/\r\n|\n/)
    .filter((line) => {
      if (!line.startsWith('a=candidate:')) return true;
      const address = candidateAddress(line);
      return address !== undefined && allowed(address);
    })
    .join('\r\n');
}
