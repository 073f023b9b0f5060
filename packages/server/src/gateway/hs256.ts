import { createHmac, timingSafeEqual } from 'node:crypto';

/** What jose decodes a JWT's JSON parts with: invalid UTF-8 is an error, not a replacement mark. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const HS256_BYTES = 32;

/** JSON of a decoded part, or undefined where jose would refuse it (not UTF-8, not JSON). */
function json(bytes: Buffer): unknown {
  try {
    return JSON.parse(strictUtf8.decode(bytes));
  } catch {
    return undefined;
  }
}

/** A plain JSON object, as jose's isObject takes it (JSON.parse makes no other prototypes). */
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Headers found plain HS256 (an object, alg "HS256", no crit), by their base64url text: a service's
 * tokens come from few minters, which write the same header every time. Bounded: past it, it starts over.
 */
const plainHeaders = new Set<string>();
const MAX_PLAIN_HEADERS = 64;

function isPlainHs256Header(encoded: string): boolean {
  if (plainHeaders.has(encoded)) return true;
  const header = json(Buffer.from(encoded, 'base64url'));
  if (!isObject(header) || header.alg !== 'HS256' || header.crit !== undefined) return false;
  if (plainHeaders.size >= MAX_PLAIN_HEADERS) plainHeaders.clear();
  plainHeaders.add(encoded);
  return true;
}

/** A claim jose reads as a NumericDate: absent, or a number (of any value, as jose takes it). */
const absentOrNumber = (value: unknown): boolean => value === undefined || typeof value === 'number';

/** Whether the signature part is the HMAC-SHA256 of `header.payload` under `key` (nothing else checked). */
export function signedWithKey(parts: readonly string[], key: Buffer): boolean {
  const [encodedHeader = '', encodedClaims = '', encodedSignature = ''] = parts;
  const signature = Buffer.from(encodedSignature, 'base64url');
  if (signature.length !== HS256_BYTES) return false;
  return timingSafeEqual(
    signature,
    createHmac('sha256', key).update(encodedHeader).update('.').update(encodedClaims).digest(),
  );
}

/**
 * The claims of a compact HS256 JWT, checked with node:crypto's HMAC directly, when jose's
 * `jwtVerify(token, key, { algorithms: ['HS256'], requiredClaims: ['exp'], clockTolerance, currentDate })`
 * would return the very same claims; undefined for anything else, which the caller hands to jose,
 * so every refusal is jose's own, word for word. jose checks through WebCrypto, whose algorithm
 * normalizing costs tens of µs per token: a large part of a page's join.
 *
 * Accepted only when, as jose requires: the header is a JSON object with `alg` "HS256" and no
 * `crit` (so `b64` is not in play), the signature is the HMAC-SHA256 of `header.payload` under `key`,
 * the claims are a JSON object with an `exp` of its own, `iat`, `nbf` and `exp` are numbers where
 * present, `nbf` is not after now + leeway and `exp` is after now - leeway (jose's now: whole seconds
 * of `new Date(nowMs)`). `parts` are the token's three parts, already known to be canonical base64url.
 */
export function quickHs256(
  parts: readonly [string, string, string],
  key: Buffer,
  nowMs: number,
  leewaySeconds: number,
): Record<string, unknown> | undefined {
  const [encodedHeader, encodedClaims, encodedSignature] = parts;
  const signature = Buffer.from(encodedSignature, 'base64url');
  if (signature.length !== HS256_BYTES) return undefined;
  const expected = createHmac('sha256', key).update(encodedHeader).update('.').update(encodedClaims).digest();
  if (!timingSafeEqual(signature, expected)) return undefined;
  if (!isPlainHs256Header(encodedHeader)) return undefined;
  const claims = json(Buffer.from(encodedClaims, 'base64url'));
  if (!isObject(claims) || !Object.hasOwn(claims, 'exp')) return undefined;
  const { iat, nbf, exp } = claims;
  if (!absentOrNumber(iat) || !absentOrNumber(nbf) || typeof exp !== 'number') return undefined;
  const now = Math.floor(new Date(nowMs).getTime() / 1000);
  if (!Number.isFinite(now)) return undefined;
  if (nbf !== undefined && (nbf as number) > now + leewaySeconds) return undefined;
  if (exp <= now - leewaySeconds) return undefined;
  return claims;
}
