import { Realtime } from '@realtime/node';
import { deriveKey } from '@realtime/protocol';
import { SignJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenError, verifyCallToken, verifyIdentity, verifyRoomToken, verifyStreamGrant } from './tokens.js';

/** During a rotation the gateway checks tokens under the app's two secrets, the current one first. */
const NEW = 'the-new-secret-of-the-app-0123456789';
const OLD = 'the-old-secret-of-the-app-0123456789';
const BOTH = [NEW, OLD] as const;
const NOW_MS = 1_700_000_000_000;

const clients: Realtime[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function sdk(secret: string, atMs = NOW_MS): Realtime {
  const c = new Realtime({ url: 'http://127.0.0.1:9', key: 'app1', secret, now: () => atMs });
  clients.push(c);
  return c;
}

async function refusal(check: Promise<unknown>): Promise<TokenError> {
  const error = await check.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TokenError);
  return error as TokenError;
}

describe('tokens during a secret rotation', () => {
  it('takes every kind of token minted under either secret', async () => {
    for (const secret of BOTH) {
      const minter = sdk(secret);
      expect((await verifyIdentity(await minter.identityToken('alice'), BOTH, NOW_MS)).sub).toBe('alice');
      expect((await verifyRoomToken(await minter.roomToken('lobby'), BOTH, NOW_MS)).room).toBe('lobby');
      expect((await verifyCallToken(await minter.callToken('alice', { to: 'bob' }), BOTH, NOW_MS)).sub).toBe('alice');
      const grant = await minter.streamGrant('show', { role: 'viewer' });
      expect((await verifyStreamGrant(grant, BOTH, NOW_MS)).stream).toBe('show');
    }
  });

  it('refuses a token under any other secret as the current secret would, word for word', async () => {
    const stranger = await sdk('a-third-secret-nobody-holds-000000').roomToken('lobby');
    const under = await refusal(verifyRoomToken(stranger, BOTH, NOW_MS));
    const alone = await refusal(verifyRoomToken(stranger, NEW, NOW_MS));
    expect([under.code, under.message]).toEqual([alone.code, alone.message]);
    expect(under.message).toBe("the room token is not signed with this app's key");
    // Once the old secret retired, only the new one is given: a token under the old one is refused.
    const old = await sdk(OLD).roomToken('lobby');
    expect((await refusal(verifyRoomToken(old, NEW, NOW_MS))).code).toBe('bad_token');
  });

  it('gives the verdict of the secret that signed it: expired, or claims that do not hold', async () => {
    // Minted 2 hours ago for an hour, under the old secret: expired, not "not signed".
    const expired = await sdk(OLD, NOW_MS - 7_200_000).identityToken('alice');
    const error = await refusal(verifyIdentity(expired, BOTH, NOW_MS));
    expect([error.code, error.message]).toEqual(['token_expired', 'the identity token has expired']);
    const noRoom = await new SignJWT({ exp: NOW_MS / 1000 + 60 })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(deriveKey(OLD, 'channels'));
    expect((await refusal(verifyRoomToken(noRoom, BOTH, NOW_MS))).message).toMatch(/^the room token: /);
  });

  it('does not take a token under the old secret with another of its keys', async () => {
    const callToken = await sdk(OLD).callToken('alice', { to: 'bob' });
    expect((await refusal(verifyRoomToken(callToken, BOTH, NOW_MS))).code).toBe('bad_token');
  });
});
