import { createHmac } from 'node:crypto';
import { Realtime } from '@realtime/node';
import { deriveKey } from '@realtime/protocol';
import { jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { quickHs256 } from './hs256.js';

/**
 * quickHs256 must take only tokens jose's jwtVerify takes (with the options the gateway gives it),
 * with the same claims, and every such token but the rare kinds it leaves to jose: then
 * `quickHs256(...) ?? jose` answers every token as jose alone did. Each row is checked against jose itself.
 */

const SECRET = 'hs256-secret-0123456789';
const KEY = Buffer.from(deriveKey(SECRET, 'channels'));
const CALLS_KEY = Buffer.from(deriveKey(SECRET, 'calls'));
const NOW_MS = 1_700_000_000_500;
const NOW = Math.floor(NOW_MS / 1000);
const LEEWAY = 300;

const part = (value: string | Buffer | object): string =>
  (Buffer.isBuffer(value) ? value : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value))).toString(
    'base64url',
  );
const hmac = (key: Buffer, input: string): Buffer => createHmac('sha256', key).update(input).digest();

/** A token of any header and claims (objects, or raw JSON text or bytes), signed under `key`. */
function token(
  header: string | Buffer | object,
  claims: string | Buffer | object,
  signature: (input: string) => Buffer | string = (input) => hmac(KEY, input),
): string {
  const input = `${part(header)}.${part(claims)}`;
  const sig = signature(input);
  return `${input}.${typeof sig === 'string' ? sig : sig.toString('base64url')}`;
}

const HS256 = { alg: 'HS256', typ: 'JWT' };
const fine = { sub: 'alice', iat: NOW, exp: NOW + 3600 };
const BOM = '\uFEFF';

const sdk = new Realtime({ url: 'http://127.0.0.1:9', key: 'app1', secret: SECRET, now: () => NOW_MS });
afterAll(() => sdk.close());

/** Whether jose takes the token, and whether quickHs256 does too or leaves it to jose. */
type Verdict = 'taken' | 'refused' | 'left to jose';
const rows: [string, () => string | Promise<string>, Verdict][] = [
  ['an identity minted by @realtime/node', () => sdk.identityToken('alice', { info: { name: 'Alice' } }), 'taken'],
  ['a room token minted by @realtime/node', () => sdk.roomToken('lobby', { userId: 'alice', presence: true }), 'taken'],
  ['a call token (calls key) checked under the channels key', () => sdk.callToken('alice', { to: 'bob' }), 'refused'],
  ['a header of alg alone', () => token({ alg: 'HS256' }, fine), 'taken'],
  ['a header with kid and other fields', () => token({ ...HS256, kid: 'k1', x: [1] }, fine), 'taken'],
  ['a header written with a BOM', () => token(`${BOM}{"alg":"HS256"}`, fine), 'taken'],
  ['claims written with a BOM', () => token(HS256, `${BOM}${JSON.stringify(fine)}`), 'taken'],
  ['claims with a repeated exp (the last counts)', () => token(HS256, `{"exp":1,"exp":${NOW + 60}}`), 'taken'],
  ['claims with unicode text', () => token(HS256, { ...fine, info: { name: 'Zoë 🦊' } }), 'taken'],
  // Signatures
  ['a signature with one bit flipped', () => token(HS256, fine, (i) => flipBit(hmac(KEY, i))), 'refused'],
  ['a signature under another key (calls)', () => token(HS256, fine, (i) => hmac(CALLS_KEY, i)), 'refused'],
  ['a signature of other claims', () => token(HS256, fine, () => hmac(KEY, `${part(HS256)}.${part({})}`)), 'refused'],
  ['a signature cut to 31 bytes', () => token(HS256, fine, (i) => hmac(KEY, i).subarray(0, 31)), 'refused'],
  [
    'a signature with a byte more',
    () => token(HS256, fine, (i) => Buffer.concat([hmac(KEY, i), Buffer.of(0)])),
    'refused',
  ],
  ['an empty signature', () => token(HS256, fine, () => ''), 'refused'],
  ['a signature in hex', () => token(HS256, fine, (i) => hmac(KEY, i).toString('hex')), 'refused'],
  // Headers
  ['alg none, unsigned', () => token({ alg: 'none' }, fine, () => ''), 'refused'],
  ['alg none, signed', () => token({ alg: 'none' }, fine), 'refused'],
  ['alg HS384', () => token({ alg: 'HS384' }, fine), 'refused'],
  ['alg HS512', () => token({ alg: 'HS512' }, fine), 'refused'],
  ['alg RS256', () => token({ alg: 'RS256' }, fine), 'refused'],
  ['alg in lower case', () => token({ alg: 'hs256' }, fine), 'refused'],
  ['no alg', () => token({ typ: 'JWT' }, fine), 'refused'],
  ['alg a number', () => token({ alg: 256 }, fine), 'refused'],
  ['alg an empty string', () => token({ alg: '' }, fine), 'refused'],
  ['a header that is an array', () => token(['HS256'], fine), 'refused'],
  ['a header that is null', () => token('null', fine), 'refused'],
  ['a header that is not JSON', () => token('{"alg":"HS256"', fine), 'refused'],
  ['an empty header', () => token('', fine), 'refused'],
  ['a header that is not UTF-8', () => token(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), fine), 'refused'],
  ['crit b64 false (an unencoded payload)', () => token({ alg: 'HS256', crit: ['b64'], b64: false }, fine), 'refused'],
  // jose takes it; too rare to check twice over: jose's own path.
  ['crit b64 true', () => token({ alg: 'HS256', crit: ['b64'], b64: true }, fine), 'left to jose'],
  ['crit of an unknown extension', () => token({ alg: 'HS256', crit: ['exp'], exp: 1 }, fine), 'refused'],
  ['crit empty', () => token({ alg: 'HS256', crit: [] }, fine), 'refused'],
  ['crit null', () => token({ alg: 'HS256', crit: null }, fine), 'refused'],
  // Claims
  ['no exp', () => token(HS256, { sub: 'alice' }), 'refused'],
  ['exp a string', () => token(HS256, { ...fine, exp: String(NOW + 60) }), 'refused'],
  ['exp null', () => token(HS256, { ...fine, exp: null }), 'refused'],
  ['exp only on __proto__', () => token(HS256, `{"__proto__":{"exp":${NOW + 60}}}`), 'refused'],
  ['exp two hours ago', () => token(HS256, { ...fine, exp: NOW - 7200 }), 'refused'],
  ['exp just past the leeway', () => token(HS256, { ...fine, exp: NOW - LEEWAY }), 'refused'],
  ['exp within the leeway', () => token(HS256, { ...fine, exp: NOW - LEEWAY + 1 }), 'taken'],
  ['exp a fraction', () => token(HS256, { ...fine, exp: NOW + 0.5 }), 'taken'],
  ['exp far ahead (the caller refuses it)', () => token(HS256, { ...fine, exp: NOW + 10 ** 9 }), 'taken'],
  ['exp 1e400 (Infinity)', () => token(HS256, `{"exp":1e400}`), 'taken'],
  ['exp -1e400', () => token(HS256, `{"exp":-1e400}`), 'refused'],
  ['nbf in the future, past the leeway', () => token(HS256, { ...fine, nbf: NOW + LEEWAY + 1 }), 'refused'],
  ['nbf in the future, within the leeway', () => token(HS256, { ...fine, nbf: NOW + LEEWAY }), 'taken'],
  ['nbf in the past', () => token(HS256, { ...fine, nbf: NOW - 10 }), 'taken'],
  ['nbf a string', () => token(HS256, { ...fine, nbf: String(NOW) }), 'refused'],
  ['nbf null', () => token(HS256, { ...fine, nbf: null }), 'refused'],
  ['iat in the future', () => token(HS256, { ...fine, iat: NOW + 86_400 }), 'taken'],
  ['iat a string', () => token(HS256, { ...fine, iat: 'now' }), 'refused'],
  ['iat null', () => token(HS256, { ...fine, iat: null }), 'refused'],
  ['claims that are an array', () => token(HS256, `[${NOW + 60}]`), 'refused'],
  ['claims that are null', () => token(HS256, 'null'), 'refused'],
  ['claims that are a number', () => token(HS256, String(NOW + 60)), 'refused'],
  ['claims that are a string', () => token(HS256, '"exp"'), 'refused'],
  ['claims that are not JSON', () => token(HS256, `{"exp":${NOW + 60}`), 'refused'],
  ['empty claims text', () => token(HS256, ''), 'refused'],
  [
    'claims that are not UTF-8',
    () =>
      token(
        HS256,
        Buffer.concat([Buffer.from(`{"exp":${NOW + 60},"sub":"`), Buffer.of(0xc3, 0x28), Buffer.from('"}')]),
      ),
    'refused',
  ],
];

