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

/** Verifies an HS256 JWT under the app's channels key: signature, `exp` (with leeway), then the claims. */
async function verify(token: string, secret: string, what: string, nowMs: number): Promise<Record<string, unknown>> {
  if (typeof token !== 'string' || token.length === 0 || token.length > 8192) {
    throw new TokenError('bad_token', `the ${what} token is not a JWT`);
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
