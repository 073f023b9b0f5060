import {
  expiryProblem,
  type IdentityClaims,
  identityClaimsProblem,
  type RoomClaims,
  roomClaimsProblem,
  type SocketErrorCode,
} from '@realtime/protocol';
import { errors as joseErrors, jwtVerify } from 'jose';
import { derivedKey } from '../apps/derived-keys.js';

export class TokenError extends Error {
  readonly code: SocketErrorCode;
  constructor(code: SocketErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

const LEEWAY_SECONDS = 300;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/**
 * A JWT part written the one way base64url writes its bytes: no padding, no `+` or `/`, and a last
 * character whose unused bits are zero. jose accepts some other spellings of the same bytes (padding
 * or a different last character on the signature), which would let one token be written many ways.
 */
function isCanonicalBase64url(part: string): boolean {
  return BASE64URL.test(part) && Buffer.from(part, 'base64url').toString('base64url') === part;
}

/** Verifies an HS256 JWT under the app's channels key: signature, `exp` (with leeway), then the claims. */
async function verify(token: string, secret: string, what: string, nowMs: number): Promise<Record<string, unknown>> {
  if (typeof token !== 'string' || token.length === 0 || token.length > 8192) {
    throw new TokenError('bad_token', `the ${what} token is not a JWT`);
  }
  const parts = token.split('.');
  if (parts.length === 3 && !parts.every(isCanonicalBase64url)) {
    throw new TokenError(
      'bad_token',
      `the ${what} token is not a JWT: its parts must be base64url without padding, + or /, or stray bits`,
    );
  }
  const now = Math.floor(nowMs / 1000);
  try {
    const { payload } = await jwtVerify(token, derivedKey(secret, 'channels'), {
      algorithms: ['HS256'],
      clockTolerance: LEEWAY_SECONDS,
      requiredClaims: ['exp'],
      currentDate: new Date(nowMs),
    });
    const problem = expiryProblem(payload.exp, now);
    if (problem) throw new TokenError('bad_token', `the ${what} token: ${problem}`);
    return payload as Record<string, unknown>;
  } catch (error) {
    if (error instanceof TokenError) throw error;
    if (error instanceof joseErrors.JWTExpired) throw new TokenError('token_expired', `the ${what} token has expired`);
    if (error instanceof joseErrors.JWSSignatureVerificationFailed) {
      throw new TokenError('bad_token', `the ${what} token is not signed with this app's key`);
    }
    throw new TokenError('bad_token', `the ${what} token is not valid: ${(error as Error).message}`);
  }
}

export async function verifyIdentity(token: string, secret: string, nowMs: number): Promise<IdentityClaims> {
  const payload = await verify(token, secret, 'identity', nowMs);
  const problem = identityClaimsProblem(payload);
  if (problem) throw new TokenError('bad_token', `the identity token: ${problem}`);
  return payload as unknown as IdentityClaims;
}

export async function verifyRoomToken(token: string, secret: string, nowMs: number): Promise<RoomClaims> {
  const payload = await verify(token, secret, 'room', nowMs);
  const problem = roomClaimsProblem(payload);
  if (problem) throw new TokenError('bad_token', `the room token: ${problem}`);
  return payload as unknown as RoomClaims;
}
