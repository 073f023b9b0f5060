import { createHmac } from 'node:crypto';
import { Realtime } from '@realtime/node';
import { deriveKey, type KeyName } from '@realtime/protocol';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import {
  isCanonicalBase64url,
  TokenError,
  verifyCallToken,
  verifyIdentity,
  verifyRoomToken,
  verifyStreamGrant,
} from './tokens.js';

const SECRET = 'secret-for-token-checks-0123456789';
const NOW_MS = 1_700_000_000_000;
const NOW = NOW_MS / 1000;

const clients: Realtime[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

/** The customer's SDK, minting as if its clock read `atMs` (tokens never touch the network). */
function sdk(atMs = NOW_MS, secret = SECRET): Realtime {
  const c = new Realtime({ url: 'http://127.0.0.1:9', key: 'app1', secret, now: () => atMs });
  clients.push(c);
  return c;
}

/** A token with any claims at all, under one of the app's keys: what the SDK refuses to mint. */
function signed(claims: Record<string, unknown>, key: KeyName): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(deriveKey(SECRET, key));
}

async function refusal(check: Promise<unknown>): Promise<TokenError> {
  const error = await check.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TokenError);
  const tokenError = error as TokenError;
  // One line a page's developer can act on.
  expect(tokenError.message).not.toContain('\n');
  return tokenError;
}

describe('verifyCallToken', () => {
  it('takes call tokens minted by @realtime/node, both kinds', async () => {
    const direct = await sdk().callToken('alice', { to: 'bob', name: 'support-42', media: ['audio'] });
    expect(await verifyCallToken(direct, SECRET, NOW_MS)).toEqual({
      sub: 'alice',
      call: { to: 'bob', name: 'support-42' },
      media: ['audio'],
      iat: NOW,
      exp: NOW + 3600,
    });
    const group = await sdk().callToken('carol', { group: 'standup' });
    expect(await verifyCallToken(group, SECRET, NOW_MS)).toMatchObject({
      sub: 'carol',
      group: 'standup',
      media: ['audio', 'video'],
    });
  });

  it('refuses a room token or an identity (channels key) and a stream grant: bad_token, naming the calls key', async () => {
    const c = sdk();
    const others = [
      await c.identityToken('alice'),
      await c.roomToken('lobby', { userId: 'alice' }),
      await c.streamGrant('keynote', { role: 'presenter', userId: 'alice' }),
      // The very claims of a call token, under the channels key.
      await signed({ sub: 'alice', call: { to: 'bob' }, media: ['audio'], exp: NOW + 60 }, 'channels'),
    ];
    for (const token of others) {
      const error = await refusal(verifyCallToken(token, SECRET, NOW_MS));
      expect(error.code).toBe('bad_token');
      expect(error.message).toBe("the call token is not signed with this app's calls key");
    }
    // Another app's call token.
    const foreign = await sdk(NOW_MS, 'another-apps-secret-0123456789').callToken('alice', { to: 'bob' });
    expect((await refusal(verifyCallToken(foreign, SECRET, NOW_MS))).code).toBe('bad_token');
  });

  it('a call token opens neither a page (identity) nor a room', async () => {
    const token = await sdk().callToken('alice', { to: 'bob' });
    expect((await refusal(verifyIdentity(token, SECRET, NOW_MS))).message).toBe(
      "the identity token is not signed with this app's key",
    );
    expect((await refusal(verifyRoomToken(token, SECRET, NOW_MS))).code).toBe('bad_token');
  });

  it('refuses an expired one token_expired, with 5 minutes of leeway', async () => {
    // Minted 2 hours ago for an hour: expired an hour ago.
    const old = await sdk(NOW_MS - 7_200_000).callToken('alice', { to: 'bob' });
    const error = await refusal(verifyCallToken(old, SECRET, NOW_MS));
    expect(error.code).toBe('token_expired');
    expect(error.message).toBe('the call token has expired');
    // Expired 4 minutes ago: within the leeway.
    const late = await sdk(NOW_MS - 3_840_000).callToken('alice', { to: 'bob' });
    expect((await verifyCallToken(late, SECRET, NOW_MS)).sub).toBe('alice');
  });

  const badClaims: [string, Record<string, unknown>, string][] = [
    ['no exp', { sub: 'alice', call: { to: 'bob' }, media: ['audio'] }, 'the call token is not valid'],
    [
      'exp more than 24 hours ahead',
      { sub: 'alice', call: { to: 'bob' }, media: ['audio'], exp: NOW + 90_000 },
      'the call token: exp is more than 24 hours ahead',
    ],
    [
      'no sub',
      { call: { to: 'bob' }, media: ['audio'], exp: NOW + 60 },
      'the call token: sub (the user id) is required',
    ],
    ['neither call nor group', { sub: 'alice', media: ['audio'], exp: NOW + 60 }, 'the call token: give call or group'],
    [
      'call and group',
      { sub: 'alice', call: { to: 'bob' }, group: 'g', media: ['audio'], exp: NOW + 60 },
      'the call token: give call or group',
    ],
    [
      'a call to oneself',
      { sub: 'alice', call: { to: 'alice' }, media: ['audio'], exp: NOW + 60 },
      'the call token: call.to is the caller',
    ],
    [
      'video without audio',
      { sub: 'alice', call: { to: 'bob' }, media: ['video'], exp: NOW + 60 },
      'the call token: media must be',
    ],
    ['no media', { sub: 'alice', group: 'g', exp: NOW + 60 }, 'the call token: media must be'],
  ];
  it.for(badClaims)('refuses bad claims bad_token: %s', async ([, claims, message]) => {
    const error = await refusal(verifyCallToken(await signed(claims, 'calls'), SECRET, NOW_MS));
    expect(error.code).toBe('bad_token');
    expect(error.message.startsWith(message), error.message).toBe(true);
  });

  it('refuses what is not a JWT', async () => {
    for (const token of ['', 'abc', 'a.b.c', 'x'.repeat(9000)]) {
      const error = await refusal(verifyCallToken(token, SECRET, NOW_MS));
      expect(error.code).toBe('bad_token');
      expect(error.message).toMatch(/^the call token /);
    }
  });
});

