import { deriveKey, type KeyName } from '@realtime/protocol';
import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { Realtime } from './client.js';
import type { CallTokenOptions, StreamGrantOptions } from './tokens.js';

const SECRET = 'secret-for-token-tests-0123456789';
const NOW_MS = 1_700_000_000_500;
const NOW = 1_700_000_000;

const clients: Realtime[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

// Minting never touches the network; the address only has to be valid.
function client(): Realtime {
  const c = new Realtime({ url: 'http://127.0.0.1:9', key: 'app1', secret: SECRET, now: () => NOW_MS });
  clients.push(c);
  return c;
}

/** The claims, checked against the key the token must be signed with (by jose, apart from the SDK). */
async function claims(token: string, key: KeyName): Promise<Record<string, unknown>> {
  expect(decodeProtectedHeader(token)).toEqual({ alg: 'HS256', typ: 'JWT' });
  const { payload } = await jwtVerify(token, deriveKey(SECRET, key), {
    algorithms: ['HS256'],
    currentDate: new Date(NOW_MS),
  });
  return payload as Record<string, unknown>;
}

/** Every other key of the app refuses the token's signature. */
async function expectOnlyKey(token: string, key: KeyName): Promise<void> {
  for (const other of ['publish', 'webhook', 'channels', 'calls', 'streamGrant'] as const) {
    if (other === key) continue;
    await expect(jwtVerify(token, deriveKey(SECRET, other), { currentDate: new Date(NOW_MS) })).rejects.toBeInstanceOf(
      joseErrors.JWSSignatureVerificationFailed,
    );
  }
}

describe('callToken', () => {
  it('a call between two people: sub, call.to, media audio and video by default, an hour, under the calls key', async () => {
    const token = await client().callToken('alice', { to: 'bob' });
    expect(await claims(token, 'calls')).toEqual({
      sub: 'alice',
      call: { to: 'bob' },
      media: ['audio', 'video'],
      iat: NOW,
      exp: NOW + 3600,
    });
    await expectOnlyKey(token, 'calls');
  });

  it('carries name, audio only and a lifetime when given', async () => {
    const token = await client().callToken('alice', { to: 'bob', name: 'support-42', media: ['audio'], expiresIn: 60 });
    expect(await claims(token, 'calls')).toEqual({
      sub: 'alice',
      call: { to: 'bob', name: 'support-42' },
      media: ['audio'],
      iat: NOW,
      exp: NOW + 60,
    });
  });

  it('a group call: sub, group, media; no call claim', async () => {
    const token = await client().callToken('alice', { group: 'standup', expiresIn: 86_400 });
    expect(await claims(token, 'calls')).toEqual({
      sub: 'alice',
      group: 'standup',
      media: ['audio', 'video'],
      iat: NOW,
      exp: NOW + 86_400,
    });
    await expectOnlyKey(token, 'calls');
  });

  const bad: [string, string, unknown, RegExp][] = [
    ['neither to nor group', 'alice', {}, /call or group/],
    ['both to and group', 'alice', { to: 'bob', group: 'standup' }, /not both/],
    ['a name with a group', 'alice', { group: 'standup', name: 'x' }, /not both/],
    ['a name without to', 'alice', { name: 'x' }, /name needs to/],
    ['a call to oneself', 'alice', { to: 'alice' }, /cannot call themselves/],
    ['an empty user id', '', { to: 'bob' }, /sub: user id is empty/],
    ['a user id starting with $', '$svc', { to: 'bob' }, /sub:/],
    ['a callee that is not a string', 'alice', { to: 42 }, /call must be/],
    ['a bad name', 'alice', { to: 'bob', name: '' }, /call\.name/],
    ['a bad group name', 'alice', { group: '$all' }, /group:/],
    ['video alone', 'alice', { to: 'bob', media: ['video'] }, /media must be/],
    ['audio twice', 'alice', { to: 'bob', media: ['audio', 'audio'] }, /media must be/],
    ['no media at all', 'alice', { to: 'bob', media: [] }, /media must be/],
    ['a lifetime of 0', 'alice', { to: 'bob', expiresIn: 0 }, /expiresIn/],
    ['a lifetime over 24 hours', 'alice', { to: 'bob', expiresIn: 86_401 }, /expiresIn/],
    ['a lifetime that is not whole', 'alice', { to: 'bob', expiresIn: 1.5 }, /expiresIn/],
    ['no options', 'alice', undefined, /options/],
  ];
  it.for(bad)('throws a TypeError for %s', ([, user, options, message]) => {
    const c = client();
    expect(() => c.callToken(user, options as CallTokenOptions)).toThrow(TypeError);
    expect(() => c.callToken(user, options as CallTokenOptions)).toThrow(message);
  });
});

describe('streamGrant', () => {
  it('a presenter with a user: stream, role, sub, an hour, under the stream grant key', async () => {
    const token = await client().streamGrant('keynote', { role: 'presenter', userId: 'alice' });
    expect(await claims(token, 'streamGrant')).toEqual({
      stream: 'keynote',
      role: 'presenter',
      sub: 'alice',
      iat: NOW,
      exp: NOW + 3600,
    });
    await expectOnlyKey(token, 'streamGrant');
  });

  it('a viewer without a user is a visitor: no sub', async () => {
    const token = await client().streamGrant('keynote', { role: 'viewer', expiresIn: 600 });
    expect(await claims(token, 'streamGrant')).toEqual({ stream: 'keynote', role: 'viewer', iat: NOW, exp: NOW + 600 });
  });

  const bad: [string, string, unknown, RegExp][] = [
    ['no role', 'keynote', {}, /role must be/],
    ['an unknown role', 'keynote', { role: 'admin' }, /role must be/],
    ['an empty stream name', '', { role: 'viewer' }, /stream:/],
    ['a stream name starting with $', '$all', { role: 'viewer' }, /stream:/],
    ['a bad user id', 'keynote', { role: 'viewer', userId: '' }, /sub:/],
    ['a lifetime over 24 hours', 'keynote', { role: 'viewer', expiresIn: 90_000 }, /expiresIn/],
    ['no options', 'keynote', undefined, /options/],
  ];
  it.for(bad)('throws a TypeError for %s', ([, stream, options, message]) => {
    const c = client();
    expect(() => c.streamGrant(stream, options as StreamGrantOptions)).toThrow(TypeError);
    expect(() => c.streamGrant(stream, options as StreamGrantOptions)).toThrow(message);
  });
});
