/**
 * The live-stream settings of `realtime serve` (docs/operations.md, "Live streams"): the addresses
 * the forwarding units announce and the UDP ports they bind, from the config file, flags or
 * REALTIME_* variables (a flag or variable wins over the file, field by field); the page cap, the
 * connect timeout and the bounds of units per page and per app from the config file.
 */

import { BlockList, isIP } from 'node:net';
import { isRecord } from '@realtime/protocol';
import type { StreamOptions } from '../streams/options.js';
import { UsageError } from './usage-error.js';

/** `streams` of a config file as written. */
export interface StreamsFileConfig {
  mediaAddresses?: string[];
  portRange?: [number, number];
  maxPages?: number;
  connectTimeoutMs?: number;
  unitsPerPage?: number;
  unitsPerApp?: number;
}

/** What the command line (or its variables) gave: addresses already split at commas. */
export interface StreamFlags {
  mediaAddress?: string[] | undefined;
  mediaPorts?: string | undefined;
}

const STREAM_FIELDS = new Set([
  'mediaAddresses',
  'portRange',
  'maxPages',
  'connectTimeoutMs',
  'unitsPerPage',
  'unitsPerApp',
]);
/** Below 1024 a port needs privileges, and browsers block some of them. */
const MIN_MEDIA_PORT = 1024;
const MAX_MEDIA_PORT = 65535;

// A browser cannot send to these: the "any" address, multicast and broadcast.
const NOT_ANNOUNCEABLE = new BlockList();
NOT_ANNOUNCEABLE.addAddress('0.0.0.0', 'ipv4');
NOT_ANNOUNCEABLE.addAddress('::', 'ipv6');
NOT_ANNOUNCEABLE.addSubnet('224.0.0.0', 4, 'ipv4');
NOT_ANNOUNCEABLE.addAddress('255.255.255.255', 'ipv4');
NOT_ANNOUNCEABLE.addSubnet('ff00::', 8, 'ipv6');

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

const DEFAULT_MEDIA_ADDRESS = '127.0.0.1';

function family(address: string): 'ipv4' | 'ipv6' {
  return isIP(address) === 6 ? 'ipv6' : 'ipv4';
}

/** Why a media address is refused, or undefined when browsers could be told it. */
export function mediaAddressProblem(address: string): string | undefined {
  if (isIP(address) === 0) {
    return `must be IP addresses, not host names (got ${JSON.stringify(address)})`;
  }
  if (NOT_ANNOUNCEABLE.check(address, family(address))) {
    return `must be addresses browsers can send to, like this machine's public IP (${JSON.stringify(address)} cannot be announced)`;
  }
  return undefined;
}

function addresses(list: readonly string[], where: string): string[] {
  if (list.length === 0) throw new UsageError(`${where} must name at least one IP address`);
  for (const address of list) {
    const problem = mediaAddressProblem(address);
    if (problem) throw new UsageError(`${where} ${problem}`);
  }
  return [...new Set(list)];
}

function portRange(min: unknown, max: unknown, where: string, got: string): [number, number] {
  const port = (p: unknown): p is number =>
    typeof p === 'number' && Number.isInteger(p) && p >= MIN_MEDIA_PORT && p <= MAX_MEDIA_PORT;
  if (!port(min) || !port(max) || min >= max) {
    throw new UsageError(
      `${where} must be two whole port numbers from ${MIN_MEDIA_PORT} to ${MAX_MEDIA_PORT}, the first below the second (got ${got})`,
    );
  }
  return [min, max];
}

/** `--media-ports 40000-40100`. */
export function parsePortRange(text: string, where: string): [number, number] {
  const match = /^\s*([0-9]{1,5})\s*-\s*([0-9]{1,5})\s*$/.exec(text);
  if (!match) throw new UsageError(`${where} must be MIN-MAX, like 40000-40100 (got ${JSON.stringify(text)})`);
  return portRange(Number(match[1]), Number(match[2]), where, JSON.stringify(text));
}

