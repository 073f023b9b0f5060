/**
 * The calls settings of `realtime serve` (docs/calls.md): ring time and invite rates from the config file, STUN and
 * TURN servers from the config file, flags or REALTIME_* variables (a flag or variable wins over the
 * file, field by field, so the TURN secret can stay out of the file).
 */
import { isRecord } from '@realtime/protocol';
import type { CallOptions, IceConfig, InviteLimits, InviteRate } from '../calls/options.js';
import { UsageError } from './usage-error.js';

/** `calls` of a config file as written: the TURN part may still get its URLs or secret from flags. */
export interface CallsFileConfig {
  ringMs?: number;
  invites?: Partial<InviteLimits>;
  stun?: string[];
  turn?: { urls?: string[]; secret?: string; ttlSeconds?: number };
}

/** What the command line (or its variables) gave: lists are already split at commas. */
export interface CallFlags {
  stun?: string[] | undefined;
  turn?: string[] | undefined;
  turnSecret?: string | undefined;
}

const CALL_FIELDS = new Set(['ringMs', 'invites', 'stun', 'turn']);
const INVITE_FIELDS = new Set(['perCaller', 'perCallee']);
const RATE_FIELDS = new Set(['perMinute', 'burst']);
/** Far above any person's pace; a rate is a bound, not a way to turn the bound off. */
const MAX_INVITE_RATE = 1_000_000;
const TURN_FIELDS = new Set(['urls', 'secret', 'ttlSeconds']);
const MIN_TURN_SECRET_LENGTH = 16;

// RFC 7064 and 7065: `stun:host[:port]`, `turn:host[:port][?transport=udp|tcp]`. A browser refuses
// a malformed one when the page builds its RTCPeerConnection, so the call would fail only then.
const HOST = String.raw`(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)`;
const PORT = '(?::([0-9]{1,5}))?';
const STUN_URL = new RegExp(`^stun:${HOST}${PORT}$`);
const TURN_URL = new RegExp(`^turns?:${HOST}${PORT}(?:\\?transport=(?:udp|tcp))?$`);

function unknownField(value: Record<string, unknown>, allowed: Set<string>, where: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.has(key)) throw new UsageError(`${where}: unknown field ${JSON.stringify(key)}`);
  }
}

/** Why an ICE server address is refused, or undefined when it is fine. */
export function iceUrlProblem(url: string, kind: 'stun' | 'turn'): string | undefined {
  const match = (kind === 'stun' ? STUN_URL : TURN_URL).exec(url);
  const port = match?.[1];
  if (match && (port === undefined || (Number(port) >= 1 && Number(port) <= 65535))) return undefined;
  return kind === 'stun'
    ? `must be stun:HOST or stun:HOST:PORT (got ${JSON.stringify(url)})`
    : `must be turn:HOST[:PORT] or turns:HOST[:PORT], optionally ?transport=udp or tcp (got ${JSON.stringify(url)})`;
}

function checked(list: readonly string[], kind: 'stun' | 'turn', where: string): string[] {
  for (const url of list) {
    const problem = iceUrlProblem(url, kind);
    if (problem) throw new UsageError(`${where}: ${problem}`);
  }
  return [...list];
}

function urls(value: unknown, kind: 'stun' | 'turn', where: string): string[] {
  if (!Array.isArray(value) || !value.every((url) => typeof url === 'string')) {
    throw new UsageError(`${where} must be an array of ${kind}: addresses`);
  }
  return checked(value as string[], kind, where);
}

/** The secret is never repeated in a message: it would land in logs. */
function turnSecret(value: unknown, where: string): string {
  if (typeof value !== 'string' || value.length < MIN_TURN_SECRET_LENGTH || /\s/.test(value)) {
    throw new UsageError(
      `${where} must be at least ${MIN_TURN_SECRET_LENGTH} characters without spaces (coturn's static-auth-secret)`,
    );
  }
  return value;
}

function wholeIn(value: unknown, min: number, max: number, where: string, unit: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`${where} must be a whole number of ${unit} from ${min} to ${max}`);
  }
  return value;
}

/** `{ "perMinute": n, "burst": n }`, both whole numbers from 1. */
function inviteRate(value: unknown, where: string): InviteRate {
  if (!isRecord(value)) throw new UsageError(`${where} must be { "perMinute": n, "burst": n }`);
  unknownField(value, RATE_FIELDS, where);
  return {
    perMinute: wholeIn(value.perMinute, 1, MAX_INVITE_RATE, `${where}.perMinute`, 'invites'),
    burst: wholeIn(value.burst, 1, MAX_INVITE_RATE, `${where}.burst`, 'invites'),
  };
}

