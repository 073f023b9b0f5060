// The baselines' token checks for bench:join, HS256 under the channels key as the service checks.
// verifyToken: jose's jwtVerify, with the key imported once (as a bare server written with jose
// would): Socket.IO's. verifyTokenHmac: node:crypto's HMAC directly, as the service checks a token
// jose would take (packages/server/src/gateway/hs256.ts): the raw ws server's, so the bare minimum
// does the same cheap check as the service and the comparison is of what each server does around it.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from '@realtime/protocol';
import { jwtVerify } from 'jose';

const app = JSON.parse(process.env.BENCH_APP);
const raw = Buffer.from(deriveKey(app.secret, 'channels'));
const key = await crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);

/** The token's claims, or undefined when it does not verify (jose). */
export async function verifyToken(token) {
  try {
    const { payload } = await jwtVerify(token, key, { algorithms: ['HS256'], requiredClaims: ['exp'] });
    return payload;
  } catch {
    return undefined;
  }
}

/** The same check with node:crypto: signature, alg, claims an object, exp (and nbf when given) in time. */
export function verifyTokenHmac(token) {
  const parts = typeof token === 'string' ? token.split('.') : [];
  if (parts.length !== 3) return undefined;
  const signature = Buffer.from(parts[2], 'base64url');
  const expected = createHmac('sha256', raw).update(`${parts[0]}.${parts[1]}`).digest();
  if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) return undefined;
  try {
    const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString());
    if (header?.alg !== 'HS256') return undefined;
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString());
    const now = Math.floor(Date.now() / 1000);
    if (typeof claims?.exp !== 'number' || claims.exp <= now) return undefined;
    if (claims.nbf !== undefined && !(claims.nbf <= now)) return undefined;
    return claims;
  } catch {
    return undefined;
  }
}