describe('verifyStreamGrant', () => {
  it('takes grants minted by @realtime/node: a presenter with a user, a visitor without', async () => {
    const presenter = await sdk().streamGrant('keynote', { role: 'presenter', userId: 'alice' });
    expect(await verifyStreamGrant(presenter, SECRET, NOW_MS)).toEqual({
      stream: 'keynote',
      role: 'presenter',
      sub: 'alice',
      iat: NOW,
      exp: NOW + 3600,
    });
    const visitor = await sdk().streamGrant('keynote', { role: 'viewer' });
    const claims = await verifyStreamGrant(visitor, SECRET, NOW_MS);
    expect(claims).toEqual({ stream: 'keynote', role: 'viewer', iat: NOW, exp: NOW + 3600 });
    expect('sub' in claims).toBe(false);
  });

  it('refuses a room token, an identity or a call token: bad_token, naming the stream grant key', async () => {
    const c = sdk();
    const others = [
      await c.identityToken('alice'),
      await c.roomToken('keynote'),
      await c.callToken('alice', { group: 'keynote' }),
      await signed({ stream: 'keynote', role: 'viewer', exp: NOW + 60 }, 'channels'),
    ];
    for (const token of others) {
      const error = await refusal(verifyStreamGrant(token, SECRET, NOW_MS));
      expect(error.code).toBe('bad_token');
      expect(error.message).toBe("the stream grant is not signed with this app's stream grant key");
    }
  });

  it('refuses an expired one token_expired', async () => {
    const old = await sdk(NOW_MS - 7_200_000).streamGrant('keynote', { role: 'viewer' });
    const error = await refusal(verifyStreamGrant(old, SECRET, NOW_MS));
    expect(error.code).toBe('token_expired');
    expect(error.message).toBe('the stream grant has expired');
  });

  const badClaims: [string, Record<string, unknown>, string][] = [
    ['no stream', { role: 'viewer', exp: NOW + 60 }, 'the stream grant: stream (the stream name) is required'],
    ['a reserved stream name', { stream: '$x', role: 'viewer', exp: NOW + 60 }, 'the stream grant: stream:'],
    ['no role', { stream: 'keynote', exp: NOW + 60 }, 'the stream grant: role must be'],
    ['an unknown role', { stream: 'keynote', role: 'host', exp: NOW + 60 }, 'the stream grant: role must be'],
    [
      'a sub that is not a user id',
      { stream: 'keynote', role: 'viewer', sub: 7, exp: NOW + 60 },
      'the stream grant: sub',
    ],
    [
      'exp more than 24 hours ahead',
      { stream: 'keynote', role: 'viewer', exp: NOW + 90_000 },
      'the stream grant: exp is more than 24 hours ahead',
    ],
  ];
  it.for(badClaims)('refuses bad claims bad_token: %s', async ([, claims, message]) => {
    const error = await refusal(verifyStreamGrant(await signed(claims, 'streamGrant'), SECRET, NOW_MS));
    expect(error.code).toBe('bad_token');
    expect(error.message.startsWith(message), error.message).toBe(true);
  });
});

describe('identities and room tokens are checked as before', () => {
  it('take their own tokens and refuse a call token or stream grant', async () => {
    const c = sdk();
    expect(await verifyIdentity(await c.identityToken('alice'), SECRET, NOW_MS)).toMatchObject({ sub: 'alice' });
    expect(await verifyRoomToken(await c.roomToken('lobby'), SECRET, NOW_MS)).toMatchObject({ room: 'lobby' });
    const grant = await c.streamGrant('lobby', { role: 'viewer' });
    const error = await refusal(verifyRoomToken(grant, SECRET, NOW_MS));
    expect(error.message).toBe("the room token is not signed with this app's key");
    const old = await sdk(NOW_MS - 7_200_000).identityToken('alice');
    expect((await refusal(verifyIdentity(old, SECRET, NOW_MS))).message).toBe('the identity token has expired');
  });
});