/** `{ "perCaller": rate, "perCallee": rate }`, either left out for its default. */
function inviteLimits(value: unknown, where: string): Partial<InviteLimits> {
  if (!isRecord(value)) throw new UsageError(`${where} must be { "perCaller": {...}, "perCallee": {...} }`);
  unknownField(value, INVITE_FIELDS, where);
  const out: Partial<InviteLimits> = {};
  if (value.perCaller !== undefined) out.perCaller = inviteRate(value.perCaller, `${where}.perCaller`);
  if (value.perCallee !== undefined) out.perCallee = inviteRate(value.perCallee, `${where}.perCallee`);
  return out;
}

/** Checks `"calls": { "ringMs", "invites", "stun": [...], "turn": { "urls", "secret", "ttlSeconds" } }`. */
export function parseCallsConfig(value: unknown, where: string): CallsFileConfig {
  if (!isRecord(value)) {
    throw new UsageError(
      `${where} must be an object like { "stun": [...], "turn": { "urls": [...], "secret": "..." } }`,
    );
  }
  unknownField(value, CALL_FIELDS, where);
  const out: CallsFileConfig = {};
  if (value.ringMs !== undefined) out.ringMs = wholeIn(value.ringMs, 1000, 600_000, `${where}.ringMs`, 'ms');
  if (value.invites !== undefined) out.invites = inviteLimits(value.invites, `${where}.invites`);
  if (value.stun !== undefined) out.stun = urls(value.stun, 'stun', `${where}.stun`);
  if (value.turn !== undefined) {
    const turn = value.turn;
    if (!isRecord(turn))
      throw new UsageError(`${where}.turn must be { "urls": [...], "secret": "...", "ttlSeconds": n }`);
    unknownField(turn, TURN_FIELDS, `${where}.turn`);
    out.turn = {};
    if (turn.urls !== undefined) out.turn.urls = urls(turn.urls, 'turn', `${where}.turn.urls`);
    if (turn.secret !== undefined) out.turn.secret = turnSecret(turn.secret, `${where}.turn.secret`);
    if (turn.ttlSeconds !== undefined) {
      out.turn.ttlSeconds = wholeIn(turn.ttlSeconds, 60, 604_800, `${where}.turn.ttlSeconds`, 'seconds');
    }
  }
  return out;
}

/** `--stun a,b --stun c`: every value split at commas, blanks dropped (so `--stun=` means none). */
export function splitList(values: readonly string[] | undefined): string[] | undefined {
  if (values === undefined) return undefined;
  return values
    .flatMap((value) => value.split(','))
    .map((url) => url.trim())
    .filter((url) => url !== '');
}

/**
 * The calls options the server runs with: the file's, with each of the STUN list, the TURN list and
 * the TURN secret replaced when a flag or variable gives it. `source` names where a flag's value came
 * from (`--turn` or `REALTIME_TURN`), `fileWhere` the file's `calls` (`config PATH: calls`).
 * Undefined when nothing is set.
 */
export function callOptions(
  file: CallsFileConfig | undefined,
  flags: CallFlags,
  source: (flag: string) => string,
  fileWhere = 'config calls',
): CallOptions | undefined {
  const stun = flags.stun === undefined ? file?.stun : checked(flags.stun, 'stun', source('stun'));
  const turnUrls = flags.turn === undefined ? file?.turn?.urls : checked(flags.turn, 'turn', source('turn'));
  const secret =
    flags.turnSecret === undefined ? file?.turn?.secret : turnSecret(flags.turnSecret, source('turn-secret'));
  const hasTurn = turnUrls !== undefined && turnUrls.length > 0;
  if (hasTurn && secret === undefined) {
    const from = flags.turn === undefined ? `${fileWhere}.turn.urls` : source('turn');
    throw new UsageError(
      `${from}: TURN servers need their shared secret: --turn-secret, REALTIME_TURN_SECRET or calls.turn.secret in the config file`,
    );
  }
  if (!hasTurn && secret !== undefined) {
    const from = flags.turnSecret === undefined ? `${fileWhere}.turn.secret` : source('turn-secret');
    throw new UsageError(
      `${from} is set but no TURN server is: add --turn URL, REALTIME_TURN or calls.turn.urls in the config file`,
    );
  }
  const ice: IceConfig = {};
  if (stun !== undefined && stun.length > 0) ice.stun = stun;
  if (hasTurn && secret !== undefined) {
    const ttlSeconds = file?.turn?.ttlSeconds;
    ice.turn = { urls: turnUrls, secret, ...(ttlSeconds === undefined ? {} : { ttlSeconds }) };
  }
  const options: CallOptions = {};
  if (file?.ringMs !== undefined) options.ringMs = file.ringMs;
  if (file?.invites !== undefined) options.invites = file.invites;
  if (ice.stun !== undefined || ice.turn !== undefined) options.ice = ice;
  return Object.keys(options).length === 0 ? undefined : options;
}