function wholeIn(value: unknown, min: number, max: number, where: string, unit: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`${where} must be a whole number${unit} from ${min} to ${max}`);
  }
  return value;
}

/**
 * Checks `"streams": { "mediaAddresses": [...], "portRange": [min, max], "maxPages", "connectTimeoutMs",
 * "unitsPerPage", "unitsPerApp" }`.
 */
export function parseStreamsConfig(value: unknown, where: string): StreamsFileConfig {
  if (!isRecord(value)) {
    throw new UsageError(
      `${where} must be an object like { "mediaAddresses": ["203.0.113.7"], "portRange": [40000, 40100] }`,
    );
  }
  for (const key of Object.keys(value)) {
    if (!STREAM_FIELDS.has(key)) throw new UsageError(`${where}: unknown field ${JSON.stringify(key)}`);
  }
  const out: StreamsFileConfig = {};
  const list = value.mediaAddresses;
  if (list !== undefined) {
    if (!Array.isArray(list) || !list.every((address) => typeof address === 'string')) {
      throw new UsageError(`${where}.mediaAddresses must be an array of IP addresses`);
    }
    out.mediaAddresses = addresses(list as string[], `${where}.mediaAddresses`);
  }
  const range = value.portRange;
  if (range !== undefined) {
    const pair = Array.isArray(range) && range.length === 2 ? range : [undefined, undefined];
    out.portRange = portRange(pair[0], pair[1], `${where}.portRange`, JSON.stringify(range));
  }
  if (value.maxPages !== undefined) out.maxPages = wholeIn(value.maxPages, 2, 10_000, `${where}.maxPages`, '');
  if (value.connectTimeoutMs !== undefined) {
    out.connectTimeoutMs = wholeIn(value.connectTimeoutMs, 1000, 600_000, `${where}.connectTimeoutMs`, ' of ms');
  }
  if (value.unitsPerPage !== undefined) {
    out.unitsPerPage = wholeIn(value.unitsPerPage, 1, 64, `${where}.unitsPerPage`, '');
  }
  if (value.unitsPerApp !== undefined) {
    out.unitsPerApp = wholeIn(value.unitsPerApp, 1, 100_000, `${where}.unitsPerApp`, '');
  }
  return out;
}

/**
 * The stream options the server runs with: the file's, with the media addresses and the port range
 * each replaced when a flag or variable gives it. `source` names where a flag's value came from
 * (`--media-ports` or `REALTIME_MEDIA_PORTS`). Undefined when nothing is set.
 */
export function streamOptions(
  file: StreamsFileConfig | undefined,
  flags: StreamFlags,
  source: (flag: string) => string,
): StreamOptions | undefined {
  const options: StreamOptions = { ...file };
  if (flags.mediaAddress !== undefined) {
    options.mediaAddresses = addresses(flags.mediaAddress, source('media-address'));
  }
  if (flags.mediaPorts !== undefined) options.portRange = parsePortRange(flags.mediaPorts, source('media-ports'));
  return Object.keys(options).length === 0 ? undefined : options;
}

/** Whether the service, listening on `host`, can be reached from another machine. */
function reachableFromAfar(host: string): boolean {
  if (host === 'localhost') return false;
  return isIP(host) === 0 || !LOOPBACK.check(host, family(host));
}

/**
 * A warning for the log when pages from other machines can open the service but not the media of
 * its live streams: streams are in some app's plan, the service listens beyond loopback, and the
 * units still announce the default 127.0.0.1. Undefined when there is nothing to say.
 */
export function unreachableStreamsWarning(
  host: string,
  streams: StreamOptions | undefined,
  streamsInPlans: boolean,
): string | undefined {
  if (!streamsInPlans || streams?.mediaAddresses !== undefined || !reachableFromAfar(host)) return undefined;
  return (
    `live streams announce only ${DEFAULT_MEDIA_ADDRESS} while the service listens on ${host}: ` +
    'remote browsers cannot reach live streams until --media-address (REALTIME_MEDIA_ADDRESS or ' +
    "streams.mediaAddresses) is set to this machine's address"
  );
}
