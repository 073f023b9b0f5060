// The baselines' token check for bench:join: jose's jwtVerify, HS256 under the channels key, the
// same library and algorithm the service uses, with the key imported once (as a bare server
// written with jose would), so the comparison is of what each server does around the check.
import { deriveKey } from '@realtime/protocol';
import { jwtVerify } from 'jose';

const app = JSON.parse(process.env.BENCH_APP);
const raw = deriveKey(app.secret, 'channels');
const key = await crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);

/** The token's claims, or undefined when it does not verify. */
export async function verifyToken(token) {
  try {
    const { payload } = await jwtVerify(token, key, { algorithms: ['HS256'], requiredClaims: ['exp'] });
    return payload;
  } catch {
    return undefined;
  }
}