function flipBit(bytes: Buffer): Buffer {
  const copy = Buffer.from(bytes);
  copy[5] = (copy[5] ?? 0) ^ 0x10;
  return copy;
}

/** jose's verdict, with the options the gateway gives it: the claims, or undefined when refused. */
async function jose(jwt: string, nowMs: number): Promise<unknown> {
  try {
    const { payload } = await jwtVerify(jwt, KEY, {
      algorithms: ['HS256'],
      clockTolerance: LEEWAY,
      requiredClaims: ['exp'],
      currentDate: new Date(nowMs),
    });
    return payload;
  } catch {
    return undefined;
  }
}

const quick = (jwt: string, nowMs: number) =>
  quickHs256(jwt.split('.') as [string, string, string], KEY, nowMs, LEEWAY);

describe('quickHs256 takes exactly what jose takes', () => {
  it.for(rows)('%s', async ([, make, verdict]) => {
    const jwt = await make();
    expect(jwt.split('.')).toHaveLength(3);
    const fromJose = await jose(jwt, NOW_MS);
    expect(fromJose !== undefined, 'jose takes it').toBe(verdict !== 'refused');
    // The same claims when taken; undefined (then jose answers) when refused or left to jose.
    expect(quick(jwt, NOW_MS)).toEqual(verdict === 'taken' ? fromJose : undefined);
  });

  it('reads the clock as jose does: whole seconds, and refuses with jose when the clock is not a date', async () => {
    const jwt = token(HS256, { exp: NOW - LEEWAY + 1 });
    for (const nowMs of [NOW_MS, (NOW + 1) * 1000 - 1, (NOW + 1) * 1000, Number.NaN, 9e15, -0.5]) {
      expect(quick(jwt, nowMs), String(nowMs)).toEqual(await jose(jwt, nowMs));
    }
  });

  it('returns the claims of a token it takes', () => {
    expect(quick(token(HS256, fine), NOW_MS)).toEqual(fine);
  });
});
