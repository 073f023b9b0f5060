import {
  type CallClaims,
  callClaimsProblem,
  expiryProblem,
  type IdentityClaims,
  identityClaimsProblem,
  type KeyName,
  type RoomClaims,
  roomClaimsProblem,
  type SocketErrorCode,
  type StreamGrantClaims,
  streamGrantClaimsProblem,
} from '@realtime/protocol';
import { errors as joseErrors, jwtVerify } from 'jose';
import { derivedKey } from '../apps/derived-keys.js';
import { verificationKeys } from '../apps/verification-keys.js';
import { quickHs256, signedWithKey } from './hs256.js';

export class TokenError extends Error {
  readonly code: SocketErrorCode;
  constructor(code: SocketErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

const LEEWAY_SECONDS = 300;

/** How a refusal names the key: a token minted with another of the app's keys reads as "not signed". */
const KEY_WORDS: Record<KeyName, string> = {
  publish: 'publish key',
  webhook: 'webhook key',
  channels: 'key',
  calls: 'calls key',
  streamGrant: 'stream grant key',
};
const BASE64URL = /^[A-Za-z0-9_-]*$/;
const BASE64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * A JWT part written the one way base64url writes its bytes: no padding, no `+` or `/`, and a last
 * character whose unused bits are zero. jose accepts some other spellings of the same bytes (padding
 * or a different last character on the signature), which would let one token be written many ways.
 * The same verdict as decoding and encoding again (tokens.test.ts), without either: a length of 4n+1
 * leaves 6 bits that make no byte, 4n+2 and 4n+3 leave the last character's low 4 or 2 bits unused.
 */
export function isCanonicalBase64url(part: string): boolean {
  if (!BASE64URL.test(part)) return false;
  const tail = part.length % 4;
  if (tail === 0) return true;
  if (tail === 1) return false;
  const unusedBits = tail === 2 ? 0b1111 : 0b11;
  return (BASE64URL_ALPHABET.indexOf(part.charAt(part.length - 1)) & unusedBits) === 0;
}

/** The app's secret, or during a rotation the two it accepts, the current one first (apps/secret-rotation.ts). */
export type Secrets = string | readonly string[];

/**
 * Of the secrets an app accepts now, the one whose key signed the token: during a rotation a token
 * minted under the old secret holds until it retires. The current one when neither did: its
 * refusal is the one given.
 */
function signingSecret(parts: readonly string[], secrets: Secrets, key: KeyName): string {
  if (typeof secrets === 'string') return secrets;
  const found = parts.length === 3 ? secrets.find((one) => signedWithKey(parts, derivedKey(one, key))) : undefined;
  return found ?? secrets[0] ?? '';
}

/**
 * Verifies an HS256 JWT under one of the app's keys: signature, `exp` (with leeway); the caller checks
 * the claims. `what` names the token in messages ("the room token ...").
 */
async function verify(
  token: string,
  secrets: Secrets,
  key: KeyName,
  what: string,
  nowMs: number,
): Promise<Record<string, unknown>> {
  if (typeof token !== 'string' || token.length === 0 || token.length > 8192) {
    throw new TokenError('bad_token', `the ${what} is not a JWT`);
  }
  const parts = token.split('.');
  if (parts.length === 3 && !parts.every(isCanonicalBase64url)) {
    throw new TokenError(
      'bad_token',
      `the ${what} is not a JWT: its parts must be base64url without padding, + or /, or stray bits`,
    );
  }
  const secret = signingSecret(parts, secrets, key);
  const now = Math.floor(nowMs / 1000);
  try {
    // A token jose would take is taken without it (./hs256.ts); anything else gets jose's verdict and words.
    const payload =
      (parts.length === 3
        ? quickHs256(parts as [string, string, string], derivedKey(secret, key), nowMs, LEEWAY_SECONDS)
        : undefined) ??
      (
        await jwtVerify(token, await verificationKeys.get(secret, key), {
          algorithms: ['HS256'],
          clockTolerance: LEEWAY_SECONDS,
          requiredClaims: ['exp'],
          currentDate: new Date(nowMs),
        })
      ).payload;
    const problem = expiryProblem(payload.exp, now);
    if (problem) throw new TokenError('bad_token', `the ${what}: ${problem}`);
    return payload as Record<string, unknown>;
  } catch (error) {
    if (error instanceof TokenError) throw error;
    if (error instanceof joseErrors.JWTExpired) throw new TokenError('token_expired', `the ${what} has expired`);
    if (error instanceof joseErrors.JWSSignatureVerificationFailed) {
      throw new TokenError('bad_token', `the ${what} is not signed with this app's ${KEY_WORDS[key]}`);
    }
    throw new TokenError('bad_token', `the ${what} is not valid: ${(error as Error).message}`);
  }
}

export async function verifyIdentity(token: string, secret: Secrets, nowMs: number): Promise<IdentityClaims> {
  const payload = await verify(token, secret, 'channels', 'identity token', nowMs);
  const problem = identityClaimsProblem(payload);
  if (problem) throw new TokenError('bad_token', `the identity token: ${problem}`);
  return payload as unknown as IdentityClaims;
}

export async function verifyRoomToken(token: string, secret: Secrets, nowMs: number): Promise<RoomClaims> {
  const payload = await verify(token, secret, 'channels', 'room token', nowMs);
  const problem = roomClaimsProblem(payload);
  if (problem) throw new TokenError('bad_token', `the room token: ${problem}`);
  return payload as unknown as RoomClaims;
}

/** A call token (calls key): a token under any other key, a room token or identity, is refused bad_token. */
export async function verifyCallToken(token: string, secret: Secrets, nowMs: number): Promise<CallClaims> {
  const payload = await verify(token, secret, 'calls', 'call token', nowMs);
  const problem = callClaimsProblem(payload);
  if (problem) throw new TokenError('bad_token', `the call token: ${problem}`);
  return payload as unknown as CallClaims;
}

/** A stream grant (stream grant key). */
export async function verifyStreamGrant(token: string, secret: Secrets, nowMs: number): Promise<StreamGrantClaims> {
  const payload = await verify(token, secret, 'streamGrant', 'stream grant', nowMs);
  const problem = streamGrantClaimsProblem(payload);
  if (problem) throw new TokenError('bad_token', `the stream grant: ${problem}`);
  return payload as unknown as StreamGrantClaims;
}