describe('the answers to every kind of token, word for word (the HMAC fast path changes none)', () => {
  const key = Buffer.from(deriveKey(SECRET, 'channels'));
  const part = (value: unknown) =>
    Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
  const token = (header: unknown, claims: unknown, under = key) => {
    const input = `${part(header)}.${part(claims)}`;
    return `${input}.${createHmac('sha256', under).update(input).digest('base64url')}`;
  };
  const HS256 = { alg: 'HS256', typ: 'JWT' };
  const room = { room: 'lobby', exp: NOW + 60 };
  const notValid = (why: string) => ({ code: 'bad_token', message: `the room token is not valid: ${why}` });
  const notJwt = {
    code: 'bad_token',
    message: 'the room token is not a JWT: its parts must be base64url without padding, + or /, or stray bits',
  };
  const notSigned = { code: 'bad_token', message: "the room token is not signed with this app's key" };
  const good = () => token(HS256, room);

  const rows: [string, () => string, { code: string; message: string } | Record<string, unknown>][] = [
    ['a good one', good, room],
    [
      'alg none',
      () => `${part({ alg: 'none' })}.${part(room)}.`,
      notValid('"alg" (Algorithm) Header Parameter value not allowed'),
    ],
    [
      'alg HS384',
      () => token({ alg: 'HS384' }, room),
      notValid('"alg" (Algorithm) Header Parameter value not allowed'),
    ],
    ['a bad signature', () => `${good().slice(0, -2)}${good().endsWith('AA') ? 'BA' : 'AA'}`, notSigned],
    ['another key (calls)', () => token(HS256, room, Buffer.from(deriveKey(SECRET, 'calls'))), notSigned],
    [
      'expired',
      () => token(HS256, { ...room, exp: NOW - 3600 }),
      { code: 'token_expired', message: 'the room token has expired' },
    ],
    [
      'nbf in the future',
      () => token(HS256, { ...room, nbf: NOW + 3600 }),
      notValid('"nbf" claim timestamp check failed'),
    ],
    ['no exp', () => token(HS256, { room: 'lobby' }), notValid('missing required "exp" claim')],
    ['exp a string', () => token(HS256, { ...room, exp: 'soon' }), notValid('"exp" claim must be a number')],
    [
      'exp more than 24 hours ahead',
      () => token(HS256, { ...room, exp: NOW + 1e6 }),
      { code: 'bad_token', message: 'the room token: exp is more than 24 hours ahead' },
    ],
    [
      'no room',
      () => token(HS256, { exp: NOW + 60 }),
      { code: 'bad_token', message: 'the room token: room is required' },
    ],
    ['claims that are an array', () => token(HS256, [1]), notValid('JWT Claims Set must be a top-level JSON object')],
    ['a header that is not JSON', () => token('{', room), notValid('JWS Protected Header is invalid')],
    [
      'crit b64 false',
      () => token({ alg: 'HS256', crit: ['b64'], b64: false }, room),
      notValid('JWTs MUST NOT use unencoded payload'),
    ],
    ['crit b64 true (taken by jose)', () => token({ alg: 'HS256', crit: ['b64'], b64: true }, room), room],
    ['a padded part', () => `${good()}=`, notJwt],
    ['a + in the signature', () => `${good().slice(0, -1)}+`, notJwt],
    ['an extra segment', () => `${good()}.x`, notValid('Invalid Compact JWS')],
    ['two segments', () => good().split('.').slice(0, 2).join('.'), notValid('Invalid Compact JWS')],
  ];
  it.for(rows)('%s', async ([, make, answer]) => {
    const outcome = await verifyRoomToken(make(), SECRET, NOW_MS).then(
      (claims) => claims as unknown,
      (error: TokenError) => ({ code: error.code, message: error.message }),
    );
    expect(outcome).toEqual(answer);
  });
});

describe('isCanonicalBase64url', () => {
  /** What it stands for: the text decodes and encodes back to itself. */
  const roundTrips = (part: string) =>
    /^[A-Za-z0-9_-]*$/.test(part) && Buffer.from(part, 'base64url').toString('base64url') === part;

  it('answers as decoding and encoding again would, for every text of base64 characters', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_+/=-]{0,12}$/), (part) => {
        expect(isCanonicalBase64url(part)).toBe(roundTrips(part));
      }),
      { numRuns: 5000 },
    );
  });

  it('takes what base64url writes and refuses each other spelling', () => {
    for (let length = 0; length < 40; length++) {
      const written = Buffer.alloc(length, 0xa7).toString('base64url');
      expect(isCanonicalBase64url(written)).toBe(true);
      if (written.length % 4 !== 0) expect(isCanonicalBase64url(`${written.slice(0, -1)}_`)).toBe(false);
      expect(isCanonicalBase64url(`${written}=`)).toBe(false);
    }
  });
});
