import { describe, expect, it } from 'vitest';
import type { App } from '../engines/types.js';
import type { ApiDeps, ApiRequest } from './context.js';
import { disconnectUser, revokeTokens } from './user-actions.js';

const NOW = 1_800_000_000_000;
const app = { key: 'app1' } as App;

function fakeDeps(outcome: 'stored' | 'full' = 'stored') {
  const calls: unknown[][] = [];
  const deps = {
    now: () => NOW,
    users: {
      disconnect: async (...args: unknown[]) => {
        calls.push(['disconnect', ...args]);
      },
      revoke: async (...args: unknown[]) => {
        calls.push(['revoke', ...args]);
        return outcome;
      },
    },
  } as unknown as ApiDeps;
  return { deps, calls };
}

function request(body: string, params: string[] = [], query = ''): ApiRequest {
  return { app, params, query, body: Buffer.from(body), headers: {} };
}

describe('disconnectUser', () => {
  it('disconnects the user of the path and answers no fields', async () => {
    const { deps, calls } = fakeDeps();
    expect(await disconnectUser(request('', ['ann']), deps)).toEqual({});
    expect(await disconnectUser(request('{}', ['ann']), deps)).toEqual({});
    expect(calls).toEqual([
      ['disconnect', 'app1', 'ann'],
      ['disconnect', 'app1', 'ann'],
    ]);
  });

  it.each([
    ['a bad user id', request('', ['$root'])],
    ['an empty user id', request('', [''])],
    ['a body with a field', request('{"code":1}', ['ann'])],
    ['a body that is not JSON', request('{', ['ann'])],
    ['a body that is not an object', request('[]', ['ann'])],
    ['a query', request('', ['ann'], 'x=1')],
  ])('refuses %s with bad_request and a message, touching nothing', async (_, req) => {
    const { deps, calls } = fakeDeps();
    await expect(Promise.resolve().then(() => disconnectUser(req, deps))).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.any(String),
    });
    expect(calls).toEqual([]);
  });
});

describe('revokeTokens', () => {
  it('revokes for a user or the whole app', async () => {
    const { deps, calls } = fakeDeps();
    await revokeTokens(request(JSON.stringify({ user: 'ann', before: NOW })), deps);
    await revokeTokens(request(JSON.stringify({ before: NOW - 1 })), deps);
    expect(calls).toEqual([
      ['revoke', 'app1', 'ann', NOW],
      ['revoke', 'app1', undefined, NOW - 1],
    ]);
  });

  it('takes a time up to the clock difference ahead, not further', async () => {
    const { deps } = fakeDeps();
    await expect(revokeTokens(request(JSON.stringify({ before: NOW + 300_000 })), deps)).resolves.toEqual({});
    await expect(revokeTokens(request(JSON.stringify({ before: NOW + 300_001 })), deps)).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringContaining('ahead'),
    });
  });

  it.each([
    ['no body', ''],
    ['no before', '{}'],
    ['before a string', '{"before":"now"}'],
    ['before negative', '{"before":-1}'],
    ['before a fraction', '{"before":1.5}'],
    ['before too large', '{"before":1e300}'],
    ['user not a string', `{"before":${NOW},"user":1}`],
    ['user not a user id', `{"before":${NOW},"user":""}`],
    ['an unknown field', `{"before":${NOW},"users":[]}`],
    ['not JSON', '{"before":'],
  ])('refuses %s with bad_request', async (_, body) => {
    const { deps, calls } = fakeDeps();
    await expect(revokeTokens(request(body), deps)).rejects.toMatchObject({ code: 'bad_request' });
    expect(calls).toEqual([]);
  });

  it('answers too_many when the app has as many user revocations as it may', async () => {
    const { deps } = fakeDeps('full');
    await expect(revokeTokens(request(JSON.stringify({ user: 'ann', before: NOW })), deps)).rejects.toMatchObject({
      code: 'too_many',
      message: expect.stringContaining('10000'),
    });
  });
});
